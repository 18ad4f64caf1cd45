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


def sysfs_fixtures_dir() -> Path:
    """``$KUBELETEMU_FIXTURES`` (its ``sysfs/`` subdirectory if any), else ``../shared/fixtures/sysfs``."""
    override = os.environ.get("KUBELETEMU_FIXTURES")
    if override:
        base = Path(override)
        return base / "sysfs" if (base / "sysfs").is_dir() else base
    return REPO_ROOT.parent / "shared" / "fixtures" / "sysfs"


class Capture:
    """One extracted capture: its roots and its frozen ground truth."""

    def __init__(self, name: str, extracted: Path, truth: dict[str, Any]) -> None:
        self.name = name
        self.root = extracted / name
        self.sys = self.root / "sys"
        self.proc = self.root / "proc"  # absent for the nri capture; the probe must cope
        self.truth = truth
