"""scheduler-plugins' filter_test.go tables (903da7d) against the NodeResourceTopologyMatch Filter."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo, Status
from kubeletemu.scheduler.nrtmatch import NodeResourceTopologyMatch
from tests.conformance.loader import load, rows
from tests.scheduler.nrtmatch.literal import api_pod, literal_pod, node, topology

TABLE = "nrt_filter"
MODEL = NodeResourceTopologyMatch()


def _verdict(pod: Pod, fixture: dict[str, Any]) -> Status:
    nrt = topology(fixture["topology"])
    info = NodeInfo(nrt.name, node(fixture["node"]), nrt)
    return MODEL.filter(pod, info)


def _check(status: Status, want: dict[str, Any]) -> None:
    assert status.code == want["code"]
    # quasiEqualStatus: the message starts with the expected one.
    assert status.message.startswith(want.get("message", ""))
    if want["code"] == "Unschedulable":
        assert status.message == want["message"]


@pytest.mark.parametrize("row", rows(TABLE, "rows"))
def test_filter_row(row: dict[str, Any]) -> None:
    fixture = load(TABLE)["fixtures"][row["node"]]
    _check(_verdict(literal_pod(row["pod"]), fixture), row["want"])
    from_api = api_pod(row["pod"])
    if from_api is not None:
        _check(_verdict(from_api, fixture), row["want"])


def test_table_covers_the_upstream_functions() -> None:
    table = load(TABLE)
    assert table["source"]["commit"] == "903da7df82cb8794dda8f2d510ba1156111662dd"
    counts = Counter(row["upstream"]["test"] for row in table["rows"])
    assert counts == {
        "TestNodeResourceTopology": 49,
        "TestNodeResourceTopologyMultiContainerPodScope": 5,
        "TestNodeResourceTopologyMultiContainerContainerScope": 17,
    }
