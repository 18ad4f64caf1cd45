"""What one refresh of the mirror found: the pods it mirrors, how they were rebuilt, and the self-check."""

from __future__ import annotations

from dataclasses import dataclass

from kubeletemu.shadow.kubelet_version import KubeletVersionChoice
from kubeletemu.shadow.mirror import Mirror
from kubeletemu.shadow.reconstruct import UID_DERIVED, UID_FROM_CHECKPOINT
from kubeletemu.shadow.replay import Divergence, ReplayResult
from kubeletemu.shadow.sources import KubeletPaths


@dataclass(frozen=True)
class ShadowReport:
    paths: KubeletPaths
    generation: int = 0  # rebuilds so far; 0: none yet
    refreshed_at: float = 0.0  # when the mirror was last rebuilt (Unix time)
    checked_at: float = 0.0  # when the kubelet's state was last read, changed or not
    trigger: str = ""  # what caused the last rebuild: start, inotify, poll, period, reload
    duration_seconds: float = 0.0  # of the last rebuild, replay included
    pods_listed: int = 0
    pods_matched: int = 0  # with a UID from the checkpoints
    pods_derived: int = 0  # holding nothing exclusive: UID derived from namespace/name
    ambiguous: tuple[str, ...] = ()
    stale_uids: tuple[str, ...] = ()
    placeholders: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    replay_order: tuple[str, ...] = ()
    containers_checked: int = 0
    containers_agreeing: int = 0
    divergences: tuple[Divergence, ...] = ()
    interchangeable_devices: tuple[str, ...] = ()
    # The last refresh's error, if it failed (the mirror is then the previous one); "" otherwise.
    last_error: str = ""
    watch_mode: str = ""
    # The kubelet version the mirror emulates and how it was chosen (the binary's --version, the flag...).
    kubelet_version: KubeletVersionChoice | None = None


def build_report(
    paths: KubeletPaths,
    mirror: Mirror,
    result: ReplayResult,
    *,
    generation: int,
    refreshed_at: float,
    trigger: str,
    duration: float,
    watch_mode: str,
    kubelet_version: KubeletVersionChoice | None = None,
) -> ShadowReport:
    pods = mirror.reconstruction.pods
    return ShadowReport(
        paths=paths,
        generation=generation,
        refreshed_at=refreshed_at,
        checked_at=refreshed_at,
        trigger=trigger,
        duration_seconds=duration,
        pods_listed=len(mirror.snapshot.listing.pod_resources),
        pods_matched=sum(1 for p in pods if p.uid_source == UID_FROM_CHECKPOINT),
        pods_derived=sum(1 for p in pods if p.uid_source == UID_DERIVED),
        ambiguous=tuple(
            f"{p.key}: matched {p.pod.uid}, equally {', '.join(p.ambiguous_with)}"
            for p in pods
            if p.ambiguous_with
        ),
        stale_uids=mirror.reconstruction.stale_uids,
        placeholders=tuple(f"{p.key} {line}" for p in pods for line in p.placeholders),
        warnings=tuple(mirror.warnings),
        replay_order=result.order,
        containers_checked=result.containers_checked,
        containers_agreeing=result.containers_agreeing,
        divergences=result.divergences,
        interchangeable_devices=result.interchangeable_devices,
        watch_mode=watch_mode,
        kubelet_version=kubelet_version,
    )
