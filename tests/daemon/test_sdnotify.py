"""sd_notify against a real AF_UNIX datagram socket standing in for systemd's notify socket."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeletemu.daemon import sdnotify


@pytest.fixture
def notify_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(2)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    yield sock
    sock.close()


def received(sock: socket.socket) -> dict[str, str]:
    payload = sock.recv(4096).decode()
    assert payload.endswith("\n")
    return dict(line.split("=", 1) for line in payload.splitlines())


def test_ready_sends_ready_and_status(notify_socket: socket.socket) -> None:
    assert sdnotify.ready("serving on /run/kubeletemu/kubeletemu.sock") is True
    assert received(notify_socket) == {"READY": "1", "STATUS": "serving on /run/kubeletemu/kubeletemu.sock"}


def test_ready_without_status(notify_socket: socket.socket) -> None:
    assert sdnotify.ready()
    assert received(notify_socket) == {"READY": "1"}


def test_reloading_carries_monotonic_usec(notify_socket: socket.socket) -> None:
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    assert sdnotify.reloading()
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    fields = received(notify_socket)
    assert fields["RELOADING"] == "1"
    assert before <= int(fields["MONOTONIC_USEC"]) <= after


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: sdnotify.stopping(), {"STOPPING": "1"}),
        (lambda: sdnotify.status("draining 3 requests"), {"STATUS": "draining 3 requests"}),
        (lambda: sdnotify.watchdog(), {"WATCHDOG": "1"}),
        (lambda: sdnotify.extend_timeout(2.5), {"EXTEND_TIMEOUT_USEC": "2500000"}),
        (lambda: sdnotify.notify(READY=1, STATUS="x", ERRNO=5), {"READY": "1", "STATUS": "x", "ERRNO": "5"}),
    ],
    ids=["stopping", "status", "watchdog", "extend_timeout", "several_fields"],
)
def test_messages(notify_socket: socket.socket, call: object, expected: dict[str, str]) -> None:
    assert callable(call)
    assert call() is True
    assert received(notify_socket) == expected


def test_abstract_namespace_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"kubeletemu-test-{uuid.uuid4()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(2)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert sdnotify.watchdog()
        assert sock.recv(4096) == b"WATCHDOG=1\n"


def test_noop_without_notify_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert sdnotify.ready() is False
    assert sdnotify.stopping() is False


def test_unreachable_socket_reports_false(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "absent.sock"))
    assert sdnotify.ready() is False


@pytest.mark.parametrize(
    ("usec", "pid", "expected"),
    [
        ("30000000", None, 15.0),
        ("30000000", "self", 15.0),
        ("30000000", "other", None),
        ("0", None, None),
        (None, None, None),
        ("junk", None, None),
    ],
    ids=["timeout", "our_pid", "other_pid", "zero", "unset", "malformed"],
)
def test_watchdog_interval(
    monkeypatch: pytest.MonkeyPatch, usec: str | None, pid: str | None, expected: float | None
) -> None:
    for name, value in (("WATCHDOG_USEC", usec), ("WATCHDOG_PID", pid)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            pid_text = {"self": str(os.getpid()), "other": str(os.getpid() + 1)}.get(value, value)
            monkeypatch.setenv(name, pid_text)
    assert sdnotify.watchdog_interval() == expected
