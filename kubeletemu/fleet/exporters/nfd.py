"""nfd-topology-updater at node-feature-discovery 76e6cc8cc0d54b8bce037098b72611ffdf66ef5a
(``pkg/nfd-topology-updater/kubeletnotifier``, ``nfd-topology-updater.go``), as one node's event loop:

* a fixed ticker every ``--sleep-interval`` (60 s by default; 0: none);
* with ``--kubelet-state-dir`` (on by default) an fsnotify watch on the kubelet's state directory: a
  write to ``cpu_manager_state``, ``memory_manager_state`` or ``kubelet_internal_checkpoint`` triggers a
  scan at once (no rate limiter) — the kubelet writes them when it allocates exclusive resources at
  admission and when it releases them;
* no scan at start-up (the notifier sends no initial event); the object is applied (server-side apply,
  forced): an unchanged object is no write.
"""

from __future__ import annotations

from kubeletemu.fleet.exporters.base import Exporter
from kubeletemu.fleet.exporters.listing import nfd_topology
from kubeletemu.scheduler.objects import NodeResourceTopology


class NFDTopologyUpdater(Exporter):
    def tick(self) -> None:
        self.scan()

    def state_files_written(self) -> None:
        if self.spec.kubelet_state_dir:
            self.scan()

    def build(self, variant: object) -> NodeResourceTopology:
        return nfd_topology(self.node.emulator, self.node.terminal_pods(), self.constants)
