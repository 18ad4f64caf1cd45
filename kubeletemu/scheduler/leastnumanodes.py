"""The LeastNUMANodes score strategy of scheduler-plugins' NodeResourceTopologyMatch, from the node's own
per-NUMA free state instead of a NodeResourceTopology object (``scheduler-side.md`` §1).

For one request (a container, or the pod's effective request in pod scope):

1. for k = 1, 2, … the NUMA count, walk the k-combinations of zones in lexicographic order of their ids;
2. a combination fits when, for every requested NUMA-bound resource, the sum of what its zones have
   available covers the request (for a pod that is not Guaranteed, cpu, memory and hugepages always fit,
   as in the plugin's ``isResourceSetSuitable``);
3. the first k with a fitting combination is the answer; within it, a fitting combination with the
   minimum average distance of all k-combinations is taken at once (the distance is "optimal"), otherwise
   the fitting one with the smallest average distance (the first found on ties);
4. a request of only non-NUMA resources needs no NUMA node.

The average distance is the kubelet's (all ordered pairs, diagonal included, over k²) on the zones' costs,
255 where a cost is unknown. Container scope walks init then app containers, subtracts each container's
request from the zones it was given (lowest id first) and keeps the largest k; the distance is optimal
only if it was for every container. Score: ``100 − k·(100 // maxNUMA) + (100 // maxNUMA) // 2`` when the
distance is optimal; 100 when nothing needs a NUMA node, 0 when the request does not fit at all.

Resources that no zone reports (``ephemeral-storage``, …) are not NUMA-bound and are skipped, as the spec
states; the plugin's code would count them as zero available and find no fitting combination.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from kubeletemu.bitmask import BitMask
from kubeletemu.node_topology import NodeTopologyReport, node_topology
from kubeletemu.pod import Pod, QOSClass
from kubeletemu.quantity import Quantity

if TYPE_CHECKING:
    from kubeletemu.emulator import NodeEmulator

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
DEFAULT_MAX_NUMA_NODES = 8
# ACPI SLIT's "unknown distance".
MAX_DISTANCE = 255
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


def is_numa_affine(resource: str) -> bool:
    """``isNUMAAffineResource``: cpu, memory and hugepages must be NUMA-bound; devices may not be."""
    return resource in (CPU, MEMORY) or resource.startswith(HUGEPAGES_PREFIX)


def only_non_numa_resources(zones: Sequence[NUMAZone], request: Request) -> bool:
    """``onlyNonNUMAResources``: no zone reports any of the requested resources."""
    return not any(name in zone.available for name in request for zone in zones)


def average_distance(zones: Sequence[NUMAZone]) -> Fraction:
    """All ordered pairs, diagonal included, over k²; an unknown cost counts as 255."""
    if not zones:
        return Fraction(MAX_DISTANCE)
    total = sum(a.costs.get(b.id, MAX_DISTANCE) for a in zones for b in zones)
    return Fraction(total, len(zones) ** 2)


def _fits(
    request: Mapping[str, Fraction], combination: Sequence[NUMAZone], qos: QOSClass, numa_bound: set[str]
) -> bool:
    for name, quantity in request.items():
        if name not in numa_bound:
            continue
        if qos is not QOSClass.GUARANTEED and is_numa_affine(name):
            continue
        if sum(Fraction(z.available.get(name, 0)) for z in combination) < quantity:
            return False
    return True


def numa_nodes_required(zones: Sequence[NUMAZone], request: Request, qos: QOSClass) -> Requirement:
    """``numaNodesRequired`` for one request over zones sorted by id (not modified)."""
    ordered = sorted(zones, key=lambda z: z.id)
    if only_non_numa_resources(ordered, request):
        return Requirement(BitMask(), True)
    wanted = {name: q.amount for name, q in request.items() if q.amount != 0}
    numa_bound = {name for name in wanted if any(name in z.available for z in ordered)}
    for k in range(1, len(ordered) + 1):
        combinations = list(itertools.combinations(ordered, k))
        minimum = min(average_distance(c) for c in combinations)
        best: tuple[NUMAZone, ...] | None = None
        best_distance = Fraction(MAX_DISTANCE + 1)
        for combination in combinations:
            if not _fits(wanted, combination, qos, numa_bound):
                continue
            distance = average_distance(combination)
            if distance == minimum:
                return Requirement(BitMask.of(*(z.id for z in combination)), True)
            if distance < best_distance:
                best, best_distance = combination, distance
        if best is not None:
            return Requirement(BitMask.of(*(z.id for z in best)), False)
    return Requirement(None, False)


def normalize_score(numa_nodes: int, min_distance: bool, max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES) -> int:
    step = MAX_NODE_SCORE // max_numa_nodes
    return MAX_NODE_SCORE - numa_nodes * step + (step // 2 if min_distance else 0)


def _subtract(zones: dict[int, dict[str, Amount]], request: Request, nodes: Iterable[int]) -> None:
    """``subtractFromNUMAs``: take each resource from the given zones in id order until covered."""
    ids = list(nodes)
    for name, quantity in request.items():
        remaining = Fraction(quantity.amount)
        for node in ids:
            if remaining == 0:
                break
            available = zones[node].get(name)
            if available is None:
                continue
            taken = min(Fraction(available), remaining)
            zones[node][name] = Fraction(available) - taken
            remaining -= taken


def pod_effective_request(pod: Pod) -> dict[str, Quantity]:
    """scheduler-plugins' ``GetPodEffectiveRequest``: max(sum of app containers, largest init container)."""
    total: dict[str, Quantity] = {}
    for container in pod.containers:
        for name, quantity in container.requests.items():
            total[name] = total[name] + quantity if name in total else quantity
    for container in pod.init_containers:
        for name, quantity in container.requests.items():
            if name not in total or total[name] < quantity:
                total[name] = quantity
    return total


