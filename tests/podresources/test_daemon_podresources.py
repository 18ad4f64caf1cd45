"""The daemon's podresources socket and the admission service's GetFingerprint / GetNodeResourceTopology:
fingerprints follow the pod set exactly, the CLI prints them, the rate limit holds against several
concurrent clients, and a restart keeps what List reports."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
import yaml

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as v1alpha1
from kubeletemu._proto.podresources.v1alpha1 import api_pb2_grpc as v1alpha1_grpc
from kubeletemu.config import Config, EmulatorConfiguration
from kubeletemu.daemon.convert import nrt_from_msg
from kubeletemu.daemon.server import ServeOptions, resolve
from kubeletemu.podresources.fingerprint import compute
from tests.daemon.daemon_process import REPO, DaemonProcess
from tests.podresources.conftest import StartDaemon
from tests.podresources.nodes import container, pod_manifest
from tests.podresources.test_nrt import crd_errors

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

GUARANTEED = pod_manifest("gu", "ns1", containers=container("c", 'cpu: "2", memory: 1Gi'))
BURSTABLE = pod_manifest("bu", "ns2", containers=container("c", requests="cpu: 100m"))
TOO_BIG = pod_manifest("big", "ns1", containers=container("c", 'cpu: "64", memory: 1Gi'))
METHODS = ("all", "with-exclusive-resources")


def admit(daemon: DaemonProcess, manifest: str) -> pb.AdmitResponse:
    reply: pb.AdmitResponse = daemon.stub().Admit(
        pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10
    )
    return reply


def fingerprints(daemon: DaemonProcess) -> dict[str, str]:
    """Both fingerprints, checked to agree between GetFingerprint and the List response headers."""
    stub = daemon.stub()
    out = {
        m: stub.GetFingerprint(pb.GetFingerprintRequest(method=m), timeout=10).fingerprint for m in METHODS
    }
    with daemon.podresources_channel() as channel:
        _, call = v1_grpc.PodResourcesListerStub(channel).List.with_call(
            v1.ListPodResourcesRequest(), timeout=10
        )
    headers = dict(call.initial_metadata())
    assert {m: headers[f"kubeletemu-fingerprint-{m}"] for m in METHODS} == out
    return out


def cli(daemon: DaemonProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args, "--socket", str(daemon.socket)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_fingerprint_changes_exactly_when_the_pod_set_changes(start_daemon: StartDaemon) -> None:
    daemon = start_daemon()
    empty = compute([])
    assert fingerprints(daemon) == {"all": empty, "with-exclusive-resources": empty}

    assert admit(daemon, GUARANTEED).admitted
    one = {"all": compute([("ns1", "gu")]), "with-exclusive-resources": compute([("ns1", "gu")])}
    assert fingerprints(daemon) == one

    # Questions, refusals and errors leave the pod set, and so the fingerprint, alone.
    stub = daemon.stub()
    assert stub.WouldAdmit(pb.WouldAdmitRequest(pod=pb.PodSource(manifest=BURSTABLE)), timeout=10).admitted
    assert not admit(daemon, TOO_BIG).admitted
    with pytest.raises(grpc.RpcError) as err:
        admit(daemon, GUARANTEED)
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert fingerprints(daemon) == one

    # A pod without exclusive resources changes "all" only.
    assert admit(daemon, BURSTABLE).admitted
    two = fingerprints(daemon)
    assert two == {
        "all": compute([("ns1", "gu"), ("ns2", "bu")]),
        "with-exclusive-resources": one["with-exclusive-resources"],
    }

    stub.RemovePod(pb.RemovePodRequest(uid="uid-bu"), timeout=10)
    assert fingerprints(daemon) == one
    stub.RemovePod(pb.RemovePodRequest(uid="uid-gu"), timeout=10)
    assert fingerprints(daemon) == {"all": empty, "with-exclusive-resources": empty}


def test_get_fingerprint_traces_the_pods_and_checks_the_method(start_daemon: StartDaemon) -> None:
    daemon = start_daemon()
    admit(daemon, GUARANTEED)
    admit(daemon, BURSTABLE)
    reply = daemon.stub().GetFingerprint(pb.GetFingerprintRequest(method="all"), timeout=10)
    assert [(p.namespace, p.name) for p in reply.pods] == [("ns1", "gu"), ("ns2", "bu")]
    assert (reply.method, reply.node_name) == ("all", "node-a")
    assert json.loads(reply.status_json) == {
        "fingerprintComputed": reply.fingerprint,
        "pods": [{"Namespace": "ns1", "Name": "gu"}, {"Namespace": "ns2", "Name": "bu"}],
        "nodeName": "node-a",
    }
    default = daemon.stub().GetFingerprint(pb.GetFingerprintRequest(), timeout=10)
    assert default.method == "with-exclusive-resources" and [p.name for p in default.pods] == ["gu"]
    with pytest.raises(grpc.RpcError) as err:
        daemon.stub().GetFingerprint(pb.GetFingerprintRequest(method="newest"), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == 'unsupported method  "newest"'


def test_cli_fingerprint_and_nrt(start_daemon: StartDaemon) -> None:
    daemon = start_daemon()
    admit(daemon, GUARANTEED)
    admit(daemon, BURSTABLE)
    out = cli(daemon, "fingerprint")
    assert (out.returncode, out.stdout) == (0, compute([("ns1", "gu")]) + "\n"), out.stderr
    out = cli(daemon, "fingerprint", "--method", "all", "-o", "json")
    assert json.loads(out.stdout)["fingerprint"] == compute([("ns1", "gu"), ("ns2", "bu")])

    as_yaml = cli(daemon, "nrt")
    assert as_yaml.returncode == 0, as_yaml.stderr
    document = yaml.safe_load(as_yaml.stdout)
    as_json = cli(daemon, "nrt", "-o", "json", "--method", "with-exclusive-resources")
    assert json.loads(as_json.stdout) == document
    reply = daemon.stub().GetNodeResourceTopology(pb.GetNodeResourceTopologyRequest(), timeout=10)
    assert nrt_from_msg(reply).to_manifest() == document
    assert crd_errors(document) == []
    assert document["metadata"]["name"] == "node-a"
    attributes = {a["name"]: a["value"] for a in document["attributes"]}
    assert attributes["nodeTopologyPodsFingerprint"] == compute([("ns1", "gu")])
    zone0 = {r["name"]: r for r in document["zones"][0]["resources"]}
    assert zone0["cpu"] == {"name": "cpu", "capacity": "8", "allocatable": "7", "available": "5"}

    assert document["metadata"]["annotations"]["k8stopoawareschedwg/rte-update"] == "periodic"
    table = cli(daemon, "nrt", "-o", "table")
    assert table.returncode == 0, table.stderr
    assert re.search(r"^node-0 +cpu +8 +7 +5$", table.stdout, re.MULTILINE), table.stdout

    bad = cli(daemon, "nrt", "--method", "newest")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    # The fingerprint library knows exclude-terminal; no exporter publishes it, so neither do we.
    bad = cli(daemon, "nrt", "--method", "exclude-terminal")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    with pytest.raises(grpc.RpcError) as err:
        daemon.stub().GetNodeResourceTopology(
            pb.GetNodeResourceTopologyRequest(fingerprint_method="exclude-terminal"), timeout=10
        )
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == 'unsupported method  "exclude-terminal"'
    reactive = daemon.stub().GetNodeResourceTopology(
        pb.GetNodeResourceTopologyRequest(update_trigger="reactive"), timeout=10
    )
    assert reactive.annotations["k8stopoawareschedwg/rte-update"] == "reactive"


def test_rate_limit_holds_under_a_concurrent_burst(start_daemon: StartDaemon) -> None:
    daemon = start_daemon()
    clients, calls_each = 4, 40
    results: list[tuple[str, float, float]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(clients)

    def client(index: int) -> None:
        # Each client has its own connection, as separate exporters would.
        with daemon.podresources_channel() as channel:
            grpc.channel_ready_future(channel).result(timeout=10)
            v1_stub = v1_grpc.PodResourcesListerStub(channel)
            alpha = v1alpha1_grpc.PodResourcesListerStub(channel)
            barrier.wait()
            for i in range(calls_each):
                started = time.monotonic()
                try:
                    if (index + i) % 2:
                        alpha.List(v1alpha1.ListPodResourcesRequest(), timeout=10)
                    else:
                        v1_stub.GetAllocatableResources(v1.AllocatableResourcesRequest(), timeout=10)
                    outcome = "OK"
                except grpc.RpcError as err:
                    outcome = f"{err.code().name}: {err.details()}"
                with lock:
                    results.append((outcome, started, time.monotonic()))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == clients * calls_each
    outcomes = {o for o, _, _ in results}
    assert outcomes <= {"OK", "RESOURCE_EXHAUSTED: rejected by rate limit"}
    accepted = sum(o == "OK" for o, _, _ in results)
    window = max(end for _, _, end in results) - min(start for _, start, _ in results)
    # A full bucket of 10, then 100 tokens a second: no more can be accepted in the window.
    assert 10 <= accepted <= 10 + 100 * window + 1, (accepted, window)
    assert accepted < len(results)
    # The daemon is fine afterwards: a token comes back every 10 ms.
    time.sleep(0.05)
    with daemon.podresources_channel() as channel:
        v1_grpc.PodResourcesListerStub(channel).List(v1.ListPodResourcesRequest(), timeout=10)


def test_restart_keeps_what_list_reports(start_daemon: StartDaemon) -> None:
    daemon = start_daemon()
    admit(daemon, GUARANTEED)
    admit(daemon, BURSTABLE)
    with daemon.podresources_channel() as channel:
        before = v1_grpc.PodResourcesListerStub(channel).List(v1.ListPodResourcesRequest(), timeout=10)
    assert daemon.stop() == 0
    assert not Path(str(daemon.podresources_socket)).exists()  # removed on a clean stop
    daemon.start()
    with daemon.podresources_channel() as channel:
        after = v1_grpc.PodResourcesListerStub(channel).List(v1.ListPodResourcesRequest(), timeout=10)
    assert after == before and len(after.pod_resources) == 2


def test_the_podresources_socket_defaults_beside_the_admission_socket() -> None:
    config = Config()
    assert resolve(ServeOptions(socket="/x/k.sock"), config).podresources_socket == "/x/podresources.sock"
    assert resolve(ServeOptions(), config).podresources_socket == "/run/kubeletemu/podresources.sock"
    configured = Config(emulator=EmulatorConfiguration(pod_resources_socket="/y/p.sock"))
    assert resolve(ServeOptions(socket="/x/k.sock"), configured).podresources_socket == "/y/p.sock"
    flagged = ServeOptions(socket="/x/k.sock", podresources_socket="/z/p.sock")
    assert resolve(flagged, configured).podresources_socket == "/z/p.sock"


def test_a_reload_reaches_the_podresources_socket(start_daemon: StartDaemon) -> None:
    daemon = start_daemon()
    admit(daemon, GUARANTEED)
    daemon.config.write_text(daemon.config.read_text().replace("nodeName: node-a", "nodeName: node-b"))
    daemon.send(signal.SIGHUP)
    deadline = time.monotonic() + 15
    while "reloaded" not in daemon.log.read_text():
        assert time.monotonic() < deadline, daemon.log.read_text()
        time.sleep(0.05)
    reply = daemon.stub().GetFingerprint(pb.GetFingerprintRequest(), timeout=10)
    assert (reply.node_name, reply.fingerprint) == ("node-b", compute([("ns1", "gu")]))
    # The reloaded node still reports the admitted pod on the same socket.
    with daemon.podresources_channel() as channel:
        listed = v1_grpc.PodResourcesListerStub(channel).List(v1.ListPodResourcesRequest(), timeout=10)
    assert [p.name for p in listed.pod_resources] == ["gu"]
