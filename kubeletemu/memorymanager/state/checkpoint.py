"""The ``memory_manager_state`` checkpoint (``memorymanager/state/checkpoint.go``).

JSON: ``{"policyName", "machineState": {id: {numberOfAssignments, memoryMap: {res: {total, systemReserved,
allocatable, reserved, free}}, cells}}, "entries": {pod: {ctr: [{numaAffinity, type, size}]}},
"podEntries"?, "checksum"}``. The checksum is FNV-32a of the go-spew dump of the checkpoint struct with
checksum 0. Two struct layouts exist: the classic one (policyName, machineState, entries, checksum) and the
``PodLevelResourceManagers`` one with ``PodEntries``. ``unmarshal`` here is the version-free reader (either
layout verifies, a zero checksum is accepted); what each kubelet version accepts exactly is
``formats.MemoryCheckpointFormat.unmarshal``.

Nil and empty collections dump differently (``<nil>`` vs ``map[]``), so the dump is built from the JSON
as parsed (null stays nil; a missing ``entries`` is the empty map the kubelet pre-allocates).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.checkpointmanager import checksum as gd
from kubeletemu.cpumanager.state.checkpoint import go_json_string
from kubeletemu.cpumanager.state.formats import data_checksum
from kubeletemu.memorymanager.state.state import (
    Block,
    ContainerMemoryAssignments,
    MemoryTable,
    NUMANodeMap,
    NUMANodeState,
)

LAYOUT_CLASSIC = "classic"
LAYOUT_POD_ENTRIES = "pod-entries"

_U64 = 2**64


class CheckpointError(ValueError):
    """A checkpoint that cannot be read: bad JSON, wrong types, or a checksum mismatch."""


class CorruptCheckpointError(CheckpointError):
    def __init__(self, expected: int, actual: int) -> None:
        super().__init__("checkpoint is corrupted")
        self.expected = expected
        self.actual = actual


@dataclass
class MemoryManagerCheckpoint:
    policy_name: str = ""
    machine_state: NUMANodeMap = field(default_factory=dict)
    entries: ContainerMemoryAssignments = field(default_factory=dict)
    # pod UID -> pod-level blocks (PodLevelResourceManagers); None when the file has no podEntries.
    pod_entries: dict[str, list[Block]] | None = None
    checksum: int = 0


# ---- raw (JSON-shaped) <-> dump -------------------------------------------------------------------


def _table_dump(raw: Mapping[str, Any]) -> str:
    return gd.struct(
        gd.field("TotalMemSize", "uint64", str(raw.get("total", 0))),
        gd.field("SystemReserved", "uint64", str(raw.get("systemReserved", 0))),
        gd.field("Allocatable", "uint64", str(raw.get("allocatable", 0))),
        gd.field("Reserved", "uint64", str(raw.get("reserved", 0))),
        gd.field("Free", "uint64", str(raw.get("free", 0))),
    )


def _node_dump(raw: Mapping[str, Any]) -> str:
    memory_map = raw.get("memoryMap")
    return gd.struct(
        gd.field("NumberOfAssignments", "int", str(raw.get("numberOfAssignments", 0))),
        gd.field(
            "MemoryMap",
            "map[v1.ResourceName]*state.MemoryTable",
            gd.go_map(memory_map, lambda t: gd.pointer_in_container(t, _table_dump)),
        ),
        gd.field("Cells", "[]int", gd.go_slice(raw.get("cells"))),
    )


def _block_dump(raw: Mapping[str, Any]) -> str:
    return gd.struct(
        gd.field("NUMAAffinity", "[]int", gd.go_slice(raw.get("numaAffinity"))),
        gd.field("Type", "v1.ResourceName", str(raw.get("type", ""))),
        gd.field("Size", "uint64", str(raw.get("size", 0))),
    )


def _blocks_dump(raw: list[Any] | None) -> str:
    return gd.go_slice(raw, _block_dump)


def checkpoint_dump(raw: Mapping[str, Any], layout: str, type_name: str = "MemoryManagerCheckpoint") -> str:
    """The ``dump.ForHash`` text of the checkpoint struct (checksum field 0), the struct named
    ``type_name`` (1.36's ``checksum.Verify`` of a ``MemoryManagerCheckpointV1`` dumps that name)."""
    machine = raw.get("machineState")
    fields = [
        gd.field("PolicyName", "string", str(raw.get("policyName", ""))),
        gd.field(
            "MachineState",
            "state.NUMANodeMap",
            gd.go_map(machine, lambda n: gd.pointer_in_container(n, _node_dump), sort_key=int),
        ),
        gd.field(
            "Entries",
            "state.ContainerMemoryAssignments",
            gd.go_map(raw.get("entries"), lambda ctrs: gd.go_map(ctrs, _blocks_dump)),
        ),
    ]
    if layout == LAYOUT_POD_ENTRIES:
        fields.append(
            gd.field(
                "PodEntries",
                "state.PodMemoryAssignments",
                gd.go_map(
                    raw.get("podEntries"),
                    lambda e: gd.struct(
                        gd.field("MemoryBlocks", "[]state.Block", _blocks_dump(e.get("memoryBlocks")))
                    ),
                ),
            )
        )
    fields.append(gd.field("Checksum", "checksum.Checksum", "0"))
    return f"(*state.{type_name})" + gd.struct(*fields)


def compute_checksum(
    raw: Mapping[str, Any], layout: str = LAYOUT_CLASSIC, type_name: str = "MemoryManagerCheckpoint"
) -> int:
    return gd.checksum_of(checkpoint_dump(raw, layout, type_name))


# ---- JSON parsing with Go's leniency (case-insensitive keys, null = nil) ---------------------------


def _lookup(obj: Mapping[str, Any], name: str) -> tuple[bool, Any]:
    """encoding/json matches field names case-insensitively; the last match wins."""
    found, value = False, None
    for key, val in obj.items():
        if key.lower() == name.lower():
            found, value = True, val
    return found, value


def _expect_obj(value: Any, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CheckpointError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _uint(value: Any, where: str, bits: int = 64, signed: bool = False) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise CheckpointError(f"{where}: expected an integer, got {value!r}")
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1)) if signed else (0, 2**bits)
    if not low <= value < high:
        raise CheckpointError(f"{where}: {value} out of range")
    return value


