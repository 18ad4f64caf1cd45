"""A pod's effective resource request, as the kubelet's node-fit check computes it.

Two layers, both reusable outside the admission handler:

- :func:`pod_request_list` is ``resourcehelper.PodRequests`` (``k8s.io/component-helpers/resource``): exact
  quantities per resource name — app containers and restartable init containers (sidecars) summed, the
  maximum taken with each ordinary init container (plus the sidecars started before it), pod-level
  requests replacing the containers' sum for the resources they name, pod overhead added last;
- :func:`pod_requests` converts that list the way the scheduler framework's ``Resource`` does
  (``Resource.Add`` / ``SetMaxResource``): cpu in millicores (``MilliValue``, rounded up), memory,
  ephemeral-storage and every scalar resource in whole units (``Value``, rounded up); names that are
  neither (an unprefixed unknown name, ``pods``) are dropped.

Rounding happens once per pod, after the exact sum, as Go's ``inf.Dec`` quantities do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from kubeletemu.config.validation import is_extended_resource_name
from kubeletemu.pod import Container, Pod, ResourceList
from kubeletemu.quantity import Quantity, QuantityError

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"


class ResourceListError(ValueError):
    """A resource list (node allocatable, capacity) with an entry that is not a quantity."""


# Exact amounts per resource name (a ``v1.ResourceList`` before any rounding).
ExactResourceList = dict[str, Fraction]


def is_hugepage_resource_name(name: str) -> bool:
    """``IsHugePageResourceName``."""
    return name.startswith(HUGEPAGES_PREFIX)


def is_prefixed_native_resource(name: str) -> bool:
    """``IsPrefixedNativeResource``: anything under a ``*kubernetes.io/`` domain."""
    return DEFAULT_NAMESPACE_PREFIX in name


def is_attachable_volume_resource_name(name: str) -> bool:
    """``IsAttachableVolumeResourceName``."""
    return name.startswith(ATTACHABLE_VOLUMES_PREFIX)


def is_scalar_resource_name(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, prefixed-native and attachable-volume
    resources, the ones the scheduler keeps in ``Resource.ScalarResources``."""
    return (
        is_extended_resource_name(name)
        or is_hugepage_resource_name(name)
        or is_prefixed_native_resource(name)
        or is_attachable_volume_resource_name(name)
    )


def is_supported_pod_level_resource(name: str) -> bool:
    """``IsSupportedPodLevelResource``: cpu, memory and hugepages-* (master)."""
    return name in (CPU, MEMORY) or is_hugepage_resource_name(name)


def is_pod_level_requests_set(pod: Pod) -> bool:
    """``IsPodLevelRequestsSet``: ``spec.resources.requests`` names at least one supported resource."""
    return pod.resources is not None and any(
        is_supported_pod_level_resource(name) for name in pod.resources.requests
    )


def _add(into: ExactResourceList, resources: Mapping[str, Fraction]) -> None:
    """``addResourceList``: a name seen for the first time is kept even when its amount is zero."""
    for name, amount in resources.items():
        into[name] = into.get(name, Fraction(0)) + amount


def _max(into: ExactResourceList, resources: Mapping[str, Fraction]) -> None:
    """``maxResourceList``."""
    for name, amount in resources.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def _exact(resources: ResourceList) -> ExactResourceList:
    return {name: quantity.amount for name, quantity in resources.items()}


def aggregate_container_requests(pod: Pod) -> ExactResourceList:
    """``AggregateContainerRequests`` (spec requests only: the emulator has no container statuses).

    An ordinary init container needs itself plus every sidecar started before it; sidecars keep running,
    so they also add to the app containers' sum (KEP-753's formula).
    """
    result: ExactResourceList = {}
    for container in pod.containers:
        _add(result, _exact(container.requests))
    sidecars: ExactResourceList = {}
    init_peak: ExactResourceList = {}
    for container in pod.init_containers:
        requests = _exact(container.requests)
        if container.is_restartable_init:
            _add(result, requests)
            _add(sidecars, requests)
            during = dict(sidecars)
        else:
            during = {}
            _add(during, requests)
            _add(during, sidecars)
        _max(init_peak, during)
    _max(result, init_peak)
    return result


def pod_request_list(
    pod: Pod, *, pod_level_resources: bool = True, exclude_overhead: bool = False
) -> ExactResourceList:
    """``resourcehelper.PodRequests``: the pod's effective requests, exact.

    ``pod_level_resources`` is the ``PodLevelResources`` gate (``SkipPodLevelResources`` = not it): when on
    and the pod sets pod-level requests, each supported resource it names replaces the containers' value.
    Overhead (``spec.overhead``, from the RuntimeClass) is added last unless ``exclude_overhead``.
    """
    requests = aggregate_container_requests(pod)
    if pod_level_resources and is_pod_level_requests_set(pod):
        assert pod.resources is not None
        for name, quantity in pod.resources.requests.items():
            if is_supported_pod_level_resource(name):
                requests[name] = quantity.amount
    if not exclude_overhead and pod.overhead:
        _add(requests, _exact(pod.overhead))
    return requests


