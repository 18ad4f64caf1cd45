"""The NodeResourceTopologyMatch models against :mod:`tests.scheduler.nrtmatch.oracle` (the plugin's code
transliterated on Fractions, uncached) over seeded random NRTs and pods: Filter, Score under every
strategy, LeastNUMANodes' search (from the cached zone list and from a bare one), and the hardware float32
average. Every answer is asked twice, so a cached value must give the same answer again, and the cached
zone list must come out unchanged."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any, TypeVar

import pytest

from kubeletemu.pod import Container, Pod, QOSClass
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import Crash, NodeInfo, PluginPanic
from kubeletemu.scheduler.nrtmatch import least_numa
from kubeletemu.scheduler.nrtmatch.args import NodeResourceTopologyMatchArgs, ResourceSpec, ScoringStrategy
from kubeletemu.scheduler.nrtmatch.filter import filter_pod
from kubeletemu.scheduler.nrtmatch.model import NodeResourceTopologyMatch
from kubeletemu.scheduler.nrtmatch.numanodes import numa_node_list, numa_zones
from kubeletemu.scheduler.nrtmatch.resources import pod_qos
from kubeletemu.scheduler.nrtmatch.score import score_pod
from kubeletemu.scheduler.objects import (
    AttributeInfo,
    CostInfo,
    Node,
    NodeResourceTopology,
    ResourceInfo,
    Zone,
)
from tests.scheduler.nrtmatch import oracle

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

T = TypeVar("T")
NAMES = ("cpu", "memory", "hugepages-2Mi", "example.com/gpu", "ephemeral-storage", "pods")
AMOUNTS = {
    "cpu": ("0", "1", "2", "3", "4", "6", "8", "16", "250m", "500m", "1500m", "-1"),
    "memory": ("0", "100", "1Gi", "1.5Gi", "2Gi", "4Gi", "8Gi", "16Gi"),
}
WEIGHTS: tuple[dict[str, int], ...] = ({}, {"cpu": 3, "memory": 2}, {"example.com/gpu": 5, "cpu": -1})
STRATEGIES = ("LeastAllocated", "MostAllocated", "BalancedAllocation", "LeastNUMANodes")


def _amount(rng: random.Random, name: str) -> Quantity:
    choices = AMOUNTS.get(name, AMOUNTS["memory"] if name.startswith("hugepages") else ("0", "1", "2", "3"))
    return Quantity.parse(rng.choice(choices))


def _cost(rng: random.Random, own: bool, distance: int) -> int:
    return rng.choice((10 if own else 20 + 2 * distance, 10, 11, 12, 21, 255, 256, 300, 2**30))


def random_topology(rng: random.Random) -> NodeResourceTopology:
    count = rng.choice((1, 2, 2, 3, 4, 4, 6, 8))
    ids = rng.sample(range(count + 3), count) if rng.random() < 0.15 else list(range(count))
    zones = []
    for i in ids:
        name = rng.choice((f"node-{i}",) * 20 + ("node-x", "socket-0", f"node-0{i}", "node-64", "node-0"))
        resources = []
        for resource in NAMES:
            if rng.random() < (0.95 if resource in ("cpu", "memory") else 0.3):
                resources.append(ResourceInfo(resource, Quantity(64), Quantity(64), _amount(rng, resource)))
        costs = tuple(
            CostInfo(f"node-{o}", _cost(rng, o == i, abs(o - i)))
            for o in range(count + 1)
            if rng.random() < 0.9
        )
        zones.append(
            Zone(name, "Node" if rng.random() < 0.95 else "Socket", costs=costs, resources=tuple(resources))
        )
    attributes = [
        AttributeInfo("topologyManagerPolicy", rng.choice(("single-numa-node",) * 4 + ("restricted", "none")))
    ]
    attributes.append(AttributeInfo("topologyManagerScope", rng.choice(("container", "pod"))))
    if rng.random() < 0.2:
        attributes.append(AttributeInfo("topologyManagerMaxNUMANodes", rng.choice(("4", "16", "x"))))
    return NodeResourceTopology("n", tuple(zones), tuple(attributes))


def _container(rng: random.Random, name: str, guaranteed: bool, restart: str | None = None) -> Container:
    requests = {r: _amount(rng, r) for r in NAMES if rng.random() < (0.9 if r in ("cpu", "memory") else 0.12)}
    requests = {r: q for r, q in requests.items() if q.amount >= 0}
    limits = dict(requests) if guaranteed else ({"cpu": Quantity(32)} if rng.random() < 0.5 else {})
    return Container(name, requests=requests, limits=limits, restart_policy=restart)


def random_pod(rng: random.Random, index: int) -> Pod:
    guaranteed = rng.random() < 0.8
    containers = tuple(_container(rng, f"c{i}", guaranteed) for i in range(rng.choice((1, 1, 2, 3))))
    init = tuple(
        _container(rng, f"i{i}", guaranteed, rng.choice((None, "Always")))
        for i in range(rng.choice((0, 0, 1, 2)))
    )
    overhead = {"cpu": Quantity.parse("100m")} if rng.random() < 0.1 else {}
    if rng.random() < 0.05:
        containers, init = (Container("be"),), ()
    return Pod(f"p{index}", "d", f"u{index}", containers, init, overhead=overhead)


def outcome(compute: Callable[..., T], *args: Any) -> T | Crash:
    """``compute(*args)``, or where the plugin would panic."""
    try:
        return compute(*args)
    except PluginPanic as panic:
        return panic.crash


def twice(compute: Callable[..., T], *args: Any) -> T | Crash:
    """``outcome`` asked twice (the second answer may come from caches): both must agree."""
    first = outcome(compute, *args)
    assert outcome(compute, *args) == first
    return first


def _snapshot(topology: NodeResourceTopology) -> object:
    """The cached zone list, as exact values (it must never change)."""
    zones = outcome(numa_zones, topology)
    if isinstance(zones, Crash):
        return zones
    return [(n.numa_id, {k: Fraction(v) for k, v in n.resources.items()}, n.costs) for n in zones.nodes]


@pytest.mark.parametrize("seed", range(6))
def test_filter_and_score_match_the_oracle(seed: int) -> None:
    rng = random.Random(seed)
    for case in range(150):
        topology = random_topology(rng)
        names = rng.sample(NAMES, 4)
        node = None if rng.random() < 0.1 else Node("n", allocatable={n: Quantity(1) for n in names})
        before = _snapshot(topology)
        for index in range(3):
            pod = random_pod(rng, index)
            where = f"seed {seed} case {case} pod {index}"
            status = outcome(oracle.filter_pod, pod, node, topology)
            assert twice(filter_pod, pod, node, topology) == status, where
            for strategy in STRATEGIES:
                for weights in WEIGHTS:
                    score = outcome(oracle.score_pod, pod, topology, strategy, weights)
                    assert twice(score_pod, pod, topology, strategy, weights) == score, (where, strategy)
        assert _snapshot(topology) == before


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_least_numa_scores_match_the_oracle(seed: int) -> None:
    rng = random.Random(100 + seed)
    for case in range(150):
        topology = random_topology(rng)
        expected_nodes = outcome(oracle.numa_node_list, topology.zones)
        if isinstance(expected_nodes, Crash):
            continue
        zones = numa_zones(topology)
        for index in range(3):
            pod = random_pod(rng, index)
            qos = pod_qos(pod) if rng.random() < 0.8 else rng.choice(list(QOSClass))
            max_numa = rng.choice((2, 4, 8))
            where = f"seed {seed} case {case} pod {index}"
            for fast, slow in (
                (least_numa.container_scope_score, oracle.container_scope_score),
                (least_numa.pod_scope_score, oracle.pod_scope_score),
            ):
                want = outcome(slow, pod, qos, expected_nodes, max_numa)
                assert twice(fast, pod, qos, zones.nodes, max_numa, zones) == want, where
                assert twice(fast, pod, qos, numa_node_list(topology.zones), max_numa) == want, where


@pytest.mark.parametrize("seed", range(4))
def test_numa_nodes_required_matches_the_oracle(seed: int) -> None:
    rng = random.Random(200 + seed)
    for _ in range(400):
        topology = random_topology(rng)
        nodes = outcome(numa_node_list, topology.zones)
        if isinstance(nodes, Crash):
            continue
        slow_nodes = oracle.numa_node_list(topology.zones)
        request = {
            r: _amount(rng, r).amount
            for r in NAMES
            if rng.random() < (0.9 if r in ("cpu", "memory") else 0.1)
        }
        request = {r: a * rng.choice((1, 2, 5)) for r, a in request.items() if a >= 0}
        qos = rng.choice(list(QOSClass))
        assert least_numa.numa_nodes_required(qos, nodes, request) == oracle.numa_nodes_required(
            qos, slow_nodes, request
        ), (topology, request, qos)


@pytest.mark.slow
def test_float32_average_is_the_exact_float32_division() -> None:
    rng = random.Random(7)
    for _ in range(8000):
        size = rng.randint(1, 64)
        total = rng.choice(
            (rng.randint(-(2**25), 2**25), rng.randint(0, 255 * size * size), rng.randint(0, 2**70))
        )
        exact = least_numa.float32(
            least_numa.float32(Fraction(total)) / least_numa.float32(Fraction(size * size))
        )
        assert least_numa.float32_average(total, size) == exact, (total, size)


@pytest.mark.parametrize("seed", range(3))
def test_answers_kept_on_the_nrt_equal_the_oracle(seed: int) -> None:
    """The model keeps Filter and Score answers on the NRT object per pod shape (the fleet asks the same
    NRT for thousands of pods of a few templates): pods of one shape but new identities, several Node
    objects (equal allocatable but another object, other names), strategies and weights interleaved on
    the same NRT objects, every answer against the uncached oracle."""
    rng = random.Random(300 + seed)
    for case in range(40):
        topologies = [random_topology(rng) for _ in range(3)]
        names = rng.sample(NAMES, 4)
        allocatable = {n: Quantity(1) for n in names}
        nodes = [None, Node("n", allocatable=allocatable), Node("n", allocatable=dict(allocatable))]
        nodes.append(Node("n", allocatable={n: Quantity(1) for n in rng.sample(NAMES, 3)}))
        templates = [random_pod(rng, i) for i in range(4)]
        models = [
            NodeResourceTopologyMatch(
                NodeResourceTopologyMatchArgs(
                    ScoringStrategy(strategy, tuple(ResourceSpec(*w) for w in weights.items()))
                )
            )
            for strategy in STRATEGIES
            for weights in WEIGHTS[:2]
        ]
        for index in range(60):
            template = rng.choice(templates)
            pod = dataclasses.replace(template, name=f"p{index}", uid=f"u{case}-{index}")
            node, topology, model = rng.choice(nodes), rng.choice(topologies), rng.choice(models)
            info = NodeInfo("n", node, topology)
            where = f"seed {seed} case {case} ask {index}"
            assert outcome(model.filter, pod, info) == outcome(oracle.filter_pod, pod, node, topology), where
            strategy = model.args.scoring_strategy
            want = outcome(oracle.score_pod, pod, topology, strategy.type, strategy.weights())
            assert outcome(model.score, pod, info) == want, where
