"""The Model wrapper: the cache protocol (TopologySource), freshness, the over-reserve hook."""

from __future__ import annotations

from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import Model, NodeInfo
from kubeletemu.scheduler.nrtmatch import NodeResourceTopologyMatch, TopologyNotFresh, parse_args
from kubeletemu.scheduler.objects import NodeResourceTopology
from tests.scheduler.nrtmatch.build import COSTS_2, SINGLE_CONTAINER, container, nrt, pod, zone

TOPOLOGY = nrt(
    zone("node-0", {"cpu": 2, "memory": "4Gi"}, COSTS_2[0]),
    zone("node-1", {"cpu": 4, "memory": "4Gi"}, COSTS_2[1]),
    attributes=SINGLE_CONTAINER,
)
NODE = NodeInfo("n", None, TOPOLOGY)
FITS = pod(container("c", {"cpu": 3, "memory": "1Gi"}))
TOO_BIG = pod(container("c", {"cpu": 5, "memory": "1Gi"}))


class Stale:
    def topology(self, node: NodeInfo, pod: Pod) -> NodeResourceTopology | None:
        raise TopologyNotFresh


class Recording:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def topology(self, node: NodeInfo, pod: Pod) -> NodeResourceTopology | None:
        return node.topology

    def node_maybe_overreserved(self, node_name: str, pod: Pod) -> None:
        self.calls.append((node_name, pod.name))


def test_passthrough_model() -> None:
    model: Model = NodeResourceTopologyMatch(parse_args({"scoringStrategy": {"type": "LeastNUMANodes"}}))
    assert model.name == "NodeResourceTopologyMatch"
    assert model.filter(FITS, NODE).ok
    assert model.score(FITS, NODE) == 94
    assert model.filter(TOO_BIG, NODE).reasons == ("cannot align container",)
    assert model.policy(FITS, NODE) == "single-numa-node"
    assert model.policy(FITS, NodeInfo("bare")) == ""


def test_default_args_score_least_allocated() -> None:
    # node-0: cpu 0 (3 > 2), memory 75: 37; node-1: cpu 25, memory 75: 50. The minimum non-zero: 37.
    assert NodeResourceTopologyMatch().score(FITS, NODE) == 37


def test_stale_topology() -> None:
    model = NodeResourceTopologyMatch(source=Stale())
    assert model.filter(FITS, NODE).code == "Unschedulable"
    assert model.filter(FITS, NODE).reasons == ("invalid node topology data",)
    assert model.score(FITS, NODE) == 0
    # BestEffort pods pass, and non-Guaranteed pods score 100, before the cache is asked.
    best_effort = pod(container("c", {}))
    assert model.filter(best_effort, NODE).ok
    assert model.score(pod(container("c", {"cpu": 1}, guaranteed=False)), NODE) == 100


def test_filter_failures_reach_the_over_reserve_hook() -> None:
    source = Recording()
    model = NodeResourceTopologyMatch(source=source)
    model.filter(FITS, NODE)
    model.filter(TOO_BIG, NODE)
    assert source.calls == [("n", "p")]
