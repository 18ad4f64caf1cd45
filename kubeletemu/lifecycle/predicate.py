"""The kubelet's predicate admit handler, resource part (``pkg/kubelet/lifecycle/predicate.go``).

It runs after the resource allocator (Topology Manager with the CPU, Memory and Device managers) and
checks that the pod fits what is left of the node's allocatable once the already-admitted pods'
requests are taken off. The check is the scheduler's ``noderesources.Fits``
(``pkg/scheduler/framework/plugins/noderesources/fit.go``, ``fitsRequest``), reached through
``scheduler.AdmissionCheck(pod, nodeInfo, includeAllFailures=true)``:

1. ``pods``: ``len(pods) + 1 > allowedPodNumber`` (every QoS class, BestEffort included);
2. a pod that requests nothing stops here;
3. cpu (millicores), memory, ephemeral-storage (bytes) — each only when the pod requests some;
4. every scalar resource (hugepages-*, extended resources) with a non-zero request; with the
   ``DRAExtendedResource`` gate (on in master) a scalar the node has no positive allocatable for is left
   to DRA (``shouldDelegateResourceToDRA`` without a DRA manager: skipped).

All failures are collected; the kubelet reports only the first: reason ``OutOfcpu``, ``OutOfmemory``,
``OutOfephemeral-storage``, ``OutOfpods`` or ``OutOf<resource>``, message ``Node didn't have enough
resource: <resource>, requested: <n>, used: <n>, capacity: <n>``.

Before the fit, ``UpdatePluginResources`` raises the allocatable of device-plugin resources to what the
device manager has handed out (``sanitizeNodeAllocatable``, only when the new pod holds devices) and
``removeMissingExtendedResources`` drops the new pod's requests of extended resources the node does not
advertise at all.

Not modelled (no pod field carries them): the OS label/field and SupplementalGroupsPolicy checks that
precede the fit, node affinity/name/ports and NoExecute taints that follow it, and the critical-pod
preemption of ``HandleAdmissionFailure`` (our pods have no priority, so it never applies).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from kubeletemu.admission import PodAdmitResult
from kubeletemu.lifecycle.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resource,
    ResourceListError,
    pod_resource,
    quantity_amount,
    without_missing_extended_resources,
)
from kubeletemu.pod import Pod
from kubeletemu.quantity import Quantity
from kubeletemu.versions.gates import default_gates
from kubeletemu.versions.version import MASTER

INSUFFICIENT_RESOURCE_PREFIX = "OutOf"
OUT_OF_CPU = "OutOfcpu"
OUT_OF_MEMORY = "OutOfmemory"
OUT_OF_EPHEMERAL_STORAGE = "OutOfephemeral-storage"
OUT_OF_PODS = "OutOfpods"

POD_LEVEL_RESOURCES_GATE = "PodLevelResources"
DRA_EXTENDED_RESOURCE_GATE = "DRAExtendedResource"
# The gates the node-fit check reads, with their defaults in master (PodLevelResources beta since 1.34,
# DRAExtendedResource beta since 1.36), from the kubelet's versioned feature specs.
DEFAULT_FEATURE_GATES: Mapping[str, bool] = default_gates(
    MASTER, (POD_LEVEL_RESOURCES_GATE, DRA_EXTENDED_RESOURCE_GATE)
)

_REASONS = {
    CPU: OUT_OF_CPU,
    MEMORY: OUT_OF_MEMORY,
    EPHEMERAL_STORAGE: OUT_OF_EPHEMERAL_STORAGE,
    PODS: OUT_OF_PODS,
}

AllocatableList = Mapping[str, Quantity | int | str]


class PredicateAdmitError(ValueError):
    """Bad input to the predicate handler (an allocatable entry that is not a quantity, a negative
    ``max_pods`` or device count)."""


@dataclass(frozen=True)
class InsufficientResource:
    """One failed fit check (``noderesources.InsufficientResource``, ``InsufficientResourceError``).

    ``requested`` is the new pod's request, ``used`` the admitted pods' requests, ``capacity`` the node's
    allocatable, all in the fit's units (millicores for cpu).
    """

    resource_name: str
    requested: int
    used: int
    capacity: int

    @property
    def reason(self) -> str:
        """The admit result's reason: ``OutOfcpu`` ... or ``OutOf<resourceName>``."""
        return _REASONS.get(self.resource_name, INSUFFICIENT_RESOURCE_PREFIX + self.resource_name)

    @property
    def message(self) -> str:
        """``InsufficientResourceError.Error()``."""
        return (
            f"Node didn't have enough resource: {self.resource_name}, requested: {self.requested}, "
            f"used: {self.used}, capacity: {self.capacity}"
        )

    @property
    def scheduler_reason(self) -> str:
        """The scheduler's text for the same failure (``Too many pods``, ``Insufficient cpu``...)."""
        return "Too many pods" if self.resource_name == PODS else f"Insufficient {self.resource_name}"