def least_numa_nodes(
    zones: Sequence[NUMAZone],
    pod: Pod,
    scope: str = SCOPE_CONTAINER,
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES,
) -> LeastNUMAResult:
    """``leastNUMAContainerScopeScore`` / ``leastNUMAPodScopeScore``."""
    if scope not in (SCOPE_CONTAINER, SCOPE_POD):
        raise ValueError(f'unknown scope "{scope}": expected container or pod')
    if max_numa_nodes < 1:
        raise ValueError(f"max_numa_nodes must be at least 1, got {max_numa_nodes}")
    qos = pod.qos_class
    if scope == SCOPE_POD:
        request = pod_effective_request(pod)
        if only_non_numa_resources(zones, request):
            return LeastNUMAResult(scope, 0, True, MAX_NODE_SCORE, ())
        needed = numa_nodes_required(zones, request, qos)
        if needed.count is None:
            return LeastNUMAResult(scope, None, False, MIN_NODE_SCORE, ((pod.name, needed),))
        score = normalize_score(needed.count, needed.min_distance, max_numa_nodes)
        return LeastNUMAResult(scope, needed.count, needed.min_distance, score, ((pod.name, needed),))
    free = {z.id: dict(z.available) for z in zones}
    answers: list[tuple[str, Requirement]] = []
    most = 0
    all_min = True
    for container in pod.all_containers():
        current = [NUMAZone(z.id, free[z.id], z.costs) for z in zones]
        if only_non_numa_resources(current, container.requests):
            continue
        needed = numa_nodes_required(current, container.requests, qos)
        answers.append((container.name, needed))
        if needed.nodes is None:
            return LeastNUMAResult(scope, None, False, MIN_NODE_SCORE, tuple(answers))
        all_min = all_min and needed.min_distance
        most = max(most, needed.nodes.count())
        _subtract(free, container.requests, needed.nodes.bits())
    if most == 0:
        return LeastNUMAResult(scope, 0, True, MAX_NODE_SCORE, tuple(answers))
    return LeastNUMAResult(
        scope, most, all_min, normalize_score(most, all_min, max_numa_nodes), tuple(answers)
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
    ``max-allowable-numa-nodes`` unless given."""
    report = node_topology(node.cm)
    if max_numa_nodes is None:
        options = node.cm.topology.options
        max_numa_nodes = options.max_allowable_numa_nodes if options is not None else DEFAULT_MAX_NUMA_NODES
    return least_numa_nodes(
        zones_from_report(report), pod, scope or report.topology_manager_scope, max_numa_nodes
    )
