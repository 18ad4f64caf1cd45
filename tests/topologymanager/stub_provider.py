"""A scripted hint provider for the topology manager's own tables (the kubelet's tests use the same).

The real providers (CPU, memory, devices) have their own tables; these rows pin the manager's plumbing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager import ProviderHints


@dataclass
class ScriptedProvider:
    container_hints: Callable[[Container], ProviderHints] = lambda c: None
    pod_hints: ProviderHints = None
    fail_allocate_for: str | None = None
    fail_message: str = "boom"
    calls: list[tuple[str, str]] = field(default_factory=list)

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints:
        self.calls.append(("GetTopologyHints", container.name))
        return self.container_hints(container)

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints:
        self.calls.append(("GetPodTopologyHints", pod.uid))
        return self.pod_hints

    def allocate(self, pod: Pod, container: Container) -> None:
        self.calls.append(("Allocate", container.name))
        if container.name == self.fail_allocate_for:
            raise RuntimeError(self.fail_message)

    def allocate_pod(self, pod: Pod) -> None:
        self.calls.append(("AllocatePod", pod.uid))

    def called(self, method: str) -> list[str]:
        return [arg for name, arg in self.calls if name == method]


def pod_from_names(init: list[str], app: list[str], uid: str = "pod-uid") -> Pod:
    def make(name: str) -> Container:
        sidecar = "(restartPolicy=Always)" in name
        return Container(name=name, restart_policy="Always" if sidecar else None)

    return Pod(
        name="pod",
        namespace="default",
        uid=uid,
        init_containers=tuple(make(n) for n in init),
        containers=tuple(make(n) for n in app),
    )