def _ceil(amount: Fraction) -> int:
    return -((-amount.numerator) // amount.denominator)


def milli_value(amount: Fraction) -> int:
    """``Quantity.MilliValue``: thousandths, rounded up."""
    return _ceil(amount * 1000)


def value(amount: Fraction) -> int:
    """``Quantity.Value``: whole units, rounded up."""
    return _ceil(amount)


@dataclass
class Resource:
    """The scheduler framework's ``Resource``: the integer view the fit check compares.

    ``milli_cpu`` in millicores, ``memory`` and ``ephemeral_storage`` in bytes, ``allowed_pod_number``
    from a ``pods`` entry, ``scalar_resources`` (hugepages in bytes, extended resources in units).
    """

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar_resources: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: Mapping[str, Fraction]) -> Resource:
        """``NewResource``: an empty ``Resource`` plus the list."""
        result = cls()
        result.add(resources)
        return result

    def add(self, resources: Mapping[str, Fraction]) -> None:
        """``Resource.Add``: sums, each quantity rounded up on its own (``MilliValue`` / ``Value``)."""
        for name, amount in resources.items():
            if name == CPU:
                self.milli_cpu += milli_value(amount)
            elif name == MEMORY:
                self.memory += value(amount)
            elif name == PODS:
                self.allowed_pod_number += value(amount)
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage += value(amount)
            elif is_scalar_resource_name(name):
                self.scalar_resources[name] = self.scalar_resources.get(name, 0) + value(amount)

    def add_resource(self, other: Resource) -> None:
        """Accumulate another pod's integer request (``NodeInfo.update`` with sign +1)."""
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        for name, amount in other.scalar_resources.items():
            self.scalar_resources[name] = self.scalar_resources.get(name, 0) + amount

    def is_zero_request(self) -> bool:
        """``fitsRequest``'s early exit: nothing but (maybe) the pod slot is requested.

        A zero-valued scalar entry still counts as a request here, as ``len(ScalarResources)`` does.
        """
        return (
            self.milli_cpu == 0
            and self.memory == 0
            and self.ephemeral_storage == 0
            and not self.scalar_resources
        )


def pod_resource(pod: Pod, *, pod_level_resources: bool = True) -> Resource:
    """The pod's request as a framework ``Resource`` (``computePodResourceRequest``)."""
    return Resource.from_list(pod_request_list(pod, pod_level_resources=pod_level_resources))


def pod_requests(pod: Pod, *, pod_level_resources: bool = True) -> dict[str, int]:
    """The pod's effective request in the fit's units: ``cpu`` in millicores, ``memory``,
    ``ephemeral-storage`` and hugepages in bytes, extended resources in units.

    Only the resources the pod requests appear (a zero request that is written down is kept). Names the
    fit ignores (``pods``, unprefixed unknown names) are left out.
    """
    exact = pod_request_list(pod, pod_level_resources=pod_level_resources)
    out: dict[str, int] = {}
    for name, amount in exact.items():
        if name == CPU:
            out[name] = milli_value(amount)
        elif name in (MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name):
            out[name] = value(amount)
    return out


def sum_requests(pods: Iterable[Pod], *, pod_level_resources: bool = True) -> Resource:
    """``NodeInfo.Requested`` over ``pods``: each pod's request rounded on its own, then summed."""
    total = Resource()
    for pod in pods:
        total.add_resource(pod_resource(pod, pod_level_resources=pod_level_resources))
    return total


def drop_requests(container: Container, names: frozenset[str]) -> Container:
    """A copy of ``container`` without the requests in ``names`` (limits untouched, as the kubelet does)."""
    return replace(container, requests={k: v for k, v in container.requests.items() if k not in names})


def without_missing_extended_resources(pod: Pod, node_scalar_resources: Iterable[str]) -> Pod:
    """``removeMissingExtendedResources``: drop container (and init container) requests of extended
    resources the node does not advertise at all (cluster-level resources). Overhead and pod-level
    resources are left alone, as upstream does. Returns ``pod`` itself when nothing is dropped."""
    known = set(node_scalar_resources)
    missing = frozenset(
        name
        for container in pod.all_containers()
        for name in container.requests
        if is_extended_resource_name(name) and name not in known
    )
    if not missing:
        return pod
    return replace(
        pod,
        containers=tuple(drop_requests(c, missing) for c in pod.containers),
        init_containers=tuple(drop_requests(c, missing) for c in pod.init_containers),
    )


def quantity_amount(raw: Quantity | int | str, what: str) -> Fraction:
    """An allocatable entry given as a ``Quantity``, an integer or a quantity string, exactly."""
    if isinstance(raw, Quantity):
        return raw.amount
    if isinstance(raw, bool):
        raise ResourceListError(f"{what}: expected a quantity, got {raw!r}")
    if isinstance(raw, int):
        return Fraction(raw)
    if isinstance(raw, str):
        try:
            return Quantity.parse(raw).amount
        except QuantityError as err:
            raise ResourceListError(f"{what}: {err}") from None
    raise ResourceListError(f"{what}: expected a quantity, got {type(raw).__name__} {raw!r}")
