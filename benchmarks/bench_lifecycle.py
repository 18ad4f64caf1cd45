"""Median time of the predicate handler's node fit and of the node-allocatable computation.

The fit sums the admitted pods' requests on every call (as the kubelet builds a fresh NodeInfo); each
pod's own request is cached by object identity, so the cost grows slowly with the number of admitted pods:
measured at 0, 10 and 109 of them (maxPods 110), after a first call has filled the cache.

Run: .venv/bin/python benchmarks/bench_lifecycle.py [--rounds R]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import fmt, measure
from kubeletemu.config.kubelet_config import KubeletConfiguration
from kubeletemu.lifecycle import PredicateAdmitHandler
from kubeletemu.node_allocatable import NodeCapacity, compute_node_allocatable
from kubeletemu.pod import RESTART_POLICY_ALWAYS, Container, Pod
from kubeletemu.quantity import Quantity


def _pod(i: int) -> Pod:
    def ctr(name: str, cpu: str, memory: str, sidecar: bool = False) -> Container:
        requests = {"cpu": Quantity.parse(cpu), "memory": Quantity.parse(memory)}
        return Container(name, requests, requests, RESTART_POLICY_ALWAYS if sidecar else None)

    return Pod(
        f"pod-{i}",
        "default",
        f"uid-{i}",
        (ctr("app", "100m", "128Mi"), ctr("helper", "50m", "64Mi")),
        (ctr("init", "200m", "64Mi"), ctr("proxy", "10m", "32Mi", sidecar=True)),
        overhead={"cpu": Quantity.parse("10m")},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()

    capacity = NodeCapacity(
        cpus=64,
        memory_bytes=256 * 2**30,
        hugepages={2 * 2**20: 1024},
        extended_resources={"example.com/dev": 8},
    )
    config = KubeletConfiguration(
        system_reserved={"cpu": Quantity.parse("1"), "memory": Quantity.parse("2Gi")}
    )
    median, p90 = measure(lambda: compute_node_allocatable(capacity, config), repeat=args.rounds)
    print(f"{'compute_node_allocatable':40s} median {fmt(median)}   p90 {fmt(p90)}")

    handler = PredicateAdmitHandler(compute_node_allocatable(capacity, config).allocatable)
    new_pod = _pod(10_000)
    for admitted in (0, 10, 109):
        pods = [_pod(i) for i in range(admitted)]
        assert handler.admit(new_pod, pods).admit
        median, p90 = measure(lambda pods=pods: handler.admit(new_pod, pods), repeat=args.rounds)
        print(f"{f'predicate admit, {admitted} admitted pods':40s} median {fmt(median)}   p90 {fmt(p90)}")


if __name__ == "__main__":
    main()
