"""Fixtures shared by every suite: the real sysfs captures of ../shared/fixtures/sysfs, each extracted once
per run on first use, and skipped with a reason where absent."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from tests.hostprobe.hostprobe_capture_support import Capture, sysfs_fixtures_dir


class CaptureStore:
    """Extracts ``<name>.tar.gz`` into the run's temporary directory the first time a test asks for it."""

    def __init__(self, source: Path, dest: Path) -> None:
        self.source, self.dest = source, dest
        self._extracted: dict[str, Capture] = {}

    def get(self, name: str) -> Capture:
        if name not in self._extracted:
            tarball, truth = self.source / f"{name}.tar.gz", self.source / f"{name}.truth.json"
            if not tarball.is_file() or not truth.is_file():
                pytest.skip(f"capture {name} (.tar.gz + .truth.json) not found in {self.source}")
            with tarfile.open(tarball) as archive:
                archive.extractall(self.dest, filter="data")
            self._extracted[name] = Capture(name, self.dest, json.loads(truth.read_text()))
        return self._extracted[name]


@pytest.fixture(scope="session")
def captures(tmp_path_factory: pytest.TempPathFactory) -> CaptureStore:
    source = sysfs_fixtures_dir()
    if not source.is_dir():
        pytest.skip(
            f"sysfs captures not found at {source} (set KUBELETEMU_FIXTURES to the fixtures directory)"
        )
    return CaptureStore(source, tmp_path_factory.mktemp("sysfs-captures"))
