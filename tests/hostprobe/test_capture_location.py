"""The sysfs captures ship in the repository: a clone finds every one with no ``$KUBELETEMU_FIXTURES`` and
nothing beside it, and ``$KUBELETEMU_FIXTURES`` still adds (or overrides) captures."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import CaptureStore
from tests.hostprobe.hostprobe_capture_support import (
    FIXTURE_NAMES,
    IN_REPO_CAPTURES,
    REPO_ROOT,
    capture_files,
)


def test_every_capture_is_found_in_the_repository(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBELETEMU_FIXTURES", raising=False)
    for name in FIXTURE_NAMES:
        found = capture_files(name)
        assert found is not None, name
        assert all(path.is_relative_to(REPO_ROOT / "tests" / "fixtures" / "sysfs") for path in found), found
    # The suite's store (it would skip the test had it not found the capture); the smallest, to stay quick.
    capture = CaptureStore(tmp_path).get("hwloc-offline-cpu0-node0")
    assert capture.sys.is_dir() and capture.truth["fixture"] == "hwloc-offline-cpu0-node0"


def test_the_copies_are_the_ones_provenance_lists() -> None:
    """Byte for byte the tarballs whose sha256 README.md lists, with their provenance and licences beside."""
    listed = dict(
        (name, digest)
        for digest, name in re.findall(
            r"^([0-9a-f]{64})  (\S+)\.tar\.gz$", (IN_REPO_CAPTURES / "README.md").read_text(), re.MULTILINE
        )
    )
    assert set(listed) == set(FIXTURE_NAMES)
    for name, digest in listed.items():
        assert hashlib.sha256((IN_REPO_CAPTURES / f"{name}.tar.gz").read_bytes()).hexdigest() == digest, name
    provenance = (IN_REPO_CAPTURES / "PROVENANCE.md").read_text()
    licences = (IN_REPO_CAPTURES / "LICENSES" / "README.md").read_text()
    for name in FIXTURE_NAMES:
        assert f"`{name}`" in provenance and f"`{name}`" in licences, name
    for text in re.findall(r"`([\w.-]+\.txt)`", licences):
        assert (IN_REPO_CAPTURES / "LICENSES" / text).is_file(), text


def test_kubeletemu_fixtures_adds_captures_and_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    extra = tmp_path / "fixtures" / "sysfs"
    extra.mkdir(parents=True)
    # A further capture, and an override of one the repository has (first match wins).
    name = "hwloc-offline-cpu0-node0"
    shutil.copy(IN_REPO_CAPTURES / f"{name}.tar.gz", extra / f"{name}.tar.gz")
    truth = json.loads((IN_REPO_CAPTURES / f"{name}.truth.json").read_text())
    (extra / f"{name}.truth.json").write_text(json.dumps({**truth, "overridden": True}))
    monkeypatch.setenv("KUBELETEMU_FIXTURES", str(tmp_path / "fixtures"))
    assert capture_files(name) == (extra / f"{name}.tar.gz", extra / f"{name}.truth.json")
    assert CaptureStore(tmp_path / "out").get(name).truth["overridden"] is True
    # The repository's other captures are still found.
    found = capture_files("ghw-xeon-l5640-2s-igbvf")
    assert found is not None and found[0].parent == IN_REPO_CAPTURES
    assert capture_files("no-such-capture") is None
