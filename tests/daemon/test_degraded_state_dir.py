"""Degraded, not down: the real daemon with its state directory on a filesystem that fills up, that is
remounted read-only, or that it has no permission to write. Every read keeps answering; Admit and
RemovePod are refused ``UNAVAILABLE`` naming the path and the OS error, a call whose files could not be
written is undone, health and sd_notify say so, a metric counts the refusals; a restart on the same
disk starts (degraded) without rewriting the saved state; once the disk takes writes again, so does the
daemon, without a restart."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.podresources.v1 import api_pb2 as podresources
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as podresources_grpc
from kubeletemu.daemon.server import ADMISSION_SERVICE
from kubeletemu.podresources.server import V1_SERVICE
from tests.daemon.conftest import write_config
from tests.daemon.daemon_process import DaemonProcess
from tests.daemon.mounts import bind_mounted, fill, read_only, tmpfs
from tests.daemon.state_checks import assert_consistent, file_hashes
from tests.daemon.test_daemon_admission import pod_yaml
from tests.daemon.test_grpcurl_and_cli import cli
from tests.daemon.test_metrics import free_port

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

SAMPLE_CPUS = 16
SIMULATION = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Simulation
stream:
- pod:
    metadata: {name: w, namespace: sim}
    spec: {containers: [{name: c, resources: {limits: {cpu: "2", memory: 1Gi}}}]}
  repeat: 2
"""


@dataclass
class WatchedDaemon(DaemonProcess):
    """The real daemon with a systemd notify socket, metrics, and optionally a command in front of it."""

    notify: socket.socket | None = None
    prefix: list[str] = field(default_factory=list)

    def argv(self) -> list[str]:
        return [*self.prefix, *super().argv()]

    def env(self) -> dict[str, str]:
        env = super().env()
        if self.notify is not None:
            env["NOTIFY_SOCKET"] = self.notify.getsockname()
        return env

    def statuses(self) -> list[str]:
        """The STATUS= lines sent since the last call."""
        assert self.notify is not None
        out: list[str] = []
        while True:
            try:
                payload = self.notify.recv(65536).decode()
            except BlockingIOError:
                return out
            out += [line[7:] for line in payload.splitlines() if line.startswith("STATUS=")]

    def metric(self, name: str) -> str:
        url = f"http://{self.extra_args[1]}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text: str = response.read().decode()
        [line] = [
            line for line in text.splitlines() if line.startswith(name + " ") or line.startswith(name + "{")
        ]
        return line.rsplit(" ", 1)[1]

    def admission_health(self) -> int:
        with self.channel() as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=ADMISSION_SERVICE), timeout=10
            )
        return int(reply.status)

    def podresources_health(self) -> int:
        with self.podresources_channel() as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=V1_SERVICE), timeout=10
            )
        return int(reply.status)

    def pods(self) -> pb.ListPodsResponse:
        reply: pb.ListPodsResponse = self.stub().ListPods(pb.ListPodsRequest(), timeout=10)
        return reply

    def admit(self, name: str, cpu: str = "2") -> pb.AdmitResponse:
        request = pb.AdmitRequest(pod=pb.PodSource(manifest=pod_yaml(name, cpu)))
        reply: pb.AdmitResponse = self.stub().Admit(request, timeout=10)
        return reply

    def refused(self, call: Callable[[], object]) -> str:
        """The details of an UNAVAILABLE answer."""
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE, info.value
        return str(info.value.details())


SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def make_watched(tmp_path: Path, sample_tree: tuple[Path, Path]) -> Iterator[Callable[..., WatchedDaemon]]:
    started: list[WatchedDaemon] = []
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify.sock"))
    notify.setblocking(False)

    def factory(state_dir: Path, prefix: list[str] | None = None) -> WatchedDaemon:
        daemon = WatchedDaemon(
            config=write_config(tmp_path / "config.yaml"),
            state_dir=state_dir,
            socket=tmp_path / "k.sock",
            sysfs_root=sample_tree[0],
            procfs_root=sample_tree[1],
            log=tmp_path / "daemon.log",
            extra_args=["--metrics-address", f"127.0.0.1:{free_port()}"],
            notify=notify,
            prefix=prefix or [],
        )
        started.append(daemon)
        daemon.start()
        return daemon

    yield factory
    for daemon in started:
        daemon.stop()
    notify.close()


