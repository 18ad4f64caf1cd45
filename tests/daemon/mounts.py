"""Filesystems the fault tests can fill up or make read-only: a small tmpfs, or a bind mount, mounted
for the test where this machine lets the test mount (root with mount permission); otherwise the test is
skipped and says why."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError:
        return subprocess.CompletedProcess(["mount"], 127, "", "mount(8) is not installed")


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` bytes (``2m``) mounted on ``path`` for the block's duration."""
    path.mkdir(parents=True, exist_ok=True)
    done = _mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "kubeletemu-test", str(path))
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a small tmpfs here (mount: {done.stderr.strip() or done.returncode}); this test "
            "needs root with permission to mount"
        )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30, check=False)


@contextlib.contextmanager
def bind_mounted(path: Path) -> Iterator[Path]:
    """``path`` bind-mounted on itself for the block's duration, so that it can be made read-only while a
    process keeps files open for writing under it (those stay on the mount below; a remount of that one
    would be refused as busy)."""
    done = _mount("--bind", str(path), str(path))
    if done.returncode != 0:
        pytest.skip(
            f"cannot bind-mount here (mount: {done.stderr.strip() or done.returncode}); this test needs root "
            "with permission to mount"
        )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30, check=False)


def read_only(path: Path, read_only: bool = True) -> None:
    """Make a bind mount read-only, or writable again."""
    done = _mount("-o", f"remount,bind,{'ro' if read_only else 'rw'}", str(path))
    assert done.returncode == 0, done.stderr


def fill(directory: Path) -> Path:
    """Write a file until the filesystem refuses another byte; returns it (remove it to free the space)."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as err:
                assert err.errno == errno.ENOSPC, err
        os.fsync(fd)
    finally:
        os.close(fd)
    return filler
