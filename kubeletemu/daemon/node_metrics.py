"""The emulated node's resource-manager metric values, read in one go for :meth:`KubeletMetrics.sync_node`.

The engine counts and computes (the static CPU policy its pinning counters, alignment counters and
gauges, the static Memory Manager policy its pinning counters, see :mod:`kubeletemu.cpumanager.metrics`);
this snapshot is what the daemon copies into its prometheus objects after every change of the live node.
It names the container manager it was read from, weakly: the counters are that manager's, so a node built
anew (start, restart, SIGHUP reload, a shadow refresh's mirror) starts a new series of differences.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubeletemu.cpumanager.metrics import CPUManagerMetrics
from kubeletemu.memorymanager import MemoryManagerMetrics

if TYPE_CHECKING:
    from kubeletemu.containermanager import ContainerManager
    from kubeletemu.emulator import NodeEmulator


@dataclass(frozen=True)
class NodeMetrics:
    source: weakref.ref[ContainerManager]
    cpu: CPUManagerMetrics
    memory: MemoryManagerMetrics

    def same_node(self, other: NodeMetrics) -> bool:
        """Both read from one container manager that is still alive (a dead one is never "the same")."""
        mine = self.source()
        return mine is not None and mine is other.source()


def read_node_metrics(emulator: NodeEmulator) -> NodeMetrics:
    """The live node's values now. Call it under the daemon's lock, as for any other read of the node."""
    cm = emulator.cm
    return NodeMetrics(weakref.ref(cm), cm.cpus.metrics(), cm.memory.metrics())
