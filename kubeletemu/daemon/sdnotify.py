"""``sd_notify(3)`` in the standard library: state changes for a ``Type=notify`` service.

Every call is a no-op returning ``False`` when ``$NOTIFY_SOCKET`` is unset (not started by systemd). Like
``sd_notify``, failures are reported through the return value, never raised: a daemon must not die
because the service manager went away.
"""

from __future__ import annotations

import os
import socket
import time


def notify(**fields: str | int) -> bool:
    """Send ``KEY=value`` lines in one datagram, e.g. ``notify(READY=1, STATUS="serving")``."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # abstract namespace
        address = "\0" + address[1:]
    payload = "".join(f"{key}={value}\n" for key, value in fields.items()).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(payload)
    except OSError:
        return False
    return True


def ready(status: str | None = None) -> bool:
    return notify(READY=1, **({"STATUS": status} if status is not None else {}))


def reloading() -> bool:
    """``RELOADING=1`` with ``MONOTONIC_USEC``: newer systemd needs it to match the reload to its request."""
    return notify(RELOADING=1, MONOTONIC_USEC=time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000)


def stopping() -> bool:
    return notify(STOPPING=1)


def status(text: str) -> bool:
    return notify(STATUS=text)


def watchdog() -> bool:
    return notify(WATCHDOG=1)


def extend_timeout(seconds: float) -> bool:
    """``EXTEND_TIMEOUT_USEC``: ask for more time during a slow start-up, reload or drain."""
    return notify(EXTEND_TIMEOUT_USEC=int(seconds * 1_000_000))


def watchdog_interval() -> float | None:
    """Seconds between ``watchdog()`` pings: half of ``$WATCHDOG_USEC``, as ``sd_watchdog_enabled`` advises.

    ``None`` when the watchdog is off, or ``$WATCHDOG_PID`` names another process.
    """
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0 or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2_000_000
