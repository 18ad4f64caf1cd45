"""``scope_container.go``: one merge per container, in admission order."""

from __future__ import annotations

from kubeletemu.admission import PodAdmitResult, get_pod_admit_result
from kubeletemu.pod import Pod
from kubeletemu.topologymanager.errors import TopologyAffinityError
from kubeletemu.topologymanager.scope import SCOPE_CONTAINER, Scope


class ContainerScope(Scope):
    name = SCOPE_CONTAINER

    def admit(self, pod: Pod) -> PodAdmitResult:
        """Stops at the first container that fails; earlier containers keep their hints and
        allocations (no rollback in the topology manager: the kubelet's stale-state clean-up does it)."""
        for container in pod.all_containers():
            hints = [p.get_topology_hints(pod, container) for p in self.hint_providers]
            best, admit = self.policy.merge(hints)
            self._notify(pod, container.name, hints, best, admit)
            if not admit:
                return get_pod_admit_result(TopologyAffinityError())
            self.set_topology_hints(pod.uid, container.name, best)
            err = self.allocate_aligned_resources(pod, container)
            if err is not None:
                return get_pod_admit_result(err)
        return PodAdmitResult(admit=True)