def reads(daemon: WatchedDaemon) -> list[object]:
    """Every read a client makes (kubeletemu and podresources APIs, the CLI's would-admit and nrt)."""
    stub = daemon.stub()
    source = pb.PodSource(manifest=pod_yaml("what-if", "2"))
    simulated = stub.Simulate(pb.SimulateRequest(simulation=SIMULATION), timeout=60)
    assert simulated.table and '"admitted": 2' in simulated.json
    with daemon.podresources_channel() as channel:
        lister = podresources_grpc.PodResourcesListerStub(channel)
        listed = lister.List(podresources.ListPodResourcesRequest(), timeout=10)
        allocatable = lister.GetAllocatableResources(podresources.AllocatableResourcesRequest(), timeout=10)
        got = lister.Get(
            podresources.GetPodResourcesRequest(pod_name="a", pod_namespace="default"), timeout=10
        )
    would = cli(daemon, "would-admit", "-f", "-", "-o", "json", stdin=pod_yaml("what-if", "2"))
    nrt = cli(daemon, "nrt", "-o", "json")
    assert (would.returncode, nrt.returncode) == (0, 0), would.stderr + nrt.stderr
    return [
        daemon.pods(),
        stub.WouldAdmit(pb.WouldAdmitRequest(pod=source), timeout=10),
        stub.GetNodeTopology(pb.GetNodeTopologyRequest(), timeout=10),
        stub.GetFingerprint(pb.GetFingerprintRequest(method="all"), timeout=10),
        stub.GetAffinity(pb.GetAffinityRequest(pod_uid="uid-a", container_name="app"), timeout=10),
        stub.LeastNUMANodes(pb.LeastNUMANodesRequest(pod=source), timeout=10),
        listed,
        allocatable,
        got,
        would.stdout,
        nrt.stdout,
    ]


def inodes(state_dir: Path) -> dict[str, int]:
    return {
        str(p.relative_to(state_dir)): p.stat().st_ino for p in sorted(state_dir.rglob("*")) if p.is_file()
    }


def test_a_full_disk_degrades_the_daemon_and_a_restart_on_it_starts(
    make_watched: Callable[..., WatchedDaemon], tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "disk", "2m") as disk:
        state = disk / "state"
        daemon = make_watched(state)
        assert daemon.admit("a").admitted and daemon.admit("b").admitted
        before, hashes = reads(daemon), file_hashes(state)
        assert daemon.admission_health() == SERVING
        daemon.statuses()
        filler = fill(disk)

        # c is decided, then undone: its first file could not be written. Nothing on disk changed.
        undone = daemon.refused(lambda: daemon.admit("c"))
        written = f"cannot write {state}/cpu_manager_state"
        assert undone == f"state not saved, the call was undone: {written}: No space left on device"
        assert reads(daemon) == before and file_hashes(state) == hashes
        # Degraded: changes are refused up front, reads answer as before, health and systemd know.
        expected = (
            f"state directory {state} is not writable: cannot write in {state}: No space left on device; "
            "admissions and removals are refused until it is (reads keep working)"
        )
        assert daemon.refused(lambda: daemon.admit("c")) == expected
        assert (
            daemon.refused(lambda: daemon.stub().RemovePod(pb.RemovePodRequest(uid="uid-a"), timeout=10))
            == expected
        )
        assert reads(daemon) == before and file_hashes(state) == hashes
        assert (daemon.admission_health(), daemon.podresources_health()) == (NOT_SERVING, SERVING)
        # The first reason is the failed write's, then the probe's that each attempt makes.
        assert daemon.statuses() == [f"degraded: {undone_reason(state)}", f"degraded: {expected}"]
        assert daemon.metric('kubeletemu_state_write_refusals_total{outcome="undone"}') == "1.0"
        assert daemon.metric('kubeletemu_state_write_refusals_total{outcome="refused"}') == "2.0"
        assert daemon.metric("kubeletemu_state_directory_writable") == "0.0"
        # The CLI tells a refusing daemon from an unreachable one.
        admitted = cli(daemon, "admit", "-f", "-", stdin=pod_yaml("c", "2"))
        assert (admitted.returncode, admitted.stderr.strip()) == (1, f"kubeletemu: UNAVAILABLE: {expected}")

        # A restart on the full disk: the saved state is read, not rewritten, and the daemon serves.
        unchanged = inodes(state)
        daemon.stop(signal.SIGKILL)
        daemon.start()
        assert inodes(state) == unchanged and file_hashes(state) == hashes
        assert reads(daemon) == before
        assert daemon.admission_health() == NOT_SERVING
        assert any(s.endswith(f"degraded: {expected}") for s in daemon.statuses())
        assert daemon.refused(lambda: daemon.admit("c")) == expected

        # Room again: the next write attempt finds it, without a restart.
        filler.unlink()
        assert daemon.admit("c").admitted
        assert (daemon.admission_health(), daemon.metric("kubeletemu_state_directory_writable")) == (
            SERVING,
            "1.0",
        )
        assert daemon.statuses()[-1] == f"serving on {daemon.socket}: the state directory takes writes again"
        assert daemon.stop() == 0
        daemon.start()
        assert [p.uid for p in daemon.pods().pods] == ["uid-a", "uid-b", "uid-c"]
        assert_consistent(state, daemon.pods().pods, SAMPLE_CPUS)
        daemon.stop()


