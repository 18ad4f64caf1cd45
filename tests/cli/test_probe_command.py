"""``kubeletemu probe``: the host's topology in every output, and one ``kubeletemu:`` line on a bad tree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import CaptureStore

CLI = [sys.executable, "-m", "kubeletemu"]


@pytest.mark.parametrize("output", ["table", "json", "yaml"])
def test_a_missing_tree_is_one_kubeletemu_line(tmp_path: Path, output: str) -> None:
    missing = tmp_path / "nowhere"
    argv = [*CLI, "probe", "--sysfs-root", str(missing), "-o", output]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"kubeletemu: {missing}: sysfs root is not a directory\n"


def test_json_and_yaml_say_what_hostprobe_says(captures: CaptureStore) -> None:
    """The same document as ``python -m hostprobe --json``, in JSON and in YAML, on a captured 8-NUMA tree
    (the live host's free memory changes between two calls)."""
    capture = captures.get("hwloc-amd-4s-8numa")
    roots = ["--sysfs-root", str(capture.sys), "--procfs-root", str(capture.proc)]
    hostprobe = [sys.executable, "-m", "hostprobe", *roots, "--json"]
    reference = subprocess.run(hostprobe, capture_output=True, text=True, timeout=60, check=True)
    run = [*CLI, "probe", *roots, "-o"]
    as_json = subprocess.run([*run, "json"], capture_output=True, text=True, timeout=60, check=True)
    as_yaml = subprocess.run([*run, "yaml"], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(reference.stdout)["numa_nodes"]  # the capture was read, not an empty tree
    assert as_json.stdout == reference.stdout
    assert yaml.safe_load(as_yaml.stdout) == json.loads(reference.stdout)
