"""NodeResourceTopologyMatch as first written: a line-by-line transliteration of scheduler-plugins
``903da7df82cb8794dda8f2d510ba1156111662dd`` on exact Fractions, with no caching and no shortcuts. The
models in :mod:`kubeletemu.scheduler.nrtmatch` compute the same answers faster (cached per NRT and per
pod, integer amounts, LeastNUMANodes' combinations sorted by distance and pruned);
``test_fast_paths.py`` compares the two over many random inputs."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from kubeletemu.bitmask import BitMask, and_masks
from kubeletemu.golang import GoSyntaxError, go_atoi
from kubeletemu.pod import Container, Pod, QOSClass
from kubeletemu.scheduler.framework import ERROR, PluginPanic, Status
from kubeletemu.scheduler.nrtmatch import nodeconfig
from kubeletemu.scheduler.nrtmatch.least_numa import LeastNUMAScore, RequestNeed, float32
from kubeletemu.scheduler.nrtmatch.resources import (
    include_non_native,
    is_host_level,
    is_numa_affine,
    node_resource_names,
    pod_qos,
)
from kubeletemu.scheduler.objects import Node, NodeResourceTopology, Zone

Amounts = dict[str, Fraction]


@dataclass
class NUMANode:
    numa_id: int
    resources: dict[str, Fraction]
    costs: dict[int, int] = field(default_factory=dict)


def _numa_id(name: str) -> int | None:
    if not name.startswith("node-"):
        return None
    try:
        value = go_atoi(name[len("node-") :])
    except GoSyntaxError:
        return None
    return value if value >= 0 else None


def numa_node_list(zones: Sequence[Zone]) -> list[NUMANode]:
    last_zone: dict[int, int] = {}
    nodes: list[NUMANode] = []
    for index, zone in enumerate(zones):
        if zone.type != "Node":
            continue
        ident = _numa_id(zone.name)
        if ident is None or ident > 64:
            continue
        if ident == 64:
            raise PluginPanic(
                "index out of range [64] with length 64", "noderesourcetopology.createNUMANodeList"
            )
        last_zone[ident] = index
        nodes.append(NUMANode(ident, {r.name: r.available.amount for r in zone.resources}))
    for node in nodes:
        costs: dict[int, int] = {}
        for cost in zones[last_zone[node.numa_id]].costs:
            target = _numa_id(cost.name)
            if target is not None and target <= 64:
                costs[target] = cost.value
        node.costs = costs
    return nodes


def requests_of(container: Container) -> Amounts:
    return {name: quantity.amount for name, quantity in container.requests.items()}


def effective_request(pod: Pod) -> Amounts:
    largest_init: Amounts = {}
    for container in pod.init_containers:
        for name, amount in requests_of(container).items():
            if name not in largest_init or amount > largest_init[name]:
                largest_init[name] = amount
    total: Amounts = {}
    for container in pod.containers:
        for name, amount in requests_of(container).items():
            total[name] = total.get(name, Fraction(0)) + amount
    for name, amount in largest_init.items():
        if name not in total or amount > total[name]:
            total[name] = amount
    for name, quantity in pod.overhead.items():
        total[name] = total.get(name, Fraction(0)) + quantity.amount
    return total


def is_suitable(qos: QOSClass, name: str, request: Fraction, available: Fraction) -> bool:
    if qos is not QOSClass.GUARANTEED and is_numa_affine(name):
        return True
    return available >= request


# ---- Filter ------------------------------------------------------------------------------------------


def fitting_numa(
    request: Mapping[str, Fraction], nodes: Sequence[NUMANode], qos: QOSClass, on_node: frozenset[str]
) -> int | None:
    mask = BitMask.full()
    for name, amount in request.items():
        if amount == 0:
            continue
        if name not in on_node:
            return None
        listed = False
        fits = BitMask()
        for node in nodes:
            available = node.resources.get(name)
            if available is None:
                continue
            listed = True
            if is_suitable(qos, name, amount, available):
                fits = fits.add(node.numa_id)
        if not listed and is_host_level(name):
            continue
        mask = and_masks(mask, fits)
        if mask.is_empty():
            return None
    return mask.bits()[0]


def _text(amount: Fraction) -> str:
    if amount.denominator == 1:
        return str(amount.numerator)
    return f"{amount * 1000}m" if (amount * 1000).denominator == 1 else str(float(amount))


def subtract(nodes: Sequence[NUMANode], numa: int, qos: QOSClass, request: Amounts) -> str | None:
    for node in nodes:
        if node.numa_id != numa:
            continue
        for name, amount in request.items():
            if (qos is not QOSClass.GUARANTEED and is_numa_affine(name)) or amount == 0:
                continue
            available = node.resources.get(name)
            if available is None:
                continue
            if available - amount < 0:
                return (
                    f'resource "{name}" request {_text(amount)} exceeds NUMA {numa} availability '
                    f"{_text(available)}"
                )
            node.resources[name] = available - amount
    return None


def filter_pod(pod: Pod, node: Node | None, topology: NodeResourceTopology | None) -> Status:
    qos = pod_qos(pod)
    if qos is QOSClass.BEST_EFFORT and not include_non_native(pod):
        return Status()
    if topology is None:
        return Status()
    conf = nodeconfig.topology_manager_config(topology)
    if conf.policy != nodeconfig.POLICY_SINGLE_NUMA_NODE:
        return Status()
    nodes = numa_node_list(topology.zones)
    if node is not None:
        on_node = node_resource_names(node.allocatable)
    else:
        on_node = node_resource_names(r.name for zone in topology.zones for r in zone.resources)
    if conf.scope == nodeconfig.SCOPE_POD:
        if fitting_numa(effective_request(pod), nodes, qos, on_node) is None:
            return Status.unschedulable("cannot align pod")
        return Status()
    for init in pod.init_containers:
        if fitting_numa(requests_of(init), nodes, qos, on_node) is None:
            reason = (
                "cannot align sidecar container"
                if init.is_restartable_init
                else "cannot align init container"
            )
            return Status.unschedulable(reason)
    for container in pod.containers:
        request = requests_of(container)
        numa = fitting_numa(request, nodes, qos, on_node)
        if numa is None:
            return Status.unschedulable("cannot align container")
        problem = subtract(nodes, numa, qos, request)
        if problem is not None:
            return Status(ERROR, ("inconsistent resource accounting", problem))
    return Status()


# ---- Most / Least / BalancedAllocation -----------------------------------------------------------------


def _go_div(a: int, b: int, where: str) -> int:
    if b == 0:
        raise PluginPanic("integer divide by zero", where)
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def _go_int64(value: float) -> int:
    if math.isnan(value) or not -(2.0**63) <= value < 2.0**63:
        return -(2**63)
    return math.trunc(value)


def _weight(weights: Mapping[str, int], name: str) -> int:
    value = weights.get(name, 1)
    return value if value >= 1 else 1


def _most(requested: Fraction, available: Fraction) -> int:
    if available == 0 or requested > available:
        return 0
    return _go_div(
        math.ceil(requested) * 100, math.ceil(available), "noderesourcetopology.mostAllocatedScore"
    )


def _least(requested: Fraction, available: Fraction) -> int:
    if available == 0 or requested > available:
        return 0
    return _go_div(
        (math.ceil(available) - math.ceil(requested)) * 100,
        math.ceil(available),
        "noderesourcetopology.leastAllocatedScore",
    )


Strategy = Callable[[Mapping[str, Fraction], Mapping[str, Fraction], Mapping[str, int]], int]


def _weighted(per_resource: Callable[[Fraction, Fraction], int], where: str) -> Strategy:
    def strategy(
        requested: Mapping[str, Fraction], available: Mapping[str, Fraction], weights: Mapping[str, int]
    ) -> int:
        total = weight_sum = 0
        for name, amount in requested.items():
            w = _weight(weights, name)
            total += per_resource(amount, available.get(name, Fraction(0))) * w
            weight_sum += w
        return _go_div(total, weight_sum, where)

    return strategy


def _variance(values: list[float]) -> float:
    n = len(values)
    if n < 2:
        return math.nan
    total = 0.0
    for v in values:
        total += v
    mean = total / n
    ss = compensation = 0.0
    for v in values:
        d = v - mean
        ss += d * d
        compensation += d
    return (ss - compensation * compensation / n) / (n - 1)


def _balanced(
    requested: Mapping[str, Fraction], available: Mapping[str, Fraction], weights: Mapping[str, int]
) -> int:
    fractions: list[float] = []
    for name, amount in requested.items():
        capacity = math.ceil(available.get(name, Fraction(0)))
        fraction = 1.0 if capacity == 0 else float(math.ceil(amount)) / float(capacity)
        if fraction > 1:
            return 0
        fractions.append(fraction)
    return _go_int64((1 - _variance(fractions)) * 100)


STRATEGIES: dict[str, Strategy] = {
    "MostAllocated": _weighted(_most, "noderesourcetopology.mostAllocatedScoreStrategy"),
    "LeastAllocated": _weighted(_least, "noderesourcetopology.leastAllocatedScoreStrategy"),
    "BalancedAllocation": _balanced,
}


def score_for_each_numa(
    requested: Mapping[str, Fraction],
    nodes: Sequence[NUMANode],
    strategy: Strategy,
    weights: Mapping[str, int],
) -> int:
    minimum = 0
    for node in nodes:
        score = strategy(requested, node.resources, weights)
        if minimum == 0 or (score != 0 and score < minimum):
            minimum = score
        if node.numa_id >= len(nodes):
            raise PluginPanic(
                f"index out of range [{node.numa_id}] with length {len(nodes)}",
                "noderesourcetopology.scoreForEachNUMANode",
            )
    return minimum


# ---- LeastNUMANodes ------------------------------------------------------------------------------------


def average_distance(nodes: Sequence[NUMANode], combination: Sequence[int]) -> Fraction:
    if not combination:
        return Fraction(255)
    total = 0
    for a in combination:
        for b in combination:
            total += nodes[a].costs.get(nodes[b].numa_id, 255)
    return float32(float32(Fraction(total)) / float32(Fraction(len(combination) ** 2)))


def _fits(
    qos: QOSClass, request: Mapping[str, Fraction], nodes: Sequence[NUMANode], combination: Sequence[int]
) -> bool:
    if any(name not in nodes[i].resources for i in combination for name in request):
        return False
    for name, amount in request.items():
        if amount == 0:
            continue
        combined = sum((nodes[i].resources.get(name, Fraction(0)) for i in combination), Fraction(0))
        if not is_suitable(qos, name, amount, combined):
            return False
    return True


def numa_nodes_required(
    qos: QOSClass, nodes: Sequence[NUMANode], request: Mapping[str, Fraction]
) -> tuple[BitMask | None, bool]:
    for size in range(1, len(nodes) + 1):
        combinations = list(itertools.combinations(range(len(nodes)), size))
        minimum = Fraction(255)
        for combination in combinations:
            minimum = min(minimum, average_distance(nodes, combination))
        closest: tuple[int, ...] | None = None
        closest_distance = Fraction(256)
        for combination in combinations:
            if not _fits(qos, request, nodes, combination):
                continue
            distance = average_distance(nodes, combination)
            if distance == minimum:
                return BitMask.of(*(nodes[i].numa_id for i in combination)), True
            if distance < closest_distance:
                closest, closest_distance = combination, distance
        if closest is not None:
            return BitMask.of(*(nodes[i].numa_id for i in closest)), False
    return None, False


def _normalize(numa_nodes: int, min_distance: bool, max_numa_nodes: int) -> int:
    step = 100 // max_numa_nodes
    score = 100 - numa_nodes * step
    return score + step // 2 if min_distance else score


def _subtract_from_numas(request: Mapping[str, Fraction], nodes: list[NUMANode], ids: Sequence[int]) -> None:
    for name, amount in request.items():
        wanted = amount
        for ident in ids:
            if wanted == 0:
                break
            if ident >= len(nodes):
                raise PluginPanic(
                    f"index out of range [{ident}] with length {len(nodes)}",
                    "noderesourcetopology.subtractFromNUMAs",
                )
            resources = nodes[ident].resources
            available = resources.get(name)
            if available is None:
                continue
            if wanted >= available:
                wanted -= available
                resources[name] = Fraction(0)
            else:
                resources[name] = available - wanted
                wanted = Fraction(0)


def _only_non_numa(nodes: Sequence[NUMANode], request: Mapping[str, Fraction]) -> bool:
    return not any(name in node.resources for name in request for node in nodes)


def container_scope_score(
    pod: Pod, qos: QOSClass, nodes: Sequence[NUMANode], max_numa: int
) -> LeastNUMAScore:
    free = [NUMANode(n.numa_id, dict(n.resources), dict(n.costs)) for n in nodes]
    most = 0
    all_minimal = True
    needs: list[RequestNeed] = []
    for container in pod.all_containers():
        request = requests_of(container)
        if _only_non_numa(free, request):
            continue
        mask, minimal = numa_nodes_required(qos, free, request)
        needs.append(RequestNeed(container.name, mask, minimal))
        if mask is None:
            return LeastNUMAScore(0, None, False, tuple(needs))
        all_minimal = all_minimal and minimal
        most = max(most, mask.count())
        _subtract_from_numas(request, free, mask.bits())
    if most == 0:
        return LeastNUMAScore(100, 0, True, tuple(needs))
    return LeastNUMAScore(_normalize(most, all_minimal, max_numa), most, all_minimal, tuple(needs))


def pod_scope_score(pod: Pod, qos: QOSClass, nodes: Sequence[NUMANode], max_numa: int) -> LeastNUMAScore:
    request = effective_request(pod)
    if _only_non_numa(nodes, request):
        return LeastNUMAScore(100, 0, True, ())
    mask, minimal = numa_nodes_required(qos, nodes, request)
    need = (RequestNeed(pod.name, mask, minimal),)
    if mask is None:
        return LeastNUMAScore(0, None, False, need)
    return LeastNUMAScore(_normalize(mask.count(), minimal, max_numa), mask.count(), minimal, need)


# ---- Score ---------------------------------------------------------------------------------------------


def score_pod(
    pod: Pod, topology: NodeResourceTopology | None, strategy: str, weights: Mapping[str, int]
) -> int:
    qos = pod_qos(pod)
    if qos is not QOSClass.GUARANTEED:
        return 100
    if topology is None:
        return 0
    conf = nodeconfig.topology_manager_config(topology)
    if strategy == "LeastNUMANodes":
        nodes = numa_node_list(topology.zones)
        scorer = pod_scope_score if conf.scope == nodeconfig.SCOPE_POD else container_scope_score
        return scorer(pod, qos, nodes, conf.max_numa_nodes).score
    if conf.policy != nodeconfig.POLICY_SINGLE_NUMA_NODE:
        return 0
    nodes = numa_node_list(topology.zones)
    chosen = STRATEGIES[strategy]
    if conf.scope == nodeconfig.SCOPE_POD:
        return score_for_each_numa(effective_request(pod), nodes, chosen, weights)
    total = 0.0
    count = 0
    for container in pod.all_containers():
        total += float(score_for_each_numa(requests_of(container), nodes, chosen, weights))
        count += 1
    return _go_int64(total / count) if count else _go_int64(math.nan)