def undone_reason(state: Path) -> str:
    return (
        f"state directory {state} is not writable: cannot write {state}/cpu_manager_state: No space left on "
        "device; admissions and removals are refused until it is (reads keep working)"
    )


def test_a_read_only_state_directory_degrades_and_recovers_by_itself(
    make_watched: Callable[..., WatchedDaemon], tmp_path: Path
) -> None:
    state = tmp_path / "state"
    daemon = make_watched(state)
    assert daemon.admit("a").admitted and daemon.admit("b").admitted
    before, hashes = reads(daemon), file_hashes(state)
    with bind_mounted(state):
        read_only(state)
        undone = daemon.refused(lambda: daemon.stub().RemovePod(pb.RemovePodRequest(uid="uid-a"), timeout=10))
        written = f"cannot write {state}/cpu_manager_state"
        assert undone == f"state not saved, the call was undone: {written}: Read-only file system"
        assert reads(daemon) == before and daemon.admission_health() == NOT_SERVING

        # A restart on the read-only directory (killed: nothing is written on the way out either). The
        # lock file is opened read-only: a second daemon is still refused.
        daemon.stop(signal.SIGKILL)
        daemon.start()
        assert reads(daemon) == before and file_hashes(state) == hashes
        assert daemon.admission_health() == NOT_SERVING
        assert daemon.refused(lambda: daemon.admit("c")) == (
            f"state directory {state} is not writable: cannot write in {state}: Read-only file system; "
            "admissions and removals are refused until it is (reads keep working)"
        )
        other = DaemonProcess(
            daemon.config, state, tmp_path / "k2.sock", daemon.sysfs_root, daemon.procfs_root,
            tmp_path / "second.log", podresources_socket=tmp_path / "pr2.sock",
        )  # fmt: skip
        second = subprocess.run(other.argv(), env=other.env(), capture_output=True, text=True, timeout=60)
        assert second.returncode == 1 and f"the state directory {state} is in use" in second.stderr

        # Writable again: the periodic check resumes admissions, no call needed.
        read_only(state, False)
        deadline = time.monotonic() + 15
        while daemon.admission_health() != SERVING:
            assert time.monotonic() < deadline, "writes did not resume by themselves"
            time.sleep(0.2)
        daemon.stub().RemovePod(pb.RemovePodRequest(uid="uid-a"), timeout=10)
        assert [p.uid for p in daemon.pods().pods] == ["uid-b"]
        assert_consistent(state, daemon.pods().pods, SAMPLE_CPUS)
        daemon.stop()


