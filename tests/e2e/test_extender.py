"""The real kube-scheduler asks ``kubeletemu extender`` over mutual TLS, configured with the
KubeSchedulerConfiguration snippet of docs/extender.md: pods that opt in through an extended resource the
scheduler ignores are placed only where the node's kubelet admits them, and the ledger counts the pods
placed but not yet reported by the node's agent.

The test is the nodes' agent: it feeds the extender's mirrors with real ``NodeEmulator`` states (here it
never reports the pods it sees bound, so only the ledger counts them). One node of two NUMA nodes (3 and 4
CPUs to give, 7 allocatable): pods of 2 and then 3 CPUs take one NUMA node each, leaving 1 CPU on each;
a third pod of 2 CPUs fits the node's allocatable (NodeResourcesFit passes it) but no NUMA node, and stays
Pending with the kubelet's TopologyAffinityError. So does a 5-CPU pod (first, on the empty node), wider
than any NUMA node. At two kube-scheduler versions: the control plane's (the newest pinned) and
scheduler-plugins' Kubernetes release's (tests/upstream/pins.py), each with its own node and namespace.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hostprobe.synthetic import GIB_KIB, SyntheticHost
from kubeletemu.config import parse_config as parse_kubelet_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.extender.config import parse_config
from kubeletemu.extender.server import ExtenderServer
from kubeletemu.manifest import pod_from_manifest
from tests.e2e.test_control_plane import _wait_for
from tests.nodes import kubelet_config, probe_machine
from tests.upstream import build, scheduler_plugins, schedulers
from tests.upstream.controlplane import ControlPlane, Process

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# The newest kube-scheduler (the control plane's) and scheduler-plugins' Kubernetes release's.
VERSIONS = ("newest", "scheduler-plugins")
OPT_IN = "kubeletemu.io/exact-numa"
HOST = SyntheticHost(
    sockets=2, cores_per_socket=2, threads_per_core=2, nodes_per_socket=1, node_memory_kib=4 * GIB_KIB
)
KUBELET = kubelet_config(
    "single-numa-node", managers='cpuManagerPolicy: static\nkubeReserved: {cpu: "1", memory: 512Mi}\n'
)


class ThreadedExtender:
    """The extender's real server on its own event loop in a thread; ``call`` runs a function there (the
    mirrors are the loop's)."""

    def __init__(self, server: ExtenderServer) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="extender", daemon=True)

    def start(self) -> int:
        self.thread.start()
        return asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(30)

    def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        async def run() -> Any:
            return function(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(30)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


def docs_scheduler_extender() -> dict[str, Any]:
    """The ``extenders`` entry of docs/extender.md's KubeSchedulerConfiguration snippet."""
    page = (REPO / "docs" / "extender.md").read_text()
    [snippet] = [
        b for b in re.findall(r"```yaml\n(.*?)\n```", page, re.DOTALL) if "KubeSchedulerConfiguration" in b
    ]
    [extender] = yaml.safe_load(snippet)["extenders"]
    assert isinstance(extender, dict)
    return extender


@dataclass(frozen=True)
class Names:
    """One version's own namespace, node and scheduler name: the versions run side by side."""

    version: str

    @property
    def namespace(self) -> str:
        return f"extender-e2e-{self.version}"

    @property
    def node(self) -> str:
        return f"extender-e2e-{self.version}-000"

    @property
    def scheduler(self) -> str:
        return f"kubeletemu-exact-{self.version}"


@pytest.fixture(scope="module", params=VERSIONS)
def names(request: pytest.FixtureRequest) -> Names:
    return Names(request.param)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> NodeEmulator:
    return NodeEmulator(parse_kubelet_config(KUBELET), probe_machine(tmp_path_factory.mktemp("host"), HOST))


@pytest.fixture(scope="module")
def extender(control_plane: ControlPlane, emulator: NodeEmulator, names: Names) -> Iterator[ThreadedExtender]:
    creds = control_plane.creds
    text = (
        "apiVersion: kubeletemu.io/v1alpha1\nkind: Extender\nlisten: 127.0.0.1:0\npathPrefix: /kubeletemu\n"
        f"tls: {{certFile: {creds.serving_cert}, keyFile: {creds.serving_key}, "
        f"clientCAFile: {creds.ca_cert}}}\n"
        f"optInResources: [{OPT_IN}]\nstaleAfter: 1h\nledger: {{ttl: 1h}}\n"
        f"bind: {{enabled: true, kubeconfig: {control_plane.kubeconfig}}}\n"
    )
    threaded = ThreadedExtender(ExtenderServer(parse_config(text)))
    threaded.start()
    threaded.call(threaded.server.mirrors.apply, names.node, 1, emulator.fork())
    try:
        yield threaded
    finally:
        threaded.stop()


@pytest.fixture(scope="module")
def exact_scheduler(
    request: pytest.FixtureRequest, control_plane: ControlPlane, extender: ThreadedExtender, names: Names
) -> Iterator[Process]:
    """kube-scheduler (the version's) under the version's schedulerName, with the docs' extender entry
    pointed at the extender and the control plane's CA and admin certificate."""
    binary = None
    if names.version == "scheduler-plugins":
        assets: build.Assets = request.getfixturevalue("scheduler_plugins_assets")
        binary = assets.path(scheduler_plugins.KUBE_SCHEDULER)
    entry = docs_scheduler_extender()
    entry["urlPrefix"] = f"https://127.0.0.1:{extender.server.port}/kubeletemu"
    creds = control_plane.creds
    entry["tlsConfig"] = {
        "caFile": str(creds.ca_cert),
        "certFile": str(creds.admin_cert),
        "keyFile": str(creds.admin_key),
    }
    config = schedulers.default_config(control_plane.kubeconfig, names.scheduler)
    config["extenders"] = [entry]
    path = schedulers.write(config, control_plane.workdir / f"{names.scheduler}.config.json")
    process = control_plane.start_scheduler([f"--config={path}"], binary=binary, name=names.scheduler)
    try:
        yield process
    finally:
        control_plane.stop_process(process)


@pytest.fixture(scope="module")
def node(control_plane: ControlPlane, emulator: NodeEmulator, names: Names) -> Iterator[str]:
    """The Node object of the emulated node: its allocatable, Ready, labelled for the test's pods."""
    control_plane.namespace_with_account(names.namespace)
    labels = {"extender-e2e": names.version}
    manifest = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": names.node, "labels": labels}}
    control_plane.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    resources = {name: str(q) for name, q in emulator.allocatable.allocatable.items()} | {"pods": "110"}
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "e2e",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    status = {"status": {"capacity": resources, "allocatable": resources, "conditions": [ready]}}
    control_plane.kubectl(
        "patch", "node", names.node, "--subresource=status", "--type=merge", "-p", json.dumps(status)
    )
    try:
        yield names.node
    finally:
        control_plane.kubectl("delete", "namespace", names.namespace, "--wait=false", check=False)
        control_plane.kubectl("delete", "node", names.node, "--wait=false", check=False)


def pod_manifest(names: Names, name: str, cpus: int) -> dict[str, Any]:
    resources = {"cpu": str(cpus), "memory": "256Mi", OPT_IN: "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": names.namespace},
        "spec": {
            "schedulerName": names.scheduler,
            "nodeSelector": {"extender-e2e": names.version},
            # The node has no kubelet keeping it Ready: the API server's admission taints a new node
            # not-ready, and a node lifecycle controller (if one runs) would mark it unreachable.
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
            ],
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": resources, "limits": resources},
                }
            ],
        },
    }


