"""The default scheduler's ``NodeResourcesFit``: the NUMA-blind baseline every NUMA-aware model is measured
against (``pkg/scheduler/framework/plugins/noderesources``: ``fit.go``, ``resource_allocation.go``,
``least_allocated.go``, ``most_allocated.go``).

Filter is ``fitsRequest`` on the node's allocatable minus the requests of the pods already on it — the
same function the kubelet's admission runs (:func:`kubeletemu.lifecycle.predicate.fits_request`), here
with no DRA device classes (an extended resource the node does not offer is insufficient) and the args'
``ignoredResources``/``ignoredResourceGroups``. Reasons: ``Too many pods``, ``Insufficient <resource>``.

Score (``scoringStrategy``, ``LeastAllocated`` by default, ``cpu`` and ``memory`` with weight 1): per
resource, the node's requested amount — for cpu and memory the *non-zero* requested amount, in which a
container without a cpu (memory) request counts 100m (200Mi) — plus the pod's; ``LeastAllocated`` scores
``(allocatable − requested)·100 // allocatable`` (0 when over), ``MostAllocated`` ``requested·100 //
allocatable`` (requested capped at allocatable); a resource the node has none of, or an extended resource
the pod does not ask for, is left out; the weighted sum is divided by the weights' sum (integer division).

A node known only from its NodeResourceTopology has, as allocatable, the sum of its zones' allocatable, and
no pod-count limit unless a zone publishes ``pods`` (a real scheduler always has the Node object; give
Node objects to compare the pod count too).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from kubeletemu.config import fields
from kubeletemu.golang import go_quote
from kubeletemu.lifecycle.predicate import fits_request
from kubeletemu.lifecycle.resources import (
    CPU,
    MEMORY,
    PODS,
    Resource,
    is_scalar_resource_name,
    milli_value,
    pod_request_list,
    value,
)
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import NodeInfo, Status, memo

NAME = "NodeResourcesFit"
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED)
MAX_NODE_SCORE = 100
# A node known only from its NRT publishes no pod count: the count is not what this check is about.
UNKNOWN_POD_LIMIT = 2**31 - 1
# schedutil.DefaultMilliCPURequest, DefaultMemoryRequest: what a container without a request counts as.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
_NON_MISSING = {
    CPU: Quantity(Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000)),
    MEMORY: Quantity(DEFAULT_MEMORY_REQUEST),
}


@dataclass(frozen=True)
class ResourceSpec:
    name: str
    weight: int = 1


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    """``NodeResourcesFitArgs`` with the defaults of ``SetDefaults_NodeResourcesFitArgs``."""

    strategy: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = (ResourceSpec(CPU), ResourceSpec(MEMORY))
    ignored_resources: frozenset[str] = field(default_factory=frozenset)
    ignored_resource_groups: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_args(cls, raw: Mapping[str, Any] | None, source: str) -> NodeResourcesFitArgs:
        """Decode, default and validate ``args``; errors name ``source`` (the pluginConfig entry) and the
        field."""
        where = fields.Where(source)
        args = fields.mapping(where, "", raw)
        strategy = fields.mapping(where, "scoringStrategy", args.get("scoringStrategy"))
        kind = fields.string(where, "scoringStrategy.type", strategy.get("type", LEAST_ALLOCATED))
        if kind not in STRATEGIES:
            supported = ", ".join(go_quote(s) for s in STRATEGIES)
            raise where.error(
                "scoringStrategy.type",
                f"Unsupported value: {go_quote(kind)}: supported values: {supported}",
            )
        specs = []
        for i, item in enumerate(
            fields.sequence(where, "scoringStrategy.resources", strategy.get("resources"))
        ):
            spec = fields.mapping(where, f"scoringStrategy.resources[{i}]", item)
            name = fields.string(where, f"scoringStrategy.resources[{i}].name", spec.get("name"))
            weight = fields.integer(where, f"scoringStrategy.resources[{i}].weight", spec.get("weight", 1))
            if not 1 <= weight <= 100:
                raise where.error(
                    f"scoringStrategy.resources[{i}].weight",
                    f"Invalid value: {weight}: resource weight of {name} not in valid range [1, 100]",
                )
            specs.append(ResourceSpec(name, weight))
        ignored = fields.sequence(where, "ignoredResources", args.get("ignoredResources"))
        groups = fields.sequence(where, "ignoredResourceGroups", args.get("ignoredResourceGroups"))
        return cls(
            strategy=kind,
            resources=tuple(specs) or cls.resources,
            ignored_resources=frozenset(
                fields.string(where, f"ignoredResources[{i}]", r) for i, r in enumerate(ignored)
            ),
            ignored_resource_groups=frozenset(
                fields.string(where, f"ignoredResourceGroups[{i}]", g) for i, g in enumerate(groups)
            ),
        )


def node_allocatable(node: NodeInfo) -> dict[str, Fraction]:
    """The Node object's allocatable, else the sum of the NRT zones' allocatable."""
    if node.node is not None:
        return {name: q.amount for name, q in node.node.allocatable.items()}
    total: dict[str, Fraction] = {}
    for zone in node.topology.zones if node.topology is not None else ():
        for resource in zone.resources:
            total[resource.name] = total.get(resource.name, Fraction(0)) + resource.allocatable.amount
    return total


def _with_defaults(container: Container) -> Container:
    missing = {k: v for k, v in _NON_MISSING.items() if k not in container.requests}
    return container if not missing else replace(container, requests={**container.requests, **missing})


def non_zero_requests(pod: Pod) -> dict[str, Fraction]:
    """``PodRequests`` with ``NonMissingContainerRequests``: a container (init ones too) missing a cpu or
    memory request counts the scheduler's default for it."""
    defaulted = replace(
        pod,
        containers=tuple(_with_defaults(c) for c in pod.containers),
        init_containers=tuple(_with_defaults(c) for c in pod.init_containers),
    )
    return pod_request_list(defaulted)


