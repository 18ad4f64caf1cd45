"""scheduler-plugins' score_test.go tables (903da7d) against the NodeResourceTopologyMatch Score."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.nrtmatch import NodeResourceTopologyMatch, parse_args
from tests.conformance.loader import load, rows
from tests.scheduler.nrtmatch.literal import api_pod, literal_pod, node, topology

TABLE = "nrt_score"


def _scores(row: dict[str, Any], pod: Pod) -> dict[str, int]:
    model = NodeResourceTopologyMatch(parse_args({"scoringStrategy": {"type": row["strategy"]}}))
    published = row["with_topology"]
    scores = {}
    for fixture in load(TABLE)["fixtures"][row["nodes"]]:
        nrt = topology(fixture["topology"])
        kept = nrt if published is None or nrt.name in published else None
        scores[nrt.name] = model.score(pod, NodeInfo(nrt.name, node(fixture["node"]), kept))
    return scores


def _check(row: dict[str, Any], scores: dict[str, int]) -> None:
    if "want_scores" in row:
        assert scores == row["want_scores"]
        return
    want = row["want_best"]
    if not want:
        # "a node without NRT data available should always have score == 0"
        assert set(scores.values()) == {0}
        return
    ((best, score),) = want.items()
    assert scores[best] == score
    assert all(s < score for name, s in scores.items() if name != best), scores


@pytest.mark.parametrize("row", rows(TABLE, "rows"))
def test_score_row(row: dict[str, Any]) -> None:
    _check(row, _scores(row, literal_pod(row["pod"])))
    from_api = api_pod(row["pod"])
    if from_api is not None:
        _check(row, _scores(row, from_api))


def test_table_covers_the_upstream_functions() -> None:
    table = load(TABLE)
    assert table["source"]["commit"] == "903da7df82cb8794dda8f2d510ba1156111662dd"
    counts = Counter(row["upstream"]["test"] for row in table["rows"])
    assert counts == {
        "TestNodeResourceScorePlugin": 3,
        "TestNodeResourceScorePluginLeastNUMA": 14,
        "TestNodeResourcePartialDataScorePlugin": 6,
    }
