"""``kubeletemu nodes`` in a real cluster: the nodes join the loopback control plane (etcd, kube-apiserver,
the real kube-scheduler), report Ready with the kubelet's capacity and allocatable and renew their Leases;
the pods the scheduler binds to them run, the pod the kubelet would refuse is Failed with
``TopologyAffinityError`` and the kubelet's message, a deletion completes and frees what the pod held, a
restart and an outage of the API server lose nothing, and a wrong kubeconfig is one line and a non-zero exit.

Every node is a 2-socket machine with 8 CPUs per NUMA node, the static CPU Manager with CPU 0 reserved and
the single-numa-node Topology Manager: allocatable cpu 15, at most 7 exclusive CPUs on NUMA node 0 and 8 on
NUMA node 1. So a pod of 9 CPUs fits the node as the scheduler counts (15) but no NUMA node: the kubelet
refuses it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.nodes.objects import resource_list
from kubeletemu.nodes.spec import load_nodes
from kubeletemu.quantity import Quantity
from tests.daemon.daemon_process import ignores_sigpipe
from tests.e2e.conftest import NODES_NAMESPACE
from tests.e2e.test_control_plane import _wait_for
from tests.upstream.controlplane import ControlPlane

pytestmark = pytest.mark.slow

WAIT = 90.0  # seconds: the machine may be busy; each step is seconds when it is not
NAMESPACE = NODES_NAMESPACE
KUBELET_CONFIG = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "kind": "KubeletConfiguration",
    "topologyManagerPolicy": "single-numa-node",
    "cpuManagerPolicy": "static",
    "reservedSystemCPUs": "0",
    # A quick heartbeat, so the status loop runs within a test (the Lease follows nodeLeaseDurationSeconds).
    "nodeStatusUpdateFrequency": "2s",
    "nodeLeaseDurationSeconds": 8,
}
TOPOLOGY = {"synthetic": {"sockets": 2, "coresPerSocket": 4, "threadsPerCore": 2, "nodesPerSocket": 1,
                          "memoryGiBPerNode": 16}}  # fmt: skip
REFUSAL = "Pod was rejected: Resources cannot be allocated with Topology locality"
PREEMPTED_MESSAGE = "Preempted in order to admit critical pod"  # the kubelet's, pkg/kubelet/preemption


def wait_for(what: str, probe: Callable[[], Any], timeout: float = WAIT) -> Any:
    return _wait_for(what, probe, timeout)


def nodes_file(
    directory: Path,
    group: str,
    count: int = 1,
    config: dict[str, Any] = KUBELET_CONFIG,
    label: str = "kubeletemu-e2e",
    latency: str = "500ms",
) -> Path:
    """A Nodes file of one group (its nodes labelled ``label: group``), kubelet 1.36."""
    spec = {
        "apiVersion": "kubeletemu.io/v1alpha1",
        "kind": "Nodes",
        "nodeGroups": [
            {
                "name": group,
                "count": count,
                "topology": TOPOLOGY,
                "config": config,
                "labels": {label: group},
                "kubeletVersion": "1.36",
                "startupLatency": {"fixed": latency},
            }
        ],
    }
    path = directory / f"{group}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


class NodesProcess:
    """``kubeletemu nodes`` as a user starts it: the CLI in its own process."""

    def __init__(self, spec: Path, kubeconfig: Path, state_dir: Path) -> None:
        self.spec, self.kubeconfig, self.state_dir = spec, kubeconfig, state_dir
        self.log = state_dir.parent / f"{spec.stem}.log"
        self.err = state_dir.parent / f"{spec.stem}.err"
        self.popen: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "kubeletemu", "nodes", "-f", str(self.spec), "--kubeconfig",
                str(self.kubeconfig), "--state-dir", str(self.state_dir), "--announce"]  # fmt: skip

    def start(self) -> NodesProcess:
        with open(self.log, "ab") as out, open(self.err, "wb") as err:
            self.popen = subprocess.Popen(self.argv(), stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        wait_for("every node joined", self._joined)
        assert self.popen is not None
        assert ignores_sigpipe(self.popen.pid), "a peer gone mid-write would kill the agent (SIGPIPE)"
        return self

    def _joined(self) -> bool | None:
        assert self.popen is not None
        if self.popen.poll() is not None:
            raise AssertionError(f"kubeletemu nodes exited {self.popen.returncode}: {self.err.read_text()}")
        return True if "joined" in self.err.read_text() else None

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                assert self.popen.wait(30) == 0, self.err.read_text()
            finally:
                if self.popen.poll() is None:
                    self.popen.kill()


@pytest.fixture
def start_nodes(cluster: ControlPlane, tmp_path: Path) -> Iterator[Callable[..., NodesProcess]]:
    """Starts ``kubeletemu nodes`` for a group of its own (unique names: the nodes of one test never take
    another's pods); stops it and deletes its Node objects afterwards."""
    started: list[tuple[NodesProcess, str]] = []

    def start(count: int = 1, kubeconfig: Path | None = None) -> NodesProcess:
        group = f"n{uuid.uuid4().hex[:6]}"
        process = NodesProcess(nodes_file(tmp_path, group, count), kubeconfig or cluster.kubeconfig,
                               tmp_path / f"state-{group}")  # fmt: skip
        started.append((process, group))
        return process.start()

    yield start
    for process, group in started:
        process.stop()
        cluster.kubectl("delete", "node", "-l", f"kubeletemu-e2e={group}", "--wait=false", check=False)


def group_of(process: NodesProcess) -> str:
    return process.spec.stem


def pod(name: str, group: str, cpus: int, *, node: str | None = None) -> str:
    """A Guaranteed pod for the group's nodes (its label), or bound to ``node`` directly."""
    resources = {"cpu": str(cpus), "memory": "1Gi"}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": resources, "limits": resources}}],
        "terminationGracePeriodSeconds": 30,
    }  # fmt: skip
    if node is None:
        spec["nodeSelector"] = {"kubeletemu-e2e": group}
    else:
        spec["nodeName"] = node
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
                       "spec": spec})  # fmt: skip


