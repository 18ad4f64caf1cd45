"""Atomic checkpoint files, as the kubelet's file store writes them, optionally batched per admission.

The kubelet rewrites a checkpoint on every state change, several times per admission. Inside
``batched_writes()`` each file is written once, with its last content, when the block ends; content
may be given as a callable so it is serialized only then. ``deferred_writes()`` collects the same way but
leaves the writing to its caller (the daemon hands the batch to a ``CheckpointWriter``, which makes it
durable off the event loop and answers the admission only then). ``probe_writable`` tells whether a
directory takes a durable write now (a full or read-only filesystem, or missing permissions, says no).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

Content = bytes | Callable[[], bytes]
# A pending operation on one path: new content and mode, or None to delete the file.
PendingOp = tuple[Content, int] | None
Op = tuple[bytes, int] | None

_pending: ContextVar[PendingWrites | None] = ContextVar("pending_checkpoints", default=None)
# Temporary names unique within the process; the pid keeps two processes apart.
_sequence = itertools.count()
# ".<name>.<pid>.<sequence>.tmp": what _write creates and renames away.
_TEMPORARY = re.compile(r"\..+\.[0-9]+\.[0-9]+\.tmp")
_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
# A probe writes a page: the smallest write a full filesystem refuses.
_PROBE_BYTES = 4096
# Every directory of the state (and of the sockets) is made rwxr-x---: the owner writes, its group reads.
DIRECTORY_MODE = 0o750


@dataclass(frozen=True)
class WriteBatch:
    """Files to make durable together, in order: path -> (content, mode), or None to delete it."""

    ops: dict[Path, Op] = field(default_factory=dict)


class PendingWrites(dict[Path, PendingOp]):
    """What a ``deferred_writes()`` block collected: path -> its last operation."""

    def freeze(self) -> WriteBatch:
        """The batch, serialized now."""
        return WriteBatch({path: _materialize(op) for path, op in self.items()})


def make_directories(path: str | os.PathLike[str], mode: int = DIRECTORY_MODE) -> None:
    """``mkdir -p`` giving each directory it makes exactly ``mode``, whatever the umask: ``mkdir`` narrows
    its mode by the umask, and its default (0777) under a umask of 000 would let anyone rename the
    root-owned files inside. Directories already there keep their mode (the operator's choice)."""
    target = Path(path)
    if target.is_dir():
        return
    if target.parent != target:
        make_directories(target.parent, mode)
    try:
        os.mkdir(target, mode)
    except FileExistsError:
        if target.is_dir():  # made meanwhile by another thread or process
            return
        # A file where a directory of the path should be: mkdir(2) of a path through it says ENOTDIR,
        # where "File exists" would read like another daemon's.
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(target)) from None
    os.chmod(target, mode)  # only ever narrowed by the umask above: no window with more access


def write_file_atomic(path: Path, data: Content, mode: int = 0o644) -> None:
    """Readers see the old or the new content, never a torn file: a temporary file in the same
    directory, fsync, rename over the target (the kubelet's ``filestore``/``utilfs.WriteFile`` sequence)."""
    pending = _pending.get()
    if pending is not None:
        pending[path] = (data, mode)
        return
    _apply(path, (data() if callable(data) else data, mode))


def remove_file(path: Path) -> None:
    """Delete ``path`` if present; inside a batch, in the batch's order."""
    pending = _pending.get()
    if pending is not None:
        pending[path] = None
        return
    _apply(path, None)


@contextlib.contextmanager
def batched_writes() -> Iterator[None]:
    """Defer every ``write_file_atomic`` of the block to its end (nested blocks join the outer one)."""
    if _pending.get() is not None:
        yield
        return
    collected = PendingWrites()
    token = _pending.set(collected)
    try:
        yield
    finally:
        _pending.reset(token)
        # Written even when the block failed: the in-memory state changed, as the kubelet's would have.
        write_batch(collected.freeze())


@contextlib.contextmanager
def deferred_writes() -> Iterator[PendingWrites]:
    """Collect the block's writes (and those of nested ``batched_writes`` blocks) without writing them:
    the caller freezes the result, even when the block failed, and makes it durable. (Handing each file
    over as soon as the next manager writes was measured slower: more writer passes, GIL hand-offs.)"""
    if _pending.get() is not None:
        raise RuntimeError("deferred_writes() cannot be nested in another batch")
    collected = PendingWrites()
    token = _pending.set(collected)
    try:
        yield collected
    finally:
        _pending.reset(token)


