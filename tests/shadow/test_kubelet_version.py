"""Shadow mode emulates the real kubelet's version, asked of its binary (``kubelet --version``).

The stand-in binaries are real executable scripts the daemon runs; the daemon itself is the real
``kubeletemu serve --shadow`` beside a fake kubelet. What is emulated shows in the report and in what the
daemon answers (a 1.33 kubelet's podresources ``Get`` is off by default).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu.shadow.kubelet_version import (
    SOURCE_BINARY,
    SOURCE_FLAG,
    SOURCE_SETTING,
    detect_kubelet_version,
    version_from_output,
)
from tests.shadow.kubelet_double import SHADOW_OWN_CONFIG, FakeKubelet, PodResourcesDouble
from tests.shadow.shadow_daemon import REPO, ShadowDaemon

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)


def fake_kubelet_binary(directory: Path, stdout: str = "", stderr: str = "", status: int = 0) -> Path:
    """An executable that answers ``--version`` as told (and refuses any other arguments)."""
    path = directory / "kubelet"
    path.write_text(
        "#!/bin/sh\n"
        '[ "$1" = "--version" ] || { echo "unexpected arguments: $*" >&2; exit 64; }\n'
        f"printf '%s' '{stdout}'\n"
        f"printf '%s' '{stderr}' >&2\n"
        f"exit {status}\n"
    )
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("output", "reported", "emulated", "note"),
    [
        ("Kubernetes v1.35.2\n", "v1.35.2", "1.35", ""),
        ("Kubernetes v1.33.0\n", "v1.33.0", "1.33", ""),
        ("Kubernetes v1.34.2-eks-4096ae1\n", "v1.34.2-eks-4096ae1", "1.34", ""),
        ("Kubernetes v1.36.1\n", "v1.36.1", "1.36", ""),
        ("Kubernetes v1.37.2\n", "v1.37.2", "1.37", ""),
        ("Kubernetes v1.38.0\n", "v1.38.0", "master", "newer than the newest known version (1.37, master)"),
        ("Kubernetes v1.32.4\n", "v1.32.4", "", "older than the oldest supported version (1.33)"),
        ("kubelet version unknown\n", "", "", "printed 'kubelet version unknown', not 'Kubernetes vX.Y.Z'"),
        ("", "", "", "printed 'nothing'"),
    ],
)
def test_version_from_output(output: str, reported: str, emulated: str, note: str) -> None:
    got = version_from_output(output)
    assert got[:2] == (reported, emulated)
    assert note in got[2] and bool(note) == bool(got[2])


def test_detection_runs_the_binary(tmp_path: Path) -> None:
    binary = str(fake_kubelet_binary(tmp_path, "Kubernetes v1.34.7\n"))
    choice = detect_kubelet_version(binary, "master")
    assert (choice.version, choice.source, choice.reported, choice.note) == (
        "1.34",
        SOURCE_BINARY,
        "v1.34.7",
        "",
    )
    # The flag wins without asking; no binary: the setting.
    assert detect_kubelet_version(binary, "master", pinned="1.36").source == SOURCE_FLAG
    assert detect_kubelet_version(None, "1.35").version == "1.35"


def test_a_binary_that_fails_or_hangs_falls_back_to_the_setting(tmp_path: Path) -> None:
    failing = str(fake_kubelet_binary(tmp_path, stderr="error: failed to load config", status=3))
    choice = detect_kubelet_version(failing, "1.35")
    assert (choice.version, choice.source) == ("1.35", SOURCE_SETTING)
    assert choice.note == (
        f"kubelet binary {failing} --version exited with status 3: error: failed to load config; "
        "emulating the configured kubeletVersion 1.35"
    )
    hanging = tmp_path / "slow"
    hanging.mkdir()
    slow = fake_kubelet_binary(hanging)
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    choice = detect_kubelet_version(str(slow), "1.34", timeout=0.5)
    assert choice.version == "1.34" and "no answer within 0.5s" in choice.note
    not_executable = tmp_path / "plain"
    not_executable.write_text("Kubernetes v1.35.0\n")
    choice = detect_kubelet_version(str(not_executable), "1.34")
    assert choice.version == "1.34" and "permission denied" in choice.note


@dataclass
class VersionedShadowDaemon(ShadowDaemon):
    own_config: str = SHADOW_OWN_CONFIG

    def args(self) -> list[str]:
        args = super().args()
        (self.workdir / "own.yaml").write_text(self.own_config)
        return args


@pytest.fixture
def double(kubelet: FakeKubelet) -> Iterator[PodResourcesDouble]:
    with PodResourcesDouble(kubelet) as running:
        yield running


def bin_dir(short_dir: Path) -> Path:
    """Beside the fake kubelet's root (``short_dir/kubelet``), where a real one keeps its binary elsewhere."""
    path = short_dir / "bin"
    path.mkdir(exist_ok=True)
    return path


