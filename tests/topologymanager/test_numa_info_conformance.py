"""numa_info.json: NewNUMAInfo, CalculateAverageFor, Closest."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.topologymanager import NUMAInfo, NUMAInfoError
from tests.conformance.loader import versioned_rows
from tests.topologymanager.codec import numa_info


@pytest.mark.parametrize(("row", "version"), versioned_rows("numa_info", "new_numa_info_cases"))
def test_new_numa_info(row: dict[str, Any], version: str) -> None:
    topology = [(n["id"], n["distances"]) for n in row["topology"] or []]
    prefer_closest = row["options"].get("prefer-closest-numa-nodes", False)
    expected = row["expected"]
    if "error" in expected:
        with pytest.raises(NUMAInfoError, match=expected["error"]):
            NUMAInfo.from_topology(topology, prefer_closest)
        return
    info = NUMAInfo.from_topology(topology, prefer_closest)
    assert list(info.nodes) == expected["nodes"]
    got = {str(k): (list(v) if v is not None else None) for k, v in info.distances.items()}
    assert got == expected["distances"]


@pytest.mark.parametrize(
    ("row", "version"),
    versioned_rows("numa_info", "average_distance_cases") + versioned_rows("numa_info", "derived_cases"),
)
def test_average_distance_and_derived(row: dict[str, Any], version: str) -> None:
    nodes = sorted(int(k) for k in row["distances"])
    info = numa_info(nodes, row["distances"])
    if "expected_avg" in row:
        assert info.average_distance(BitMask.of(*row["mask"])) == pytest.approx(
            row["expected_avg"], abs=1e-12
        )
    else:
        chosen = info.closest(BitMask.of(*row["m1"]), BitMask.of(*row["m2"]))
        assert chosen == BitMask.of(*row["expected"])


def _check_closest(info: NUMAInfo, row: dict[str, Any]) -> None:
    current, candidate = BitMask.of(*row["current"]), BitMask.of(*row["candidate"])
    assert row["call"] == "Closest(candidate, current)"
    chosen = info.closest(candidate, current)
    assert chosen == (current if row["expected"] == "current" else candidate)


@pytest.mark.parametrize(("row", "version"), versioned_rows("numa_info", "closest_cases"))
def test_closest(row: dict[str, Any], version: str) -> None:
    distances = row["distances"]
    nodes = sorted(int(k) for k in distances) if distances else [0, 1, 2, 3]
    _check_closest(numa_info(nodes, distances), row)
