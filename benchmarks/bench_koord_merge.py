"""Koordinator's scheduler-side merge per node: the fast fold (``POLICIES``) against the literal permutation
fold (``LITERAL_POLICIES``, the in-run reference), each checked to give the same answer before timing.

Run: python benchmarks/bench_koord_merge.py

Columns: the cross product's size, the literal fold, the fast fold (its memo cleared before each call),
their ratio, and the fast fold answering from its memo (a node in the same state as one seen before).

Hints are made as ``generateResourceHints`` makes them for a pod on a node: one hint per feasible mask over
the node's NUMA nodes, each scored by the mask's free share (as the LeastAllocated NUMA scorer does);
preferred = the fewest NUMA nodes, or every hint under Restricted. Shapes:

- ``fits 1``: cpu and memory, every mask feasible (a small pod);
- ``cpu 2+``: cpu needs two NUMA nodes, memory fits in one (BestEffort then has no preferred alignment
  and picks among the non-preferred permutations: the fast fold's slower path);
- ``+gpu``: a third resource (DeviceShare's), every mask feasible.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import fmt, measure
from kubeletemu.bitmask import iterate_bitmasks
from kubeletemu.scheduler.koordinator.merge import (
    EXCLUSIVE_PREFERRED,
    LITERAL_POLICIES,
    POLICIES,
    POLICY_BEST_EFFORT,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
    NUMATopologyHint,
    ProviderHints,
)
from kubeletemu.scheduler.koordinator.merge_fast import clear_memo

# The literal fold walks every permutation; above this many it is not timed (minutes per node).
LITERAL_LIMIT = 300_000


def resource_hints(
    numa_nodes: list[int], free: dict[int, float], min_width: int, restricted: bool
) -> list[NUMATopologyHint]:
    masks = [m for m in iterate_bitmasks(numa_nodes) if m.count() >= min_width]
    fewest = min(m.count() for m in masks)
    return [
        NUMATopologyHint(
            m,
            preferred=restricted or m.count() == fewest,
            score=int(100 * sum(free[n] for n in m.bits()) / m.count()),
        )
        for m in masks
    ]


def providers(nodes: int, shape: str, policy: str, rnd: random.Random) -> ProviderHints:
    numa_nodes = list(range(nodes))
    free = {n: rnd.uniform(0.2, 1.0) for n in numa_nodes}
    restricted = policy == POLICY_RESTRICTED
    hints = {
        "cpu": resource_hints(numa_nodes, free, 2 if shape == "cpu 2+" else 1, restricted),
        "memory": resource_hints(numa_nodes, free, 1, restricted),
    }
    if shape == "+gpu":
        hints["nvidia.com/gpu"] = resource_hints(numa_nodes, free, 1, restricted)
    return hints


def permutations(hints: ProviderHints) -> int:
    count = 1
    for listed in hints.values():
        count *= len(listed or [None])
    return count


def main() -> None:
    rnd = random.Random(20261124)
    print(
        f"{'policy':<15}{'NUMA':>5} {'shape':<8}{'perms':>12} {'literal':>12} {'fast':>12} {'ratio':>8}"
        f" {'memo hit':>12}"
    )
    for policy in (POLICY_RESTRICTED, POLICY_BEST_EFFORT, POLICY_SINGLE_NUMA_NODE):
        for nodes in (2, 4, 8):
            for shape in ("fits 1", "cpu 2+", "+gpu"):
                if shape == "cpu 2+" and nodes < 2:
                    continue
                hints = providers(nodes, shape, policy, rnd)
                numa_nodes = list(range(nodes))
                statuses = ["idle"] * nodes

                memo_hit = partial(POLICIES[policy], numa_nodes, [hints], EXCLUSIVE_PREFERRED, statuses)

                def fast(memo_hit: Callable[[], object] = memo_hit) -> object:
                    clear_memo()  # time the fold, not the memo
                    return memo_hit()

                literal = partial(
                    LITERAL_POLICIES[policy], numa_nodes, [hints], EXCLUSIVE_PREFERRED, statuses
                )
                perms = permutations(hints)
                fast_median, _ = measure(fast, repeat=30 if nodes == 8 else 200)
                hit_median, _ = measure(memo_hit, repeat=200)
                if perms <= LITERAL_LIMIT:
                    if fast() != literal():
                        raise SystemExit(f"answers differ: {policy} {nodes} {shape}")
                    repeat = 3 if perms > 10_000 else 20
                    literal_median, _ = measure(literal, repeat=repeat, warmup=1)
                    lit, ratio = fmt(literal_median), f"{literal_median / fast_median:7.0f}x"
                else:
                    lit, ratio = "not run", "-"
                fast_text, hit_text = fmt(fast_median), fmt(hit_median)
                print(
                    f"{policy:<15}{nodes:>5} {shape:<8}{perms:>12,} {lit:>12} {fast_text:>12} {ratio:>8}"
                    f" {hit_text:>12}"
                )


if __name__ == "__main__":
    main()
