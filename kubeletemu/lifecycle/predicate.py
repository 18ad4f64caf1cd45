"""The kubelet's predicate admit handler, resource part (``pkg/kubelet/lifecycle/predicate.go``).

It runs after the resource allocator (Topology Manager with the CPU, Memory and Device managers) and
checks that the pod fits what is left of the node's allocatable once the already-admitted pods'
requests are taken off. The check is the scheduler's ``noderesources.Fits``
(``pkg/scheduler/framework/plugins/noderesources/fit.go``, ``fitsRequest``), reached through
``scheduler.AdmissionCheck(pod, nodeInfo, includeAllFailures=true)``:

1. ``pods``: ``len(pods) + 1 > allowedPodNumber`` (every QoS class, BestEffort included);
2. a pod that requests nothing stops here;
3. cpu (millicores), memory, ephemeral-storage (bytes) — each only when the pod requests some;
4. every scalar resource (hugepages-*, extended resources) with a non-zero request. Whether one the node
   offers nothing of is checked depends on the kubelet version (:func:`delegated_to_dra`, registry row
   ``admission.dra-extended-resource-fit``): 1.34 and 1.35 with the ``DRAExtendedResource`` gate (off by
   default) leave it to DRA unchecked; 1.33, and 1.36 on whatever the gate, check it.

All failures are collected; the kubelet reports only the first: reason ``OutOfcpu``, ``OutOfmemory``,
``OutOfephemeral-storage``, ``OutOfpods`` or ``OutOf<resource>``, message ``Node didn't have enough
resource: <resource>, requested: <n>, used: <n>, capacity: <n>``.

Before the fit, ``UpdatePluginResources`` raises the allocatable of device-plugin resources to what the
device manager has handed out (``sanitizeNodeAllocatable``, only when the new pod holds devices) and
``removeMissingExtendedResources`` drops the new pod's requests of extended resources the node does not
advertise at all.

A critical pod (static, mirror, or ``spec.priority`` >= 2000000000) that fails only for resources goes
through ``HandleAdmissionFailure`` (:mod:`kubeletemu.lifecycle.preemption`): it is admitted once the
chosen pods are evicted, or refused with ``UnexpectedAdmissionError`` when no set of pods suffices.

Not modelled (no pod field carries them): the OS label/field and SupplementalGroupsPolicy checks that
precede the fit, node affinity/name/ports and NoExecute taints that follow it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from kubeletemu.admission import UNEXPECTED_ADMISSION_ERROR, PodAdmitResult
from kubeletemu.lifecycle.preemption import (
    PreemptionError,
    Requirement,
    Requirements,
    is_critical_pod,
    pods_to_preempt,
    refusal_message,
)
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
from kubeletemu.pod import FIX_KUBELET_QOS_CLASS_GATE, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.versions.behaviours import step_at
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

# The registry row (versions/data/behaviours/errors.json) of the DRA hand-off in the node fit.
DRA_EXTENDED_RESOURCE_FIT = "admission.dra-extended-resource-fit"
# Its steps: 0 (1.33) no hand-off; 1 (1.34) scalars absent from allocatable; 2 (1.35) absent or zero;
# 3 (1.36 on) none at the kubelet.
_DRA_ABSENT, _DRA_NOT_POSITIVE = 1, 2

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
    def insufficient_amount(self) -> int:
        """``GetInsufficientAmount``: ``requested - (capacity - used)``."""
        return self.requested - (self.capacity - self.used)

    @property
    def scheduler_reason(self) -> str:
        """The scheduler's text for the same failure (``Too many pods``, ``Insufficient cpu``...)."""
        return "Too many pods" if self.resource_name == PODS else f"Insufficient {self.resource_name}"


@dataclass(frozen=True)
class PredicateDecision:
    """The handler's answer, and the pods the kubelet evicts to give it (critical-pod preemption)."""

    result: PodAdmitResult
    preempted: tuple[Pod, ...] = ()


def merged_gates(feature_gates: Mapping[str, bool] | None, kubelet_version: str = MASTER) -> dict[str, bool]:
    """The gates the node fit and the preemption read at ``kubelet_version`` (its defaults; a gate that
    version does not know is off), ``feature_gates`` winning."""
    names = (POD_LEVEL_RESOURCES_GATE, DRA_EXTENDED_RESOURCE_GATE, FIX_KUBELET_QOS_CLASS_GATE)
    gates = {name: False for name in names} | default_gates(kubelet_version, names)
    return {**gates, **(feature_gates or {})}


