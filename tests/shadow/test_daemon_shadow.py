"""The real daemon in shadow mode beside a fake kubelet: the mirrored state over gRPC, what-if answers
against it, refresh on file changes (inotify alone: the period is an hour), refusal of Admit and RemovePod,
divergences in the report, the metric, the log and the CLI, and not one byte written to the kubelet."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu.manifest import parse_pods
from kubeletemu.podresources import view
from kubeletemu.shadow import READ_ONLY_MESSAGE
from tests.shadow.kubelet_double import SHADOW_OWN_CONFIG, FakeKubelet, PodResourcesDouble, tree_digest
from tests.shadow.shadow_daemon import REPO, ShadowDaemon, free_port, wait_for
from tests.shadow.test_mirror import PROBES

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

GU_A = "11111111-0000-0000-0000-00000000000a"

NEW_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: newcomer, namespace: prod, uid: 22222222-0000-0000-0000-000000000001}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "2", memory: 1Gi}}
"""


@pytest.fixture
def running(kubelet: FakeKubelet, short_dir: Path) -> Iterator[tuple[ShadowDaemon, PodResourcesDouble]]:
    workdir = short_dir / "d"
    workdir.mkdir()
    with PodResourcesDouble(kubelet) as double:
        daemon = ShadowDaemon(kubelet, workdir, metrics_port=free_port())
        daemon.start()
        try:
            yield daemon, double
        finally:
            daemon.stop()


def _pod_cpus(reply: pb.ListPodsResponse) -> dict[str, dict[str, list[int]]]:
    return {
        f"{p.namespace}/{p.name}": {c.name: list(c.cpu_ids) for c in p.containers if c.exclusive_cpus}
        for p in reply.pods
    }


def expected_cpus(kubelet: FakeKubelet) -> dict[str, dict[str, list[int]]]:
    return {
        f"{p.namespace}/{p.name}": {c.name: list(c.cpu_ids) for c in cs if c.exclusive_cpus}
        for p, cs in kubelet.emulator.pods()
    }


def logged(daemon: ShadowDaemon) -> list[dict[str, Any]]:
    """The daemon's JSON log lines (gRPC's own C++ log lines are not JSON)."""
    return [json.loads(line) for line in daemon.log.read_text().splitlines() if line.startswith("{")]


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
        return text


