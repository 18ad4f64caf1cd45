"""Shadow mode's Prometheus series, registered beside the kubelet's in the daemon's registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from kubeletemu.shadow.reconstruct import UID_DERIVED, UID_FROM_CHECKPOINT
from kubeletemu.shadow.replay import RESOURCES
from kubeletemu.shadow.report import ShadowReport

RESULT_REBUILT = "rebuilt"
RESULT_UNCHANGED = "unchanged"
RESULT_ERROR = "error"


class ShadowMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.divergences = Gauge(
            "kubeletemu_shadow_divergences",
            "Containers whose replayed assignment differs from the kubelet's at the last refresh, by "
            "resource (cpus, memory, devices; admission: the emulator would reject the pod).",
            ["resource"],
            registry=registry,
        )
        self.containers_checked = Gauge(
            "kubeletemu_shadow_containers_checked",
            "Containers holding exclusive resources that the last refresh replayed.",
            registry=registry,
        )
        self.pods = Gauge(
            "kubeletemu_shadow_pods",
            "Pods the kubelet lists, by where their UID came from (checkpoint or derived).",
            ["uid_source"],
            registry=registry,
        )
        self.refreshes = Counter(
            "kubeletemu_shadow_refreshes",
            "Refreshes of the mirror, by result (rebuilt, unchanged, error).",
            ["result"],
            registry=registry,
        )
        self.last_rebuild = Gauge(
            "kubeletemu_shadow_last_rebuild_timestamp_seconds",
            "When the mirror was last rebuilt from the kubelet's state (Unix time).",
            registry=registry,
        )
        for resource in RESOURCES:
            self.divergences.labels(resource).set(0)
        for source in (UID_FROM_CHECKPOINT, UID_DERIVED):
            self.pods.labels(source).set(0)
        for result in (RESULT_REBUILT, RESULT_UNCHANGED, RESULT_ERROR):
            self.refreshes.labels(result).inc(0)

    def observe(self, report: ShadowReport) -> None:
        """After a rebuild: the report's figures."""
        for resource in RESOURCES:
            count = len({(d.uid, d.container) for d in report.divergences if d.resource == resource})
            self.divergences.labels(resource).set(count)
        self.containers_checked.set(report.containers_checked)
        self.pods.labels(UID_FROM_CHECKPOINT).set(report.pods_matched)
        self.pods.labels(UID_DERIVED).set(report.pods_derived)
        self.last_rebuild.set(report.refreshed_at)
        self.refreshes.labels(RESULT_REBUILT).inc()