def _int_list(value: Any, where: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise CheckpointError(f"{where}: expected a list, got {type(value).__name__}")
    return [_uint(v, where, signed=True) for v in value]


def _normalise_table(value: Any, where: str) -> dict[str, int] | None:
    obj = _expect_obj(value, where)
    if obj is None:
        return None
    out = {}
    for name in ("total", "systemReserved", "allocatable", "reserved", "free"):
        out[name] = _uint(_lookup(obj, name)[1], f"{where}.{name}")
    return out


def _normalise_blocks(value: Any, where: str) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise CheckpointError(f"{where}: expected a list of blocks")
    blocks = []
    for i, item in enumerate(value):
        obj = _expect_obj(item, f"{where}[{i}]") or {}
        kind = _lookup(obj, "type")[1]
        if kind is not None and not isinstance(kind, str):
            raise CheckpointError(f"{where}[{i}].type: expected a string")
        blocks.append(
            {
                "numaAffinity": _int_list(_lookup(obj, "numaAffinity")[1], f"{where}[{i}].numaAffinity"),
                "type": kind or "",
                "size": _uint(_lookup(obj, "size")[1], f"{where}[{i}].size"),
            }
        )
    return blocks


def normalise(document: Any) -> dict[str, Any]:
    """The checkpoint as Go would hold it after ``json.Unmarshal`` into a fresh checkpoint struct."""
    top = _expect_obj(document, "checkpoint")
    if top is None:
        raise CheckpointError("checkpoint: expected a JSON object, got null")
    raw: dict[str, Any] = {}
    found, policy = _lookup(top, "policyName")
    if policy is not None and not isinstance(policy, str):
        raise CheckpointError("policyName: expected a string")
    raw["policyName"] = policy or ""

    found, machine = _lookup(top, "machineState")
    if not found:
        raw["machineState"] = {}
    else:
        machine_obj = _expect_obj(machine, "machineState")
        if machine_obj is None:
            raw["machineState"] = None
        else:
            nodes: dict[str, Any] = {}
            for key, node in machine_obj.items():
                try:
                    int(key)
                except ValueError:
                    raise CheckpointError(f"machineState: NUMA id {key!r} is not an integer") from None
                where = f"machineState[{key}]"
                node_obj = _expect_obj(node, where)
                if node_obj is None:
                    nodes[key] = None
                    continue
                mm = _expect_obj(_lookup(node_obj, "memoryMap")[1], f"{where}.memoryMap")
                nodes[key] = {
                    "numberOfAssignments": _uint(
                        _lookup(node_obj, "numberOfAssignments")[1],
                        f"{where}.numberOfAssignments",
                        signed=True,
                    ),
                    "memoryMap": None
                    if mm is None
                    else {r: _normalise_table(t, f"{where}.memoryMap[{r}]") for r, t in mm.items()},
                    "cells": _int_list(_lookup(node_obj, "cells")[1], f"{where}.cells"),
                }
            raw["machineState"] = nodes

    found, entries = _lookup(top, "entries")
    if not found:
        raw["entries"] = {}
    else:
        entries_obj = _expect_obj(entries, "entries")
        if entries_obj is None:
            raw["entries"] = None
        else:
            raw["entries"] = {
                pod: None
                if (ctrs := _expect_obj(c, f"entries[{pod}]")) is None
                else {name: _normalise_blocks(b, f"entries[{pod}][{name}]") for name, b in ctrs.items()}
                for pod, c in entries_obj.items()
            }

    found, pod_entries = _lookup(top, "podEntries")
    if not found:
        raw["podEntries"] = {}
    else:
        pe_obj = _expect_obj(pod_entries, "podEntries")
        raw["podEntries"] = (
            None
            if pe_obj is None
            else {
                pod: {
                    "memoryBlocks": _normalise_blocks(
                        _lookup(_expect_obj(e, f"podEntries[{pod}]") or {}, "memoryBlocks")[1],
                        f"podEntries[{pod}].memoryBlocks",
                    )
                }
                for pod, e in pe_obj.items()
            }
        )
    raw["checksum"] = _uint(_lookup(top, "checksum")[1], "checksum", bits=64)
    return raw


def verify_checksum(raw: Mapping[str, Any]) -> None:
    """Accept 0 (legacy files), else the classic layout, else the pod-entries layout."""
    expected = raw["checksum"]
    if expected == 0:
        return
    classic = compute_checksum(raw, LAYOUT_CLASSIC)
    if classic == expected or compute_checksum(raw, LAYOUT_POD_ENTRIES) == expected:
        return
    raise CorruptCheckpointError(expected, classic)


def _to_blocks(raw: list[dict[str, Any]] | None) -> list[Block]:
    return [Block(tuple(b["numaAffinity"] or ()), b["type"], b["size"]) for b in raw or []]


def from_raw(raw: Mapping[str, Any]) -> MemoryManagerCheckpoint:
    machine: NUMANodeMap = {}
    for key, node in (raw["machineState"] or {}).items():
        if node is None:
            raise CheckpointError(f"machineState[{key}]: null NUMA node state")
        memory_map = {}
        for name, table in (node["memoryMap"] or {}).items():
            if table is None:
                raise CheckpointError(f"machineState[{key}].memoryMap[{name}]: null memory table")
            memory_map[name] = MemoryTable(
                table["total"],
                table["systemReserved"],
                table["allocatable"],
                table["reserved"],
                table["free"],
            )
        machine[int(key)] = NUMANodeState(node["numberOfAssignments"], memory_map, list(node["cells"] or []))
    entries: ContainerMemoryAssignments = {}
    for pod, ctrs in (raw["entries"] or {}).items():
        entries[pod] = {name: _to_blocks(blocks) for name, blocks in (ctrs or {}).items()}
    pod_entries = raw.get("podEntries")
    return MemoryManagerCheckpoint(
        policy_name=raw["policyName"],
        machine_state=machine,
        entries=entries,
        pod_entries=None
        if not pod_entries
        else {pod: _to_blocks(e["memoryBlocks"]) for pod, e in pod_entries.items()},
        checksum=raw["checksum"],
    )


def unmarshal(blob: bytes | str, verify: bool = True) -> MemoryManagerCheckpoint:
    """``GetCheckpoint``: parse, then verify the checksum as the kubelet does."""
    try:
        document = json.loads(blob)
    except (ValueError, UnicodeDecodeError) as err:
        raise CheckpointError(f"invalid JSON in memory manager checkpoint: {err}") from None
    raw = normalise(document)
    if verify:
        verify_checksum(raw)
    return from_raw(raw)


# ---- writing --------------------------------------------------------------------------------------


def _blocks_raw(blocks: list[Block]) -> list[dict[str, Any]]:
    return [{"numaAffinity": list(b.numa_affinity), "type": b.type, "size": b.size} for b in blocks]


def to_raw(cp: MemoryManagerCheckpoint, layout: str = LAYOUT_CLASSIC) -> dict[str, Any]:
    """JSON-shaped dict in Go's field and key order (map keys sorted as strings, like encoding/json)."""
    machine: dict[str, Any] = {}
    for node_id in sorted(cp.machine_state, key=str):
        node = cp.machine_state[node_id]
        machine[str(node_id)] = {
            "numberOfAssignments": node.number_of_assignments,
            "memoryMap": {
                name: {
                    "total": t.total,
                    "systemReserved": t.system_reserved,
                    "allocatable": t.allocatable,
                    "reserved": t.reserved,
                    "free": t.free,
                }
                for name, t in sorted(node.memory_map.items())
            },
            "cells": list(node.cells),
        }
    raw: dict[str, Any] = {"policyName": cp.policy_name, "machineState": machine}
    entries = {
        pod: {name: _blocks_raw(blocks) for name, blocks in sorted(ctrs.items())}
        for pod, ctrs in sorted(cp.entries.items())
    }
    raw["entries"] = entries
    if layout == LAYOUT_POD_ENTRIES:
        raw["podEntries"] = {
            pod: {"memoryBlocks": _blocks_raw(blocks)}
            for pod, blocks in sorted((cp.pod_entries or {}).items())
        }
    raw["checksum"] = 0
    return raw


def _go_json(raw: Mapping[str, Any]) -> str:
    """``json.Marshal`` of the struct ``raw`` mirrors: compact, ``entries``, ``podEntries`` and a pod entry's
    ``memoryBlocks`` omitted when empty (``omitempty``; the checksum's dump still has the empty slice),
    HTML-significant characters escaped as encoding/json does."""
    out = {k: v for k, v in raw.items() if not (k in ("entries", "podEntries") and not v)}
    if "podEntries" in out:
        out["podEntries"] = {
            pod: {k: v for k, v in entry.items() if v} for pod, entry in out["podEntries"].items()
        }
    text = json.dumps(out, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def marshal(cp: MemoryManagerCheckpoint, layout: str = LAYOUT_CLASSIC) -> bytes:
    """``MarshalCheckpoint``: checksum over the struct, then compact JSON (empty maps omitted)."""
    raw = to_raw(cp, layout)
    raw["checksum"] = compute_checksum(raw, layout)
    cp.checksum = raw["checksum"]
    return _go_json(raw).encode("utf-8")


def v3_data(cp: MemoryManagerCheckpoint, with_pod_entries: bool) -> str:
    """V3's ``data``: ``json.Marshal(MemoryManagerCheckpointData)`` (policyName, machineState, entries and
    podEntries, both ``omitempty``); ``podEntries`` only when the kubelet stores them (the
    ``PodLevelResourceManagers`` gate, ``storeState``)."""
    raw = to_raw(cp, LAYOUT_POD_ENTRIES if with_pod_entries else LAYOUT_CLASSIC)
    del raw["checksum"]  # not a field of MemoryManagerCheckpointData
    return _go_json(raw)


def marshal_v3(cp: MemoryManagerCheckpoint, with_pod_entries: bool) -> bytes:
    """1.37's ``MemoryManagerCheckpointV3.MarshalCheckpoint`` (k8s.io/kubernetes v1.37.2
    ``memorymanager/state/checkpoint.go``, kubernetes#139626): the embedded V1 first — policyName,
    machineState, entries and its checksum over the dump under the legacy name
    ``MemoryManagerCheckpoint``, byte for byte what 1.35 writes — then ``data`` (the JSON of the data as
    a string) and ``dataChecksum`` (``checksum.New(data)``: FNV-32a of ``(string)`` and the data)."""
    data = v3_data(cp, with_pod_entries)
    v1 = marshal(cp, LAYOUT_CLASSIC)
    tail = f',"data":{go_json_string(data)},"dataChecksum":{data_checksum(data)}}}'
    return v1[:-1] + tail.encode("utf-8")