def get(
    plane: ControlPlane, kind: str, name: str, namespace: str | None = NAMESPACE
) -> dict[str, Any] | None:
    args = ["get", kind, name, "-o", "json"] + (["-n", namespace] if namespace else [])
    result = plane.kubectl(*args, check=False)
    if result.returncode != 0:
        assert "NotFound" in result.stderr, result.stderr
        return None
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def phase_of(plane: ControlPlane, name: str, phase: str) -> dict[str, Any] | None:
    found = get(plane, "pod", name)
    return found if found is not None and found.get("status", {}).get("phase") == phase else None


def gone(plane: ControlPlane, name: str) -> bool | None:
    return True if get(plane, "pod", name) is None else None


def node_ready(plane: ControlPlane, name: str) -> dict[str, Any] | None:
    node = get(plane, "node", name, None)
    if node is None:
        return None
    ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
    return node if ready and ready[0]["status"] == "True" else None


def amounts(resources: dict[str, str]) -> dict[str, object]:
    return {name: Quantity.parse(text).amount for name, text in resources.items()}


def renewed(plane: ControlPlane, node: str, before: dict[str, Any]) -> bool | None:
    lease = get(plane, "lease", node, "kube-node-lease")
    return True if lease is not None and lease["spec"]["renewTime"] != before["spec"]["renewTime"] else None


def create(plane: ControlPlane, manifest: str) -> None:
    plane.kubectl("create", "-f", "-", input=manifest)