def _amount(name: str, requests: Mapping[str, Fraction]) -> int:
    amount = requests.get(name, Fraction(0))
    return milli_value(amount) if name == CPU else value(amount)


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def _ignored(name: str, args: NodeResourcesFitArgs) -> bool:
    group = name.split("/", 1)[0] if "/" in name else ""
    return name in args.ignored_resources or (group != "" and group in args.ignored_resource_groups)


class NodeResourcesFit:
    """The Filter and Score of ``NodeResourcesFit`` for one pod on one node."""

    name = NAME

    def __init__(self, args: NodeResourcesFitArgs | None = None) -> None:
        self.args = args or NodeResourcesFitArgs()

    def policy(self, pod: Pod, node: NodeInfo) -> str:
        return ""  # NUMA-blind

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        allocatable = memo(node, "fit_allocatable", lambda: _fit_allocatable(node))
        requested = memo(node, "fit_requested", lambda: _requested(node.pods))
        pod_request = _fit_request(pod)
        ignored = [n for n in pod_request.scalar_resources if _ignored(n, self.args)]
        if ignored:
            pod_request = Resource.from_list(pod_request_list(pod))
            for name in ignored:
                del pod_request.scalar_resources[name]
        failures = fits_request(
            pod_request, allocatable, requested, len(node.pods), dra_extended_resource=False
        )
        if not failures:
            return Status()
        return Status.unschedulable(*(f.scheduler_reason for f in failures))

    def score(self, pod: Pod, node: NodeInfo) -> int:
        allocatable = memo(node, "allocatable", lambda: node_allocatable(node))
        pod_requests = memo(pod, "non_zero_requests", lambda: non_zero_requests(pod))
        placed_non_zero = memo(node, "non_zero_requested", lambda: _sum(map(_rounded_non_zero, node.pods)))
        placed = memo(node, "requested", lambda: _sum(map(_rounded, node.pods)))
        scorer = least_requested_score if self.args.strategy == LEAST_ALLOCATED else most_requested_score
        total = weights = 0
        for spec in self.args.resources:
            asked = _amount(spec.name, pod_requests)
            if asked == 0 and is_scalar_resource_name(spec.name):
                continue  # an extended resource the pod does not ask for is not scored
            capacity = _amount(spec.name, allocatable)
            if capacity == 0:
                continue
            base = placed_non_zero if spec.name in (CPU, MEMORY) else placed
            total += scorer(base.get(spec.name, 0) + asked, capacity) * spec.weight
            weights += spec.weight
        return total // weights if weights else 0


