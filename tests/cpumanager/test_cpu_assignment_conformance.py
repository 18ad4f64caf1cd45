"""``cpu_assignment.json``: takeByTopologyNUMAPacked / NUMADistributed and the accumulator orderings.

Every row runs: 62 allocation cases (expected CPU set or the kubelet's exact error text) and 44
accumulator cases (``freeSockets`` / ``freeNUMANodes`` / ``freeCores`` / ``freeCPUs``, compared in order
unless the row says the Go test sorted the result).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.cpumanager import (
    CPUAccumulator,
    CPUAllocationError,
    take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
)
from tests.conformance.loader import load, versioned_rows
from tests.cpumanager.helpers import conformance_topology

FILE = "cpu_assignment"
DATA = load(FILE)


def _case_params() -> list[Any]:
    return versioned_rows(FILE, "cases", key="id", label=lambda _, row: f"{row['id']}-{row['description']}")


def _accumulator_params() -> list[Any]:
    return versioned_rows(
        FILE,
        "accumulator_cases",
        key="description",
        label=lambda index, row: f"{index:02d}-{row['function']}-{row['description']}",
    )


def test_table_sizes() -> None:
    # The README's counts: every row is collected below.
    assert len(DATA["cases"]) == 62
    assert len(DATA["accumulator_cases"]) == 44


@pytest.mark.parametrize(("row", "version"), _case_params())
def test_take_by_topology(row: dict[str, Any], version: str) -> None:
    topo = conformance_topology(FILE, row["topology"])
    expected = row["expected"]
    try:
        if row["function"] == "takeByTopologyNUMAPacked":
            got = take_by_topology_numa_packed(
                topo,
                row["available"],
                row["num_cpus"],
                row["cpu_sorting_strategy"],
                row["prefer_align_by_uncore_cache"],
            )
        else:
            assert row["function"] == "takeByTopologyNUMADistributed"
            got = take_by_topology_numa_distributed(
                topo,
                row["available"],
                row["num_cpus"],
                row["cpu_group_size"],
                row["cpu_sorting_strategy"],
                row["align_by_socket"],
            )
    except CPUAllocationError as err:
        assert "error" in expected, f"unexpected error {err}"
        assert str(err) == expected["error"]
        return
    assert "cpus" in expected, f"expected the error {expected.get('error')!r}, got {got}"
    assert got == expected["cpus"]


@pytest.mark.parametrize(("row", "version"), _accumulator_params())
def test_accumulator_orderings(row: dict[str, Any], version: str) -> None:
    topo = conformance_topology(FILE, row["topology"])
    acc = CPUAccumulator(topo, row["available"], row["num_cpus"], row["cpu_sorting_strategy"])
    function = row["function"]
    if function == "freeSockets+freeNUMANodes":
        got: Any = {"free_sockets": acc.free_sockets(), "free_numa_nodes": acc.free_numa_nodes()}
    else:
        got = {
            "freeSockets": acc.free_sockets,
            "freeNUMANodes": acc.free_numa_nodes,
            "freeCores": acc.free_cores,
            "freeCPUs": acc.free_cpus,
        }[function]()
        if row["compare"].startswith("sorted"):
            got = sorted(got)
        else:
            assert row["compare"] == "exact order"
    assert got == row["expected"]