def test_nodes_join_ready_with_the_kubelets_capacity(
    cluster: ControlPlane, start_nodes: Callable[..., NodesProcess]
) -> None:
    process = start_nodes(count=2)
    group = group_of(process)
    member = load_nodes(process.spec).groups[0]
    emulator = NodeEmulator(parse_config(yaml.safe_dump(KUBELET_CONFIG)), member.group.topology.machine())
    for name in (f"{group}-000", f"{group}-001"):
        node = wait_for(f"{name} Ready", lambda name=name: node_ready(cluster, name))
        # Compared as amounts: the API server re-reads a plain number as DecimalSI ("96636764000" comes
        # back "96636764k"), as it does the real kubelet's.
        assert amounts(node["status"]["allocatable"]) == amounts(
            resource_list(emulator.allocatable.allocatable)
        )
        assert amounts(node["status"]["capacity"]) == amounts(resource_list(emulator.allocatable.capacity))
        assert node["status"]["allocatable"]["cpu"] == "15"
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.36.0-kubeletemu"
        assert node["metadata"]["labels"]["kubeletemu-e2e"] == group
        lease = get(cluster, "lease", name, "kube-node-lease")
        assert lease is not None and lease["spec"]["holderIdentity"] == name
        assert lease["spec"]["leaseDurationSeconds"] == 8
        assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    # The Lease is renewed every quarter of its duration: 2 s here.
    first = get(cluster, "lease", f"{group}-000", "kube-node-lease")
    assert first is not None
    wait_for("a renewal", lambda: renewed(cluster, f"{group}-000", first), timeout=30)
    # What a person sees: kubectl get nodes says Ready.
    table = cluster.kubectl("get", "nodes", "-l", f"kubeletemu-e2e={group}", "--no-headers").stdout
    assert [line.split()[1] for line in table.splitlines()] == ["Ready", "Ready"]


def test_the_scheduler_binds_and_the_pod_runs_or_is_refused(
    cluster: ControlPlane, start_nodes: Callable[..., NodesProcess]
) -> None:
    process = start_nodes()
    group = group_of(process)
    node = f"{group}-000"
    create(cluster, pod(f"{group}-fits", group, 4))
    running = wait_for("the pod Running", lambda: phase_of(cluster, f"{group}-fits", "Running"))
    assert running["spec"]["nodeName"] == node  # bound by the real kube-scheduler
    status = running["status"]
    assert status["qosClass"] == "Guaranteed" and status["hostIP"] == "10.128.0.1"
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"PodScheduled": "True", "PodReadyToStartContainers": "True", "Initialized": "True",
                          "Ready": "True", "ContainersReady": "True"}  # fmt: skip
    assert status["containerStatuses"][0]["state"]["running"]["startedAt"]

    # 9 CPUs: the scheduler counts 11 left and binds it; no NUMA node has 9 free: the kubelet refuses it.
    create(cluster, pod(f"{group}-refused", group, 9))
    failed = wait_for("the pod Failed", lambda: phase_of(cluster, f"{group}-refused", "Failed"))
    assert failed["spec"]["nodeName"] == node
    assert (failed["status"]["reason"], failed["status"]["message"]) == ("TopologyAffinityError", REFUSAL)
    selector = f"involvedObject.name={group}-refused,reason=TopologyAffinityError"
    events = cluster.get_json("events", "-n", NAMESPACE, "--field-selector", selector)
    [event] = events["items"]  # type: ignore[misc]
    assert event["type"] == "Warning" and event["source"] == {"component": "kubelet", "host": node}
    assert event["message"] == "Resources cannot be allocated with Topology locality"
    # kubectl shows it as a person reads it.
    line = cluster.kubectl("get", "pod", f"{group}-refused", "-n", NAMESPACE, "--no-headers").stdout
    assert line.split()[2] == "TopologyAffinityError"


