"""``scope_pod.go``: one merge for the whole pod, the same hint stored for every container."""

from __future__ import annotations

from kubeletemu.admission import PodAdmitResult, get_pod_admit_result
from kubeletemu.pod import Pod
from kubeletemu.topologymanager.errors import TopologyAffinityError
from kubeletemu.topologymanager.policy import Policy
from kubeletemu.topologymanager.provider import PodLevelAllocator
from kubeletemu.topologymanager.scope import SCOPE_POD, Scope


class PodScope(Scope):
    name = SCOPE_POD

    def __init__(self, policy: Policy, pod_level_resource_managers: bool = False) -> None:
        super().__init__(policy)
        self.pod_level_resource_managers = pod_level_resource_managers

    def admit(self, pod: Pod) -> PodAdmitResult:
        hints = [p.get_pod_topology_hints(pod) for p in self.hint_providers]
        best, admit = self.policy.merge(hints)
        self._notify(pod, None, hints, best, admit)
        if not admit:
            return get_pod_admit_result(TopologyAffinityError())
        if self.pod_level_resource_managers and pod.resources is not None:
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