def write_batch(batch: WriteBatch) -> None:
    """Apply a batch in order. Sequentially: concurrent writers were measured no faster (the filesystem
    journal serialises the fsyncs of one directory anyway)."""
    for path, op in batch.ops.items():
        _apply(path, op)


def _materialize(op: PendingOp) -> Op:
    if op is None:
        return None
    data, mode = op
    return (data() if callable(data) else data, mode)


class CheckpointWriteError(OSError):
    """A file could not be written or removed; the message names it and says why."""

    def __str__(self) -> str:
        return str(self.strerror)


def _apply(path: Path, op: Op) -> None:
    try:
        if op is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return
        _write(path, *op)
    except CheckpointWriteError:
        raise
    except OSError as err:
        verb = "remove" if op is None else "write"
        raise CheckpointWriteError(err.errno, f"cannot {verb} {path}: {err.strerror or err}") from err


def _write(path: Path, data: bytes, mode: int) -> None:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"checkpoint content must be bytes, not {type(data).__name__}")
    target = os.fspath(path)
    directory, name = os.path.split(target)
    fd, tmp = _create_temporary(directory, name, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)  # the umask may have narrowed the creation mode
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _create_temporary(directory: str, name: str, mode: int) -> tuple[int, str]:
    """A new temporary file beside the target. A name can already exist if a killed process with the
    same pid left it behind: that one is skipped (and left to ``remove_stale_temporaries``).

    A missing directory is made, one level only (``pods/`` on the first admission): a missing parent
    means the state directory itself is gone, and re-creating it here would write part of the node into
    an empty directory; the write fails instead (``ENOENT``), and the daemon rebuilds the directory
    whole (:mod:`kubeletemu.daemon.state_guard`)."""
    while True:
        tmp = os.path.join(directory, f".{name}.{os.getpid()}.{next(_sequence)}.tmp")
        try:
            return os.open(tmp, _OPEN_FLAGS, mode), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, DIRECTORY_MODE)
                os.chmod(directory, DIRECTORY_MODE)
            with contextlib.suppress(FileExistsError):
                return os.open(tmp, _OPEN_FLAGS, mode), tmp


# What reading or writing one path can fail with that says nothing about the disk: the path cannot
# name a file (too long, not a name, a directory in its place, a file where a directory should be).
PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.EINVAL, errno.EISDIR, errno.ENOTDIR})
# What a write can fail with that is the disk's, whichever file it was: full, read-only, broken, over quota.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EIO, errno.EDQUOT})


def read_file(path: Path) -> Op:
    """A file's content and permission bits as ``write_file_atomic`` would leave them; None when absent."""
    try:
        with open(path, "rb") as f:
            return f.read(), os.stat(f.fileno()).st_mode & 0o7777
    except FileNotFoundError:
        return None


def probe_writable(directory: Path) -> None:
    """Make one durable write in ``directory`` and take it back (a temporary file: create, fill, fsync,
    remove), as a checkpoint write would start. Raises ``CheckpointWriteError`` naming the directory."""
    try:
        fd, tmp = _create_temporary(os.fspath(directory), "kubeletemu-probe", 0o600)
        try:
            try:
                os.write(fd, b"\0" * _PROBE_BYTES)
                os.fsync(fd)
            finally:
                os.close(fd)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    except OSError as err:
        raise CheckpointWriteError(err.errno, f"cannot write in {directory}: {err.strerror or err}") from err


def remove_stale_temporaries(
    directory: Path, on_error: Callable[[Path, OSError], None] | None = None
) -> list[Path]:
    """Delete the temporary files a killed writer left under ``directory`` (a write interrupted between
    creating its temporary file and renaming it); only the owner of the directory may call this, at
    start-up, before writing. Returns what was removed. One that cannot be removed (a read-only
    filesystem) is handed to ``on_error`` and left: nothing reads it, and it must not stop a start-up."""
    removed = []
    for path in sorted(directory.rglob(".*.tmp")) if directory.is_dir() else []:
        if _TEMPORARY.fullmatch(path.name) and path.is_file():
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as err:
                if on_error is None:
                    raise
                on_error(path, err)
                continue
            removed.append(path)
    return removed
