"""Unix sockets the daemon serves on: never taken from a live server, removed only when ours.

gRPC unlinks whatever is at a unix path before it binds, and unlinks the path again when the server
stops, whatever is there by then. Bound at the real path, a second daemon would silently take the socket
from the first, and either one's exit would leave the other unreachable. So gRPC binds a private name in
the same directory, and the socket is then hard-linked to the real path, which fails if anything is there
(no check-then-act window) before the private name is unlinked: gRPC's own clean-up then finds nothing to
remove. Before that, the path is probed: a connection that succeeds means another process serves it
(start-up is refused, naming it through ``SO_PEERCRED``); a refused connection means a stale socket left
by a process that died, which is removed. At exit the path is unlinked only while it is still the socket
this process bound (same inode).
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct
from collections.abc import Callable

# struct ucred {pid_t pid; uid_t uid; gid_t gid;}
_UCRED = struct.Struct("iII")
_PROBE_TIMEOUT = 1.0


class SocketInUseError(Exception):
    """The path is served by another process, or is something we must not remove."""


def describe_process(pid: int) -> str:
    """``pid N: its command line`` (the command line left out where /proc does not show it)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().rstrip(b"\0").split(b"\0")
    except OSError:
        return f"pid {pid}"
    command = " ".join(a.decode(errors="replace") for a in argv)
    return f"pid {pid}: {command[:300]}"


def _peer(conn: socket.socket) -> str:
    try:
        pid, _, _ = _UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    except OSError:
        return "another process"
    return describe_process(pid)


def claim(path: str, flag: str) -> None:
    """Make ``path`` free to bind: nothing there, or a stale socket (removed). ``flag`` names the option
    that chose the path, for the error message."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise SocketInUseError(f"{path} exists and is not a socket: remove it or choose another {flag}")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(_PROBE_TIMEOUT)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        # Nobody listens: a socket its server left behind when it died.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    except FileNotFoundError:
        return
    except TimeoutError:
        # A listener whose backlog is full is still a live server.
        raise SocketInUseError(
            f"{path} is served by another process (it accepts no more connections): refusing to take it "
            f"over; stop that process or choose another {flag}"
        ) from None
    except OSError as err:
        raise SocketInUseError(
            f"cannot tell whether {path} is in use: {err.strerror}; not removing it"
        ) from None
    else:
        raise SocketInUseError(
            f"{path} is served by another process ({_peer(probe)}): refusing to take it over; stop that "
            f"process or choose another {flag}"
        )
    finally:
        probe.close()


def bind(add_port: Callable[[str], int], path: str, flag: str, umask: int) -> OwnedSocket:
    """Bind a server's unix socket at ``path`` through ``add_port`` (e.g. ``server.add_insecure_port``,
    given ``unix:<address>``, returning 0 on failure), created with ``umask`` so its mode is right from
    birth. Raises ``SocketInUseError`` when the path is taken, ``OSError`` when binding fails."""
    directory = os.path.dirname(os.path.abspath(path))
    private = os.path.join(directory, f".{os.getpid()}.{os.path.basename(path)}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(private)  # ours: this pid's, from a daemon that died with it
    old_umask = os.umask(umask)
    try:
        bound = add_port(f"unix:{private}")
    finally:
        os.umask(old_umask)
    if bound == 0:
        raise OSError(f"cannot bind {private}")
    try:
        claim(path, flag)
        os.link(private, path)
    except FileExistsError:
        raise SocketInUseError(
            f"{path} appeared while this daemon was starting: another process took it; choose another {flag}"
        ) from None
    finally:
        os.unlink(private)
    return OwnedSocket(path)


class OwnedSocket:
    """A socket path this process bound; ``remove`` unlinks it only while it is still the same file."""

    def __init__(self, path: str) -> None:
        self.path = path
        st = os.lstat(path)
        self._identity = (st.st_dev, st.st_ino)

    def remove(self) -> bool:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return False
        if (st.st_dev, st.st_ino) != self._identity:
            return False  # someone else's now
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        return True
