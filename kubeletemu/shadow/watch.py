"""Noticing the kubelet's writes: inotify on the directories of the watched files, else polling.

The kubelet writes each checkpoint to a temporary file in the same directory and renames it over the old
one, so the event to watch is ``IN_MOVED_TO`` (plus ``IN_CLOSE_WRITE`` for files edited in place, like a
configuration file, and creation/deletion). Watching the *directories* survives the renames. inotify is
reached through ``ctypes`` on the C library: the standard library has no binding, and the three calls it
takes are not worth a dependency. Where inotify is unavailable (no Linux, a seccomp filter, the per-user
watch limit, or a directory this process may list but not watch) the watcher falls back to comparing
``stat`` results of the files once per poll interval, which needs search permission on the directories
only.

Events are delivered on the asyncio loop (``add_reader``); ``on_change`` gets the changed file's path.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

MODE_INOTIFY = "inotify"
MODE_POLL = "poll"
DEFAULT_POLL_INTERVAL = 1.0

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
_DIRECTORY_MASK = (
    IN_CLOSE_WRITE
    | IN_MOVED_TO
    | IN_MOVED_FROM
    | IN_CREATE
    | IN_DELETE
    | IN_ATTRIB
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name


class _Inotify:
    """The three system calls, through the C library."""

    def __init__(self) -> None:
        name = ctypes.util.find_library("c")
        self._libc = ctypes.CDLL(name, use_errno=True)
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self.fd: int = fd

    def add_watch(self, path: Path, mask: int) -> int:
        wd: int = self._libc.inotify_add_watch(self.fd, os.fsencode(path), ctypes.c_uint32(mask))
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_add_watch {path}: {os.strerror(err)}")
        return wd

    def read(self) -> list[tuple[int, int, str]]:
        try:
            data = os.read(self.fd, 64 * 1024)
        except BlockingIOError:
            return []
        events = []
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            offset += _EVENT.size
            name = data[offset : offset + length].split(b"\0", 1)[0]
            offset += length
            events.append((wd, mask, os.fsdecode(name)))
        return events

    def close(self) -> None:
        os.close(self.fd)


def _signature(path: Path) -> tuple[int, int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class FileWatcher:
    """Calls ``on_change(path)`` when one of ``files`` is written, replaced, created or deleted."""

    def __init__(
        self,
        files: Sequence[Path],
        on_change: Callable[[Path], None],
        *,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        use_inotify: bool = True,
    ) -> None:
        self.files = [Path(f) for f in files]
        self.on_change = on_change
        self.poll_interval = poll_interval
        self.use_inotify = use_inotify
        self.mode = ""
        self.problem = ""  # why inotify is not used, when it is not
        self._inotify: _Inotify | None = None
        self._watches: dict[int, Path] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._poller: asyncio.Task[None] | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> str:
        """Start watching; returns the mode (``inotify`` or ``poll``)."""
        self._loop = loop
        if self.use_inotify:
            try:
                self._start_inotify(loop)
                self.mode = MODE_INOTIFY
                return self.mode
            except (OSError, AttributeError) as err:
                # AttributeError: a C library without inotify_init1.
                self.problem = str(err)
                self._close_inotify()
        self.mode = MODE_POLL
        # The baseline is taken now: a change right after start() must count.
        self._poller = loop.create_task(self._poll({f: _signature(f) for f in self.files}))
        return self.mode

    def _start_inotify(self, loop: asyncio.AbstractEventLoop) -> None:
        self._inotify = _Inotify()
        for directory in sorted({f.parent for f in self.files}):
            self._watches[self._inotify.add_watch(directory, _DIRECTORY_MASK)] = directory
        loop.add_reader(self._inotify.fd, self._readable)

    def _readable(self) -> None:
        assert self._inotify is not None
        changed: set[Path] = set()
        rewatch = False
        for wd, mask, name in self._inotify.read():
            if mask & IN_Q_OVERFLOW:
                changed.update(self.files)
                continue
            directory = self._watches.get(wd)
            if directory is None:
                continue
            if mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF):
                # The directory itself went away: everything in it changed; watch it again when it is back.
                changed.update(f for f in self.files if f.parent == directory)
                rewatch = True
                continue
            path = directory / name
            if path in self.files:
                changed.add(path)
        if rewatch:
            self._rewatch()
        for path in sorted(changed):
            self.on_change(path)

    def _rewatch(self) -> None:
        assert self._inotify is not None
        watched = set(self._watches.values())
        for wd, directory in list(self._watches.items()):
            if not directory.is_dir():
                del self._watches[wd]
                watched.discard(directory)
        for directory in sorted({f.parent for f in self.files} - watched):
            with contextlib.suppress(OSError):
                self._watches[self._inotify.add_watch(directory, _DIRECTORY_MASK)] = directory

    async def _poll(self, seen: dict[Path, tuple[int, int, int, int] | None]) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            for path in self.files:
                now = _signature(path)
                if now != seen[path]:
                    seen[path] = now
                    self.on_change(path)

    def _close_inotify(self) -> None:
        if self._inotify is None:
            return
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._inotify.fd)
        self._inotify.close()
        self._inotify = None
        self._watches.clear()

    def close(self) -> None:
        self._close_inotify()
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None