def delegated_to_dra(name: str, node_scalars: Mapping[str, int], step: int) -> bool:
    """``shouldDelegateResourceToDRA`` as the kubelet's admission answers it (no DRA manager), ``step``
    being the emulated version's step of ``admission.dra-extended-resource-fit`` with the
    ``DRAExtendedResource`` gate on (0 with it off).

    Per openshift/kubernetes as vendored in openshift/microshift (release-4.20 … 4.23): v1.34.9's
    ``fitsRequest`` skips a scalar that is no key of the node's allocatable (a key at 0 is still checked;
    kubernetes#130653); v1.35.6 skips one whose allocatable is not positive (kubernetes#133784); v1.36.3
    and master skip nothing when there is no DRA manager (kubernetes#135725); v1.33.13 has no gate.
    """
    if step == _DRA_ABSENT:
        return name not in node_scalars
    if step == _DRA_NOT_POSITIVE:
        return node_scalars.get(name, 0) <= 0
    return False


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
    kubelet_version: str = MASTER,
) -> list[InsufficientResource]:
    """``fitsRequest``: every failed check, in the kubelet's order, as the kubelet of ``kubelet_version``
    runs it with the ``DRAExtendedResource`` gate at ``dra_extended_resource`` (:func:`delegated_to_dra`).

    Scalars are checked in name order: upstream walks a Go map (random order), so when several scalars
    fail the kubelet may report any of them first; sorting makes ours deterministic.
    """
    dra_step = step_at(DRA_EXTENDED_RESOURCE_FIT, kubelet_version) if dra_extended_resource else 0
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
        if delegated_to_dra(name, node.scalar_resources, dra_step):
            continue
        capacity = node.scalar_resources.get(name, 0)
        used = requested.scalar_resources.get(name, 0)
        if asked > capacity - used:
            failures.append(InsufficientResource(name, asked, used, capacity))
    return failures


class PredicateAdmitHandler:
    """The predicate admit handler's node fit against a fixed node allocatable.

    ``allocatable`` is ``node.status.allocatable`` (see :mod:`kubeletemu.node_allocatable`): quantities,
    integers or quantity strings per resource name. ``max_pods`` overrides its ``pods`` entry.
    ``feature_gates`` overrides the gate defaults of ``kubelet_version``, the kubelet emulated.
    """

    def __init__(
        self,
        allocatable: AllocatableList,
        max_pods: int | None = None,
        *,
        feature_gates: Mapping[str, bool] | None = None,
        kubelet_version: str = MASTER,
    ) -> None:
        self.node = node_resource(allocatable, max_pods)
        self.kubelet_version = kubelet_version
        gates = merged_gates(feature_gates, kubelet_version)
        self.pod_level_resources = gates[POD_LEVEL_RESOURCES_GATE]
        self.dra_extended_resource = gates[DRA_EXTENDED_RESOURCE_GATE]
        self.fix_kubelet_qos_class = gates[FIX_KUBELET_QOS_CLASS_GATE]
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
            request,
            node,
            requested,
            len(others),
            dra_extended_resource=self.dra_extended_resource,
            kubelet_version=self.kubelet_version,
        )

    def admit(
        self,
        pod: Pod,
        admitted_pods: Iterable[Pod],
        *,
        allocated_devices: Mapping[str, int] | None = None,
    ) -> PodAdmitResult:
        """``predicateAdmitHandler.Admit`` (resource part): admit, or the first failure's reason/message
        (a critical pod's preemption decided as :meth:`decide` does, the victims left to the caller)."""
        return self.decide(pod, admitted_pods, allocated_devices=allocated_devices).result

    def decide(
        self,
        pod: Pod,
        admitted_pods: Iterable[Pod],
        *,
        allocated_devices: Mapping[str, int] | None = None,
    ) -> PredicateDecision:
        """:meth:`admit` with ``HandleAdmissionFailure``: a critical pod refused for resources only is
        admitted with the pods to evict, or refused with ``UnexpectedAdmissionError`` when none suffice."""
        others = list(admitted_pods)
        failures = self.insufficient_resources(pod, others, allocated_devices=allocated_devices)
        if not failures:
            return PredicateDecision(PodAdmitResult(admit=True))
        if is_critical_pod(pod):
            # Every failure here is an InsufficientResourceError: the shortfall is what must be freed.
            requirements = Requirements(
                (Requirement(f.resource_name, f.insufficient_amount) for f in failures),
                pod_level_resources=self.pod_level_resources,
            )
            try:
                victims = pods_to_preempt(
                    pod,
                    others,
                    requirements,
                    pod_level_resources=self.pod_level_resources,
                    fix_kubelet_qos_class=self.fix_kubelet_qos_class,
                )
            except PreemptionError as err:
                return PredicateDecision(
                    PodAdmitResult(
                        admit=False, reason=UNEXPECTED_ADMISSION_ERROR, message=refusal_message(err)
                    )
                )
            return PredicateDecision(PodAdmitResult(admit=True), tuple(victims))
        first = failures[0]
        return PredicateDecision(PodAdmitResult(admit=False, reason=first.reason, message=first.message))


def admit_pod(
    allocatable: AllocatableList,
    max_pods: int | None,
    admitted_pods: Iterable[Pod],
    pod: Pod,
    *,
    feature_gates: Mapping[str, bool] | None = None,
    allocated_devices: Mapping[str, int] | None = None,
    kubelet_version: str = MASTER,
) -> PodAdmitResult:
    """One-shot :meth:`PredicateAdmitHandler.admit`."""
    handler = PredicateAdmitHandler(
        allocatable, max_pods, feature_gates=feature_gates, kubelet_version=kubelet_version
    )
    return handler.admit(pod, admitted_pods, allocated_devices=allocated_devices)


__all__ = [
    "DEFAULT_FEATURE_GATES",
    "DRA_EXTENDED_RESOURCE_FIT",
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
    "PredicateDecision",
    "admit_pod",
    "delegated_to_dra",
    "fits_request",
    "node_resource",
    "sanitize_node_allocatable",
]
