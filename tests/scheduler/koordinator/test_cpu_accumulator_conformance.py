"""koord_cpu_accumulator.json: the CPU accumulator (nodenumaresource/cpu_accumulator_test.go: the takeCPUs
tables, TestCPUSpreadByPCPUs*, the reference-count sequences and TestTakePreferredCPUs)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.scheduler.koordinator.allocation import NodeAllocation, PodAllocation
from kubeletemu.scheduler.koordinator.cpu_accumulator import (
    AccumulatorError,
    CPUAccumulator,
    take_cpus,
    take_preferred_cpus,
)
from kubeletemu.scheduler.koordinator.cpu_topology import CPUInfo, CPUTopology, cpu_topology_for_test
from tests.conformance.loader import load, rows

TABLE = "koord_cpu_accumulator"
SECTIONS = ("takeCPUs", "spreadCPUs", "refCountSequences", "takePreferredCPUs")


def _cpuset(text: str) -> CPUSet:
    """``cpuset.MustParse`` / ``NewCPUSet`` as written upstream ("" = empty)."""
    return CPUSet.parse(text) if text else CPUSet()


def _topology(row: dict[str, Any]) -> CPUTopology:
    topology = cpu_topology_for_test(*row["topology"])
    if row.get("coreIDSocketShift"):
        details = {c: replace(i, core=i.socket << 16 | i.core) for c, i in topology.details.items()}
        topology = replace(topology, details=details)
    return topology


def _take(row: dict[str, Any], available: CPUSet, allocated: dict[int, CPUInfo]) -> CPUSet | None:
    """``takeCPUs`` with the row's arguments; None when it errs."""
    try:
        return take_cpus(
            _topology(row),
            row["maxRefCount"],
            available,
            allocated,
            row["numCPUsNeeded"],
            row["bindPolicy"],
            row["exclusivePolicy"],
            row["strategy"],
        )
    except AccumulatorError:
        return None


def test_source_lists_every_row() -> None:
    """The ``source.tests`` block names exactly the test functions of the rows, section by section."""
    data = load(TABLE)
    for section in SECTIONS:
        named = {r["upstream"]["test"] for r in data[section]}
        assert named == set(data["source"]["tests"][section]), section
    counts = Counter(r["upstream"]["test"] for s in SECTIONS for r in data[s])
    assert counts["TestTakeFullPCPUs"] == 11
    assert counts["TestTakeFullPCPUsWithNUMALeastAllocated"] == 11
    assert counts["TestTakeSpreadByPCPUs"] == 4
    assert counts["TestTakeSpreadByPCPUsWithNUMALeastAllocated"] == 4
    assert counts["TestTakeCPUsWithExclusivePolicy"] == 8


@pytest.mark.parametrize("row", rows(TABLE, "takeCPUs"))
def test_take_cpus(row: dict[str, Any]) -> None:
    topology = _topology(row)
    held = _cpuset(row["allocatedCPUs"])
    available = topology.cpus().difference(held)
    allocated = {c: topology.details[c] for c in held}
    if row["allocatedExclusivePolicy"]:
        allocated = {
            c: replace(i, exclusive_policy=row["allocatedExclusivePolicy"]) for c, i in allocated.items()
        }
    got = _take(row, available, allocated)
    assert (got is None) == row["wantError"]
    # Upstream compares the result even on error (an empty set then).
    assert (got or CPUSet()) == _cpuset(row["wantResult"])


@pytest.mark.parametrize("row", rows(TABLE, "spreadCPUs"))
def test_spread_cpus(row: dict[str, Any]) -> None:
    topology = _topology(row)
    assert row["available"] == "all" and row["allocated"] is None
    acc = CPUAccumulator(
        topology,
        row["maxRefCount"],
        topology.cpus(),
        {},
        row["numCPUsNeeded"],
        row["exclusivePolicy"],
        row["strategy"],
    )
    assert acc.spread_cpus(acc.free_cpus(row["filterExclusive"])) == row["want"]


@pytest.mark.parametrize("row", rows(TABLE, "refCountSequences"))
def test_ref_count_sequence(row: dict[str, Any]) -> None:
    topology = _topology(row)
    state = NodeAllocation()
    reserved, preferred = _cpuset(row["reserved"]), _cpuset(row["preferred"])
    for index, step in enumerate(row["steps"]):
        available, allocated = state.available_cpus(topology, row["maxRefCount"], reserved, preferred)
        got = _take({**row, **step}, available, allocated)
        assert got == _cpuset(step["wantResult"]), step["comment"]
        state.add(
            PodAllocation(uid=f"pod-{index}", cpuset=got, exclusive_policy=row["addExclusivePolicy"]),
            topology,
        )
    if row["wantFinalAvailable"] is not None:
        available, _ = state.available_cpus(topology, row["maxRefCount"], reserved, preferred)
        assert available == _cpuset(row["wantFinalAvailable"])


@pytest.mark.parametrize("row", rows(TABLE, "takePreferredCPUs"))
def test_take_preferred_cpus(row: dict[str, Any]) -> None:
    topology = _topology(row)
    assert row["allocated"] is None
    previous = CPUSet()
    for step in row["steps"]:
        available = topology.cpus()
        if step["available"] == "all-minus-previous":
            available = available.difference(previous)
        else:
            assert step["available"] == "all"
        args = (row["numCPUsNeeded"], row["bindPolicy"], row["exclusivePolicy"], row["strategy"])
        if step["call"] == "takeCPUs":
            got = take_cpus(topology, row["maxRefCount"], available, {}, *args)
        else:
            assert step["call"] == "takePreferredCPUs"
            preferred = _cpuset(step["preferred"])
            got = take_preferred_cpus(topology, row["maxRefCount"], available, preferred, {}, *args)
        assert got.list() == step["want"], step
        previous = got
