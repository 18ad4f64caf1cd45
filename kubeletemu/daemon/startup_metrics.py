"""The daemon's own start-up metrics (no kubelet counterpart): what restoring the saved state repaired."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from kubeletemu.emulator import REPAIR_DROPPED, REPAIR_REFUSED, REPAIR_RELEASED


class StartupMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.repairs = Counter(
            "kubeletemu_startup_repairs",
            "Pods not restored as saved when the state directory was read (at start-up or on reload), by "
            "action: dropped (a registered pod whose admission was never answered), released (checkpoint "
            "allocations of a UID no admitted pod has), refused (a pod file whose pod this version refuses, "
            "set aside as <file>.refused).",
            ["action"],
            registry=registry,
        )
        for action in (REPAIR_DROPPED, REPAIR_RELEASED, REPAIR_REFUSED):
            self.repairs.labels(action)  # the zero series, from the start
