"""The state directory as the daemon writes it: undoing calls whose files could not be written, and the
degraded mode while the directory cannot be written (full, read-only, no permission).

The kubelet's CPU and Memory Managers log a checkpoint they could not write and keep the change in
memory (``storeState`` errors are only logged); a restart then loses what was answered. The daemon does
not answer before the files are durable, so a write that fails leaves no answer to keep: the call is
undone in memory and answered ``UNAVAILABLE``.

Undoing under group commit: a disk pass merges the batches of several calls, and calls decided while it
runs build on them; when it fails, all of those must go, the later ones first. Rather than replaying
inverses (a memory manager release does not put bytes back on the NUMA nodes they came from), the node
is set to what the writer's committed files say, the content of the last pass that succeeded: that is
every undo at once, in the right order, and exactly what a restart on those files would restore. The
writer refuses every batch after a failed pass until ``sync`` has put those files back on disk, and that
is only asked for after the undo, so nothing decided on an undone call is ever written.

Degraded mode is for the disk, not for one call. A write the disk refused (full, read-only, I/O error,
over quota: ``DISK_ERRNOS``) makes the daemon degraded: every read is served, Admit and RemovePod are
refused up front, the admission service's health is NOT_SERVING. Any other failure belongs to the call (a
path that cannot name a file, a file someone made immutable) or to a state directory that went away: the
call is undone and refused all the same, and the files are brought back at once; only if that fails too
is the daemon degraded. Each later write attempt, and a periodic check, first asks the writer to bring the
files back to the node's state (a probe write in each directory, then every file that differs); once that
succeeds, writes resume without a restart.

The state directory removed or replaced while the daemon runs (:mod:`kubeletemu.daemon.state_guard`) is
found at the next Admit or RemovePod, after a writer pass, or by the periodic check: the directory is made
again, locked again, and the whole node is written into it from memory (files the writer does not know,
pod files of a restored backup, are removed) before any call is acknowledged; logged, and counted in
``kubeletemu_state_directory_rebuilds_total``. If that cannot be done, the daemon is degraded. A checkpoint
deleted on its own is found the same way and written back (it counts as a rebuild too), and a clean stop
checks once more, so that the next start does not find pods holding CPUs with no checkpoint.

Everything here runs on the event loop under the daemon's lock, which every call that changes or reads
the node takes, so an undo is never seen half done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from kubeletemu.checkpointmanager import DISK_ERRNOS, CheckpointWriter
from kubeletemu.daemon.logging import get_logger
from kubeletemu.daemon.state_guard import StateDirGuard
from kubeletemu.daemon.state_lock import StateDirError
from kubeletemu.daemon.state_metrics import REFUSED, UNDONE, StateMetrics
from kubeletemu.emulator import NodeEmulator

log = get_logger("kubeletemu.state")

# The call was decided in memory, its files could not be written, and it was undone before this answer.
STATE_NOT_SAVED = "state not saved, the call was undone"
# How often a degraded daemon checks whether the directory takes writes again, between calls.
RECHECK_SECONDS = 5.0


def not_writable_message(state_dir: str, err: BaseException) -> str:
    """The one line a refused call gets while the daemon is degraded."""
    return (
        f"state directory {state_dir} is not writable: {describe(err)}; admissions and removals are "
        "refused until it is (reads keep working)"
    )


def is_disk_error(err: BaseException) -> bool:
    """A failure of the disk (whatever file was written), not of one call's path."""
    return isinstance(err, OSError) and err.errno in DISK_ERRNOS


def describe(err: BaseException) -> str:
    """An OS error as the writer words it (the file and the reason), a lock's refusal as it words it;
    anything else with its type."""
    return str(err) if isinstance(err, OSError | StateDirError) else f"{type(err).__name__}: {err}"