def _pod(plane: ControlPlane, names: Names, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        plane.kubectl("-n", names.namespace, "get", "pod", name, "-o", "json").stdout
    )
    return found


def _bound(plane: ControlPlane, names: Names, name: str) -> str | None:
    node_name = _pod(plane, names, name)["spec"].get("nodeName")
    return str(node_name) if node_name else None


def _unschedulable(plane: ControlPlane, names: Names, name: str) -> str | None:
    for condition in _pod(plane, names, name).get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return str(condition.get("message", ""))
    return None


def test_real_scheduler_places_only_where_the_kubelet_admits(
    control_plane: ControlPlane,
    node: str,
    exact_scheduler: Process,
    extender: ThreadedExtender,
    emulator: NodeEmulator,
    names: Names,
) -> None:
    def explain() -> str:
        return f"\n{exact_scheduler.name} log:\n{exact_scheduler.tail(30)}"

    def unschedulable_for_topology(name: str, cpus: int) -> None:
        control_plane.kubectl("apply", "-f", "-", input=json.dumps(pod_manifest(names, name, cpus)))
        message = _wait_for(f"pod {name} unschedulable", lambda: _unschedulable(control_plane, names, name))
        assert "TopologyAffinityError" in message, message + explain()
        assert _bound(control_plane, names, name) is None

    # Wider than any NUMA node, within the node's allocatable.
    unschedulable_for_topology("too-wide", 5)

    placed: list[dict[str, Any]] = []
    for name, cpus in (("two", 2), ("three", 3)):
        control_plane.kubectl("apply", "-f", "-", input=json.dumps(pod_manifest(names, name, cpus)))
        try:
            assert _wait_for(f"pod {name} bound", lambda n=name: _bound(control_plane, names, n)) == node
        except AssertionError as err:
            raise AssertionError(f"{err}{explain()}") from None
        placed.append(_pod(control_plane, names, name))
    # The agent has reported neither: the ledger holds both, on the node.
    entries = extender.call(lambda: {uid: e.node for uid, e in extender.server.ledger.entries.items()})
    assert entries == {p["metadata"]["uid"]: node for p in placed}
    # 2 + 3 + 2 CPUs fit the node's 7 allocatable, but 1 CPU is left on each NUMA node.
    unschedulable_for_topology("two-more", 2)

    # The node's kubelet agrees: it admits the two placed pods and would refuse the third.
    node_state = emulator.fork()
    for pod in placed:
        assert node_state.admit(pod_from_manifest(pod)).admitted
    refused = node_state.would_admit(pod_from_manifest(_pod(control_plane, names, "two-more")))
    assert (refused.admitted, refused.reason) == (False, "TopologyAffinityError")


