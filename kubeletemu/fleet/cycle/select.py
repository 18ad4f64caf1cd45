"""Picking the host among the scored nodes: ``selectHost`` (kube-scheduler 1.32 – 1.34) and
``sortedNodeScores`` (1.35 – 1.36), as ``schedule_one.go`` ships them (see :mod:`.versions`)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

from kubeletemu.fleet.cycle import goheap

# schedule_one.go's numberOfHighestScoredNodesToReport (1.32 – 1.34).
HIGHEST_SCORED_NODES_TO_REPORT = 3
ERR_EMPTY_PRIORITY_LIST = "empty priorityList"


class SelectHostError(RuntimeError):
    """``selectHost`` returned an error (an empty list) or would panic (a list of one: its loop pops
    a second element from an empty heap; ``schedulePod`` never asks it of fewer than two nodes)."""


class NodeScore(NamedTuple):
    """``framework.NodePluginScores``: a node's weighted total and each plugin's weighted score.
    ``order`` is the node's place in the list as scored (the evaluation order), ours, not upstream's:
    it decides the pick when no random source is given."""

    name: str
    total: int
    scores: tuple[tuple[str, int], ...] = ()
    randomizer: int = 0
    order: int = 0


def _higher(a: NodeScore, b: NodeScore) -> bool:
    """``nodeScoreHeap.Less`` of 1.32 – 1.34: higher total first."""
    return a.total > b.total


def _higher_then_randomizer(a: NodeScore, b: NodeScore) -> bool:
    """``nodeScoreHeap.Less`` of 1.35 – 1.36: higher total, then higher ``Randomizer``."""
    return a.total > b.total or (a.total == b.total and a.randomizer > b.randomizer)


def select_host(
    scores: Sequence[NodeScore], count: int, rng: random.Random | None = None
) -> tuple[str, list[NodeScore]]:
    """``selectHost``: the host and the ``count`` best scores, the host first.

    The heap yields the top-scored nodes first; each further node of the top score replaces the candidate
    with probability ``1/k`` (the k-th such node), drawn from ``rng`` as ``rand.Intn(k) == 0`` — uniform
    over the top nodes, as upstream. ``rng`` None draws nothing: the top node first in ``order``
    (the evaluation order) is the host, so a run without a random source is reproducible.
    """
    if not scores:
        raise SelectHostError(ERR_EMPTY_PRIORITY_LIST)
    if len(scores) == 1:
        raise SelectHostError("selectHost: index out of range: a list of one node")
    heap = list(scores)
    goheap.init(heap, _higher)
    out = [goheap.pop(heap, _higher)]
    top = out[0].total
    count_of_max = 1
    selected = 0
    while True:
        candidate = goheap.pop(heap, _higher)
        if candidate.total != top and len(out) == count:
            break
        if candidate.total == top:
            count_of_max += 1
            if rng is not None:
                if rng.randrange(count_of_max) == 0:
                    selected = count_of_max - 1
            elif candidate.order < out[selected].order:
                selected = count_of_max - 1
        out.append(candidate)
        if not heap:
            break
    if selected:
        out[0], out[selected] = out[selected], out[0]
    return out[0].name, out[:count]


def sorted_node_scores(scores: Sequence[NodeScore]) -> list[NodeScore]:
    """``newSortedNodeScores`` then ``Pop`` until empty: the order in which 1.35+ offers hosts (the first
    is ``schedulePod``'s ``SuggestedHost``)."""
    heap = list(scores)
    goheap.init(heap, _higher_then_randomizer)
    return [goheap.pop(heap, _higher_then_randomizer) for _ in range(len(scores))]


def sorted_heap(scores: Sequence[NodeScore]) -> list[NodeScore]:
    """``newSortedNodeScores``: the scores as a heap (1.35+)."""
    heap = list(scores)
    goheap.init(heap, _higher_then_randomizer)
    return heap


def pop_best(heap: list[NodeScore]) -> NodeScore:
    """``sortedNodeScores.Pop()``: the best left (the host first, then OpportunisticBatching's hints)."""
    return goheap.pop(heap, _higher_then_randomizer)
