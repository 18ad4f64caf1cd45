"""Which requests a NUMA-aware scheduler treats as exclusive, and a pod's effective request.

Mirrors scheduler-plugins ``pkg/noderesourcetopology/resourcerequests/exclusive.go`` and
``pkg/util/resource.go`` (``GetPodEffectiveRequest``) at commit
903da7df82cb8794dda8f2d510ba1156111662dd.

* a non-native resource (``vendor/name``, not ``*kubernetes.io/*``) is exclusive exactly when the node's NRT
  lists it in some zone: the NRT is the plugin's only evidence that a device is topology-bound;
* native resources are exclusive only for Guaranteed pods: an integral, positive CPU request, or a positive
  memory or hugepages request;
* a pod has exclusive resources when a sidecar (restartable init container) or an app container has one;
  plain init containers finish before the steady state and are skipped.

The QoS class is the pod's ``status.qosClass`` when the API reports one (``v1qos.GetPodQOS`` prefers it),
else the computed class with the PodLevelResources gate on (its default in Kubernetes 1.35, the version
the plugin vendors).
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from kubeletemu.pod import Container, Pod, QOSClass, compute_qos
from kubeletemu.quantity import Quantity

HUGEPAGES_PREFIX = "hugepages-"


def is_native_resource(name: str) -> bool:
    """``v1helper.IsNativeResource``: no domain, or a ``kubernetes.io/`` one."""
    return "/" not in name or "kubernetes.io/" in name


def is_hugepage_resource(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def pod_qos(pod: Pod, status_qos: str | None = None) -> str:
    """``v1qos.GetPodQOS``: the reported ``status.qosClass`` wins over the computed one."""
    if status_qos:
        return status_qos
    return str(compute_qos(pod, pod_level_resources_enabled=True))


def is_exclusive(qos: str, name: str, quantity: Quantity, nrt_resources: Set[str] | None) -> bool:
    if not is_native_resource(name):
        return nrt_resources is not None and name in nrt_resources
    if qos != QOSClass.GUARANTEED:
        return False
    if name == "cpu" and quantity.value() * 1000 == quantity.milli_value() and quantity.value() > 0:
        return True
    return (name == "memory" or is_hugepage_resource(name)) and quantity.value() > 0


def is_exclusive_for_container(qos: str, container: Container, nrt_resources: Set[str] | None) -> bool:
    return any(is_exclusive(qos, name, q, nrt_resources) for name, q in container.requests.items())


def are_exclusive_for_pod(pod: Pod, nrt_resources: Set[str] | None, status_qos: str | None = None) -> bool:
    """``AreExclusiveForPod``: sidecars and app containers only."""
    qos = pod_qos(pod, status_qos)
    containers = (*(c for c in pod.init_containers if c.is_restartable_init), *pod.containers)
    return any(is_exclusive_for_container(qos, c, nrt_resources) for c in containers)


def exclusive_container_names(
    pod: Pod, nrt_resources: Set[str] | None, status_qos: str | None = None
) -> tuple[str, ...]:
    """The containers ``categorizePodForPreemption`` pins: exclusive sidecars, then exclusive app
    containers, in spec order."""
    qos = pod_qos(pod, status_qos)
    containers = (*(c for c in pod.init_containers if c.is_restartable_init), *pod.containers)
    return tuple(c.name for c in containers if is_exclusive_for_container(qos, c, nrt_resources))


def effective_request(pod: Pod) -> dict[str, Quantity]:
    """``util.GetPodEffectiveRequest``: per resource the larger of the app containers' sum and the largest
    init container request, plus overhead.

    Unlike the kubelet, sidecars count as plain init containers and pod-level ``spec.resources`` is ignored;
    zero requests are kept (a key with amount 0).
    """
    init: dict[str, Quantity] = {}
    for container in pod.init_containers:
        for name, quantity in container.requests.items():
            if name in init and quantity <= init[name]:
                continue
            init[name] = quantity
    total: dict[str, Quantity] = {}
    for container in pod.containers:
        _add(total, container.requests)
    for name, quantity in init.items():
        if name in total and quantity <= total[name]:
            continue
        total[name] = quantity
    _add(total, pod.overhead)
    return total


def _add(total: dict[str, Quantity], resources: Mapping[str, Quantity]) -> None:
    for name, quantity in resources.items():
        total[name] = total[name] + quantity if name in total else quantity
