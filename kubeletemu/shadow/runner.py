"""Shadow mode at run time: keep the mirror in step with the real kubelet.

A refresh takes a snapshot of the kubelet's state (files, podresources, files again), and when anything the
mirror depends on changed, rebuilds the mirror, replays the checkpointed pods through it, and installs it in
the daemon; the previous mirror keeps answering until then, and stays when a refresh fails (the report
carries the error, naming the file or socket). Refreshes run when a watched file changes (inotify on the
kubelet's directories, debounced: one admission writes up to three checkpoints) and every refresh period:
pods without exclusive resources come and go without touching any checkpoint, so only the period sees them.

Each rebuild logs one summary line, and one warning line per divergence or warning not seen at the
previous rebuild; the report and the metrics always describe the latest rebuild.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from kubeletemu.config import Config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.logger import get_logger
from kubeletemu.machine import Machine
from kubeletemu.shadow.config import check_own_config
from kubeletemu.shadow.errors import ShadowError
from kubeletemu.shadow.kubelet_version import KubeletVersionChoice, detect_kubelet_version
from kubeletemu.shadow.metrics import RESULT_ERROR, RESULT_UNCHANGED, ShadowMetrics
from kubeletemu.shadow.mirror import Mirror, build_mirror
from kubeletemu.shadow.replay import ReplayResult, replay
from kubeletemu.shadow.report import ShadowReport, build_report
from kubeletemu.shadow.sources import KubeletPaths, PodResourcesSource, take_snapshot
from kubeletemu.shadow.watch import DEFAULT_POLL_INTERVAL, FileWatcher

log = get_logger("kubeletemu.shadow")

TRIGGER_START = "start"
TRIGGER_PERIOD = "period"
TRIGGER_RELOAD = "reload"
# One admission writes the CPU, memory and device checkpoints in turn: wait for the last.
DEFAULT_DEBOUNCE = 0.2


@dataclass(frozen=True)
class Rebuilt:
    emulator: NodeEmulator
    report: ShadowReport
    digest: str


def restore_affinity(mirror: Mirror, result: ReplayResult) -> None:
    """GetAffinity answers, for pods whose replay agreed, the merged hint the replay computed (the kubelet's
    own hints live only in its memory)."""
    emulator = mirror.emulator
    for uid, hints in result.affinity.items():
        entry = emulator.registry.get(uid)
        if entry is None:
            continue
        for name, hint in hints.items():
            entry.affinity[name] = hint
            emulator.cm.restore_affinity(entry.pod, name, hint)


class ShadowRunner:
    def __init__(
        self,
        own: Config,
        machine: Machine,
        paths: KubeletPaths,
        podresources: PodResourcesSource,
        *,
        install: Callable[[NodeEmulator], Awaitable[None]],
        refresh_period: float,
        metrics: ShadowMetrics | None = None,
        debounce: float = DEFAULT_DEBOUNCE,
        use_inotify: bool = True,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        kubelet_binary: str | None = None,
        pinned_version: str | None = None,
    ) -> None:
        check_own_config(own, paths)
        # The real kubelet's version (its binary's --version), unless --kubelet-version pins one.
        self.kubelet_binary = kubelet_binary
        self.pinned_version = pinned_version
        self.version = self._detect_version(own)
        self.own = self._at_version(own)
        self.machine = machine
        self.paths = paths
        self.podresources = podresources
        self.install = install
        self.refresh_period = refresh_period
        self.metrics = metrics
        self.debounce = debounce
        self.use_inotify = use_inotify
        self.poll_interval = poll_interval
        self.report = ShadowReport(paths, kubelet_version=self.version)
        self.watcher: FileWatcher | None = None
        self._digest: str | None = None
        self._logged: set[str] = set()
        self._wake: asyncio.Event | None = None
        self._reason = ""
        self._refreshing: asyncio.Lock | None = None
        self._task: asyncio.Task[None] | None = None

    # ---- building ---------------------------------------------------------------------------------

    def build(self, own: Config, trigger: str, force: bool = False) -> Rebuilt | None:
        """Snapshot, and unless nothing changed, mirror and replay (synchronous: run it in a thread)."""
        started = time.monotonic()
        snapshot = take_snapshot(self.paths, self.podresources, kubelet_version=own.emulator.kubelet_version)
        if not force and snapshot.digest == self._digest:
            return None
        mirror = build_mirror(own, self.machine, snapshot)
        result = replay(mirror)
        restore_affinity(mirror, result)
        report = build_report(
            self.paths,
            mirror,
            result,
            generation=self.report.generation + 1,
            refreshed_at=time.time(),
            trigger=trigger,
            duration=time.monotonic() - started,
            watch_mode=self.report.watch_mode,
            kubelet_version=self.version,
        )
        return Rebuilt(mirror.emulator, report, snapshot.digest)

    def _detect_version(self, own: Config) -> KubeletVersionChoice:
        choice = detect_kubelet_version(
            self.kubelet_binary, own.emulator.kubelet_version, self.pinned_version
        )
        log.info(
            "kubelet version",
            emulated=choice.version,
            source=choice.source,
            binary=choice.binary,
            reported=choice.reported,
        )
        if choice.note:
            log.warning("kubelet version", note=choice.note)
        return choice

    def _at_version(self, own: Config) -> Config:
        if own.emulator.kubelet_version == self.version.version:
            return own
        return replace(own, emulator=replace(own.emulator, kubelet_version=self.version.version))

    def initial(self) -> NodeEmulator:
        """The first mirror, at start-up; raises :class:`ShadowError`."""
        built = self.build(self.own, TRIGGER_START, force=True)
        assert built is not None
        self._accept(built)
        return built.emulator

    def _accept(self, built: Rebuilt) -> None:
        self.report = built.report
        self._digest = built.digest
        if self.metrics is not None:
            self.metrics.observe(built.report)
        self._log(built.report)

    def _log(self, report: ShadowReport) -> None:
        log.info(
            "shadow mirror rebuilt",
            generation=report.generation,
            trigger=report.trigger,
            pods=report.pods_listed,
            containers_checked=report.containers_checked,
            containers_agreeing=report.containers_agreeing,
            divergences=len(report.divergences),
            warnings=len(report.warnings),
            duration_ms=round(report.duration_seconds * 1000, 1),
        )
        current: set[str] = set()
        for divergence in report.divergences:
            key = "d:" + divergence.line()
            current.add(key)
            if key not in self._logged:
                log.warning(
                    "shadow divergence",
                    pod=f"{divergence.namespace}/{divergence.name}",
                    uid=divergence.uid,
                    container=divergence.container,
                    resource=divergence.resource,
                    kubelet=divergence.kubelet,
                    kubeletemu=divergence.emulator,
                    detail=divergence.detail,
                    replay_position=divergence.position,
                )
        for warning in report.warnings:
            key = "w:" + warning
            current.add(key)
            if key not in self._logged:
                log.warning("shadow warning", warning=warning)
        self._logged = current

    # ---- refreshing -------------------------------------------------------------------------------

    async def refresh(self, trigger: str, force: bool = False) -> bool:
        """Re-read the kubelet's state; True when the mirror is current (rebuilt or unchanged)."""
        if self._refreshing is None:
            self._refreshing = asyncio.Lock()
        async with self._refreshing:
            try:
                built = await asyncio.to_thread(self.build, self.own, trigger, force)
            except Exception as err:
                self._failed(err)
                return False
            if built is None:
                self.report = replace(self.report, checked_at=time.time(), last_error="")
                if self.metrics is not None:
                    self.metrics.refreshes.labels(RESULT_UNCHANGED).inc()
                return True
            await self.install(built.emulator)
            self._accept(built)
            return True

    def _failed(self, err: Exception) -> None:
        message = str(err) if isinstance(err, ShadowError) else f"{type(err).__name__}: {err}"
        self.report = replace(self.report, checked_at=time.time(), last_error=message)
        if self.metrics is not None:
            self.metrics.refreshes.labels(RESULT_ERROR).inc()
        if isinstance(err, ShadowError):
            log.error("shadow refresh failed, the previous mirror stays", error=message)
        else:
            log.exception("shadow refresh failed, the previous mirror stays", error=message)

    async def reconfigure(self, own: Config) -> None:
        """SIGHUP: our own configuration changed. Raises (keeping the running one) when it is refused."""
        check_own_config(own, self.paths)
        if self._refreshing is None:
            self._refreshing = asyncio.Lock()
        async with self._refreshing:
            # The kubelet may have been upgraded since: ask its binary again.
            previous = self.version
            self.version = await asyncio.to_thread(self._detect_version, own)
            own = self._at_version(own)
            try:
                built = await asyncio.to_thread(self.build, own, TRIGGER_RELOAD, True)
            except BaseException:
                self.version = previous
                raise
            assert built is not None
            await self.install(built.emulator)
            self.own = own
            self._accept(built)

    # ---- watching ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Watch the kubelet's files and refresh on changes and every period."""
        loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self.watcher = FileWatcher(
            self.paths.files(), self._changed, poll_interval=self.poll_interval, use_inotify=self.use_inotify
        )
        mode = self.watcher.start(loop)
        self.report = replace(self.report, watch_mode=mode)
        if self.watcher.problem:
            log.warning("inotify unavailable, polling the kubelet's files", problem=self.watcher.problem)
        log.info(
            "shadowing the kubelet",
            root_dir=str(self.paths.root_dir),
            config=str(self.paths.config),
            podresources_socket=str(self.paths.podresources_socket),
            watch=mode,
            refresh_period=self.refresh_period,
        )
        self._task = loop.create_task(self._run())

    def _changed(self, path: Path) -> None:
        assert self.watcher is not None and self._wake is not None
        self._reason = self.watcher.mode
        self._wake.set()

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            timeout = self.refresh_period if self.refresh_period > 0 else None
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
                trigger = self._reason
                await asyncio.sleep(self.debounce)
            except TimeoutError:
                trigger = TRIGGER_PERIOD
            self._wake.clear()
            await self.refresh(trigger)

    async def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