def test_no_write_permission_on_the_state_directory(
    make_watched: Callable[..., WatchedDaemon], tmp_path: Path
) -> None:
    # Root writes anywhere: the daemon runs without CAP_DAC_OVERRIDE so that file modes apply to it.
    caps = "-dac_override,-dac_read_search"
    prefix = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--"]
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv(1) to run the daemon without CAP_DAC_OVERRIDE")
    check = subprocess.run([*prefix, "true"], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        pytest.skip(f"setpriv cannot drop CAP_DAC_OVERRIDE here: {check.stderr.strip()}")
    state = tmp_path / "state"
    daemon = make_watched(state, prefix)
    assert daemon.admit("a").admitted
    before, hashes = reads(daemon), file_hashes(state)
    directories = [state, state / "pods", state / "device-plugins"]
    for directory in directories:
        directory.chmod(0o555)
    try:
        assert daemon.refused(lambda: daemon.admit("b")) == (
            f"state not saved, the call was undone: cannot write {state}/cpu_manager_state: Permission denied"
        )
        assert reads(daemon) == before and file_hashes(state) == hashes
        daemon.stop(signal.SIGKILL)
        daemon.start()
        assert daemon.admission_health() == NOT_SERVING and reads(daemon) == before
    finally:
        for directory in directories:
            directory.chmod(0o750 if directory == state else 0o755)
    assert daemon.admit("b").admitted
    assert stat.S_IMODE((state / "pods" / "uid-b.json").stat().st_mode) == 0o600
    assert_consistent(state, daemon.pods().pods, SAMPLE_CPUS)


def test_a_start_up_repair_on_a_read_only_directory_is_held_in_memory(
    make_watched: Callable[..., WatchedDaemon], tmp_path: Path
) -> None:
    state = tmp_path / "state"
    daemon = make_watched(state)
    assert daemon.admit("a").admitted and daemon.admit("b").admitted
    daemon.stop(signal.SIGKILL)
    # As a crash can leave them: b's allocations without its registry file, and a torn temporary.
    (state / "pods" / "uid-b.json").unlink()
    (state / ".cpu_manager_state.99999.1.tmp").write_bytes(b"torn")
    hashes = file_hashes(state)
    with bind_mounted(state):
        read_only(state)
        offset = daemon.log.stat().st_size
        daemon.start()
        # b's CPUs are released in memory; the files are as they were, the temporary too.
        assert [p.uid for p in daemon.pods().pods] == ["uid-a"]
        assert file_hashes(state) == hashes
        events = events_from(daemon, offset)
        repair = events["pod not restored as saved"]
        assert (repair["action"], repair["uid"]) == ("released", "uid-b")
        assert "start-up repairs are held in memory until the state directory can be written" in events
        left = events["cannot remove an interrupted write; it is ignored"]
        assert (left["file"], left["error"]) == (
            str(state / ".cpu_manager_state.99999.1.tmp"),
            "Read-only file system",
        )
        assert daemon.admission_health() == NOT_SERVING
        read_only(state, False)
        # The first write attempt writes the repair, then admits c (which takes b's CPUs back).
        assert daemon.admit("c", "4").admitted
        assert_consistent(state, daemon.pods().pods, SAMPLE_CPUS)
        daemon.stop()
    offset = daemon.log.stat().st_size
    daemon.start()
    assert [p.uid for p in daemon.pods().pods] == ["uid-a", "uid-c"]
    assert "pod not restored as saved" not in events_from(daemon, offset)
    assert not (state / ".cpu_manager_state.99999.1.tmp").exists()


def events_from(daemon: DaemonProcess, offset: int) -> dict[str, dict[str, Any]]:
    """The daemon's JSON log lines written after ``offset`` bytes, by event."""
    with open(daemon.log, "rb") as log:
        log.seek(offset)
        lines = log.read().decode().splitlines()
    return {e["event"]: e for e in (json.loads(line) for line in lines if line.startswith("{"))}
