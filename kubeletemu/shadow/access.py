"""Why a path cannot be read, in words an operator can act on.

Shadow mode often runs unprivileged beside the kubelet (group access or a read-only bind mount); when a
file is out of reach the message names the exact file or directory, its mode and owner, and who we are.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def identity() -> str:
    groups = sorted(set(os.getgroups()) | {os.getegid()})
    return f"uid {os.geteuid()}, gid {os.getegid()}, groups {','.join(map(str, groups))}"


def _mode(path: Path) -> str:
    try:
        info = path.stat()
    except OSError:
        return "mode unknown"
    return f"mode {stat.S_IMODE(info.st_mode):04o}, owner {info.st_uid}:{info.st_gid}"


def _blocking_directory(path: Path) -> Path | None:
    """The first ancestor directory this process may not search (``x``), if any."""
    for parent in reversed(path.absolute().parents):
        if parent.is_dir() and not os.access(parent, os.X_OK):
            return parent
    return None


def _missing_component(path: Path) -> Path:
    """The first component of ``path`` that does not exist."""
    for candidate in [*reversed(path.absolute().parents), path.absolute()]:
        if not os.path.lexists(candidate):
            return candidate
    return path


def explain(path: str | os.PathLike[str], err: OSError, what: str, *, write: bool = False) -> str:
    """One line: which ``what`` (e.g. "the kubelet's CPU manager checkpoint") at ``path`` failed, and why.

    ``write`` describes a unix socket: connecting needs write permission on it.
    """
    target = Path(path)
    head = f"cannot {'connect to' if write else 'read'} {what} {target}"
    if err.errno == errno.ENOENT:
        missing = _missing_component(target)
        if missing == target.absolute():
            return f"{head}: it does not exist"
        return f"{head}: {missing} does not exist"
    if err.errno in (errno.EACCES, errno.EPERM):
        blocker = _blocking_directory(target)
        if blocker is not None:
            return (
                f"{head}: permission denied on the directory {blocker} ({_mode(blocker)}), which this "
                f"process ({identity()}) may not enter; grant it group or ACL access (r-x), or bind-mount "
                "it read-only"
            )
        need = "write permission on the socket (connecting needs it)" if write else "read permission"
        return (
            f"{head}: permission denied ({_mode(target)}); this process ({identity()}) needs {need}; "
            "grant it group or ACL access, or run as the file's owner"
        )
    return f"{head}: {err.strerror or err}"


def socket_problem(path: str | os.PathLike[str], what: str) -> str | None:
    """Why a unix socket cannot be connected to, when the file system tells; None when it looks usable."""
    target = Path(path)
    try:
        info = target.stat()
    except OSError as err:
        return explain(target, err, what, write=True)
    if not stat.S_ISSOCK(info.st_mode):
        return f"cannot use {what} {target}: it is not a unix socket"
    if not os.access(target, os.W_OK):
        return explain(target, PermissionError(errno.EACCES, "Permission denied"), what, write=True)
    return None