def test_deletion_completes_and_frees(
    cluster: ControlPlane, start_nodes: Callable[..., NodesProcess]
) -> None:
    """An 8-CPU pod takes NUMA node 1; a second one waits (7 CPUs left as the scheduler counts). Deleting
    the first completes (the node deletes the object with grace 0 once its containers stopped), and the
    second is bound and admitted on NUMA node 1 again: the node released it (NUMA node 0 has 7)."""
    process = start_nodes()
    group = group_of(process)
    create(cluster, pod(f"{group}-first", group, 8))
    wait_for("the first pod Running", lambda: phase_of(cluster, f"{group}-first", "Running"))
    create(cluster, pod(f"{group}-second", group, 8))
    time.sleep(3)
    second = get(cluster, "pod", f"{group}-second")
    assert second is not None and not second["spec"].get("nodeName")  # unschedulable: 7 CPUs left
    cluster.kubectl("delete", "pod", f"{group}-first", "-n", NAMESPACE, "--timeout=60s")  # returns when gone
    assert get(cluster, "pod", f"{group}-first") is None
    wait_for("the second pod Running", lambda: phase_of(cluster, f"{group}-second", "Running"))


def test_a_restart_loses_nothing(cluster: ControlPlane, start_nodes: Callable[..., NodesProcess]) -> None:
    """Stopped with a pod Running on NUMA node 1 and a pod deleted while it is down, restarted from its
    state directory: the pod still runs, the deleted one is released and its object deleted, and an 8-CPU
    pod bound to the node directly is refused (NUMA node 1 is still held), not admitted on a fresh node."""
    process = start_nodes()
    group = group_of(process)
    node = f"{group}-000"
    create(cluster, pod(f"{group}-kept", group, 8))
    kept = wait_for("the kept pod Running", lambda: phase_of(cluster, f"{group}-kept", "Running"))
    create(cluster, pod(f"{group}-dropped", group, 2))
    wait_for("the dropped pod Running", lambda: phase_of(cluster, f"{group}-dropped", "Running"))
    process.stop()
    cluster.kubectl("delete", "pod", f"{group}-dropped", "-n", NAMESPACE, "--wait=false")
    process.start()
    wait_for(f"{node} Ready", lambda: node_ready(cluster, node))
    wait_for("the dropped pod gone", lambda: gone(cluster, f"{group}-dropped"))
    again = phase_of(cluster, f"{group}-kept", "Running")
    assert again is not None and again["metadata"]["uid"] == kept["metadata"]["uid"]
    # 8 CPUs fit NUMA node 0 after the release of the dropped pod? No: 7 there, NUMA node 1 held by "kept".
    create(cluster, pod(f"{group}-late", group, 8, node=node))
    late = wait_for("the late pod Failed", lambda: phase_of(cluster, f"{group}-late", "Failed"))
    assert late["status"]["reason"] == "TopologyAffinityError"
    # And what the dropped pod held is free again: 7 CPUs on NUMA node 0.
    create(cluster, pod(f"{group}-seven", group, 7, node=node))
    wait_for("the 7-CPU pod Running", lambda: phase_of(cluster, f"{group}-seven", "Running"))


