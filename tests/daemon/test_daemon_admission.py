"""The real daemon over its unix socket: admission sequences, what-if, errors, restarts, reload, signals."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

import hostprobe
from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.config import load_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from tests.daemon.daemon_process import DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]


def pod_yaml(name: str, cpu: str = "2", memory: str = "1Gi", dev: int = 0, uid: str | None = None) -> str:
    limits = f'cpu: "{cpu}", memory: {memory}' + (f', example.com/dev: "{dev}"' if dev else "")
    return (
        f"apiVersion: v1\nkind: Pod\n"
        f"metadata: {{name: {name}, namespace: default, uid: {uid or 'uid-' + name}}}\n"
        f"spec:\n  containers:\n  - name: app\n    resources:\n      limits: {{{limits}}}\n"
    )


def admit(daemon: DaemonProcess, manifest: str) -> pb.AdmitResponse:
    return daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)


def listed(daemon: DaemonProcess) -> list[tuple[str, tuple[int, ...]]]:
    pods = daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods
    return [(p.uid, tuple(p.containers[0].cpu_ids)) for p in pods]


SEQUENCE = [
    pod_yaml("a", "4", dev=1),
    pod_yaml("b", "2"),
    pod_yaml("c", "6"),
    pod_yaml("d", "4"),
    pod_yaml("e", "2"),
]


@pytest.mark.parametrize(
    ("policy", "scope"),
    [("single-numa-node", "container"), ("restricted", "pod"), ("best-effort", "container")],
)
def test_daemon_matches_the_engine_in_process(make_daemon: MakeDaemon, policy: str, scope: str) -> None:
    daemon = make_daemon(policy, scope)
    config = load_config([str(daemon.config)])
    machine = Machine.from_host(hostprobe.probe(str(daemon.sysfs_root), str(daemon.procfs_root)))
    engine = NodeEmulator(config, machine)
    for manifest in SEQUENCE:
        remote = admit(daemon, manifest)
        local = engine.admit(parse_pods(manifest)[0])
        assert (remote.admitted, remote.reason, remote.message) == (
            local.admitted,
            local.reason,
            local.message,
        )
        got = [
            (
                c.name,
                tuple(c.cpu_ids),
                [(b.memory_type, b.size, tuple(b.numa_nodes)) for b in c.memory],
                {d.resource_name: tuple(d.device_ids) for d in c.devices},
            )
            for c in remote.containers
        ]
        want = [
            (
                c.name,
                c.cpu_ids,
                [(b.memory_type, b.size, b.numa_nodes) for b in c.memory],
                {r: tuple(sorted(ids)) for r, ids in c.devices.items()},
            )
            for c in local.containers
        ]
        assert got == want


def test_single_numa_node_sequence_lands_where_the_kubelet_would(make_daemon: MakeDaemon) -> None:
    """16 CPUs, node 0 = 0-3,8-11, node 1 = 4-7,12-15 (cores n and n+8 are siblings); CPU 0 reserved
    (kubeReserved cpu 1 takes the first core's lower thread). Packing fills node 0 first, full cores first."""
    daemon = make_daemon()
    a = admit(daemon, pod_yaml("a", "4", dev=1))  # the device is on node 1 only: node 1, cores 4,5
    assert a.admitted and list(a.containers[0].cpu_ids) == [4, 5, 12, 13]
    assert [d.device_ids for d in a.containers[0].devices] == [["dev0"]]
    b = admit(daemon, pod_yaml("b", "2"))  # node 0 (7 free: 1-3,8-11): core 1 is whole -> 1,9
    assert b.admitted and list(b.containers[0].cpu_ids) == [1, 9]
    c = admit(daemon, pod_yaml("c", "6"))  # node 0 has 5 free (2,3,8,10,11), node 1 has 4: no single node
    assert not c.admitted
    assert (c.reason, c.message) == (
        "TopologyAffinityError",
        "Resources cannot be allocated with Topology locality",
    )
    assert c.decided_by == "resource-allocator"
    assert [uid for uid, _ in listed(daemon)] == ["uid-a", "uid-b"]


def test_would_admit_changes_nothing_and_honours_overrides(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    admit(daemon, pod_yaml("a", "4", dev=1))
    before = listed(daemon)
    big = pb.PodSource(manifest=pod_yaml("big", "10"))
    stub = daemon.stub()
    as_configured = stub.WouldAdmit(pb.WouldAdmitRequest(pod=big), timeout=10)
    assert not as_configured.admitted and as_configured.reason == "TopologyAffinityError"
    what_if = stub.WouldAdmit(
        pb.WouldAdmitRequest(pod=big, overrides=pb.PolicyOverrides(topology_manager_policy="best-effort")),
        timeout=10,
    )
    assert what_if.admitted and len(what_if.containers[0].cpu_ids) == 10
    assert listed(daemon) == before
    # The same what-if twice gives the same answer: no state leaked from the first.
    again = stub.WouldAdmit(
        pb.WouldAdmitRequest(pod=big, overrides=pb.PolicyOverrides(topology_manager_policy="best-effort")),
        timeout=10,
    )
    assert list(again.containers[0].cpu_ids) == list(what_if.containers[0].cpu_ids)


@pytest.mark.parametrize(
    ("request_factory", "code", "fragment"),
    [
        (
            lambda: pb.AdmitRequest(pod=pb.PodSource(manifest="kind: Pod\nmetadata: [")),
            "INVALID_ARGUMENT",
            "yaml",
        ),
        (lambda: pb.AdmitRequest(pod=pb.PodSource(manifest=pod_yaml("n", "-2"))), "INVALID_ARGUMENT", "cpu"),
        (
            lambda: pb.AdmitRequest(pod=pb.PodSource(manifest=pod_yaml("q", "1.2.3"))),
            "INVALID_ARGUMENT",
            "1.2.3",
        ),
        (lambda: pb.AdmitRequest(pod=pb.PodSource()), "INVALID_ARGUMENT", "no pod given"),
        (
            lambda: pb.AdmitRequest(pod=pb.PodSource(manifest=pod_yaml("a", uid="uid-a"))),
            "ALREADY_EXISTS",
            "uid-a",
        ),
    ],
)
def test_bad_admissions_are_refused_and_change_nothing(
    make_daemon: MakeDaemon, request_factory: Callable[[], pb.AdmitRequest], code: str, fragment: str
) -> None:
    daemon = make_daemon()
    admit(daemon, pod_yaml("a", "2"))
    before = listed(daemon)
    with pytest.raises(grpc.RpcError) as info:
        daemon.stub().Admit(request_factory(), timeout=10)
    assert info.value.code().name == code
    assert fragment.lower() in (info.value.details() or "").lower()
    assert listed(daemon) == before


def test_unknown_policy_override_and_unknown_pods(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    stub = daemon.stub()
    admit(daemon, pod_yaml("a", "2"))
    with pytest.raises(grpc.RpcError) as info:
        stub.WouldAdmit(
            pb.WouldAdmitRequest(
                pod=pb.PodSource(manifest=pod_yaml("x")),
                overrides=pb.PolicyOverrides(topology_manager_policy="fancy"),
            )
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert 'unknown policy: "fancy"' in (info.value.details() or "")
    with pytest.raises(grpc.RpcError) as info:
        stub.WouldAdmit(
            pb.WouldAdmitRequest(
                pod=pb.PodSource(manifest=pod_yaml("x")),
                overrides=pb.PolicyOverrides(
                    replace_policy_options=True, topology_manager_policy_options={"bogus": "1"}
                ),
            )
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert 'unknown Topology Manager Policy option: "bogus"' in (info.value.details() or "")
    for call in (
        lambda: stub.RemovePod(pb.RemovePodRequest(uid="nope")),
        lambda: stub.GetAffinity(pb.GetAffinityRequest(pod_uid="nope", container_name="app")),
        lambda: stub.GetAffinity(pb.GetAffinityRequest(pod_uid="uid-a", container_name="nope")),
    ):
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
    affinity = stub.GetAffinity(pb.GetAffinityRequest(pod_uid="uid-a", container_name="app")).affinity
    assert (list(affinity.numa_nodes), affinity.preferred) == ([0], True)


def test_remove_frees_resources(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    first = admit(daemon, pod_yaml("a", "6"))
    assert first.admitted
    daemon.stub().RemovePod(pb.RemovePodRequest(uid="uid-a"))
    again = admit(daemon, pod_yaml("a2", "6"))
    assert list(again.containers[0].cpu_ids) == list(first.containers[0].cpu_ids)


def test_socket_is_private_and_removed_on_sigterm(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    assert stat.S_IMODE(os.stat(daemon.socket).st_mode) == 0o660
    with daemon.channel() as channel:
        health = health_pb2_grpc.HealthStub(channel)
        status = health.Check(health_pb2.HealthCheckRequest(service="kubeletemu.v1.Admission"), timeout=5)
        assert status.status == health_pb2.HealthCheckResponse.SERVING
    assert daemon.stop(signal.SIGTERM) == 0
    assert not daemon.socket.exists()


def test_restart_keeps_every_admitted_pod(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    for manifest in SEQUENCE[:2]:
        assert admit(daemon, manifest).admitted
    before = listed(daemon)
    assert daemon.stop() == 0
    daemon.start()
    assert listed(daemon) == before
    affinity = (
        daemon.stub().GetAffinity(pb.GetAffinityRequest(pod_uid="uid-a", container_name="app")).affinity
    )
    assert list(affinity.numa_nodes) == [1]
    # The freed-by-nobody CPUs stay taken: a new pod does not get them.
    new = admit(daemon, pod_yaml("z", "2"))
    taken = {cpu for _, cpus in before for cpu in cpus}
    assert new.admitted and not taken & set(new.containers[0].cpu_ids)


def test_sighup_reload_applies_a_good_config_and_refuses_a_bad_one(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    assert admit(daemon, pod_yaml("a", "2")).admitted
    before = listed(daemon)
    big = pb.PodSource(manifest=pod_yaml("big", "10"))
    assert not daemon.stub().WouldAdmit(pb.WouldAdmitRequest(pod=big)).admitted
    text = daemon.config.read_text()
    daemon.config.write_text(
        text.replace("topologyManagerPolicy: single-numa-node", "topologyManagerPolicy: best-effort")
    )
    daemon.send(signal.SIGHUP)
    _wait_for(lambda: "reloaded" in daemon.log.read_text())
    assert daemon.stub().WouldAdmit(pb.WouldAdmitRequest(pod=big)).admitted
    # A CPU manager policy change conflicts with the saved cpu_manager_state: refused, state kept.
    daemon.config.write_text(
        daemon.config.read_text().replace("cpuManagerPolicy: static", "cpuManagerPolicy: none")
    )
    daemon.send(signal.SIGHUP)
    _wait_for(lambda: "reload refused" in daemon.log.read_text())
    assert "differs from state checkpoint policy" in daemon.log.read_text()
    # The file to look at is the daemon's own, not the scratch copy the trial build ran on.
    [refusal] = [json.loads(line) for line in daemon.log.read_text().splitlines() if "reload refused" in line]
    assert str(daemon.state_dir / "cpu_manager_state") in refusal["error"], refusal["error"]
    assert "kubeletemu-reload-" not in refusal["error"]
    assert listed(daemon) == before
    assert daemon.stub().WouldAdmit(pb.WouldAdmitRequest(pod=big)).admitted  # still best-effort
    # And garbage is refused too.
    daemon.config.write_text("kind: [")
    daemon.send(signal.SIGHUP)
    _wait_for(lambda: daemon.log.read_text().count("reload refused") == 2)
    assert listed(daemon) == before


def test_kill_9_during_admissions_leaks_and_doubles_nothing(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon("best-effort")
    stub = daemon.stub()
    for i in range(4):
        stub.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=pod_yaml(f"p{i}", "1", "64Mi"))), timeout=10)
    # Keep admitting from a background client, and kill the daemon in the middle of the stream.
    script = (
        "import grpc,sys\n"
        "from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb, admission_pb2_grpc as g\n"
        f"s=g.AdmissionStub(grpc.insecure_channel('unix:{daemon.socket}'))\n"
        "for i in range(4, 200):\n"
        "  m=f'apiVersion: v1\\nkind: Pod\\nmetadata: {{name: p{i}, uid: uid-p{i}}}\\n"
        "spec:\\n  containers:\\n"
        '  - name: app\\n    resources:\\n      limits: {{cpu: "1", memory: 64Mi}}\\n\'\n'
        "  try: s.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=m)), timeout=5)\n"
        "  except grpc.RpcError: sys.exit(0)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    client = subprocess.Popen([sys.executable, "-c", script], env=env)
    _wait_for(lambda: len(listed(daemon)) >= 8, timeout=20)
    daemon.stop(signal.SIGKILL)
    client.wait(timeout=20)
    # As a kill between creating a temporary file and renaming it leaves one: start-up removes it.
    interrupted = daemon.state_dir / ".cpu_manager_state.99999.0.tmp"
    interrupted.write_text('{"policyName":"static"')
    daemon.start()
    assert not interrupted.exists()
    assert "removed interrupted writes" in daemon.log.read_text()
    pods = listed(daemon)
    cpus = [cpu for _, ids in pods for cpu in ids]
    assert len(cpus) == len(set(cpus)), "a CPU was given twice"
    state = json.loads((daemon.state_dir / "cpu_manager_state").read_text())
    assert set(state.get("entries", {})) <= {uid for uid, _ in pods}, "a CPU is held by a pod nobody admitted"
    # Every CPU not held by a listed pod is back in the shared pool: the next pods can have all of them.
    free_before = 15 - len(cpus)
    got = 0
    for i in range(free_before):
        if admit(daemon, pod_yaml(f"after{i}", "1", "64Mi")).admitted:
            got += 1
    assert got == free_before


def _wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.mark.parametrize("damaged", ["cpu_manager_state", "memory_manager_state", "pods/uid-a.json"])
def test_corrupt_state_stops_startup_naming_the_file(make_daemon: MakeDaemon, damaged: str) -> None:
    daemon = make_daemon()
    assert admit(daemon, pod_yaml("a", "2")).admitted
    assert daemon.stop() == 0
    target = daemon.state_dir / damaged
    assert target.exists()
    target.write_text(target.read_text()[:-20] + "garbage")
    with pytest.raises(RuntimeError) as info:
        daemon.start(timeout=10)
    log = str(info.value)
    assert "exited with 2" in log
    errors = [line for line in log.splitlines() if line.startswith("kubeletemu: ")]
    assert len(errors) == 1 and damaged.split("/")[-1] in errors[0]


def test_metrics_endpoint_serves_kubelet_names(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = make_daemon()
    daemon.stop()
    daemon.extra_args = ["--metrics-address", f"127.0.0.1:{port}"]
    daemon.start()
    admit(daemon, pod_yaml("a", "2"))
    admit(daemon, pod_yaml("big", "12"))  # refused by the Topology Manager
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    values = {
        line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines() if line and line[0] != "#"
    }
    assert values["kubelet_topology_manager_admission_requests_total"] == 2
    assert values["kubelet_topology_manager_admission_errors_total"] == 1
    assert values["kubelet_cpu_manager_pinning_requests_total"] == 1
    assert values["kubelet_topology_manager_admission_duration_ms_count"] == 2
    # single-numa-node, container scope: one aligned container, one policy refusal.
    aligned = 'kubelet_container_aligned_compute_resources_count{boundary="numa_node",scope="container"}'
    failed = (
        'kubelet_container_aligned_compute_resources_failure_count{boundary="numa_node",scope="container"}'
    )
    assert values[aligned] == 1
    assert values[failed] == 1
    assert values["kubelet_cpu_manager_pinning_errors_total"] == 0
