"""``scope_pod.go``: one merge for the whole pod, the same hint stored for every container."""

from __future__ import annotations

from kubeletemu.admission import PodAdmitResult, get_pod_admit_result
from kubeletemu.pod import Pod, is_pod_level_resources_set
from kubeletemu.topologymanager.errors import (
    POD_SCOPE_POD_LEVEL_REFUSAL,
    PodLevelTopologyAffinityError,
    TopologyAffinityError,
)
from kubeletemu.topologymanager.policy import Policy
from kubeletemu.topologymanager.provider import PodLevelAllocator
from kubeletemu.topologymanager.scope import SCOPE_POD, Scope


class PodScope(Scope):
    name = SCOPE_POD

    def __init__(self, policy: Policy, pod_level_resource_managers: bool = False) -> None:
        super().__init__(policy)
        self.pod_level_resource_managers = pod_level_resource_managers

    def admit(self, pod: Pod) -> PodAdmitResult:
        """``Admit``: with ``PodLevelResourceManagers`` and pod-level resources set, the pod-level flow
        (``admitUsingPodResources``: its refusal says so, one ``AllocatePod`` per provider), else the
        container-resources flow (one merge, ``Allocate`` per container)."""
        pod_level = self.pod_level_resource_managers and is_pod_level_resources_set(pod)
        hints = [p.get_pod_topology_hints(pod) for p in self.hint_providers]
        best, admit = self.policy.merge(hints)
        self._notify(pod, None, hints, best, admit)
        if not admit:
            if pod_level:
                return get_pod_admit_result(PodLevelTopologyAffinityError(POD_SCOPE_POD_LEVEL_REFUSAL))
            return get_pod_admit_result(TopologyAffinityError())
        if pod_level:
            # PodLevelResourceManagers: every hint stored, then one AllocatePod per provider.
            for container in pod.all_containers():
                self.set_topology_hints(pod.uid, container.name, best)
            for provider in self.hint_providers:
                if isinstance(provider, PodLevelAllocator):
                    try:
                        provider.allocate_pod(pod)
                    except Exception as err:
                        return get_pod_admit_result(err)
            return PodAdmitResult(admit=True)
        for container in pod.all_containers():
            self.set_topology_hints(pod.uid, container.name, best)
            failure = self.allocate_aligned_resources(pod, container)
            if failure is not None:
                return get_pod_admit_result(failure)
        return PodAdmitResult(admit=True)