class StateDisk:
    def __init__(
        self,
        state_dir: str,
        writer: CheckpointWriter,
        emulator: Callable[[], NodeEmulator],
        lock: asyncio.Lock,
        metrics: StateMetrics,
        *,
        on_change: Callable[[str | None], Awaitable[None]],
        observe: Callable[[NodeEmulator], None],
        on_fatal: Callable[[], None],
        guard: StateDirGuard | None = None,
    ) -> None:
        self.state_dir = state_dir
        # Whether the state directory is still the one the daemon locked and wrote (None: not watched).
        self.guard = guard
        self.writer = writer
        self.emulator = emulator
        self.lock = lock
        self.metrics = metrics
        # Told the new problem (None: writable again): health and sd_notify follow it.
        self._on_change = on_change
        self._observe = observe
        self._on_fatal = on_fatal
        # Why writes are refused (the refusal's text); None while the directory takes writes.
        self.problem: str | None = None
        # The writer's failed passes whose calls are undone in memory.
        self._undone = 0

    async def open(self, files: Mapping[Path, tuple[bytes, int]], removed: frozenset[Path]) -> list[Path]:
        """Take a freshly read state (start-up, reload) as the writer's baseline and make the directory
        hold it: only what differs is written. Degraded when that fails. Returns what was written."""
        try:
            written = await asyncio.wrap_future(self.writer.sync(files, removed))
        except Exception as err:
            await self._set_problem(not_writable_message(self.state_dir, err))
            return []
        self._remember()
        await self._set_problem(None)
        return written

    async def refusal(self) -> str | None:
        """Before a change, under the daemon's lock: None when it may go ahead, else why not (counted).
        While degraded, each attempt first tries to bring the directory back."""
        if await self.writable():
            return None
        self.metrics.write_refusals.labels(REFUSED).inc()
        return self.problem

    async def writable(self) -> bool:
        """Under the daemon's lock: whether writes are accepted now, trying to resume them if not (a state
        directory found removed or replaced is rebuilt first)."""
        if self.writer.failure is None and (self.guard is None or self.guard.problem() is None):
            return True
        return await self._recover()

    async def undo(self, err: BaseException) -> str:
        """A call's files could not be written: undo it (and every call decided after the last pass that
        succeeded) before it is answered. Returns the answer's text."""
        async with self.lock:
            self._undo_in_memory()
            failure = self.writer.failure
            if failure is not None and self.problem is None:  # not when writes resumed meanwhile
                if is_disk_error(failure):
                    await self._set_problem(not_writable_message(self.state_dir, failure))
                elif await self._recover():
                    # The call's own path, or a directory that went away and is back: nothing degraded.
                    log.warning("call undone, the state directory takes writes", error=describe(failure))
        self.metrics.write_refusals.labels(UNDONE).inc()
        return f"{STATE_NOT_SAVED}: {describe(err)}"

    async def watch(self, period: float = RECHECK_SECONDS) -> None:
        """While degraded, check every ``period`` seconds whether writes can resume."""
        while True:
            await asyncio.sleep(period)
            if not self._healthy():
                async with self.lock:
                    if not self._healthy():
                        await self._recover()

    def _healthy(self) -> bool:
        return self.writer.failure is None and (self.guard is None or self.guard.problem() is None)

    async def _recover(self) -> bool:
        # The files are brought back to the node in memory: first make that the last durable state.
        self._undo_in_memory()
        strays: set[Path] = set()
        try:
            why = self.guard.problem() if self.guard is not None else None
            if self.guard is not None and why is not None:
                log.warning("state directory removed or replaced: rebuilding it from memory", reason=why)
                self.metrics.rebuilds.inc()
                self.guard.retake()
                strays = self._strays()
            written = await asyncio.wrap_future(self.writer.sync(unverified=strays))
            self._remember()
        except Exception as err:
            await self._set_problem(not_writable_message(self.state_dir, err))
            return False
        if written:
            log.info("files brought back to the node's state", files=[str(p) for p in written])
        await self._set_problem(None)
        return True

    def _strays(self) -> set[Path]:
        """Pod files in a replaced directory that the node does not have (a restored backup's): removed,
        or a restart would bring their pods back."""
        known = set(self.writer.committed())
        return {path for path in self.emulator().registry.files() if path not in known}

    def _remember(self) -> None:
        if self.guard is not None:
            registry = self.emulator().registry.directory
            self.guard.remember(self.writer.committed(), [] if registry is None else [registry])

    def _undo_in_memory(self) -> None:
        failed = self.writer.failed_passes
        if failed == self._undone:
            return
        emulator = self.emulator()
        before = len(emulator.registry)
        try:
            emulator.restore_state(self.writer.committed())
        except Exception as err:
            # The node in memory is no longer known to match anything: a restart reads it from the files.
            log.error("cannot undo in memory, stopping", error=describe(err), state_dir=self.state_dir)
            self._on_fatal()
            raise
        self._undone = failed
        self._observe(emulator)
        log.warning(
            "calls undone: their files could not be written",
            pods_before=before,
            pods_after=len(emulator.registry),
            state_dir=self.state_dir,
        )

    async def _set_problem(self, problem: str | None) -> None:
        if problem == self.problem:
            return
        if problem is None:
            log.info("state directory takes writes: admissions resume", state_dir=self.state_dir)
        else:
            log.warning("degraded: serving reads only", reason=problem, state_dir=self.state_dir)
        self.problem = problem
        self.metrics.writable.set(0 if problem else 1)
        await self._on_change(problem)