def start(kubelet: FakeKubelet, short_dir: Path, binary: str, *extra: str) -> VersionedShadowDaemon:
    workdir = short_dir / "d"
    workdir.mkdir(exist_ok=True)
    config = f"{SHADOW_OWN_CONFIG}kubeletVersion: '1.34'\nkubeletBinary: {json.dumps(binary)}\n"
    return VersionedShadowDaemon(kubelet, workdir, extra_args=list(extra), own_config=config).start()


def get_served(daemon: ShadowDaemon) -> bool:
    """Whether our podresources ``Get`` answers (off by default in 1.33)."""
    stub = v1_grpc.PodResourcesListerStub(daemon.podresources_channel())
    try:
        stub.Get(v1.GetPodResourcesRequest(pod_name="nobody", pod_namespace="none"), timeout=10)
    except grpc.RpcError as err:
        if err.details() == "PodResources API Get method disabled":
            return False
        assert err.details() == "pod nobody in namespace none not found"
    return True


def report_table(daemon: ShadowDaemon) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "shadow-report", "--socket", str(daemon.socket)],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.mark.usefixtures("double")
def test_the_daemon_emulates_the_binarys_version(kubelet: FakeKubelet, short_dir: Path) -> None:
    binary = fake_kubelet_binary(bin_dir(short_dir), "Kubernetes v1.33.5\n")
    daemon = start(kubelet, short_dir, str(binary))
    try:
        report = daemon.report()
        assert (report.kubelet_version, report.kubelet_version_source) == ("1.33", "binary")
        assert (report.kubelet_binary, report.kubelet_binary_version) == (str(binary), "v1.33.5")
        assert report.kubelet_version_note == ""
        assert not get_served(daemon)
        assert f"kubelet version: emulating 1.33, from the binary ({binary} says v1.33.5)" in report_table(
            daemon
        )
    finally:
        daemon.stop()


@pytest.mark.usefixtures("double")
def test_a_newer_kubelet_runs_as_master_and_is_reported(kubelet: FakeKubelet, short_dir: Path) -> None:
    binary = fake_kubelet_binary(bin_dir(short_dir), "Kubernetes v1.38.0\n")
    daemon = start(kubelet, short_dir, str(binary))
    try:
        report = daemon.report()
        assert (report.kubelet_version, report.kubelet_binary_version) == ("master", "v1.38.0")
        assert report.kubelet_version_note == (
            "kubelet v1.38.0 is newer than the newest known version (1.37, master); emulating master"
        )
        assert get_served(daemon)
        assert "  kubelet v1.38.0 is newer than the newest known version" in report_table(daemon)
    finally:
        daemon.stop()


@pytest.mark.usefixtures("double")
def test_a_missing_binary_is_reported_and_the_setting_used(kubelet: FakeKubelet, short_dir: Path) -> None:
    missing = short_dir / "no-such-kubelet"
    daemon = start(kubelet, short_dir, str(missing))
    try:
        report = daemon.report()
        assert (report.kubelet_version, report.kubelet_version_source) == ("1.34", "setting")
        assert report.kubelet_version_note == (
            f"kubelet binary {missing}: not found (set kubeletBinary to its path); "
            "emulating the configured kubeletVersion 1.34"
        )
        assert get_served(daemon)
        assert "not found" in daemon.log.read_text()  # logged at start-up too
    finally:
        daemon.stop()


@pytest.mark.usefixtures("double")
def test_the_flag_wins_over_the_binary(kubelet: FakeKubelet, short_dir: Path) -> None:
    binary = fake_kubelet_binary(bin_dir(short_dir), "Kubernetes v1.33.5\n")
    daemon = start(kubelet, short_dir, str(binary), "--kubelet-version", "1.35")
    try:
        report = daemon.report()
        assert (report.kubelet_version, report.kubelet_version_source) == ("1.35", "flag")
        assert get_served(daemon)
    finally:
        daemon.stop()