def _fit_allocatable(node: NodeInfo) -> Resource:
    allocatable = node_allocatable(node)
    resource = Resource.from_list(allocatable)
    if node.node is None and PODS not in allocatable:
        resource.allowed_pod_number = UNKNOWN_POD_LIMIT
    return resource


def _fit_request(pod: Pod) -> Resource:
    """The pod's request as the fit reads it, kept on the pod (never changed once made)."""
    return memo(pod, "fit_request", lambda: Resource.from_list(pod_request_list(pod)))


def _requested(pods: Iterable[Pod]) -> Resource:
    """``NodeInfo.Requested``: :func:`~kubeletemu.lifecycle.resources.sum_requests` over each pod's
    request as kept on the pod."""
    requested = Resource()
    for placed in pods:
        requested.add_resource(_fit_request(placed))
    return requested


def _round(requests: Mapping[str, Fraction]) -> dict[str, int]:
    return {name: milli_value(amount) if name == CPU else value(amount) for name, amount in requests.items()}


def _rounded(pod: Pod) -> dict[str, int]:
    """The pod's requests, each rounded on its own (millicores for cpu), kept on the pod."""
    return memo(pod, "rounded_requests", lambda: _round(pod_request_list(pod)))


def _rounded_non_zero(pod: Pod) -> dict[str, int]:
    return memo(pod, "rounded_non_zero_requests", lambda: _round(non_zero_requests(pod)))


def _sum(rounded: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """``NodeInfo.Requested``/``NonZeroRequested``: each pod rounded on its own, then summed."""
    total: dict[str, int] = {}
    for requests in rounded:
        for name, amount in requests.items():
            total[name] = total.get(name, 0) + amount
    return total


BALANCED_NAME = "NodeResourcesBalancedAllocation"


class NodeResourcesBalancedAllocation:
    """``NodeResourcesBalancedAllocation`` (``balanced_allocation.go``), in every default profile beside
    ``NodeResourcesFit``: ``(1 − std)·100`` of the requested/allocatable fractions (capped at 1) of cpu and
    memory, with *requested* (not non-zero) amounts; a pod requesting none of them is skipped (score 0)."""

    name = BALANCED_NAME

    def __init__(
        self, resources: tuple[ResourceSpec, ...] = (ResourceSpec(CPU), ResourceSpec(MEMORY))
    ) -> None:
        self.resources = resources

    def policy(self, pod: Pod, node: NodeInfo) -> str:
        return ""

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        return Status()  # a score plugin only

    def score(self, pod: Pod, node: NodeInfo) -> int:
        pod_requests = memo(pod, "requests", lambda: pod_request_list(pod))
        asked = [_amount(spec.name, pod_requests) for spec in self.resources]
        if not any(asked):
            return 0  # PreScore skips best-effort pods
        allocatable = memo(node, "allocatable", lambda: node_allocatable(node))
        placed = memo(node, "requested", lambda: _sum(map(_rounded, node.pods)))
        fractions = []
        for spec, request in zip(self.resources, asked, strict=True):
            if request == 0 and is_scalar_resource_name(spec.name):
                continue
            capacity = _amount(spec.name, allocatable)
            if capacity == 0:
                continue
            fractions.append(min(1.0, (placed.get(spec.name, 0) + request) / capacity))
        std = 0.0
        if len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)
        elif len(fractions) > 2:
            mean = sum(fractions) / len(fractions)
            std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
        return int((1 - std) * MAX_NODE_SCORE)
