"""Fixtures shared by every suite: the real sysfs captures of tests/fixtures/sysfs (and of
``$KUBELETEMU_FIXTURES``, for more), each extracted once per run on first use."""

from __future__ import annotations

import json
import signal
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostprobe.hostprobe_capture_support import Capture, capture_files, sysfs_fixture_dirs


class CaptureStore:
    """Extracts ``<name>.tar.gz`` into the run's temporary directory the first time a test asks for it."""

    def __init__(self, dest: Path) -> None:
        self.dest = dest
        self._extracted: dict[str, Capture] = {}

    def get(self, name: str) -> Capture:
        if name not in self._extracted:
            found = capture_files(name)
            if found is None:
                searched = ", ".join(str(d) for d in sysfs_fixture_dirs())
                pytest.skip(f"capture {name} (.tar.gz + .truth.json) not found in {searched}")
            tarball, truth = found
            with tarfile.open(tarball) as archive:
                archive.extractall(self.dest, filter="data")
            self._extracted[name] = Capture(name, self.dest, json.loads(truth.read_text()))
        return self._extracted[name]


@pytest.fixture(scope="session")
def captures(tmp_path_factory: pytest.TempPathFactory) -> CaptureStore:
    return CaptureStore(tmp_path_factory.mktemp("sysfs-captures"))


def _sigint_state() -> tuple[object, bool, bool]:
    """SIGINT's handler, and whether this thread blocks it or the process ignores it (what processes
    the test starts inherit: a child started with SIGINT ignored or blocked never sees a ^C)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        fields = dict(line.split(":", 1) for line in fh if ":" in line)
    ignored = bool(int(fields.get("SigIgn", "0").strip(), 16) & (1 << (signal.SIGINT - 1)))
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return signal.getsignal(signal.SIGINT), blocked, ignored


@pytest.fixture(autouse=True)
def _sigint_left_as_found() -> Iterator[None]:
    """A test leaves SIGINT as it found it: handler, mask and disposition are inherited by every process
    later tests in the same worker start (the ^C tests of tests/fleet_runner/test_interrupt.py)."""
    before = _sigint_state()
    yield
    after = _sigint_state()
    if after != before:
        signal.signal(signal.SIGINT, before[0])  # type: ignore[arg-type]
        signal.pthread_sigmask(signal.SIG_BLOCK if before[1] else signal.SIG_UNBLOCK, {signal.SIGINT})
        pytest.fail(f"the test changed SIGINT's state from {before} to {after}")
