"""Atomic checkpoint files, as the kubelet's file store writes them, optionally batched per admission.

The kubelet rewrites a checkpoint on every state change, several times per admission. Inside
``batched_writes()`` each file is written once, with its last content, when the block ends; content
may be given as a callable so it is serialized only then. Callers order the batch before the pod
registry, so after a crash the registry never names a pod the checkpoints lack.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path

Content = bytes | Callable[[], bytes]

_pending: ContextVar[dict[Path, tuple[Content, int]] | None] = ContextVar("pending_checkpoints", default=None)


def write_file_atomic(path: Path, data: Content, mode: int = 0o644) -> None:
    """Readers see the old or the new content, never a torn file: a temporary file in the same
    directory, fsync, rename over the target (the kubelet's ``filestore``/``utilfs.WriteFile`` sequence)."""
    pending = _pending.get()
    if pending is not None:
        pending[path] = (data, mode)
        return
    _write(path, data() if callable(data) else data, mode)


@contextlib.contextmanager
def batched_writes() -> Iterator[None]:
    """Defer every ``write_file_atomic`` of the block to its end (nested blocks join the outer one)."""
    if _pending.get() is not None:
        yield
        return
    token = _pending.set({})
    try:
        yield
    finally:
        pending = _pending.get() or {}
        _pending.reset(token)
        # Written even when the block failed: the in-memory state changed, as the kubelet's would have.
        # Sequentially: concurrent writers were measured no faster (the filesystem journal serialises
        # the fsyncs of one directory anyway).
        for path, (data, mode) in pending.items():
            _write(path, data() if callable(data) else data, mode)


def _write(path: Path, data: bytes, mode: int) -> None:
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
