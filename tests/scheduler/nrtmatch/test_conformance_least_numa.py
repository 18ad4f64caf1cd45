"""scheduler-plugins' least_numa_test.go tables (903da7d) against the LeastNUMANodes strategy."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubeletemu.pod import QOSClass
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.nrtmatch.least_numa import (
    float32,
    min_average_distance,
    normalize_score,
    numa_nodes_required,
)
from kubeletemu.scheduler.nrtmatch.numanodes import NUMANode, numa_node_list
from tests.conformance.loader import load, rows
from tests.scheduler.nrtmatch.literal import topology

TABLE = "nrt_least_numa"


def _nodes(zones: list[dict[str, Any]]) -> list[NUMANode]:
    manifest = {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": "node"},
        "zones": zones,
    }
    return numa_node_list(topology(manifest).zones)


@pytest.mark.parametrize("row", rows(TABLE, "rows"))
def test_numa_nodes_required(row: dict[str, Any]) -> None:
    nodes = _nodes(row["zones"])
    assert [n.numa_id for n in nodes] == [int(z["name"].removeprefix("node-")) for z in row["zones"]]
    request = {name: Quantity.parse(value).amount for name, value in row["request"].items()}
    mask, minimal = numa_nodes_required(QOSClass(row["qos"]), nodes, request)
    assert (None if mask is None else mask.bits()) == row["want_numa_nodes"]
    assert minimal is row["want_min_distance"]


@pytest.mark.parametrize("row", rows(TABLE, "normalize_score"))
def test_normalize_score(row: dict[str, Any]) -> None:
    score = normalize_score(row["numa_nodes"], row["optimal_distance"], row["max_numa_nodes"])
    assert score == row["want_score"]


@pytest.mark.parametrize("row", rows(TABLE, "min_distance"))
def test_min_distance(row: dict[str, Any]) -> None:
    distance = min_average_distance(_nodes(row["zones"]), row["combinations"])
    assert distance == float32(Fraction(row["want_float32"]))


def test_table_covers_the_upstream_functions() -> None:
    table = load(TABLE)
    assert table["source"]["commit"] == "903da7df82cb8794dda8f2d510ba1156111662dd"
    assert [len(table[section]) for section in ("rows", "normalize_score", "min_distance")] == [10, 6, 4]