def test_a_critical_pod_preempts_as_the_kubelet_does(
    cluster: ControlPlane, start_nodes: Callable[..., NodesProcess]
) -> None:
    """The node full (an 8-CPU and a 7-CPU pod: 15 of 15 CPUs requested), a ``system-node-critical`` pod of
    500m bound to it directly fails the resource fit, so the kubelet preempts (``evictPodsToFreeRequests``):
    the victim nearest to what is missing, the 7-CPU pod, is Failed with ``Preempting``, its Warning Event and
    the ``DisruptionTarget`` condition; the critical pod runs; the 8-CPU pod keeps running."""
    process = start_nodes()
    group = group_of(process)
    node = f"{group}-000"
    create(cluster, pod(f"{group}-eight", group, 8, node=node))
    create(cluster, pod(f"{group}-seven", group, 7, node=node))
    for name in ("eight", "seven"):
        wait_for(f"the {name} pod Running", lambda name=name: phase_of(cluster, f"{group}-{name}", "Running"))
    critical = json.loads(pod(f"{group}-critical", group, 1, node=node))
    critical["spec"]["priorityClassName"] = "system-node-critical"
    critical["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m", "memory": "100Mi"}}
    create(cluster, json.dumps(critical))
    wait_for("the critical pod Running", lambda: phase_of(cluster, f"{group}-critical", "Running"))
    victim = wait_for("the victim Failed", lambda: phase_of(cluster, f"{group}-seven", "Failed"))
    status = victim["status"]
    assert (status["reason"], status["message"]) == ("Preempting", PREEMPTED_MESSAGE)
    [target] = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "TerminationByKubelet")
    assert target["message"] == "Pod was preempted by Kubelet to accommodate a critical pod."
    selector = f"involvedObject.name={group}-seven,reason=Preempting"
    events = wait_for("the Preempting event", lambda: cluster.get_json(
        "events", "-n", NAMESPACE, "--field-selector", selector)["items"] or None)  # fmt: skip
    assert [(e["type"], e["message"]) for e in events] == [("Warning", PREEMPTED_MESSAGE)]
    assert phase_of(cluster, f"{group}-eight", "Running") is not None
    # What the victim held is free again: with the 500m pod's request, 6.5 CPUs are left; a 6-CPU pod runs.
    create(cluster, pod(f"{group}-six", group, 6, node=node))
    wait_for("the 6-CPU pod Running", lambda: phase_of(cluster, f"{group}-six", "Running"))


def watches(plane: ControlPlane, resource: str) -> int:
    """Watches of a resource the API server is serving now (its ``apiserver_longrunning_requests``)."""
    metrics = plane.kubectl("get", "--raw", "/metrics").stdout
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in metrics.splitlines()
        if line.startswith("apiserver_longrunning_requests{")
        and f'resource="{resource}"' in line
        and 'subresource=""' in line
        and 'verb="WATCH"' in line
    )


