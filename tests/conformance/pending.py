"""Conformance (row, kubelet version) pairs whose upstream expectation the emulator does not meet yet.

Each is a real difference between kubelet versions that another change is adding behind
``kubeletemu.versions.behaviours``; the value is the behaviour key expected to cover it. The loader runs
these pairs as ``xfail(strict=True)``, so the entry must be removed (and the pair then passes) when the
behaviour lands. Key: (table, section, row label, version); the row label is the field the test module
names rows by (``name``, ``id``, ``description``).
"""

from __future__ import annotations

from collections.abc import Mapping

PENDING: Mapping[tuple[str, str, str, str], str] = {}
