"""The Topology Manager's other NUMA hint providers (``frameworkext/topologymanager/manager.go``:
``NUMATopologyHintProvider``), bound to one pod on one node: NodeNUMAResource's ``Admit`` asks each for its
hints (a failing provider's status message becomes a reason), merges them with its own, and after the
merge asks each to allocate inside the affinity (the first failure is Filter's status).

The shipped scheduler registers providers in plugin instantiation order; NodeNUMAResource comes first
here, then DeviceShare (koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``).
"""

from __future__ import annotations

from typing import Protocol

from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo, Status
from kubeletemu.scheduler.koordinator.deviceshare import DeviceShare
from kubeletemu.scheduler.koordinator.merge import NUMATopologyHint, ProviderHints


class NUMAHintProvider(Protocol):
    def hints(self) -> tuple[ProviderHints | None, Status]: ...

    def allocate(self, affinity: NUMATopologyHint) -> Status: ...


class DeviceShareProvider:
    """DeviceShare's ``GetPodTopologyHints`` / ``Allocate`` for ``pod`` on ``node``."""

    def __init__(self, plugin: DeviceShare, pod: Pod, node: NodeInfo) -> None:
        self.plugin, self.pod, self.node = plugin, pod, node

    def hints(self) -> tuple[ProviderHints | None, Status]:
        return self.plugin.pod_topology_hints(self.pod, self.node)

    def allocate(self, affinity: NUMATopologyHint) -> Status:
        return self.plugin.allocate(self.pod, self.node, affinity)
