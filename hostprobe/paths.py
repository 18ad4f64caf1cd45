"""Reading files under a sysfs root and a procfs root.

Every reader in this package goes through ``HostReader``; nothing globs absolute paths, so a captured tree
and the live ``/sys`` + ``/proc`` behave identically. Symlinks are followed with ``os.readlink`` and a
lexical join that must stay inside the root (captures keep links whose targets were never copied, e.g. PCI
``driver``), never with ``realpath`` + open.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import TypeVar

from hostprobe import parse
from hostprobe.errors import ProbeError

T = TypeVar("T")

# Errors that mean "the attribute is not there" rather than "something is wrong".
_ABSENT = (errno.ENOENT, errno.ENOTDIR)


class HostReader:
    """Reads files below ``sysfs_root`` and ``procfs_root`` and collects non-fatal diagnostics."""

    def __init__(self, sysfs_root: str | os.PathLike[str], procfs_root: str | os.PathLike[str]) -> None:
        self.sys_root = os.path.abspath(os.fspath(sysfs_root))
        self.proc_root = os.path.abspath(os.fspath(procfs_root))
        self.diagnostics: list[str] = []
        if not os.path.isdir(self.sys_root):
            raise ProbeError(self.sys_root, "sysfs root is not a directory")
        self.proc_present = os.path.isdir(self.proc_root)

    # -- paths ---------------------------------------------------------------------------------------
    def sys(self, *parts: str) -> str:
        return os.path.join(self.sys_root, *parts)

    def proc(self, *parts: str) -> str:
        return os.path.join(self.proc_root, *parts)

    def note(self, message: str) -> None:
        if message not in self.diagnostics:
            self.diagnostics.append(message)

    # -- raw access ----------------------------------------------------------------------------------
    def text(self, path: str, *, optional: bool = False) -> str | None:
        """File content, or ``None`` when the file does not exist.

        Any other failure raises ``ProbeError`` naming the file, unless ``optional`` is set: some sysfs
        attributes legitimately fail to read (``speed`` of a link that is down gives EINVAL,
        ``phys_port_name`` EOPNOTSUPP) and then also read as ``None``.
        """
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            if exc.errno in _ABSENT or optional:
                return None
            raise ProbeError(path, exc.strerror or str(exc)) from None
        # hwloc's captured trees carry stray NUL bytes ("\0\n", "0-7\n\0"); the kernel never prints them.
        return data.replace(b"\0", b"").decode("utf-8", errors="replace")

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def listdir(self, path: str) -> list[str]:
        """Sorted entry names; empty when the directory does not exist."""
        try:
            return sorted(os.listdir(path))
        except OSError as exc:
            if exc.errno in _ABSENT:
                return []
            raise ProbeError(path, exc.strerror or str(exc)) from None

    def link_name(self, path: str) -> str | None:
        """Basename of a symlink's target without resolving it (``driver`` -> ``i40e``)."""
        try:
            target = os.readlink(path)
        except OSError:
            return None
        return os.path.basename(target.rstrip("/")) or None

    def follow(self, path: str) -> str | None:
        """Where a symlink points, as a path inside the sysfs root (lexically joined).

        Plain directories (trimmed captures copy devices instead of linking them) are returned as they are.
        ``None`` when ``path`` does not exist or the link leaves the root.
        """
        try:
            target = os.readlink(path)
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # not a link
                return path
            return None
        if os.path.isabs(target):
            # A capture may keep absolute links written on the source host: re-root them.
            rel = os.path.relpath(target, "/sys") if target.startswith("/sys/") else target.lstrip("/")
            resolved = os.path.normpath(os.path.join(self.sys_root, rel))
        else:
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
        if resolved != self.sys_root and not resolved.startswith(self.sys_root + os.sep):
            self.note(f"{path}: link target {target} leaves the sysfs root; ignored")
            return None
        return resolved

    # -- typed access ----------------------------------------------------------------------------------
    def parsed(self, path: str, parser: Callable[[str], T], what: str, *, optional: bool = False) -> T | None:
        """Read and parse; malformed content raises ``ProbeError`` naming the file (or is ``None`` and a
        diagnostic when ``optional``)."""
        raw = self.text(path, optional=optional)
        if raw is None:
            return None
        try:
            return parser(raw)
        except ValueError as exc:
            if optional:
                self.note(f"{path}: malformed {what} {raw.strip()[:60]!r} ignored")
                return None
            raise ProbeError(path, f"malformed {what} {raw.strip()[:60]!r} ({exc})") from None

    def integer(self, path: str, *, optional: bool = False) -> int | None:
        return self.parsed(path, _parse_int, "integer", optional=optional)

    def hex_or_int(self, path: str, *, optional: bool = False) -> int | None:
        return self.parsed(path, _parse_hex_or_int, "integer", optional=optional)

    def cpulist(self, path: str, *, optional: bool = False) -> tuple[int, ...] | None:
        return self.parsed(path, parse.parse_cpulist, "cpu/node list", optional=optional)

    def cpumask(self, path: str, *, optional: bool = False) -> tuple[int, ...] | None:
        return self.parsed(path, parse.parse_cpumask, "cpumask", optional=optional)

    def word(self, path: str, *, optional: bool = True) -> str | None:
        """A single-token attribute (``0x8086``, ``up``), stripped; empty files read as ``None``."""
        raw = self.text(path, optional=optional)
        if raw is None:
            return None
        stripped = raw.strip()
        return stripped or None


def _parse_int(text: str) -> int:
    return int(text.strip())


def _parse_hex_or_int(text: str) -> int:
    return int(text.strip(), 0)
