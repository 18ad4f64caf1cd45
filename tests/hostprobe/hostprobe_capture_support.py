"""The real sysfs captures: where they are and what one extracted capture holds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


FIXTURE_NAMES = (
    "ocp-worker-2s20c2t-cascadelake",
    "hwloc-2s8c2t-sriov-ve",
    "nri-2s-snc2-pmem-memonly",
    "hwloc-power9-gpu-memnodes",
    "hwloc-amd-4s-8numa",
    "ul-epyc7451-2s-8numa",
    "ghw-xeon-l5640-2s-igbvf",
    "hwloc-offline-cpu0-node0",
)


IN_REPO_CAPTURES = REPO_ROOT / "tests" / "fixtures" / "sysfs"


def sysfs_fixture_dirs() -> tuple[Path, ...]:
    """Where captures are looked for, first match wins: ``$KUBELETEMU_FIXTURES`` (its ``sysfs/``
    subdirectory if any), for captures beyond the repository's, then ``tests/fixtures/sysfs``."""
    override = os.environ.get("KUBELETEMU_FIXTURES")
    if not override:
        return (IN_REPO_CAPTURES,)
    base = Path(override)
    return (base / "sysfs" if (base / "sysfs").is_dir() else base, IN_REPO_CAPTURES)


def capture_files(name: str) -> tuple[Path, Path] | None:
    """``<name>.tar.gz`` and ``<name>.truth.json`` from the first directory that holds both."""
    for directory in sysfs_fixture_dirs():
        tarball, truth = directory / f"{name}.tar.gz", directory / f"{name}.truth.json"
        if tarball.is_file() and truth.is_file():
            return tarball, truth
    return None


def capture_archive(name: str) -> Path:
    """``<name>.tar.gz`` where :func:`capture_files` finds it, else where the repository keeps it."""
    found = capture_files(name)
    return found[0] if found else IN_REPO_CAPTURES / f"{name}.tar.gz"


class Capture:
    """One extracted capture: its roots and its frozen ground truth."""

    def __init__(self, name: str, extracted: Path, truth: dict[str, Any]) -> None:
        self.name = name
        self.root = extracted / name
        self.sys = self.root / "sys"
        self.proc = self.root / "proc"  # absent for the nri capture; the probe must cope
        self.truth = truth
