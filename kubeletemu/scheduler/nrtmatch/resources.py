"""How the plugin classifies resource names and sums a pod's requests.

scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``: ``numaresources.go``
(``isHostLevelResource``, ``isNUMAAffineResource``, ``isResourceSetSuitable``),
``resourcerequests/exclusive.go`` (``IncludeNonNative``) and ``pkg/util/resource.go``
(``GetPodEffectiveRequest``, ``ResourceList``).

Amounts are exact (``resource.Quantity`` compares exactly): an ``int`` when the amount is whole, else a
``Fraction`` of the same value (see :func:`exact`); ``Value()`` is the ceiling. Request maps keep the pod's
order where Go iterates a map (only BalancedAllocation's floating-point sum could tell the difference).

What the plugin derives once per pod (its PreFilter-like state: QoS, ``IncludeNonNative``, the requests of
each container and the effective request) is kept on the pod by :func:`pod_requests`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from kubeletemu.config.validation import is_native_resource
from kubeletemu.lifecycle.resources import is_hugepage_resource_name, is_scalar_resource_name
from kubeletemu.pod import Container, Pod, QOSClass, compute_qos
from kubeletemu.scheduler.framework import memo

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
STORAGE = "storage"

Amount = int | Fraction
Amounts = dict[str, Amount]


def exact(amount: Fraction) -> Amount:
    """The same value, as an ``int`` when whole: ints compare and add much faster than Fractions, and
    mixing the two stays exact."""
    return amount.numerator if amount.denominator == 1 else amount


def pod_qos(pod: Pod) -> QOSClass:
    """``v1qos.GetPodQOS`` as k8s v1.35 (the plugin's go.mod) computes it: ``PodLevelResources`` is on by
    default there, so a pod's own ``spec.resources`` decides when set."""
    return compute_qos(pod, pod_level_resources_enabled=True)


def requests_of(container: Container) -> Amounts:
    return {name: exact(quantity.amount) for name, quantity in container.requests.items()}


def is_host_level(name: str) -> bool:
    """``isHostLevelResource``: may have no NUMA affinity (storage, anything non-native)."""
    return name in (EPHEMERAL_STORAGE, STORAGE) or not is_native_resource(name)


def is_numa_affine(name: str) -> bool:
    """``isNUMAAffineResource``: cpu, memory and hugepages must be NUMA-bound; devices may not be."""
    return name in (CPU, MEMORY) or is_hugepage_resource_name(name)


def is_suitable(qos: QOSClass, name: str, request: Amount, available: Amount) -> bool:
    """``isResourceSetSuitable``: a non-Guaranteed pod's cpu, memory and hugepages always fit."""
    if qos is not QOSClass.GUARANTEED and is_numa_affine(name):
        return True
    return available >= request


def include_non_native(pod: Pod) -> bool:
    """``IncludeNonNative``: any container (init included) names a ``vendor/name`` resource."""
    return any(not is_native_resource(name) for c in pod.all_containers() for name in c.requests)


def effective_request(pod: Pod) -> Amounts:
    """``GetPodEffectiveRequest``: max(largest init container, sum of app containers) per resource, plus
    the overhead. Sidecars count as plain init containers, and pod-level resources are not read."""
    largest_init: Amounts = {}
    for container in pod.init_containers:
        for name, amount in requests_of(container).items():
            if name not in largest_init or amount > largest_init[name]:
                largest_init[name] = amount
    total: Amounts = {}
    for container in pod.containers:
        for name, amount in requests_of(container).items():
            total[name] = total.get(name, 0) + amount
    for name, amount in largest_init.items():
        if name not in total or amount > total[name]:
            total[name] = amount
    for name, quantity in pod.overhead.items():
        total[name] = total.get(name, 0) + exact(quantity.amount)
    return total


@dataclass(frozen=True)
class RequestItem:
    """One non-zero resource of a request, with what the plugin asks of its name."""

    name: str
    amount: Amount
    numa_free: bool  # a non-Guaranteed pod's cpu, memory or hugepages: fits any zone, never subtracted
    host_level: bool


@dataclass(frozen=True)
class Request:
    """A request (a container's, or the pod's effective one) as read-only amounts, plus what the plugin
    reads of it, classified once: its non-zero resources (:class:`RequestItem`), its resource ``names``
    and the non-zero amounts ``isResourceSetSuitable`` must check (``numa_bound``: all of them for a
    Guaranteed pod, else those without NUMA affinity)."""

    name: str
    amounts: Mapping[str, Amount]
    nonzero: tuple[RequestItem, ...]
    names: tuple[str, ...]
    numa_bound: tuple[tuple[str, Amount], ...]


@dataclass(frozen=True)
class PodRequests:
    """What the plugin computes from the pod alone, kept on the pod (:func:`pod_requests`). Nothing here
    may be mutated: it is shared by every node the pod is filtered and scored on."""

    qos: QOSClass
    include_non_native: bool
    init: tuple[tuple[Container, Request], ...]
    app: tuple[tuple[Container, Request], ...]
    effective: Request

    @property
    def containers(self) -> tuple[tuple[Container, Request], ...]:
        """Init containers (sidecars included), then app containers: ``pod.all_containers()``."""
        return self.init + self.app


def _request(name: str, amounts: Amounts, qos: QOSClass) -> Request:
    guaranteed = qos is QOSClass.GUARANTEED
    items = tuple(
        RequestItem(n, amount, not guaranteed and is_numa_affine(n), is_host_level(n))
        for n, amount in amounts.items()
        if amount != 0
    )
    return Request(
        name,
        amounts,
        items,
        tuple(amounts),
        tuple((item.name, item.amount) for item in items if not item.numa_free),
    )


def _pod_requests(pod: Pod) -> PodRequests:
    qos = pod_qos(pod)
    return PodRequests(
        qos=qos,
        include_non_native=include_non_native(pod),
        init=tuple((c, _request(c.name, requests_of(c), qos)) for c in pod.init_containers),
        app=tuple((c, _request(c.name, requests_of(c), qos)) for c in pod.containers),
        effective=_request(pod.name, effective_request(pod), qos),
    )


def pod_requests(pod: Pod) -> PodRequests:
    """The pod's QoS, ``IncludeNonNative`` and requests, computed once per pod (the pod is frozen)."""
    return memo(pod, "_nrtmatch_pod_requests", lambda: _pod_requests(pod))


def node_resource_names(allocatable: Iterable[str]) -> frozenset[str]:
    """The names ``util.ResourceList(nodeInfo.GetAllocatable())`` has: cpu, memory, pods and
    ephemeral-storage always (possibly 0), plus the scalar resources the scheduler keeps."""
    return frozenset((CPU, MEMORY, PODS, EPHEMERAL_STORAGE)) | {
        name for name in allocatable if is_scalar_resource_name(name)
    }