def connections_to(pid: int, port: int) -> int:
    """The process's established TCP connections to ``port`` on loopback."""
    return sum(
        1
        for c in psutil.Process(pid).net_connections("tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


def test_sixty_nodes_share_one_watch_and_one_connection(
    cluster: ControlPlane, start_nodes: Callable[..., NodesProcess]
) -> None:
    """60 nodes in one process hold one pod watch, one Node watch and one connection between them (a
    kubelet each would hold 60 of each watch, each kubelet its own connection), all report Ready, and
    each pod bound to one of them is admitted by that node alone: its own address in the status, its own
    NUMA state deciding."""
    before = {kind: watches(cluster, kind) for kind in ("pods", "nodes")}
    process = start_nodes(count=60)
    assert process.popen is not None
    group = group_of(process)
    table = cluster.kubectl("get", "nodes", "-l", f"kubeletemu-e2e={group}", "--no-headers").stdout
    assert [line.split()[1] for line in table.splitlines()] == ["Ready"] * 60
    assert {kind: watches(cluster, kind) - count for kind, count in before.items()} == {"pods": 1, "nodes": 1}
    assert connections_to(process.popen.pid, cluster.api_port) == 1
    # Nodes 0, 31 and 59 take an 8-CPU pod each (NUMA node 1); node 31 a second one, which only NUMA node
    # 0 could hold, and it has 7: refused there, by node 31's own state.
    for index in (0, 31, 59):
        create(cluster, pod(f"{group}-on{index}", group, 8, node=f"{group}-{index:03d}"))
    for index in (0, 31, 59):
        name = f"{group}-on{index}"
        running = wait_for(f"{name} Running", lambda name=name: phase_of(cluster, name, "Running"))
        assert running["status"]["hostIP"] == f"10.128.0.{index + 1}"
    create(cluster, pod(f"{group}-second", group, 8, node=f"{group}-031"))
    refused = wait_for("the second pod on node 31", lambda: phase_of(cluster, f"{group}-second", "Failed"))
    assert refused["status"]["reason"] == "TopologyAffinityError"
    assert watches(cluster, "pods") - before["pods"] == 1  # the pods' events came over the same watch


class Proxy:
    """A TCP forwarder on loopback between the nodes and the API server: cut, the API server is away for
    the nodes (connections reset, new ones refused) while it runs on for kubectl."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(512)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            if self._listener is not None:
                # shutdown() wakes the thread blocked in accept(); close() alone leaves that accept() to
                # take one more connection, which (one HTTP/2 connection carrying every request) would
                # end the outage at once.
                with contextlib.suppress(OSError):
                    self._listener.shutdown(socket.SHUT_RDWR)
                self._listener.close()
                self._listener = None
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self._sockets.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    return
                upstream = socket.create_connection(self.upstream)
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, target):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


def test_the_api_server_away_and_back(
    cluster: ControlPlane, start_nodes: Callable[..., NodesProcess], tmp_path: Path
) -> None:
    """The nodes reach the API server through a proxy that is cut for 12 s: meanwhile a running pod is
    deleted. Back, the nodes renew their Leases again, complete the deletion and admit a pod that needs
    what the deleted one held."""
    proxy = Proxy(("127.0.0.1", cluster.api_port))
    proxy.open()
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    kubeconfig = tmp_path / "through-proxy.kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    process = start_nodes(kubeconfig=kubeconfig)
    group = group_of(process)
    node = f"{group}-000"
    create(cluster, pod(f"{group}-before", group, 8))
    wait_for("the pod Running", lambda: phase_of(cluster, f"{group}-before", "Running"))
    proxy.cut()
    cluster.kubectl("delete", "pod", f"{group}-before", "-n", NAMESPACE, "--wait=false")
    time.sleep(12)
    assert get(cluster, "pod", f"{group}-before") is not None  # nobody completed the deletion
    lease = get(cluster, "lease", node, "kube-node-lease")
    assert lease is not None
    assert process.popen is not None and process.popen.poll() is None  # still running, still holding state
    proxy.open()
    wait_for("the deletion completed", lambda: gone(cluster, f"{group}-before"))
    wait_for("a renewal after the outage", lambda: renewed(cluster, node, lease))
    create(cluster, pod(f"{group}-after", group, 8, node=node))
    wait_for("the pod after Running", lambda: phase_of(cluster, f"{group}-after", "Running"))
    proxy.cut()


@pytest.mark.parametrize("fault", ["closed-port", "wrong-ca", "unknown-user", "missing-file"])
def test_a_wrong_kubeconfig_is_one_line(control_plane: ControlPlane, tmp_path: Path, fault: str) -> None:
    config = yaml.safe_load(control_plane.kubeconfig.read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    if fault == "closed-port":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        cluster["server"] = f"https://127.0.0.1:{port}"
    elif fault == "wrong-ca":
        cluster["certificate-authority"] = "/etc/ssl/certs/ca-certificates.crt"  # trusts no run's CA
    elif fault == "unknown-user":
        config["users"][0]["user"] = {"token": "not-a-token"}
    kubeconfig = tmp_path / "kubeconfig"
    if fault != "missing-file":
        kubeconfig.write_text(json.dumps(config))
    spec = nodes_file(tmp_path, "never")
    result = subprocess.run(
        [sys.executable, "-m", "kubeletemu", "nodes", "-f", str(spec), "--kubeconfig", str(kubeconfig),
         "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=120, env={**os.environ, "KUBECONFIG": ""},
    )  # fmt: skip
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kubeletemu: "), result.stderr
    assert result.returncode == (3 if fault == "closed-port" else 2)
    assert get(control_plane, "node", "never-000", None) is None
    expected = {"closed-port": "Connection refused", "wrong-ca": "CERTIFICATE_VERIFY_FAILED",
                "unknown-user": "Unauthorized", "missing-file": "no such file"}[fault]  # fmt: skip
    assert expected in lines[0]
    del user
