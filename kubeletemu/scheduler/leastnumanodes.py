"""The LeastNUMANodes score strategy of scheduler-plugins' NodeResourceTopologyMatch, from the node's own
per-NUMA free state instead of a NodeResourceTopology object (``scheduler-side.md`` §1).

The algorithm is the plugin's own, exact to kubernetes-sigs/scheduler-plugins
``903da7df82cb8794dda8f2d510ba1156111662dd`` (``least_numa.go``), implemented once in
:mod:`kubeletemu.scheduler.nrtmatch.least_numa`; this module feeds it zones built from the node's report
(:func:`zones_from_report`: free exclusive CPUs, free memory and hugepages, free devices, distances as
costs) in the order given, as the plugin reads an NRT's zone list.

What the plugin's code answers, and this module therefore answers too:

- a combination counts only when every zone in it lists every requested resource: a request naming a
  resource no zone reports (``ephemeral-storage`` next to cpu and memory) fits nowhere and scores 0;
  a request of only such resources needs no NUMA node;
- container scope (init, then app containers) subtracts each request from its zones, indexing the zone
  list by NUMA id; with ids that are not 0..n−1 in order the plugin panics, and so does this
  (:class:`~kubeletemu.scheduler.framework.PluginPanic`);
- :func:`least_numa_nodes_for_node` answers as the plugin's Score does: 100 for a pod that is not
  Guaranteed, whatever the strategy would say (its numbers are still reported).

Score: ``100 − k·(100 // maxNUMA) + (100 // maxNUMA) // 2`` when the distance is minimal; 100 when
nothing needs a NUMA node, 0 when the request does not fit at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from kubeletemu.bitmask import BitMask
from kubeletemu.node_topology import NodeTopologyReport, node_topology
from kubeletemu.pod import Pod, QOSClass
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.nrtmatch import least_numa
from kubeletemu.scheduler.nrtmatch.numanodes import NUMANode, only_non_numa_resources
from kubeletemu.scheduler.nrtmatch.resources import pod_qos

if TYPE_CHECKING:
    from kubeletemu.emulator import NodeEmulator

MAX_NODE_SCORE = least_numa.MAX_NODE_SCORE
MIN_NODE_SCORE = least_numa.MIN_NODE_SCORE
DEFAULT_MAX_NUMA_NODES = 8
MAX_DISTANCE = least_numa.MAX_DISTANCE
SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"
CPU = "cpu"
MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"

Amount = Fraction | int
Request = Mapping[str, Quantity]


@dataclass(frozen=True)
class NUMAZone:
    """One NUMA node as a NodeResourceTopology zone: available amounts (CPUs, bytes, devices) and costs."""

    id: int
    available: Mapping[str, Amount]
    costs: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Requirement:
    """The zones a request needs: ``nodes`` None when it fits nowhere, an empty mask when it needs none."""

    nodes: BitMask | None
    min_distance: bool

    @property
    def count(self) -> int | None:
        return None if self.nodes is None else self.nodes.count()


@dataclass(frozen=True)
class LeastNUMAResult:
    """The pod's answer: ``numa_nodes`` is the largest k over its requests (None: one does not fit, 0:
    nothing NUMA-bound), ``min_distance`` whether every request got a minimum-distance combination."""

    scope: str
    numa_nodes: int | None
    min_distance: bool
    score: int
    requests: tuple[tuple[str, Requirement], ...]  # container name (pod scope: the pod's name) -> answer

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "numa_nodes": self.numa_nodes,
            "min_distance": self.min_distance,
            "score": self.score,
            "requests": [
                {
                    "name": name,
                    "numa_nodes": None if r.nodes is None else r.nodes.bits(),
                    "min_distance": r.min_distance,
                }
                for name, r in self.requests
            ],
        }


def _numa_nodes(zones: Sequence[NUMAZone]) -> list[NUMANode]:
    return [
        NUMANode(z.id, {name: Fraction(amount) for name, amount in z.available.items()}, dict(z.costs))
        for z in zones
    ]


def numa_nodes_required(zones: Sequence[NUMAZone], request: Request, qos: QOSClass) -> Requirement:
    """``numaNodesRequired`` for one request over the zones in the order given (not modified); a request
    whose names no zone lists needs none."""
    nodes = _numa_nodes(zones)
    if only_non_numa_resources(nodes, request):
        return Requirement(BitMask(), True)
    mask, minimal = least_numa.numa_nodes_required(qos, nodes, {n: q.amount for n, q in request.items()})
    return Requirement(mask, minimal)


def normalize_score(numa_nodes: int, min_distance: bool, max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES) -> int:
    return least_numa.normalize_score(numa_nodes, min_distance, max_numa_nodes)


def least_numa_nodes(
    zones: Sequence[NUMAZone],
    pod: Pod,
    scope: str = SCOPE_CONTAINER,
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES,
) -> LeastNUMAResult:
    """``leastNUMAContainerScopeScore`` / ``leastNUMAPodScopeScore`` with the pod's QoS class."""
    if scope not in (SCOPE_CONTAINER, SCOPE_POD):
        raise ValueError(f'unknown scope "{scope}": expected container or pod')
    if max_numa_nodes < 1:
        raise ValueError(f"max_numa_nodes must be at least 1, got {max_numa_nodes}")
    scorer = least_numa.pod_scope_score if scope == SCOPE_POD else least_numa.container_scope_score
    answer = scorer(pod, pod_qos(pod), _numa_nodes(zones), max_numa_nodes)
    return LeastNUMAResult(
        scope,
        answer.numa_nodes,
        answer.min_distance,
        answer.score,
        tuple((need.name, Requirement(need.numa_nodes, need.min_distance)) for need in answer.needs),
    )


def _hugepages_name(size: int) -> str:
    for unit, factor in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if size % factor == 0:
            return f"{HUGEPAGES_PREFIX}{size // factor}{unit}"
    return f"{HUGEPAGES_PREFIX}{size}"


def zones_from_report(report: NodeTopologyReport) -> list[NUMAZone]:
    """The node's NodeResourceTopology zones: free exclusive CPUs (every CPU of the node when the CPU
    manager keeps no exclusive accounting), free memory and hugepages, free devices; costs = distances."""
    zones = []
    for node in report.numa_nodes:
        cpus = len(node.free_cpu_ids) if report.cpu_manager_policy == "static" else len(node.cpu_ids)
        available: dict[str, Amount] = {CPU: cpus, MEMORY: node.memory.free}
        for size, amounts in node.hugepages.items():
            available[_hugepages_name(size)] = amounts.free
        for resource, ids in node.free_devices.items():
            available[resource] = len(ids)
        zones.append(NUMAZone(node.id, available, dict(node.distances)))
    return zones


def least_numa_nodes_for_node(
    node: NodeEmulator, pod: Pod, scope: str | None = None, max_numa_nodes: int | None = None
) -> LeastNUMAResult:
    """LeastNUMANodes for ``pod`` on the emulated node as it is now: the node's Topology Manager scope and
    ``max-allowable-numa-nodes`` unless given. The score is the plugin's Score: 100 for a pod that is not
    Guaranteed (``score.go`` returns before the strategy runs)."""
    report = node_topology(node.cm)
    if max_numa_nodes is None:
        options = node.cm.topology.options
        max_numa_nodes = options.max_allowable_numa_nodes if options is not None else DEFAULT_MAX_NUMA_NODES
    result = least_numa_nodes(
        zones_from_report(report), pod, scope or report.topology_manager_scope, max_numa_nodes
    )
    if pod_qos(pod) is not QOSClass.GUARANTEED:
        return replace(result, score=MAX_NODE_SCORE)
    return result
