"""Which containers get exclusive CPUs, and how many (``guaranteedCPUs`` / ``podGuaranteedCPUs``)."""

from __future__ import annotations

from collections.abc import Mapping

from kubeletemu.cpumanager.policy_options import (
    POD_LEVEL_RESOURCE_MANAGERS_GATE,
    POD_LEVEL_RESOURCES_GATE,
    merged_gates,
)
from kubeletemu.pod import (
    FIX_KUBELET_QOS_CLASS_GATE,
    Container,
    Pod,
    QOSClass,
    compute_qos,
    is_pod_level_resources_set,
)
from kubeletemu.quantity import Quantity
from kubeletemu.versions.behaviours import in_effect, step_at
from kubeletemu.versions.gates import default_gates
from kubeletemu.versions.version import MASTER

CPU = "cpu"
MEMORY = "memory"
_ZERO = Quantity(0)


def is_container_equivalent_qos_guaranteed(container: Container) -> bool:
    """``IsContainerEquivalentQOSGuaranteed``: non-zero CPU and memory requests equal to their limits."""
    for name in (CPU, MEMORY):
        request = container.requests.get(name, _ZERO)
        limit = container.limits.get(name, _ZERO)
        if request.is_zero() or request.amount != limit.amount:
            return False
    return True


def is_integral_cpu_amount(quantity: Quantity) -> bool:
    """``Value()*1000 == MilliValue()``."""
    return quantity.value() * 1000 == quantity.milli_value()


def resources_qualify_for_exclusive_cpus(container: Container) -> bool:
    """``resourcesQualifyForExclusiveCPUs`` (``cpu_manager.go`` at v1.37.2): equivalent Guaranteed with an
    integral CPU limit."""
    return is_container_equivalent_qos_guaranteed(container) and is_integral_cpu_amount(
        container.limits.get(CPU, _ZERO)
    )


# kubernetes#133279 (1.34): the CPU and Memory Managers leave pods with pod-level resources alone.
SKIP_POD_LEVEL_RESOURCES = "cpumemorymanager.skip-pod-level-resources"
# After v1.36.3: validatePodScopeResources also checks a regular init container's exclusive request.
POD_LEVEL_INIT_POOL_CHECK = "cpumemorymanager.pod-level-init-pool-check"


class RequestCalculator:
    """The static policy's request arithmetic under a set of feature gates, as the kubelet of
    ``kubelet_version`` does it."""

    def __init__(
        self, feature_gates: Mapping[str, bool] | None = None, kubelet_version: str = MASTER
    ) -> None:
        gates = merged_gates(feature_gates)
        self.pod_level_resources = gates[POD_LEVEL_RESOURCES_GATE]
        self.pod_level_resource_managers = gates[POD_LEVEL_RESOURCE_MANAGERS_GATE]
        # From 1.37 only (the gate is unknown before): the version's default unless set.
        self.fix_kubelet_qos_class = gates.get(
            FIX_KUBELET_QOS_CLASS_GATE,
            default_gates(kubelet_version, (FIX_KUBELET_QOS_CLASS_GATE,)).get(
                FIX_KUBELET_QOS_CLASS_GATE, False
            ),
        )
        self.skip_step = step_at(SKIP_POD_LEVEL_RESOURCES, kubelet_version)
        self.init_pool_check = in_effect(POD_LEVEL_INIT_POOL_CHECK, kubelet_version)

    def qos(self, pod: Pod) -> QOSClass:
        return compute_qos(pod, self.pod_level_resources, self.fix_kubelet_qos_class)

    def pod_level_managed(self, pod: Pod) -> bool:
        """Pod-level resources set and ``PodLevelResourceManagers`` on."""
        return self.pod_level_resource_managers and is_pod_level_resources_set(pod)

    def pod_level_unsupported(self, pod: Pod) -> bool:
        """Whether the CPU and Memory Managers stay out of a pod with pod-level resources.

        1.33 has no such check: the containers are served as in any pod of the pod's QoS class. 1.34 and
        1.35 (kubernetes#133279) skip while ``PodLevelResources`` is on (with it off, ``spec.resources`` is
        ignored and the containers are served). 1.36 (kubernetes#134768) skips unless
        ``PodLevelResourceManagers`` and ``PodLevelResources`` are both on — with ``PodLevelResources`` off
        too. (Both managers' ``policy_static.go`` at v1.34.9, v1.35.6 and v1.36.3.)
        """
        if self.skip_step == 0 or not is_pod_level_resources_set(pod):
            return False
        if self.skip_step == 1:
            return self.pod_level_resources
        return not self.pod_level_resource_managers or not self.pod_level_resources

    def guaranteed_cpus(self, pod: Pod, container: Container) -> int:
        """``guaranteedCPUs``: the whole CPU request of a container of a Guaranteed pod, else 0."""
        if self.qos(pod) is not QOSClass.GUARANTEED:
            return 0
        cpu = container.requests.get(CPU, _ZERO)
        if self.pod_level_managed(pod) and not is_container_equivalent_qos_guaranteed(container):
            return 0
        if not is_integral_cpu_amount(cpu):
            return 0
        return cpu.value()

    def pod_guaranteed_cpus(self, pod: Pod) -> int:
        """``podGuaranteedCPUs``: max(largest init need, app containers + sidecars), sidecar-aware.

        A regular init container needs the sidecars started before it plus itself. Containers without a
        CPU request are skipped. With pod-level resource managers, the pod's own integral CPU request.
        """
        if self.pod_level_managed(pod):
            if self.qos(pod) is not QOSClass.GUARANTEED:
                return 0
            assert pod.resources is not None
            cpu = pod.resources.requests.get(CPU)
            if cpu is not None and is_integral_cpu_amount(cpu):
                return cpu.value()
            return 0
        by_init = 0
        by_sidecars = 0
        for container in pod.init_containers:
            if CPU not in container.requests:
                continue
            requested = self.guaranteed_cpus(pod, container)
            if container.is_restartable_init:
                by_sidecars += requested
            elif by_sidecars + requested > by_init:
                by_init = by_sidecars + requested
        by_apps = sum(self.guaranteed_cpus(pod, c) for c in pod.containers if CPU in c.requests)
        return max(by_init, by_apps + by_sidecars)
