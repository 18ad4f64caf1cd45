"""The slice of ``v1.Pod`` that the kubelet's resource managers read.

Requests are already defaulted (a limit without a request makes the request equal to the limit, as the
API server's defaulting does before the kubelet ever sees the pod).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from kubeletemu.quantity import Quantity

RESTART_POLICY_ALWAYS = "Always"
# The namespace of UIDs derived from a pod's namespace and name (any fixed UUID would do; this one must
# never change, or pods admitted before the change would get new UIDs when re-read).
DERIVED_UID_NAMESPACE = uuid.UUID("6c1e3f5e-8d7a-5b43-9a56-2f0d3c4b7e11")
_QOS_RESOURCES = ("cpu", "memory")
# v1.37.2 ``pkg/features``: beta, on; depends on PodLevelResources. Which ``spec.resources`` decide the QoS.
FIX_KUBELET_QOS_CLASS_GATE = "PodLevelResourcesFixKubeletQOSClass"

ResourceList = Mapping[str, Quantity]
_EMPTY: ResourceList = MappingProxyType({})
_EMPTY_STRINGS: Mapping[str, str] = MappingProxyType({})


def derived_uid(namespace: str, name: str) -> str:
    """A stable UID for a pod known only by namespace and name: a manifest without ``metadata.uid``, or a
    pod the podresources API lists (it carries no UIDs). The API server gives one namespace/name one UID at
    a time; deriving it keeps that: the same manifest admitted twice is the same pod."""
    return str(uuid.uuid5(DERIVED_UID_NAMESPACE, f"{namespace}/{name}"))


class QOSClass(StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


@dataclass(frozen=True)
class ResourceRequirements:
    requests: ResourceList = field(default_factory=lambda: _EMPTY)
    limits: ResourceList = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True)
class Container:
    name: str
    requests: ResourceList = field(default_factory=lambda: _EMPTY)
    limits: ResourceList = field(default_factory=lambda: _EMPTY)
    # Only meaningful for init containers: "Always" makes a restartable init container (a sidecar).
    restart_policy: str | None = None

    @property
    def is_restartable_init(self) -> bool:
        return self.restart_policy == RESTART_POLICY_ALWAYS


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: str
    uid: str
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...] = ()
    # spec.resources (pod-level resources), None when the pod does not set them.
    resources: ResourceRequirements | None = None
    # spec.overhead, filled from the RuntimeClass.
    overhead: ResourceList = field(default_factory=lambda: _EMPTY)
    runtime_class_name: str | None = None
    # status.phase; the podresources API and fingerprints skip terminal pods.
    phase: str = "Pending"
    # What schedulers read besides resources: metadata.labels and .annotations (Koordinator's QoS class
    # label and resource-status annotations), spec.priority, spec.nodeName (a pod already bound).
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY_STRINGS)
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY_STRINGS)
    priority: int | None = None
    node_name: str | None = None

    def all_containers(self) -> Iterator[Container]:
        """Init containers in spec order, then app containers: the kubelet's admission order."""
        yield from self.init_containers
        yield from self.containers

    def container(self, name: str) -> Container | None:
        return next((c for c in self.all_containers() if c.name == name), None)

    @property
    def qos_class(self) -> QOSClass:
        return compute_qos(self)


def is_pod_level_resources_set(pod: Pod) -> bool:
    """``resourcehelper.IsPodLevelResourcesSet``: ``spec.resources`` requests or limits name a supported
    pod-level resource (``IsSupportedPodLevelResource``: cpu, memory, hugepages-*). Here, the lowest module,
    so the admit handlers, the managers and the Topology Manager's scopes share one definition."""
    if pod.resources is None:
        return False
    names = (*pod.resources.requests, *pod.resources.limits)
    return any(n in ("cpu", "memory") or n.startswith("hugepages-") for n in names)


def compute_qos(
    pod: Pod, pod_level_resources_enabled: bool = False, fix_kubelet_qos_class: bool = False
) -> QOSClass:
    """``ComputePodQOS``: only cpu and memory count; zero quantities are ignored.

    Guaranteed needs cpu and memory limits on every container (init containers included) and every
    request equal to its limit. With pod-level resources (gate ``PodLevelResources``) the pod's own
    ``spec.resources`` decides instead: up to 1.36 whenever it is there, even empty (``resources: {}`` is
    BestEffort whatever the containers ask); from 1.37 with ``PodLevelResourcesFixKubeletQOSClass`` (beta,
    on) only when it names a supported pod-level resource (``IsPodLevelResourcesSet``), else the
    containers decide (``pkg/apis/core/v1/helper/qos/qos.go`` at v1.37.2, kubernetes#137150; v1.36.3
    tests ``pod.Spec.Resources != nil`` alone).

    1.37 also rewrote the rule per container (``requirementsQOS``: Burstable as soon as one container is,
    or when BestEffort and Guaranteed containers mix) where 1.36 summed requests and limits over the
    containers. For every valid pod (no request above its limit, which the API server's validation and
    ``kubeletemu.manifest`` refuse) both give the same class, so one rule serves every version.

    The kubelet recomputes it at each use (several per admission); a Pod here is frozen, so the answer is
    kept on the instance (outside its fields: equality and ``replace`` are unaffected).
    """
    key = f"_qos_{int(pod_level_resources_enabled)}{int(fix_kubelet_qos_class)}"
    cached: QOSClass | None = pod.__dict__.get(key)
    if cached is None:
        cached = pod.__dict__[key] = _compute_qos(pod, pod_level_resources_enabled, fix_kubelet_qos_class)
    return cached


def _compute_qos(pod: Pod, pod_level_resources_enabled: bool, fix_kubelet_qos_class: bool) -> QOSClass:
    pod_level = pod_level_resources_enabled and pod.resources is not None
    if pod_level and fix_kubelet_qos_class:
        pod_level = is_pod_level_resources_set(pod)
    if pod_level and pod.resources is not None:
        groups: list[tuple[ResourceList, ResourceList]] = [(pod.resources.requests, pod.resources.limits)]
    else:
        groups = [(c.requests, c.limits) for c in (*pod.containers, *pod.init_containers)]
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    for group_requests, group_limits in groups:
        for name in _QOS_RESOURCES:
            req = group_requests.get(name)
            if req is not None and req.amount > 0:
                requests[name] = requests[name] + req if name in requests else req
        found = set()
        for name in _QOS_RESOURCES:
            lim = group_limits.get(name)
            if lim is not None and lim.amount > 0:
                found.add(name)
                limits[name] = limits[name] + lim if name in limits else lim
        if found != set(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return QOSClass.BEST_EFFORT
    if guaranteed:
        for name, req in requests.items():
            if name not in limits or limits[name].amount != req.amount:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return QOSClass.GUARANTEED
    return QOSClass.BURSTABLE
