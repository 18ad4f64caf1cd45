"""NodeResourceTopologyMatch's Score.

scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``, ``score.go`` (``Score``,
``scoringHandlerFromTopologyManagerConfig``, ``podScopeScore``, ``containerScopeScore``,
``scoreForEachNUMANode``); the plugin has no ScoreExtensions, so this is the node's final score:

- 100 for any non-Guaranteed pod, before the NRT is looked at; 0 for a node without an NRT;
- LeastNUMANodes scores under every policy (:mod:`.least_numa`); the other strategies only under
  single-numa-node (0 otherwise);
- Most/Least/BalancedAllocation score each zone (:mod:`.allocation`) and keep the minimum *non-zero*
  zone score (0 only when every zone scores 0). Pod scope scores the effective request; container scope
  takes the truncated mean over init and app containers, nothing subtracted;
- ``scoreForEachNUMANode`` stores each zone's score at index NUMA *id* of a slice as long as the zone
  list: ids that are not 0..n−1 (node-0, node-2) panic with an index out of range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from kubeletemu.pod import Pod, QOSClass
from kubeletemu.scheduler.framework import PluginPanic, memo
from kubeletemu.scheduler.nrtmatch import nodeconfig
from kubeletemu.scheduler.nrtmatch.allocation import (
    LEAST_NUMA_NODES,
    MAX_NODE_SCORE,
    ZONE_STRATEGIES,
    WeightedRequest,
    ZoneStrategy,
    go_int64,
    weighted_request,
)
from kubeletemu.scheduler.nrtmatch.least_numa import container_scope_score, pod_scope_score
from kubeletemu.scheduler.nrtmatch.numanodes import NUMAZones, index_out_of_range, numa_zones
from kubeletemu.scheduler.nrtmatch.resources import PodRequests, Request, pod_requests
from kubeletemu.scheduler.objects import NodeResourceTopology

WHERE_EACH_NUMA = "noderesourcetopology.scoreForEachNUMANode"
WeightsKey = tuple[tuple[str, int], ...]


def score_for_each_numa(request: WeightedRequest, zones: NUMAZones, strategy: ZoneStrategy) -> int:
    """``scoreForEachNUMANode``: the minimum non-zero zone score (0 when every zone scores 0). The plugin
    scores zone after zone and panics at the first one whose id indexes past the list: the zones up to it
    are scored (a strategy panic there comes first), then the panic."""
    misplaced = zones.misplaced
    if misplaced is None:
        scores = strategy(request, zones.available)
    else:
        strategy(request, zones.available[: misplaced + 1])
        count = len(zones.nodes)
        raise PluginPanic(index_out_of_range(zones.ids[misplaced], count), WHERE_EACH_NUMA)
    minimum = 0
    for score in scores:
        if minimum == 0 or (score != 0 and score < minimum):
            minimum = score
    return minimum


def _weighted(request: Request, weights: Mapping[str, int], key: WeightsKey) -> WeightedRequest:
    """The request with the model's weights resolved, kept on the (per-pod, cached) request per weights."""
    prepared: dict[WeightsKey, WeightedRequest] = memo(request, "_nrtmatch_weighted", dict)
    found = prepared.get(key)
    if found is None:
        found = prepared[key] = weighted_request(request.amounts, weights)
    return found


def _allocation_score(
    requests: PodRequests,
    scope: str,
    nodes: NUMAZones,
    strategy: ZoneStrategy,
    weights: Mapping[str, int],
) -> int:
    key = tuple(sorted(weights.items()))
    if scope == nodeconfig.SCOPE_POD:
        return score_for_each_numa(_weighted(requests.effective, weights, key), nodes, strategy)
    # int64(stat.Mean(scores)): float64 sum in order, divided, truncated (0/0 is NaN for no containers).
    total = 0.0
    count = 0
    for _, request in requests.containers:
        total += float(score_for_each_numa(_weighted(request, weights, key), nodes, strategy))
        count += 1
    return go_int64(total / count) if count else go_int64(math.nan)


def score_pod(
    pod: Pod, topology: NodeResourceTopology | None, strategy: str, weights: Mapping[str, int]
) -> int:
    """``Score`` for one node, given the NRT the cache returned (None: none for the node).

    Raises :class:`~kubeletemu.scheduler.framework.PluginPanic` where the shipped code panics."""
    requests = pod_requests(pod)
    if requests.qos is not QOSClass.GUARANTEED:
        return MAX_NODE_SCORE
    if topology is None:
        return 0
    conf = nodeconfig.topology_manager_config(topology)
    if strategy == LEAST_NUMA_NODES:
        zones = numa_zones(topology)
        scorer = pod_scope_score if conf.scope == nodeconfig.SCOPE_POD else container_scope_score
        return scorer(pod, requests.qos, zones.nodes, conf.max_numa_nodes, zones).score
    if conf.policy != nodeconfig.POLICY_SINGLE_NUMA_NODE:
        return 0
    nodes = numa_zones(topology)
    return _allocation_score(requests, conf.scope, nodes, ZONE_STRATEGIES[strategy], weights)
