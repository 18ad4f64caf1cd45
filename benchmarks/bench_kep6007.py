"""KEP-6007 costs: the merge with each tie-breaker against the plain merge, LeastNUMANodes, and a whole
``simulate`` matrix.

Run: python benchmarks/bench_kep6007.py
The tie-breakers read the managers' state at every comparison (as the PR branches do); the KEP calls the
scoring "O(NUMA nodes), negligible". Medians and p90 over repeated runs.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import fmt, measure
from hostprobe.synthetic import SyntheticHost
from kubeletemu.bitmask import iterate_bitmasks
from kubeletemu.config import parse_config
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler import NUMAZone, least_numa_nodes
from kubeletemu.simulate import Matrix, PodStep, RemoveStep, TopologySource, run_simulation, synthetic_shape
from kubeletemu.topologymanager import NUMAInfo, PolicyOptions, ProviderHints, TopologyHint, new_policy
from kubeletemu.topologymanager.numa_scorer import (
    AllocationStrategyTieBreaker,
    FixedSignal,
    PreferMostAllocatedTieBreaker,
)
from kubeletemu.topologymanager.policy_options import NUMAAllocationStrategy


def row(label: str, median: float, p90: float) -> None:
    print(f"{label:<64} {fmt(median)} {fmt(p90)}")


def merges() -> None:
    rnd = random.Random(7)
    for nodes in (2, 8):
        info = NUMAInfo(list(range(nodes)))
        masks = list(iterate_bitmasks(list(range(nodes))))
        # CPU and memory: every single node preferred plus the wider masks, so every node ties.
        hints: list[ProviderHints] = [
            None,
            {"cpu": [TopologyHint(m, m.count() == 1) for m in masks]},
            {"memory": [TopologyHint(m, m.count() == 1) for m in masks]},
        ]
        signals = [
            FixedSignal(name, {n: (rnd.randrange(9), 8) for n in range(nodes)}) for name in ("cpu", "memory")
        ]
        first = PreferMostAllocatedTieBreaker(*signals)
        strategy = AllocationStrategyTieBreaker(NUMAAllocationStrategy.MOST_ALLOCATED, signals)
        for policy_name in ("best-effort", "single-numa-node"):
            plain = new_policy(policy_name, info, PolicyOptions())
            med, p90 = measure(lambda p=plain, h=hints: p.merge(h), repeat=300)
            row(f"{nodes} NUMA merge, {policy_name}, no tie-breaker", med, p90)
            scored = new_policy(policy_name, info, PolicyOptions(), strategy)
            med, p90 = measure(lambda p=scored, h=hints: p.merge(h), repeat=300)
            row(f"{nodes} NUMA merge, {policy_name}, numa-allocation-strategy", med, p90)
        snn = new_policy("single-numa-node", info, PolicyOptions(), first)
        med, p90 = measure(lambda p=snn, h=hints: p.merge(h), repeat=300)
        row(f"{nodes} NUMA merge, single-numa-node, prefer-most-allocated", med, p90)
        first.drain()
        strategy.drain()


def least_numa() -> None:
    gi = 1 << 30
    for nodes in (2, 8):
        zones = [
            NUMAZone(
                n, {"cpu": 4 + n % 3, "memory": 16 * gi}, {m: 10 if m == n else 21 for m in range(nodes)}
            )
            for n in range(nodes)
        ]
        limits = {"cpu": Quantity.parse(6), "memory": Quantity.parse("4Gi")}
        pod = Pod("p", "d", "u", tuple(Container(f"c{i}", limits, limits) for i in range(3)))
        med, p90 = measure(lambda z=zones, q=pod: least_numa_nodes(z, q), repeat=200)
        row(f"LeastNUMANodes, {nodes} NUMA, 3 containers of 6 CPUs", med, p90)


CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
reservedSystemCPUs: "0"
featureGates: {TopologyManagerPolicyAlphaOptions: true}
"""
PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  containers:
  - {name: a, resources: {limits: {cpu: "1", memory: 256Mi}}}
  - {name: b, resources: {limits: {cpu: "3", memory: 256Mi}}}
"""


def simulation() -> None:
    machine = TopologySource.synthetic_host(
        synthetic_shape(sockets=2, cores_per_socket=16, nodes_per_socket=2)
    ).machine()
    config = parse_config(CONFIG)
    (app,) = parse_pods(PODS)
    stream = [PodStep(app, 30), RemoveStep("app", 10), PodStep(app, 10)]
    matrix = Matrix(
        ("best-effort", "single-numa-node"),
        ("container", "pod"),
        ({}, {"numa-allocation-strategy": "most-allocated"}, {"numa-allocation-strategy": "least-allocated"}),
    )
    med, p90 = measure(lambda: run_simulation(machine, config, matrix, stream), repeat=5, warmup=1)
    row("simulate: 4 NUMA x 16 CPUs, 12 configurations x 40 admissions", med, p90)
    med, p90 = measure(lambda: TopologySource.synthetic_host(SyntheticHost()).machine(), repeat=10, warmup=1)
    row("synthetic topology: write + probe (2 NUMA)", med, p90)


def main() -> None:
    print(f"{'case':<64} {'median':>11} {'p90':>11}")
    merges()
    least_numa()
    simulation()


if __name__ == "__main__":
    main()