def test_bind_creates_the_binding_on_the_api_server(
    control_plane: ControlPlane, node: str, extender: ThreadedExtender, names: Names
) -> None:
    """Bind (enabled here; the docs' scheduler entry leaves it to the scheduler): the pod is bound as
    DefaultBinder binds it; a second Bind of the same pod is the API server's refusal in ``Error``."""
    manifest = pod_manifest(names, "bound-by-extender", 1)
    manifest["spec"]["schedulerName"] = "nobody"  # no scheduler takes it
    control_plane.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    pod = _pod(control_plane, names, "bound-by-extender")
    body = json.dumps(
        {
            "PodName": "bound-by-extender",
            "PodNamespace": names.namespace,
            "PodUID": pod["metadata"]["uid"],
            "Node": node,
        }
    )
    context = ssl.create_default_context(cafile=str(control_plane.creds.ca_cert))
    context.load_cert_chain(str(control_plane.creds.admin_cert), str(control_plane.creds.admin_key))

    def bind() -> dict[str, Any]:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", extender.server.port, context=context, timeout=30
        )
        connection.request("POST", "/kubeletemu/bind", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        assert response.status == 200
        result: dict[str, Any] = json.loads(response.read())
        connection.close()
        return result

    assert bind() == {"Error": ""}
    assert _bound(control_plane, names, "bound-by-extender") == node
    again = bind()["Error"]
    assert again.startswith(f"binding {names.namespace}/bound-by-extender to {node}: 409 Conflict"), again
