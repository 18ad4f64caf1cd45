"""The shadow drop-in for the shipped unit, checked with the real systemd-analyze and our own parser."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from kubeletemu.cli import build_parser

SYSTEMD_DIR = Path(__file__).resolve().parents[2] / "systemd"
UNIT = SYSTEMD_DIR / "kubeletemu.service"
DROP_IN = SYSTEMD_DIR / "kubeletemu-shadow.conf"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")


def settings(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


def install(tmp_path: Path, binary: str = "/opt/kubeletemu/bin/kubeletemu") -> Path:
    """The unit and the drop-in as systemd finds them: ``<unit>.d/shadow.conf`` beside the unit."""
    unit = tmp_path / "kubeletemu.service"
    unit.write_text(UNIT.read_text().replace("/opt/kubeletemu/bin/kubeletemu", binary))
    (tmp_path / "kubeletemu.service.d").mkdir()
    (tmp_path / "kubeletemu.service.d" / "shadow.conf").write_text(
        DROP_IN.read_text().replace("/opt/kubeletemu/bin/kubeletemu", binary)
    )
    return unit


def test_exec_start_runs_shadow_mode() -> None:
    exec_start = settings(DROP_IN)["ExecStart"]
    assert exec_start[0] == ""  # clears the unit's ExecStart
    argv = shlex.split(exec_start[1])
    assert argv[0] == "/opt/kubeletemu/bin/kubeletemu"
    args = build_parser().parse_args(argv[1:])
    assert args.command == "serve" and args.shadow
    assert args.kubelet_root_dir == "/var/lib/kubelet"
    # The unit mounts the kubelet's directory read-only; the drop-in keeps that and adds no write access.
    assert "-/var/lib/kubelet" in settings(UNIT)["ReadOnlyPaths"]
    assert not {"ReadWritePaths", "ReadOnlyPaths", "User", "CapabilityBoundingSet"} & set(settings(DROP_IN))
    assert settings(DROP_IN)["After"] == ["kubelet.service"]


@needs_systemd_analyze
def test_verify_reports_nothing(tmp_path: Path) -> None:
    stand_in = tmp_path / "kubeletemu"
    stand_in.write_text("#!/bin/sh\n")
    stand_in.chmod(0o755)
    unit = install(tmp_path, str(stand_in))
    assert SYSTEMD_ANALYZE is not None
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == ""


@needs_systemd_analyze
def test_hardening_is_unchanged(tmp_path: Path) -> None:
    unit = install(tmp_path)
    assert SYSTEMD_ANALYZE is not None
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=yes", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    match = re.search(r"Overall exposure level for kubeletemu\.service: (\d+\.\d+)", result.stdout)
    assert match is not None and float(match.group(1)) <= 2.0
