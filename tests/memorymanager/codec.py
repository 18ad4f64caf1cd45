"""Decodes ``memory_hints.json`` rows (sizes in bytes, checkpoint field names) into engine objects."""

from __future__ import annotations

from typing import Any

from kubeletemu.bitmask import BitMask
from kubeletemu.memorymanager.state import Block, MemoryTable, NUMANodeState
from kubeletemu.memorymanager.state.state import ContainerMemoryAssignments, NUMANodeMap
from kubeletemu.pod import Container, Pod, ResourceRequirements
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import TopologyHint


def resources(raw: dict[str, Any] | None) -> dict[str, Quantity]:
    return {name: Quantity.parse(value) for name, value in (raw or {}).items()}


def container(raw: dict[str, Any]) -> Container:
    requests = resources(raw.get("requests"))
    limits = resources(raw.get("limits"))
    return Container(
        raw.get("name", ""),
        requests=requests or limits,
        limits=limits,
        restart_policy=raw.get("restart_policy"),
    )


def pod(raw: dict[str, Any]) -> Pod:
    pod_level = raw.get("resources")
    return Pod(
        name=raw.get("uid", "pod"),
        namespace="default",
        uid=raw.get("uid", "pod"),
        containers=tuple(container(c) for c in raw.get("containers", [])),
        init_containers=tuple(container(c) for c in raw.get("init_containers", [])),
        # spec.resources (pod-level resources), when the row sets it.
        resources=None
        if pod_level is None
        else ResourceRequirements(resources(pod_level.get("requests")), resources(pod_level.get("limits"))),
    )


def machine_state(raw: dict[str, Any]) -> NUMANodeMap:
    out: NUMANodeMap = {}
    for node_id, node in raw.items():
        tables = {
            name: MemoryTable(t["total"], t["systemReserved"], t["allocatable"], t["reserved"], t["free"])
            for name, t in node["memoryMap"].items()
        }
        out[int(node_id)] = NUMANodeState(node["numberOfAssignments"], tables, list(node["cells"]))
    return out


def assignments(raw: dict[str, Any]) -> ContainerMemoryAssignments:
    return {
        pod_uid: {
            name: [Block(tuple(b["numaAffinity"]), b["type"], b["size"]) for b in blocks]
            for name, blocks in ctrs.items()
        }
        for pod_uid, ctrs in raw.items()
    }


def hints(raw: dict[str, Any] | None) -> dict[str, list[TopologyHint]] | None:
    if raw is None:
        return None
    return {
        name: [TopologyHint(BitMask.of(*h["numa_affinity"]), h["preferred"]) for h in hs]
        for name, hs in raw.items()
    }