def _cli(daemon: ShadowDaemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args, "--socket", str(daemon.socket)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_shadow_daemon(kubelet: FakeKubelet, running: tuple[ShadowDaemon, PodResourcesDouble]) -> None:
    daemon, double = running
    stub = daemon.stub()

    # ---- the mirrored state ----
    listed = stub.ListPods(pb.ListPodsRequest(), timeout=10)
    assert _pod_cpus(listed) == expected_cpus(kubelet)
    uids = {f"{p.namespace}/{p.name}": p.uid for p in listed.pods}
    assert uids["prod/gu-a"] == GU_A
    report = daemon.report()
    assert (report.generation, report.trigger, report.watch_mode) == (1, "start", "inotify")
    assert (report.pods_listed, report.pods_matched, report.pods_derived) == (6, 4, 2)
    assert (report.containers_checked, report.containers_agreeing, len(report.divergences)) == (7, 7, 0)
    assert report.kubelet_root_dir == str(kubelet.root)
    assert report.last_error == ""

    # ---- our podresources endpoint describes the real node ----
    with daemon.podresources_channel() as channel:
        ours = v1_grpc.PodResourcesListerStub(channel)
        assert ours.List(v1.ListPodResourcesRequest(), timeout=10) == kubelet.listing
        assert (
            ours.GetAllocatableResources(v1.AllocatableResourcesRequest(), timeout=10) == kubelet.allocatable
        )
    fingerprint = stub.GetFingerprint(pb.GetFingerprintRequest(), timeout=10)
    assert fingerprint.fingerprint == view.node_fingerprint(kubelet.emulator)[0]

    # ---- WouldAdmit answers against it, exactly as the kubelet would ----
    for manifest in PROBES.split("---\n"):
        (pod,) = parse_pods(manifest, "probe")
        ours_reply = stub.WouldAdmit(pb.WouldAdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
        theirs = kubelet.emulator.would_admit(pod)
        assert (ours_reply.admitted, ours_reply.reason, ours_reply.message) == (
            theirs.admitted,
            theirs.reason,
            theirs.message,
        ), pod.name
        assert [list(c.cpu_ids) for c in ours_reply.containers] == [
            list(c.cpu_ids) for c in theirs.containers
        ]

    # ---- Admit and RemovePod are refused ----
    with pytest.raises(grpc.RpcError) as err:
        stub.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=NEW_POD)), timeout=10)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert err.value.details() == READ_ONLY_MESSAGE
    with pytest.raises(grpc.RpcError) as err:
        stub.RemovePod(pb.RemovePodRequest(uid=GU_A), timeout=10)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert len(stub.ListPods(pb.ListPodsRequest(), timeout=10).pods) == 6

    # ---- the kubelet admits a pod: its checkpoints change, inotify refreshes the mirror ----
    kubelet.admit(NEW_POD)
    newcomer = wait_for(
        lambda: _pod_cpus(stub.ListPods(pb.ListPodsRequest(), timeout=10)).get("prod/newcomer"), timeout=10
    )
    assert newcomer == expected_cpus(kubelet)["prod/newcomer"]
    report = daemon.report()
    assert report.generation == 2 and report.trigger == "inotify" and not report.divergences
    # The kubelet's metrics follow the installed mirror: its exclusive CPUs in the gauges; rebuilding it
    # (a replay of the kubelet's pods) is not this daemon's pinning.
    samples = dict(
        line.rsplit(" ", 1)
        for line in _scrape(daemon.metrics_port or 0).splitlines()
        if line and line[0] != "#"
    )
    exclusive = {
        cpu for containers in expected_cpus(kubelet).values() for cpus in containers.values() for cpu in cpus
    }
    assert samples["kubelet_cpu_manager_exclusive_cpu_allocation_count"] == str(len(exclusive))
    per_numa = [v for k, v in samples.items() if k.startswith("kubelet_cpu_manager_allocation_per_numa{")]
    assert sum(map(int, per_numa)) == len(exclusive) > 0
    assert samples["kubelet_cpu_manager_pinning_requests_total"] == "0"

    # ---- the kubelet decides what the emulator would not: a divergence ----
    kubelet.tamper_cpus(GU_A, "c", [8, 9])
    report = wait_for(lambda: (r := daemon.report()).divergences and r)
    assert [
        (d.namespace, d.name, d.uid, d.container, d.resource, d.kubelet, d.kubeletemu)
        for d in report.divergences
    ] == [("prod", "gu-a", GU_A, "c", "cpus", "8,9", "1,9")]
    metrics = _scrape(daemon.metrics_port or 0)
    assert 'kubeletemu_shadow_divergences{resource="cpus"} 1.0' in metrics
    assert 'kubeletemu_shadow_divergences{resource="memory"} 0.0' in metrics
    assert 'kubeletemu_shadow_refreshes_total{result="rebuilt"} 3.0' in metrics
    divergences = [e for e in logged(daemon) if e.get("event") == "shadow divergence"]
    assert [
        (e["pod"], e["container"], e["resource"], e["kubelet"], e["kubeletemu"]) for e in divergences
    ] == [("prod/gu-a", "c", "cpus", "8,9", "1,9")]
    assert divergences[0]["level"] == "warning"

    # ---- the CLI ----
    table = _cli(daemon, "shadow-report")
    assert table.returncode == 1, table.stderr
    assert table.stderr == "kubeletemu: shadow-report: 1 divergence(s) from the kubelet (listed above)\n"
    assert "self-check: 7 of 8 container(s) agree, 1 divergence(s)" in table.stdout
    position = report.divergences[0].replay_position
    assert f"  #{position} prod/gu-a c: cpus kubelet=8,9 kubeletemu=1,9\n" in table.stdout
    doc = json.loads(_cli(daemon, "shadow-report", "-o", "json").stdout)
    assert doc["divergences"][0]["kubeletemu"] == "1,9"
    assert double.calls["List"] >= 3

    # ---- SIGHUP re-reads our own configuration; a refused one leaves the running one ----
    own = daemon.workdir / "own.yaml"
    own.write_text(SHADOW_OWN_CONFIG.replace("node-a", "node-b"))
    assert daemon.process is not None
    daemon.process.send_signal(signal.SIGHUP)
    nrt = pb.GetNodeResourceTopologyRequest()
    wait_for(lambda: stub.GetNodeResourceTopology(nrt, timeout=10).name == "node-b")
    own.write_text(SHADOW_OWN_CONFIG + "devices: [{resourceName: example.com/x, devices: [{id: x0}]}]\n")
    daemon.process.send_signal(signal.SIGHUP)
    refused = wait_for(lambda: [e for e in logged(daemon) if e["event"].startswith("reload refused")])
    assert "devices: shadow mode takes the devices from the kubelet" in refused[0]["error"]
    assert stub.GetNodeResourceTopology(nrt, timeout=10).name == "node-b"
    assert daemon.report().divergences  # the mirror is still the kubelet's

    # ---- nothing of the kubelet's was written ----
    written = tree_digest(kubelet.root)
    assert daemon.stop() == 0
    assert tree_digest(kubelet.root) == written


def test_not_a_byte_written(kubelet: FakeKubelet, short_dir: Path) -> None:
    """Start, refresh a few times, stop: the kubelet's root is byte for byte (and mode for mode) as before."""
    before = tree_digest(kubelet.root)
    workdir = short_dir / "d"
    workdir.mkdir()
    with PodResourcesDouble(kubelet):
        daemon = ShadowDaemon(kubelet, workdir, refresh_period="100ms").start()
        wait_for(lambda: daemon.report().checked_at > daemon.report().refreshed_at + 0.2, timeout=10)
        assert daemon.stop() == 0
    after = tree_digest(kubelet.root)
    assert after == before
