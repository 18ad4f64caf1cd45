"""Atomic checkpoint files, as the kubelet's file store writes them."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_file_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Readers see the old or the new content, never a torn file: a temporary file in the same
    directory, fsync, rename over the target, then fsync of the directory so the rename survives a crash."""
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
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
