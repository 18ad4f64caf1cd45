"""One daemon per state directory: an exclusive ``flock`` on ``<state-dir>/kubeletemu.lock`` for the
daemon's lifetime.

Two daemons deciding from one set of checkpoints would give the same CPU to two pods, and each start-up
would drop the other's admissions as never answered. The lock is advisory and held by the open file, so it
goes with the process however it ends (kill -9 included); the file stays behind on purpose, since removing
it would let a third process lock a fresh file while a second still waits on the old one. It holds the
holder's pid and sockets, which a refused second daemon names.

A state directory that cannot be written (a read-only filesystem, no write permission) is still locked:
an existing lock file is opened read-only, which ``flock`` accepts; the holder's name is then the last
one written. On a full filesystem the name may not be written either; neither stops a start-up, which
goes on degraded (see :mod:`kubeletemu.daemon.state_disk`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from kubeletemu.checkpointmanager import make_directories

LOCK_NAME = "kubeletemu.lock"


class StateDirError(Exception):
    """The state directory cannot be locked; the message names it and says why."""


class StateDirInUseError(StateDirError):
    """Another process holds the state directory (the message names it), or the lock cannot be taken."""


class StateDirUnusableError(StateDirError):
    """The state directory's path is at fault, not another daemon: something else than a directory is in
    its place (a regular file, a socket), or it or its lock file cannot be made or opened (a path under
    /proc, no permission)."""


class StateDirLock:
    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self, holder: str) -> None:
        """Take the lock or raise; ``holder`` (e.g. "pid 12, serving /run/x.sock") is written for others."""
        _refuse_non_directory(self.state_dir)
        try:
            make_directories(self.state_dir)
            fd, writable = self._open()
        except OSError as err:
            raise StateDirUnusableError(
                f"cannot lock the state directory: {self.path}: {err.strerror}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StateDirInUseError(f"cannot lock {self.path}: {err.strerror}") from None
            other = self.holder() or "a process that has not written its name yet"
            raise StateDirInUseError(
                f"the state directory {self.state_dir} is in use by another kubeletemu ({other}; lock "
                f"{self.path}): two daemons on one state directory would give the same CPUs to different "
                "pods; stop that daemon or give this one its own --state-dir"
            ) from None
        if writable:
            with contextlib.suppress(OSError):  # a full disk: the lock holds all the same
                os.ftruncate(fd, 0)
                os.write(fd, f"{holder}\n".encode())
        self._fd = fd

    def _open(self) -> tuple[int, bool]:
        """The lock file's descriptor, and whether the holder's name can be written to it."""
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600), True
        except OSError as err:
            if err.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            try:
                return os.open(self.path, os.O_RDONLY | os.O_CLOEXEC), False
            except FileNotFoundError:
                raise err from None

    def lost(self) -> str | None:
        """Why the lock no longer guards the state directory, None while it does: the lock file at the path
        is gone, or is another file than the one this daemon locked (the directory was removed, or
        replaced by another). Two ``stat`` calls, no write."""
        if self._fd is None:
            return None
        held = os.fstat(self._fd)
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            return f"the lock file {self.path} is gone (was {self.state_dir} removed?)"
        except OSError as err:
            return f"cannot check the lock file {self.path}: {err.strerror}"
        if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            return f"the lock file {self.path} was replaced (is {self.state_dir} another directory now?)"
        return None

    def retake(self, holder: str) -> None:
        """Lock the directory again after :meth:`lost`: make it if it is gone, lock its lock file (a new
        one), then let the old one go. Raises :class:`StateDirInUseError` if another process locked the new
        file first, as :meth:`acquire` does; the old lock is kept then."""
        previous, self._fd = self._fd, None
        try:
            self.acquire(holder)
        except BaseException:
            self._fd = previous
            raise
        if previous is not None:
            os.close(previous)

    def holder(self) -> str:
        """What the lock file says about its holder ("" when unreadable or empty)."""
        try:
            return self.path.read_text(errors="replace").strip()
        except OSError:
            return ""

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


def _refuse_non_directory(path: Path) -> None:
    """Without this, ``mkdir`` on a file's path says "File exists", which reads like another daemon."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing (made below), or unreachable: mkdir's own error says why
    if not stat.S_ISDIR(mode):
        kind = "a regular file" if stat.S_ISREG(mode) else "something else"
        raise StateDirUnusableError(f"the state directory {path} is not a directory: {kind} is in its place")
