"""Decodes the conformance JSON encoding of masks, hints and provider maps (tests/conformance/README)."""

from __future__ import annotations

from typing import Any

from kubeletemu.bitmask import BitMask
from kubeletemu.topologymanager import NUMAInfo, ProviderHints, TopologyHint


def mask(bits: list[int] | None) -> BitMask | None:
    return None if bits is None else BitMask.of(*bits)


def hint(raw: dict[str, Any]) -> TopologyHint:
    return TopologyHint(mask(raw["affinity"]), raw["preferred"])


def hint_list(raw: list[dict[str, Any]] | None) -> list[TopologyHint] | None:
    return None if raw is None else [hint(h) for h in raw]


def providers(raw: list[dict[str, Any] | None]) -> list[ProviderHints]:
    return [None if p is None else {res: hint_list(hs) for res, hs in p.items()} for p in raw]


def encode(h: TopologyHint) -> dict[str, Any]:
    return {"affinity": None if h.affinity is None else h.affinity.bits(), "preferred": h.preferred}


def numa_info(nodes: list[int] | None, distances: dict[str, list[int]] | None) -> NUMAInfo:
    return NUMAInfo(nodes or [], {int(k): v for k, v in (distances or {}).items()})
