"""Topology Manager merge: our outcome-set fold against the kubelet's literal permutation walk.

Run: python benchmarks/bench_merge.py
Targets (issue 2): 8 NUMA nodes x 4 providers returning all 255 masks, best-effort: median < 20 ms;
the typical 2-NUMA, 3-provider case: median < 50 µs.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import fmt, measure
from kubeletemu.bitmask import BitMask, iterate_bitmasks
from kubeletemu.topologymanager import (
    NUMAInfo,
    PolicyOptions,
    ProviderHints,
    TopologyHint,
    new_policy,
)
from tests.topologymanager.oracle import literal_merge


def all_masks_providers(nodes: int, providers: int, rnd: random.Random) -> list[ProviderHints]:
    masks = list(iterate_bitmasks(list(range(nodes))))
    return [{f"resource-{p}": [TopologyHint(m, rnd.random() < 0.5) for m in masks]} for p in range(providers)]


def typical_two_numa() -> list[ProviderHints]:
    # CPU, memory and a device on a 2-NUMA node: the shapes the real providers return.
    return [
        {
            "cpu": [
                TopologyHint(BitMask.of(0), True),
                TopologyHint(BitMask.of(1), True),
                TopologyHint(BitMask.of(0, 1), False),
            ]
        },
        {
            "memory": [
                TopologyHint(BitMask.of(0), True),
                TopologyHint(BitMask.of(1), True),
                TopologyHint(BitMask.of(0, 1), False),
            ],
            "hugepages-1Gi": [TopologyHint(BitMask.of(1), True), TopologyHint(BitMask.of(0, 1), False)],
        },
        {"example.com/dev": [TopologyHint(BitMask.of(1), True), TopologyHint(BitMask.of(0, 1), False)]},
    ]


def row(label: str, ours: float, p90: float, literal: float | None) -> None:
    ratio = f"{literal / ours:10.1f}x" if literal is not None else "  (infeasible)"
    lit = fmt(literal) if literal is not None else "       n/a"
    print(f"{label:<48} {fmt(ours)} {fmt(p90)} {lit} {ratio}")


def main() -> None:
    rnd = random.Random(42)
    options = PolicyOptions()
    print(f"{'case':<48} {'median':>11} {'p90':>11} {'literal':>11} {'speed-up':>11}")

    info2 = NUMAInfo([0, 1], {0: [10, 11], 1: [11, 10]})
    hints2 = typical_two_numa()
    for policy_name in ("best-effort", "restricted", "single-numa-node"):
        policy = new_policy(policy_name, info2, options)
        med, p90 = measure(lambda p=policy: p.merge(hints2), repeat=5000)
        lit, _ = measure(lambda n=policy_name: literal_merge(n, info2, options, hints2), repeat=2000)
        row(f"2 NUMA, 3 providers, {policy_name}", med, p90, lit)

    info4 = NUMAInfo(list(range(4)))
    hints4 = all_masks_providers(4, 4, rnd)
    policy4 = new_policy("best-effort", info4, options)
    med, p90 = measure(lambda: policy4.merge(hints4), repeat=200)
    lit, _ = measure(lambda: literal_merge("best-effort", info4, options, hints4), repeat=3, warmup=1)
    row("4 NUMA, 4 providers x 15 masks, best-effort", med, p90, lit)

    info8 = NUMAInfo(list(range(8)))
    hints8x2 = all_masks_providers(8, 2, rnd)
    policy8 = new_policy("best-effort", info8, options)
    med, p90 = measure(lambda: policy8.merge(hints8x2), repeat=100)
    lit, _ = measure(lambda: literal_merge("best-effort", info8, options, hints8x2), repeat=3, warmup=1)
    row("8 NUMA, 2 providers x 255 masks, best-effort", med, p90, lit)

    hints8 = all_masks_providers(8, 4, rnd)
    for policy_name in ("best-effort", "restricted", "single-numa-node"):
        policy = new_policy(policy_name, info8, options)
        med, p90 = measure(lambda p=policy: p.merge(hints8), repeat=50)
        row(f"8 NUMA, 4 providers x 255 masks, {policy_name}", med, p90, None)
    print("literal fold of 8 NUMA x 4 providers: 255^4 = 4.2e9 permutations (minutes in the kubelet)")


if __name__ == "__main__":
    main()
