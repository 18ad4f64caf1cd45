"""The daemon's own metrics on its state directory (no kubelet counterpart): refused writes, and whether
the directory takes writes now."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

# A call refused before it was decided: the directory was already known not to take writes.
REFUSED = "refused"
# A call decided in memory whose files could not be written: undone before its answer.
UNDONE = "undone"


class StateMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.write_refusals = Counter(
            "kubeletemu_state_write_refusals",
            "Admit and RemovePod calls answered UNAVAILABLE because the state directory could not be "
            "written, by outcome: refused (before deciding: the directory was known not to take writes), "
            "undone (decided, then undone in memory when its files could not be written).",
            ["outcome"],
            registry=registry,
        )
        for outcome in (REFUSED, UNDONE):
            self.write_refusals.labels(outcome)  # the zero series, from the start
        self.writable = Gauge(
            "kubeletemu_state_directory_writable",
            "1 while the state directory takes writes; 0 while the daemon is degraded (reads are served, "
            "Admit and RemovePod refused).",
            registry=registry,
        )
        self.writable.set(1)
        self.rebuilds = Counter(
            "kubeletemu_state_directory_rebuilds",
            "Times the state directory (or a checkpoint in it) was found removed or replaced while the "
            "daemon ran, and was made again, locked again and written whole from memory.",
            registry=registry,
        )
