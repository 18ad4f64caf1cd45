"""Behaviours that differ between the supported kubelet versions (issue 16), one registry for code and docs.

Each behaviour is a row of the version table in docs/kubelet-versions.md: what a 1.33 kubelet does
(``before``) and each later change with the first version that carries it and the upstream PR or KEP that
made it. The data lives in ``data/behaviours/*.json`` (one file per component, so separate areas can grow
without touching each other); the code asks :func:`in_effect` / :func:`step_at` at the emulated version,
and the documented table is generated from the same data by :func:`table_markdown` (a test keeps the two
equal), so they cannot drift.

A JSON file holds ``{"behaviours": [{"key", "component", "title", "before", "changes": [{"since",
"summary", "ref"}, ...]}, ...]}``; ``since`` is a supported minor (``"1.34"``) or ``"master"`` (after 1.37).
A row may carry a ``source`` (what was read, at which commit), which the table does not show.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from kubeletemu.versions.version import MASTER, SUPPORTED, version_order


@dataclass(frozen=True)
class Change:
    """From kubelet ``since`` on, the behaviour is ``summary``; ``ref`` made it so (``kubernetes#138244``)."""

    since: str
    summary: str
    ref: str


@dataclass(frozen=True)
class Behaviour:
    key: str
    component: str
    title: str
    before: str
    changes: tuple[Change, ...]


def _key(version: str) -> int:
    # SUPPORTED's order: master comes after 1.37 (both binary version 1.37), so a change recorded for
    # 1.37 is in master too, and one recorded for master only is not in 1.37.
    return version_order(version)


@cache
def behaviours() -> Mapping[str, Behaviour]:
    """Every registered behaviour by key, files in name order, rows in file order."""
    out: dict[str, Behaviour] = {}
    folder = resources.files("kubeletemu.versions").joinpath("data", "behaviours")
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if not entry.name.endswith(".json"):
            continue
        doc = json.loads(entry.read_text(encoding="utf-8"))
        for raw in doc["behaviours"]:
            changes = tuple(Change(c["since"], c["summary"], c["ref"]) for c in raw["changes"])
            for change in changes:
                if change.since not in SUPPORTED:
                    raise ValueError(f"{entry.name}: {raw['key']}: since {change.since!r} is not supported")
            if [_key(c.since) for c in changes] != sorted(_key(c.since) for c in changes):
                raise ValueError(f"{entry.name}: {raw['key']}: changes out of version order")
            if raw["key"] in out:
                raise ValueError(f"{entry.name}: {raw['key']} registered twice")
            out[raw["key"]] = Behaviour(raw["key"], raw["component"], raw["title"], raw["before"], changes)
    return out


def step_at(key: str, version: str = MASTER) -> int:
    """How many of ``key``'s changes a kubelet of ``version`` carries (0 = the 1.33 behaviour).

    Raises ``KeyError`` for an unregistered behaviour and ``ValueError`` for an unsupported version.
    """
    emulated = _key(version)
    return sum(1 for change in behaviours()[key].changes if _key(change.since) <= emulated)


def in_effect(key: str, version: str = MASTER) -> bool:
    """Whether the kubelet of ``version`` has ``key``'s newest change (behaviours with one change: the
    usual question "does this version do the new thing?")."""
    return step_at(key, version) == len(behaviours()[key].changes)


def table_markdown(versions: Sequence[str] = SUPPORTED) -> str:
    """The version table (docs/kubelet-versions.md): a row per behaviour, a column per version; a cell
    names the behaviour in effect, and where a change lands in that version, the change's reference. The
    registered behaviours come first, then the rows derived from the policy options' maturity and the
    feature gates (:mod:`kubeletemu.versions.derived_rows`)."""
    header = "| behaviour | " + " | ".join(versions) + " |"
    rule = "| --- |" + " --- |" * len(versions)
    rows = [header, rule]
    for behaviour in behaviours().values():
        cells = []
        for version in versions:
            step = step_at(behaviour.key, version)
            if step == 0:
                cells.append(behaviour.before)
                continue
            change = behaviour.changes[step - 1]
            landed = _key(change.since) == _key(version)
            cells.append(f"{change.summary} ({change.ref})" if landed else change.summary)
        rows.append(f"| {behaviour.component}: {behaviour.title} | " + " | ".join(cells) + " |")
    # Policy options' maturity and feature gates, computed from their own tables (no fact twice).
    from kubeletemu.versions.derived_rows import derived_rows

    for row in derived_rows(versions):
        rows.append(f"| {row.label} | " + " | ".join(row.cells) + " |")
    return "\n".join(rows) + "\n"
