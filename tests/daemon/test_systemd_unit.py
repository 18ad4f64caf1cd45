"""The shipped systemd unit and default configuration, checked with the real systemd-analyze."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from kubeletemu.config import EmulatorConfiguration, KubeletConfiguration, load_config, parse_config

SYSTEMD_DIR = Path(__file__).resolve().parents[2] / "systemd"
UNIT = SYSTEMD_DIR / "kubeletemu.service"
CONFIG = SYSTEMD_DIR / "config.yaml"
MAX_EXPOSURE = 2.0

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")


def unit_settings() -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


def analyze(*args: str) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    return subprocess.run([SYSTEMD_ANALYZE, *args], capture_output=True, text=True, timeout=60, check=False)


@needs_systemd_analyze
def test_security_exposure_is_at_most_two() -> None:
    result = analyze("security", "--offline=yes", "--no-pager", str(UNIT))
    assert result.returncode == 0, result.stderr
    match = re.search(r"Overall exposure level for kubeletemu\.service: (\d+\.\d+)", result.stdout)
    assert match is not None, result.stdout[-500:]
    assert float(match.group(1)) <= MAX_EXPOSURE


@needs_systemd_analyze
def test_verify_reports_nothing(tmp_path: Path) -> None:
    """``verify`` insists that ExecStart's binary exists; a stand-in at another path checks everything else
    (unknown keys, bad values) in an otherwise identical copy of the unit."""
    stand_in = tmp_path / "kubeletemu"
    stand_in.write_text("#!/bin/sh\n")
    stand_in.chmod(0o755)
    copy = tmp_path / "kubeletemu.service"
    copy.write_text(UNIT.read_text().replace("/opt/kubeletemu/bin/kubeletemu", str(stand_in)))
    result = analyze("verify", "--man=no", str(copy))
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == ""

    broken = tmp_path / "broken.service"
    broken.write_text(copy.read_text().replace("[Service]\n", "[Service]\nBogusDirective=1\n"))
    assert "Unknown key 'BogusDirective'" in analyze("verify", "--man=no", str(broken)).stderr


def test_unit_contract() -> None:
    settings = unit_settings()
    assert settings["Type"] == ["notify"]
    assert settings["NotifyAccess"] == ["main"]
    assert settings["ExecStart"] == [
        "/opt/kubeletemu/bin/kubeletemu serve --config /etc/kubeletemu/config.yaml "
        "--socket /run/kubeletemu/kubeletemu.sock --podresources-socket /run/kubeletemu/podresources.sock "
        "--state-dir /var/lib/kubeletemu"
    ]
    assert settings["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert settings["RuntimeDirectory"] == ["kubeletemu"]
    assert settings["RuntimeDirectoryMode"] == ["0750"]
    assert settings["StateDirectory"] == ["kubeletemu"]
    assert settings["ConfigurationDirectory"] == ["kubeletemu"]
    assert settings["WatchdogSec"]
    # /sys and /var/lib/kubelet stay readable: read-only, never inaccessible.
    assert set(settings["ReadOnlyPaths"]) == {"/sys", "-/var/lib/kubelet"}
    assert "InaccessiblePaths" not in settings
    assert settings["ProtectSystem"] == ["strict"]


def _seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+)(s|min)?", value)
    assert match is not None, value
    return int(match.group(1)) * (60 if match.group(2) == "min" else 1)


def test_stop_timeout_exceeds_the_grace_period() -> None:
    grace = load_config([str(CONFIG)]).emulator.shutdown_grace_period
    assert _seconds(unit_settings()["TimeoutStopSec"][0]) > grace


def test_default_config_loads_to_the_defaults() -> None:
    config = load_config([str(CONFIG)])
    assert config.kubelet == KubeletConfiguration()
    assert config.emulator == EmulatorConfiguration()
    assert config.origins == {
        "KubeletConfiguration": f"{CONFIG} (document 1)",
        "EmulatorConfiguration": f"{CONFIG} (document 2)",
    }


def test_default_config_comments_show_the_defaults() -> None:
    """Uncommenting every setting line must change nothing: the comments state the defaults."""
    text = CONFIG.read_text()
    uncommented = re.sub(r"^#(?=[A-Za-z]+:)", "", text, flags=re.MULTILINE)
    assert uncommented != text
    config = parse_config(uncommented, "uncommented config.yaml")
    # One difference is not a value: an explicit ``topologyManagerPolicyOptions: {}`` is "given", which a
    # kubelet with the TopologyManagerPolicyOptions gate off refuses (server.go checks the map for nil).
    assert config.kubelet.topology_manager_policy_options_given
    assert replace(config.kubelet, topology_manager_policy_options_given=False) == KubeletConfiguration()
    assert config.emulator == EmulatorConfiguration()
    # Every setting of both documents is shown.
    shown = set(re.findall(r"^#([A-Za-z]+):", text, flags=re.MULTILINE))
    assert {
        "topologyManagerPolicy",
        "cpuManagerPolicy",
        "memoryManagerPolicy",
        "evictionHard",
        "maxPods",
    } <= shown
    assert {
        "devices",
        "sysfsRoot",
        "procfsRoot",
        "stateDir",
        "socket",
        "podResourcesSocket",
        "metricsAddress",
        "kubeletRootDir",
        "shutdownGracePeriod",
        "logLevel",
    } <= shown
