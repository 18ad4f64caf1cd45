"""State and flow shared by the container and pod scopes (``scope.go``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kubeletemu.admission import PodAdmitResult, get_pod_admit_result
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager.hint import ProviderHints, TopologyHint
from kubeletemu.topologymanager.policy import Policy
from kubeletemu.topologymanager.provider import HintProvider

SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"
SCOPE_NONE = "none"

# Called with (pod, container name or None for the pod, provider hints, merged hint, admit) after each
# merge, so callers can report each provider's hints per resource without asking twice.
MergeObserver = Callable[[Pod, "str | None", list[ProviderHints], TopologyHint, bool], None]


class Scope:
    """Stored hints per pod and container, the providers, the policy and the container-id map."""

    name = SCOPE_NONE

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.hint_providers: list[HintProvider] = []
        self.pod_topology_hints: dict[str, dict[str, TopologyHint]] = {}
        # containerID -> (pod UID, container name), filled when containers are created.
        self.pod_map: dict[str, tuple[str, str]] = {}
        self._mutex = threading.Lock()
        self.observer: MergeObserver | None = None

    def add_hint_provider(self, provider: HintProvider) -> None:
        self.hint_providers.append(provider)

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        with self._mutex:
            return self.pod_topology_hints.get(pod_uid, {}).get(container_name, TopologyHint())

    def get_policy(self) -> Policy:
        return self.policy

    def set_topology_hints(self, pod_uid: str, container_name: str, hint: TopologyHint) -> None:
        with self._mutex:
            self.pod_topology_hints.setdefault(pod_uid, {})[container_name] = hint

    def add_container(self, pod: Pod, container: Container, container_id: str) -> None:
        with self._mutex:
            self.pod_map[container_id] = (pod.uid, container.name)

    def remove_container(self, container_id: str) -> None:
        """Forget a container id; drop its hint only if no other id maps to the same container."""
        with self._mutex:
            key = self.pod_map.pop(container_id, None)
            if key is None:
                return
            if key in self.pod_map.values():
                return
            pod_uid, name = key
            hints = self.pod_topology_hints.get(pod_uid)
            if hints is not None:
                hints.pop(name, None)
                if not hints:
                    del self.pod_topology_hints[pod_uid]

    def remove_pod(self, pod_uid: str) -> None:
        """Drop every hint and container id of a pod (the kubelet's clean-up of a deleted pod)."""
        with self._mutex:
            self.pod_topology_hints.pop(pod_uid, None)
            for cid in [cid for cid, (uid, _) in self.pod_map.items() if uid == pod_uid]:
                del self.pod_map[cid]

    def allocate_aligned_resources(self, pod: Pod, container: Container) -> BaseException | None:
        """``allocateAlignedResources``: each provider in order, stopping at the first error."""
        for provider in self.hint_providers:
            try:
                provider.allocate(pod, container)
            except Exception as err:
                return err
        return None

    def admit(self, pod: Pod) -> PodAdmitResult:
        """The none scope: allocate every container, no hints computed or stored."""
        for container in pod.all_containers():
            err = self.allocate_aligned_resources(pod, container)
            if err is not None:
                return get_pod_admit_result(err)
        return PodAdmitResult(admit=True)

    def _notify(
        self, pod: Pod, container: str | None, hints: list[ProviderHints], best: TopologyHint, admit: bool
    ) -> None:
        if self.observer is not None:
            self.observer(pod, container, hints, best, admit)
