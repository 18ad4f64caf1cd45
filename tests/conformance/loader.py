"""Loads the conformance tables copied from ../shared/conformance (kubelet unit-test vectors).

Node-side rows carry ``versions``: the supported kubelet versions (``kubeletemu.versions.SUPPORTED``) the
row holds for, read from the upstream test tables at each release tag (issue 16). :func:`versioned_rows`
turns a section into one ``pytest.param(row, version)`` per version a row holds for, so every row runs
under every kubelet it is true of; a pair listed in ``tests/conformance/pending.py`` (a real version
difference the emulator does not model yet) runs as a strict xfail naming the behaviour it waits for.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kubeletemu.versions import SUPPORTED
from tests.conformance.pending import PENDING

HERE = Path(__file__).parent


@cache
def load(name: str) -> dict[str, Any]:
    with open(HERE / f"{name}.json", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def rows(name: str, section: str, key: str = "name") -> list[Any]:
    """``pytest.param`` per row, with an id from the row's name (made unique by position)."""
    out = []
    for index, row in enumerate(load(name)[section]):
        label = str(row.get(key, row.get("op", ""))) if isinstance(row, dict) else str(index)
        out.append(pytest.param(row, id=f"{index:03d}-{label}"[:120]))
    return out


def row_versions(
    row: Mapping[str, Any], where: str, supported: Sequence[str] = SUPPORTED, component: str = "kubelet"
) -> tuple[str, ...]:
    """A row's ``versions``, checked: a non-empty list of supported versions, each once, oldest first.

    ``where`` names the row in the error (``tm_admit.json admit_cases[3]``). ``supported`` and
    ``component`` serve tables of another component (kube-scheduler's queue rows: 1.32 … 1.36).
    """
    raw = row.get("versions")
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: versions: want a non-empty list of {', '.join(supported)}, got {raw!r}")
    for version in raw:
        if version not in supported:
            raise ValueError(f"{where}: versions: {version!r} is not a supported {component} version")
    if list(raw) != sorted(set(raw), key=list(supported).index):
        raise ValueError(f"{where}: versions: {raw!r} must list each version once, oldest first")
    return tuple(raw)


def row_label(row: Any, key: str) -> str:
    if isinstance(row, dict):
        return str(row.get(key, row.get("id", row.get("name", row.get("op", "")))))
    return ""


def versioned_rows(
    name: str,
    section: str,
    key: str = "name",
    label: Callable[[int, dict[str, Any]], str] | None = None,
    supported: Sequence[str] = SUPPORTED,
    component: str = "kubelet",
) -> list[Any]:
    """``pytest.param(row, version)`` for every row of ``name``'s ``section`` and every version it holds
    for, id ``<version>-<index>-<label>``; ``label(index, row)`` overrides the default
    ``<index>-<row[key]>``. A (row, version) pair registered in ``PENDING`` is a strict xfail.
    ``supported``/``component``: the versions of another component's table (see :func:`row_versions`)."""
    out = []
    for index, row in enumerate(load(name)[section]):
        shown = label(index, row) if label is not None else f"{index:03d}-{row_label(row, key)}"
        for version in row_versions(row, f"{name}.json {section}[{index}]", supported, component):
            pending = PENDING.get((name, section, row_label(row, key), version))
            marks = (
                [pytest.mark.xfail(strict=True, reason=f"waits for behaviour {pending}")]
                if pending is not None
                else []
            )
            out.append(pytest.param(row, version, id=f"{version}-{shown}"[:140], marks=marks))
    return out


def version_kwargs(build: Callable[..., Any], version: str) -> dict[str, Any]:
    """``{"kubelet_version": version}`` when ``build`` (a manager or policy constructor) takes the emulated
    kubelet version, else ``{}``: components that do not differ between versions yet take none, and pick
    the version up here as soon as they do."""
    return {"kubelet_version": version} if "kubelet_version" in inspect.signature(build).parameters else {}
