"""``scope_container.go``: one merge per container, in admission order."""

from __future__ import annotations

from kubeletemu.admission import PodAdmitResult, get_pod_admit_result
from kubeletemu.pod import Pod, is_pod_level_resources_set
from kubeletemu.topologymanager.errors import (
    CONTAINER_SCOPE_POD_LEVEL_REFUSAL,
    PodLevelTopologyAffinityError,
    TopologyAffinityError,
)
from kubeletemu.topologymanager.policy import Policy
from kubeletemu.topologymanager.scope import SCOPE_CONTAINER, Scope


class ContainerScope(Scope):
    name = SCOPE_CONTAINER

    def __init__(self, policy: Policy, pod_level_resource_managers: bool = False) -> None:
        super().__init__(policy)
        self.pod_level_resource_managers = pod_level_resource_managers

    def admit(self, pod: Pod) -> PodAdmitResult:
        """Stops at the first container that fails; earlier containers keep their hints and
        allocations (no rollback in the topology manager: the kubelet's stale-state clean-up does it).
        A pod with pod-level resources refused under ``PodLevelResourceManagers`` gets the pod-level
        message (1.36+)."""
        for container in pod.all_containers():
            hints = [p.get_topology_hints(pod, container) for p in self.hint_providers]
            best, admit = self.policy.merge(hints)
            self._notify(pod, container.name, hints, best, admit)
            if not admit:
                if self.pod_level_resource_managers and is_pod_level_resources_set(pod):
                    refusal = PodLevelTopologyAffinityError(CONTAINER_SCOPE_POD_LEVEL_REFUSAL)
                    return get_pod_admit_result(refusal)
                return get_pod_admit_result(TopologyAffinityError())
            self.set_topology_hints(pod.uid, container.name, best)
            err = self.allocate_aligned_resources(pod, container)
            if err is not None:
                return get_pod_admit_result(err)
        return PodAdmitResult(admit=True)
