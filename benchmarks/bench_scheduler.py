"""Scheduler-side models: how often each disagrees with the exact node, and how fast each is.

Run: python benchmarks/bench_scheduler.py [--nodes 400] [--pods-per-node 50]
1. Agreement (issue 20): random node states (2, 4 and 8 NUMA nodes, every policy and scope, filled by random
   pod streams), each node's NRT as its exporter publishes it, every model's Filter against the node's exact
   WouldAdmit over >= 20,000 (pod, node) pairs: confusion matrix, crashes apart, the smallest example of
   each kind of error.
2. Speed: Filter + Score of one pod over 1,000 NRT nodes of 8 zones each, per model, and its ratio to the
   same run's NodeResourcesFit. Target: < 20 ms per NUMA-aware model.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import fmt, measure
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.catalog import Setup
from kubeletemu.scheduler.catalog import setups as all_setups
from kubeletemu.scheduler.framework import Model, NodeInfo
from kubeletemu.scheduler.measure import measure as agreement
from kubeletemu.scheduler.objects import (
    AttributeInfo,
    CostInfo,
    Node,
    NodeResourceTopology,
    ResourceInfo,
    Zone,
)


def big_cluster(nodes: int, zones: int, rng: random.Random) -> list[NodeInfo]:
    out = []
    for n in range(nodes):
        zone_list = []
        for z in range(zones):
            cpus = rng.randint(0, 16)
            memory = rng.randint(0, 64) * 2**30
            zone_list.append(
                Zone(
                    name=f"node-{z}",
                    type="Node",
                    costs=tuple(
                        CostInfo(f"node-{o}", 10 if o == z else 20 + 2 * abs(o - z)) for o in range(zones)
                    ),
                    resources=(
                        ResourceInfo("cpu", Quantity(16), Quantity(16), Quantity(cpus)),
                        ResourceInfo("memory", Quantity(64 * 2**30), Quantity(64 * 2**30), Quantity(memory)),
                    ),
                )
            )
        topology = NodeResourceTopology(
            name=f"w{n}",
            zones=tuple(zone_list),
            attributes=(
                AttributeInfo("topologyManagerPolicy", "single-numa-node"),
                AttributeInfo("topologyManagerScope", "container"),
            ),
        )
        node = Node(
            f"w{n}",
            allocatable={
                "cpu": Quantity(16 * zones),
                "memory": Quantity(64 * 2**30 * zones),
                "pods": Quantity(110),
            },
        )
        out.append(NodeInfo(f"w{n}", node, topology, ()))
    return out


POD = """apiVersion: v1
kind: Pod
metadata: {name: bench, namespace: b}
spec:
  containers:
  - {name: a, resources: {limits: {cpu: "4", memory: 8Gi}}}
  - {name: b, resources: {limits: {cpu: "2", memory: 2Gi}}}
"""


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=400)
    parser.add_argument("--pods-per-node", type=int, default=50)
    args = parser.parse_args()
    setups = all_setups()

    started = time.perf_counter()
    results = agreement(setups, nodes=args.nodes, pods_per_node=args.pods_per_node)
    print(
        f"agreement with the exact node: {args.nodes} nodes x {args.pods_per_node} pods "
        f"({time.perf_counter() - started:.1f} s)"
    )
    head = ("pairs", "agree-fit", "agree-rej", "FALSE FIT", "FALSE REJ", "crash")
    print(f"  {'model':<44} " + " ".join(f"{h:>9}" for h in head))
    for label, counts in results.items():
        row = (
            counts.total,
            counts.agree_fit,
            counts.agree_reject,
            counts.false_fit,
            counts.false_reject,
            counts.crash,
        )
        print(f"  {label:<44} " + " ".join(f"{v:>9}" for v in row))
    print("  FALSE FIT: the model lets it through, the kubelet rejects it (a future TopologyAffinityError or")
    print(
        "  other admission failure); FALSE REJ: the model filters it out, the kubelet would admit (pending)."
    )
    for label, counts in results.items():
        for kind, (_, example) in sorted(counts.examples.items()):
            model, kubelet = _short(example.model), _short(example.kubelet)
            print(
                f"  {label} {kind}: {example.node}, pod [{example.pod}]: model {model!r}, kubelet {kubelet!r}"
            )

    [pod] = parse_pods(POD)
    nodes = big_cluster(1000, 8, random.Random(7))
    print("\nFilter + Score of one pod over 1,000 nodes of 8 zones, each model alone (median, p90; ratio to")
    print("NodeResourcesFit in this run)")
    baseline = None
    for label, model in models(setups):
        # A new Pod object per run: a new scheduling cycle (nothing the models derive from the pod, nor a
        # Filter result kept for Score, carries over), on nodes whose caches are warm.
        median, p90 = measure(
            lambda model=model: filter_and_score(model, dataclasses.replace(pod), nodes), repeat=15, warmup=2
        )
        baseline = baseline or median
        print(f"  {label:<44} {fmt(median)} {fmt(p90)}   x{median / baseline:5.1f}")


def models(setups: list[Setup]) -> list[tuple[str, Model]]:
    """NodeResourcesFit, then the NUMA-aware model of each setup (the default plugins beside it left out)."""
    out: list[tuple[str, Model]] = []
    for setup in setups:
        label = setup.label
        for model in setup.profile.models:
            if model.name == "NodeResourcesFit" and not out:
                out.append(("NodeResourcesFit", model))
            elif model.name not in ("NodeResourcesFit", "NodeResourcesBalancedAllocation"):
                out.append((label, model))
    return out


def filter_and_score(model: Model, pod: Pod, nodes: list[NodeInfo]) -> int:
    fitting = 0
    for node in nodes:
        if model.filter(pod, node).ok:
            model.score(pod, node)
            fitting += 1
    return fitting


if __name__ == "__main__":
    main()