def merged_gates(feature_gates: Mapping[str, bool] | None) -> dict[str, bool]:
    return {**DEFAULT_FEATURE_GATES, **(feature_gates or {})}


def node_resource(allocatable: AllocatableList, max_pods: int | None = None) -> Resource:
    """``NodeInfo.SetNode``: the node's allocatable as a framework ``Resource``.

    ``max_pods``, when given, is the allowed pod number (the kubelet's node status carries it as
    ``allocatable.pods``, which is used otherwise).
    """
    exact: dict[str, Fraction] = {}
    for name, raw in allocatable.items():
        try:
            amount = quantity_amount(raw, f"allocatable[{name}]")
        except ResourceListError as err:
            raise PredicateAdmitError(str(err)) from None
        if amount < 0:
            raise PredicateAdmitError(f"allocatable[{name}]: must not be negative, got {raw}")
        exact[name] = amount
    node = Resource.from_list(exact)
    if max_pods is not None:
        if isinstance(max_pods, bool) or not isinstance(max_pods, int) or max_pods < 0:
            raise PredicateAdmitError(f"max_pods: must be a non-negative integer, got {max_pods!r}")
        node.allowed_pod_number = max_pods
    return node


def sanitize_node_allocatable(node: Resource, allocated_devices: Mapping[str, int]) -> None:
    """``sanitizeNodeAllocatable``: a device-plugin resource whose allocatable is absent or below the number
    of devices the device manager has handed out (all pods, the new one included) is raised to that
    number, so pods holding devices still pass after a plugin lost devices."""
    for name, needed in allocated_devices.items():
        if isinstance(needed, bool) or not isinstance(needed, int) or needed < 0:
            raise PredicateAdmitError(
                f"allocated_devices[{name}]: must be a non-negative device count, got {needed!r}"
            )
        current = node.scalar_resources.get(name)
        if current is None or current < needed:
            node.scalar_resources[name] = needed


def fits_request(
    pod_request: Resource,
    node: Resource,
    requested: Resource,
    num_pods: int,
    *,
    dra_extended_resource: bool = True,
) -> list[InsufficientResource]:
    """``fitsRequest``: every failed check, in the kubelet's order.

    Scalars are checked in name order: upstream walks a Go map (random order), so when several scalars
    fail the kubelet may report any of them first; sorting makes ours deterministic.
    """
    failures: list[InsufficientResource] = []
    if num_pods + 1 > node.allowed_pod_number:
        failures.append(InsufficientResource(PODS, 1, num_pods, node.allowed_pod_number))
    if pod_request.is_zero_request():
        return failures
    for name, asked, used, capacity in (
        (CPU, pod_request.milli_cpu, requested.milli_cpu, node.milli_cpu),
        (MEMORY, pod_request.memory, requested.memory, node.memory),
        (
            EPHEMERAL_STORAGE,
            pod_request.ephemeral_storage,
            requested.ephemeral_storage,
            node.ephemeral_storage,
        ),
    ):
        if asked > 0 and asked > capacity - used:
            failures.append(InsufficientResource(name, asked, used, capacity))
    for name in sorted(pod_request.scalar_resources):
        asked = pod_request.scalar_resources[name]
        if asked == 0:
            continue
        capacity = node.scalar_resources.get(name, 0)
        if dra_extended_resource and capacity <= 0:
            # shouldDelegateResourceToDRA: the kubelet has no DRA manager, so anything the node does not
            # offer a positive amount of is assumed to come from DRA.
            continue
        used = requested.scalar_resources.get(name, 0)
        if asked > capacity - used:
            failures.append(InsufficientResource(name, asked, used, capacity))
    return failures


