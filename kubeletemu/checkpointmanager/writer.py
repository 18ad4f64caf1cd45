"""Group commit for checkpoint batches: one thread makes them durable, in order, off the caller's thread.

The daemon decides an admission under its lock, in memory, as the kubelet does, then hands the batch of
files it changed here and answers only once the batch is on disk. While one batch is being written, the
batches queued behind it are merged (each file once, with its last content) and written together, so
concurrent clients share the fsyncs instead of queueing for them one admission at a time. Order is kept:
a batch is never on disk before one submitted earlier.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from kubeletemu.checkpointmanager.files import Op, WriteBatch, write_batch


class WriterClosedError(RuntimeError):
    pass


class CheckpointWriter:
    def __init__(
        self, name: str = "checkpoint-writer", write: Callable[[WriteBatch], None] = write_batch
    ) -> None:
        # ``write`` applies one (merged) batch; tests wrap the real one to hold a pass open.
        self._write = write
        self._cond = threading.Condition()
        self._queue: list[tuple[WriteBatch, Future[None]]] = []
        self._closed = False
        # Counted for tests and the benchmark: how many batches, and how many disk passes wrote them.
        self.batches_written = 0
        self.passes = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, batch: WriteBatch) -> Future[None]:
        """The future completes when ``batch`` and every batch submitted before it are durable; it
        carries the write's exception if that pass failed."""
        future: Future[None] = Future()
        with self._cond:
            if self._closed:
                raise WriterClosedError("checkpoint writer is closed")
            self._queue.append((batch, future))
            self._cond.notify()
        return future

    def drain(self) -> Future[None]:
        """Completes once everything submitted so far is written (or has failed)."""
        return self.submit(WriteBatch())

    def close(self) -> None:
        """Write what is queued, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                taken, self._queue = self._queue, []
            merged: dict[Path, Op] = {}
            for batch, _ in taken:
                merged.update(batch.ops)  # each path once, its last operation, at its first place
            error: BaseException | None = None
            try:
                self._write(WriteBatch(merged))
            except BaseException as err:  # handed to every waiter of this pass
                error = err
            self.passes += 1
            self.batches_written += len(taken)
            for _, future in taken:
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)
