"""Group commit for checkpoint batches: one thread makes them durable, in order, off the caller's thread.

The daemon decides an admission under its lock, in memory, as the kubelet does, then hands the batch of
files it changed here and answers only once the batch is on disk. While one batch is being written, the
batches queued behind it are merged (each file once, with its last content) and written together, so
concurrent clients share the fsyncs instead of queueing for them one admission at a time. Order is kept:
a batch is never on disk before one submitted earlier.

The writer knows what the files hold (``committed``: the content of every file it wrote or was given, as
of the last pass that succeeded), so it skips a write whose content is already there. A pass that fails
leaves the files part-way between two states: from then on every batch fails without being written
(each was decided on top of the failed one, which its caller undoes in memory, back to ``committed``),
until ``sync()`` has written ``committed`` back over whatever the failed pass left.

A pass counts as written only if the directories it wrote are still the ones the daemon holds when it
ends (``verify``): files renamed into a state directory that was removed meanwhile are gone with it, so
such a pass fails like one the disk refused, and its calls are undone.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeletemu.checkpointmanager.files import (
    PATH_ERRNOS,
    CheckpointWriteError,
    Op,
    WriteBatch,
    probe_writable,
    read_file,
    write_batch,
)

Committed = dict[Path, tuple[bytes, int]]


class WriterClosedError(RuntimeError):
    pass


@dataclass(frozen=True)
class _Sync:
    """A queued ``sync()``: optionally a new baseline first (a reload read the state again)."""

    committed: Committed | None
    unverified: frozenset[Path]


class CheckpointWriter:
    def __init__(
        self,
        name: str = "checkpoint-writer",
        write: Callable[[WriteBatch], None] = write_batch,
        committed: Mapping[Path, tuple[bytes, int]] | None = None,
        verify: Callable[[], str | None] | None = None,
    ) -> None:
        # ``write`` applies one (merged) batch; tests wrap the real one to hold a pass open or fail it.
        self._write = write
        # After a pass: why its files may not be where they were written (None: they are), e.g. the
        # state directory was removed while it ran. Called on the writer's thread.
        self._verify = verify
        self._cond = threading.Condition()
        self._queue: list[tuple[WriteBatch | _Sync, Future[Any]]] = []
        self._closed = False
        # What the files hold once the passes so far are on disk (absent: no file).
        self._committed: Committed = dict(committed or {})
        # Files whose content on disk may differ from ``committed`` (a failed pass touched them).
        self._unverified: set[Path] = set()
        # Why writing stopped; None while passes are written.
        self._failure: BaseException | None = None
        # Counted for tests and the benchmark: how many batches, and how many disk passes wrote them.
        self.batches_written = 0
        self.passes = 0
        # Passes that failed: each leaves calls to undo (a failed sync() changes nothing in memory).
        self.failed_passes = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def set_verify(self, verify: Callable[[], str | None]) -> None:
        """Install the after-pass check (see ``verify`` above); before the first write, by its owner."""
        with self._cond:
            self._verify = verify

    def submit(self, batch: WriteBatch) -> Future[None]:
        """The future completes when ``batch`` and every batch submitted before it are durable; it
        carries the write's exception if that pass failed, or the failure that stopped the writer."""
        future: Future[None] = Future()
        self._enqueue(batch, future)
        return future

    def drain(self) -> Future[None]:
        """Completes once everything submitted so far is written (or has failed)."""
        return self.submit(WriteBatch())

    def sync(
        self, committed: Mapping[Path, tuple[bytes, int]] | None = None, unverified: Iterable[Path] = ()
    ) -> Future[list[Path]]:
        """After everything queued: check the files' directories take a write, then make every file the
        writer knows hold its committed content (and remove the ``unverified`` ones it does not know).
        Success lets passes be written again; a failure is the future's exception. ``committed``, when
        given, replaces the writer's knowledge first (the state as a start-up or reload read it). The
        result: the files that had to be written or removed."""
        future: Future[list[Path]] = Future()
        self._enqueue(_Sync(None if committed is None else dict(committed), frozenset(unverified)), future)
        return future

    @property
    def failure(self) -> BaseException | None:
        """Why batches are refused now (a failed pass, or a failed ``sync()``); None when they are written."""
        with self._cond:
            return self._failure

    def committed(self) -> dict[Path, bytes]:
        """The content of every file as of the last pass that succeeded: what calls are undone to."""
        with self._cond:
            return {path: data for path, (data, _) in self._committed.items()}

    def close(self) -> None:
        """Write what is queued, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()

    def _enqueue(self, item: WriteBatch | _Sync, future: Future[Any]) -> None:
        with self._cond:
            if self._closed:
                raise WriterClosedError("checkpoint writer is closed")
            self._queue.append((item, future))
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                taken, self._queue = self._queue, []
            start = 0
            while start < len(taken):
                item, future = taken[start]
                if isinstance(item, _Sync):
                    self._sync(item, future)
                    start += 1
                    continue
                end = start
                while end < len(taken) and not isinstance(taken[end][0], _Sync):
                    end += 1
                self._pass([(b, f) for b, f in taken[start:end] if isinstance(b, WriteBatch)])
                start = end

    def _pass(self, taken: list[tuple[WriteBatch, Future[None]]]) -> None:
        with self._cond:
            failure = self._failure
        if failure is not None:  # decided on top of a failed pass: never written
            for _, future in taken:
                future.set_exception(failure)
            return
        merged: dict[Path, Op] = {}
        for batch, _ in taken:
            merged.update(batch.ops)  # each path once, its last operation, at its first place
        # A file that already holds the content is not written again (deletions always are: cheap).
        changed = {
            path: op
            for path, op in merged.items()
            if op is None or path in self._unverified or self._committed.get(path) != op
        }
        error: BaseException | None = None
        try:
            if changed:
                self._write(WriteBatch(changed))
                self._check_written()
        except BaseException as err:  # handed to every waiter of this pass
            error = err
        with self._cond:
            self.passes += 1
            self.batches_written += len(taken)
            if error is None:
                for path, op in changed.items():
                    if op is None:
                        self._committed.pop(path, None)
                    else:
                        self._committed[path] = op
                    self._unverified.discard(path)
            else:
                self._failure = error
                self.failed_passes += 1
                self._unverified.update(changed)
        for _, future in taken:
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

    def _check_written(self) -> None:
        problem = self._verify() if self._verify is not None else None
        if problem is not None:
            raise CheckpointWriteError(errno.ENOENT, problem)

    def _sync(self, item: _Sync, future: Future[list[Path]]) -> None:
        with self._cond:
            if item.committed is not None:
                self._committed = item.committed
            self._unverified |= item.unverified
            committed, paths = dict(self._committed), sorted(self._committed.keys() | self._unverified)
        try:
            for directory in sorted({path.parent for path in paths}):
                probe_writable(directory)
            wrong = {}
            for path in paths:
                want = committed.get(path)
                try:
                    have = read_file(path)
                except OSError as err:
                    # A path no file can have (a failed write to it left nothing): nothing to undo there.
                    if want is None and err.errno in PATH_ERRNOS:
                        continue
                    raise
                if have != want:
                    wrong[path] = want
            if wrong:
                self._write(WriteBatch(wrong))
            self._check_written()
        except BaseException as err:
            with self._cond:
                self._failure = err
            future.set_exception(err)
            return
        with self._cond:
            self._failure = None
            self._unverified.clear()
        future.set_result(sorted(wrong))