class PredicateAdmitHandler:
    """The predicate admit handler's node fit against a fixed node allocatable.

    ``allocatable`` is ``node.status.allocatable`` (see :mod:`kubeletemu.node_allocatable`): quantities,
    integers or quantity strings per resource name. ``max_pods`` overrides its ``pods`` entry.
    ``feature_gates`` overrides :data:`DEFAULT_FEATURE_GATES`.
    """

    def __init__(
        self,
        allocatable: AllocatableList,
        max_pods: int | None = None,
        *,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        self.node = node_resource(allocatable, max_pods)
        gates = merged_gates(feature_gates)
        self.pod_level_resources = gates[POD_LEVEL_RESOURCES_GATE]
        self.dra_extended_resource = gates[DRA_EXTENDED_RESOURCE_GATE]
        # The admitted pods' requests by object identity (the pod is kept, so its id cannot be reused),
        # like the scheduler's PodInfo.cachedResource; rebuilt on every call to hold only current pods.
        self._requests: dict[int, tuple[Pod, Resource]] = {}

    def _used(self, pods: list[Pod]) -> Resource:
        """``NodeInfo.Requested`` over ``pods``."""
        previous = self._requests
        current: dict[int, tuple[Pod, Resource]] = {}
        total = Resource()
        for pod in pods:
            entry = previous.get(id(pod))
            if entry is None or entry[0] is not pod:
                entry = (pod, pod_resource(pod, pod_level_resources=self.pod_level_resources))
            current[id(pod)] = entry
            total.add_resource(entry[1])
        self._requests = current
        return total

    def insufficient_resources(
        self,
        pod: Pod,
        admitted_pods: Iterable[Pod],
        *,
        allocated_devices: Mapping[str, int] | None = None,
    ) -> list[InsufficientResource]:
        """Every failed check for ``pod`` on top of ``admitted_pods`` (the kubelet's ``OtherPods``: active
        pods, ``pod`` itself excluded), in the kubelet's order.

        ``allocated_devices`` (resource -> devices the device manager holds, over all pods) is passed when
        ``pod`` holds devices, as ``UpdatePluginResources`` only then sanitizes the allocatable.
        """
        others = list(admitted_pods)
        node = self.node
        if allocated_devices:
            node = Resource(
                node.milli_cpu,
                node.memory,
                node.ephemeral_storage,
                node.allowed_pod_number,
                dict(node.scalar_resources),
            )
            sanitize_node_allocatable(node, allocated_devices)
        fitted = without_missing_extended_resources(pod, node.scalar_resources)
        request = pod_resource(fitted, pod_level_resources=self.pod_level_resources)
        requested = self._used(others)
        return fits_request(
            request, node, requested, len(others), dra_extended_resource=self.dra_extended_resource
        )

    def admit(
        self,
        pod: Pod,
        admitted_pods: Iterable[Pod],
        *,
        allocated_devices: Mapping[str, int] | None = None,
    ) -> PodAdmitResult:
        """``predicateAdmitHandler.Admit`` (resource part): admit, or the first failure's reason/message."""
        failures = self.insufficient_resources(pod, admitted_pods, allocated_devices=allocated_devices)
        if not failures:
            return PodAdmitResult(admit=True)
        first = failures[0]
        return PodAdmitResult(admit=False, reason=first.reason, message=first.message)


def admit_pod(
    allocatable: AllocatableList,
    max_pods: int | None,
    admitted_pods: Iterable[Pod],
    pod: Pod,
    *,
    feature_gates: Mapping[str, bool] | None = None,
    allocated_devices: Mapping[str, int] | None = None,
) -> PodAdmitResult:
    """One-shot :meth:`PredicateAdmitHandler.admit`."""
    handler = PredicateAdmitHandler(allocatable, max_pods, feature_gates=feature_gates)
    return handler.admit(pod, admitted_pods, allocated_devices=allocated_devices)


__all__ = [
    "DEFAULT_FEATURE_GATES",
    "DRA_EXTENDED_RESOURCE_GATE",
    "INSUFFICIENT_RESOURCE_PREFIX",
    "OUT_OF_CPU",
    "OUT_OF_EPHEMERAL_STORAGE",
    "OUT_OF_MEMORY",
    "OUT_OF_PODS",
    "POD_LEVEL_RESOURCES_GATE",
    "InsufficientResource",
    "PredicateAdmitError",
    "PredicateAdmitHandler",
    "admit_pod",
    "fits_request",
    "node_resource",
    "sanitize_node_allocatable",
]
