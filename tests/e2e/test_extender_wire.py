"""The extender wire's Go program (tests/extender/wire/) against the real kube-scheduler of each version: a
recording extender on loopback answers a real kube-scheduler's Filter, Prioritize, Preempt and Bind calls,
and every request it receives must be

- what `wire roundtrip` accepts: json.Marshal's form of the v1 type, byte for byte, at that version;
- what `wire encode-request` builds for the same pod, nodes and victims, byte for byte;
- posted to ``<urlPrefix>/<verb>`` with ``Content-Type: application/json``;

and the scheduler must act on the replies as the golden reads say: the node Filter failed is not sent to
Prioritize, and the node Prioritize ranked first (score × weight × 10 on top of the plugins' equal scores)
is the node Bind is asked for.

Three fake Node objects per version (a taint and a label keep every other test's pods off them), each with
one bound low-priority pod of 3 of its 4 CPUs:

- a high-priority pod of 2 CPUs fits no node: the in-tree preemption picks one victim per node and the
  extender's Preempt gets the three (it answers ``{}``: no preemption);
- a pod of 1 CPU fits every node: Filter gets all three, fails one, Prioritize gets the other two, Bind the
  one it scored 10.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.extender.gowire import NEWEST, SECOND, Wire, ensure
from tests.extender.wire_cases import OPT_IN
from tests.upstream import build, exporters, scheduler_plugins, schedulers
from tests.upstream.controlplane import ControlPlane, Process

pytestmark = pytest.mark.slow

NAMESPACE = "kubeletemu-wire"
LABEL = "kubeletemu.io/wire-capture"
HIGH_PRIORITY = "kubeletemu-wire-high"
WAIT = 90.0


@dataclass(frozen=True)
class Call:
    path: str
    content_type: str | None
    body: bytes


class RecordingExtender:
    """An HTTP extender on loopback that records every call and answers each verb with a fixed body."""

    def __init__(self, replies: dict[str, bytes]) -> None:
        self.replies = replies
        self.calls: list[Call] = []
        self.changed = threading.Condition()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                verb = self.path.rsplit("/", 1)[-1]
                with recorder.changed:
                    recorder.calls.append(Call(self.path, self.headers.get("Content-Type"), body))
                    recorder.changed.notify_all()
                reply = recorder.replies.get(verb)
                if reply is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the test reads the calls, not a log

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url_prefix(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/wire/"

    def first(self, verb: str, pod_uid: str, timeout: float = WAIT) -> Call:
        """The first call of ``verb`` about the pod of ``pod_uid``."""

        def about(call: Call) -> bool:
            if not call.path.endswith("/" + verb):
                return False
            args = json.loads(call.body)
            uid = args["PodUID"] if verb == "bind" else args["Pod"]["metadata"]["uid"]
            return bool(uid == pod_uid)

        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = next((c for c in self.calls if about(c)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                assert left > 0, f"no {verb} call for pod {pod_uid} in {timeout:.0f} s: {self.calls!r}"
                self.changed.wait(left)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _node(name: str, group: str) -> dict[str, Any]:
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {LABEL: group}},
        "spec": {"taints": [{"key": LABEL, "value": group, "effect": "NoSchedule"}]},
        "status": {"capacity": resources, "allocatable": resources},
    }


def _pod(name: str, group: str, cpus: str, *, scheduler: str, node: str | None = None) -> dict[str, Any]:
    """A Guaranteed pod on the group's nodes; tolerating every taint (the node lifecycle controller's too,
    when a controller manager of this worker marks the fake nodes unreachable)."""
    resources: dict[str, str] = {"cpu": cpus, "memory": "1Gi"}
    if node is None:
        resources[OPT_IN] = "1"  # the extender's managed resource: it is asked about this pod
    spec: dict[str, Any] = {
        "containers": [
            {"name": "app", "image": "registry.k8s.io/pause:3.10", "resources": {"limits": resources}}
        ],
        "tolerations": [{"operator": "Exists"}],
        "nodeSelector": {LABEL: group},
        "schedulerName": scheduler,
    }
    if node is None:
        spec["priorityClassName"] = HIGH_PRIORITY
    else:
        spec["nodeName"] = node
    metadata = {"name": name, "namespace": NAMESPACE, "labels": {LABEL: group}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _create(plane: ControlPlane, obj: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = json.loads(
        plane.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(obj)).stdout
    )
    return created


def _scheduler_binary(version: str) -> Path:
    if version == NEWEST.version:
        return build.ensure(None, ["kube-scheduler"]).path("kube-scheduler")
    return scheduler_plugins.ensure().path(scheduler_plugins.KUBE_SCHEDULER)


@dataclass(frozen=True)
class Setup:
    """A group's three nodes, each with its bound low-priority pod, and a kube-scheduler of one version whose
    profile ``name`` has the recording extender (node-cache mode, every verb, weight 1)."""

    plane: ControlPlane
    group: str
    name: str  # the scheduler's schedulerName
    nodes: list[str]
    victims: dict[str, dict[str, Any]]  # node -> its bound low-priority pod, as the API server holds it
    extender: RecordingExtender
    scheduler: Process

    def create_pod(self, prefix: str, cpus: str) -> dict[str, Any]:
        """A high-priority pod of the group for this scheduler, asking the extender (its managed resource)."""
        return _create(self.plane, _pod(f"{prefix}-{self.group}", self.group, cpus, scheduler=self.name))


@contextlib.contextmanager
def _setup(plane: ControlPlane, version: str, replies: dict[str, bytes]) -> Iterator[Setup]:
    group = f"w{uuid.uuid4().hex[:6]}"
    nodes = [f"{group}-{index}" for index in range(3)]
    plane.namespace_with_account(NAMESPACE)
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": HIGH_PRIORITY},
        "value": 1000,
    }
    result = plane.kubectl("create", "-f", "-", input=json.dumps(priority_class), check=False)
    assert result.returncode == 0 or "AlreadyExists" in result.stderr, result.stderr
    extender = RecordingExtender(replies)
    name = f"wire-{group}"
    config = schedulers.default_config(plane.kubeconfig, name)
    config["extenders"] = [
        {
            "urlPrefix": extender.url_prefix,
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "preemptVerb": "preempt",
            "bindVerb": "bind",
            "weight": 1,
            "nodeCacheCapable": True,
            "managedResources": [{"name": OPT_IN, "ignoredByScheduler": True}],
        }
    ]
    path = schedulers.write(config, plane.workdir / f"{name}.config.json")
    scheduler: Process | None = None
    try:
        for node in nodes:
            _create(plane, _node(node, group))
        victims = {
            node: _create(plane, _pod(f"low-{node}", group, "3", scheduler=name, node=node)) for node in nodes
        }
        scheduler = plane.start_scheduler([f"--config={path}"], binary=_scheduler_binary(version), name=name)
        yield Setup(plane, group, name, nodes, victims, extender, scheduler)
    finally:
        if scheduler is not None:
            plane.stop_process(scheduler)
        extender.stop()
        plane.kubectl(
            "-n", NAMESPACE, "delete", "pods", "-l", f"{LABEL}={group}", "--wait=false", check=False
        )
        for node in nodes:
            plane.kubectl("delete", "node", node, "--wait=false", check=False)


PINS = [NEWEST, SECOND]
VERSION_IDS = [pin.version for pin in PINS]


@dataclass(frozen=True)
class Capture:
    wire: Wire
    setup: Setup
    preempt: Call
    filter: Call
    prioritize: Call
    bind: Call
    failed: str  # the node the Filter reply fails
    top: str  # the node the Prioritize reply scores 10


@pytest.fixture(scope="module", params=PINS, ids=VERSION_IDS)
def capture(request: pytest.FixtureRequest, control_plane: ControlPlane) -> Iterator[Capture]:
    pin = request.param
    replies = {"preempt": b'{"NodeNameToMetaVictims":{}}', "bind": b'{"Error":""}'}
    with _setup(control_plane, pin.version, replies) as setup:
        failed, second, top = setup.nodes
        replies["filter"] = json.dumps(
            {"NodeNames": [second, top], "FailedNodes": {failed: "refused"}}
        ).encode()
        replies["prioritize"] = json.dumps(
            [{"Host": second, "Score": 0}, {"Host": top, "Score": 10}]
        ).encode()
        # The preemptor first, alone: no Bind has assumed a pod on a node yet, so each node's victim is its
        # one low-priority pod. Deleted once Preempt was called (it would be retried with backoff).
        preemptor = setup.create_pod("high", "2")
        preempt = setup.extender.first("preempt", preemptor["metadata"]["uid"])
        control_plane.kubectl("-n", NAMESPACE, "delete", "pod", preemptor["metadata"]["name"], "--wait=false")
        uid = setup.create_pod("fit", "1")["metadata"]["uid"]
        calls = [setup.extender.first(verb, uid) for verb in ("filter", "prioritize", "bind")]
        yield Capture(ensure(pin), setup, preempt, *calls, failed, top)


def _calls(capture: Capture) -> dict[str, Call]:
    return {
        "preempt": capture.preempt,
        "filter": capture.filter,
        "prioritize": capture.prioritize,
        "bind": capture.bind,
    }


def test_requests_are_gos_encoding_of_the_v1_types(capture: Capture) -> None:
    for verb, call in _calls(capture).items():
        assert call.path == f"/wire/{verb}"
        assert call.content_type == "application/json"
        capture.wire.roundtrip("request", verb, call.body)


def test_requests_are_what_the_wire_program_builds(capture: Capture) -> None:
    filter_args = json.loads(capture.filter.body)
    pod = filter_args["Pod"]
    assert sorted(filter_args["NodeNames"]) == capture.setup.nodes
    filter_desc = {"pod": pod, "nodes": filter_args["NodeNames"]}
    assert capture.filter.body == capture.wire.encode_request("filter", filter_desc)
    # Prioritize gets the nodes Filter passed: not the failed one.
    prioritize_args = json.loads(capture.prioritize.body)
    assert sorted(prioritize_args["NodeNames"]) == [n for n in capture.setup.nodes if n != capture.failed]
    prioritize_desc = {"pod": pod, "nodes": prioritize_args["NodeNames"]}
    assert capture.prioritize.body == capture.wire.encode_request("prioritize", prioritize_desc)
    # Bind is asked for the node Prioritize scored 10 (100 on top of the plugins' equal scores).
    assert capture.bind.body == capture.wire.encode_request("bind", {"pod": pod, "node": capture.top})
    preemptor = json.loads(capture.preempt.body)["Pod"]
    victims = {node: {"Pods": [pod], "NumPDBViolations": 0} for node, pod in capture.setup.victims.items()}
    preempt_desc = {"pod": preemptor, "nodeNameToVictims": victims}
    assert capture.preempt.body == capture.wire.encode_request("preempt", preempt_desc)


@pytest.mark.parametrize("pin", PINS, ids=VERSION_IDS)
def test_a_null_meta_victims_makes_kube_scheduler_exit(
    pin: exporters.ExporterPin, control_plane: ControlPlane
) -> None:
    """golden preempt-nil-victims: convertToVictims dereferences a node's null MetaVictims, in the scheduling
    goroutine, and HandleCrash re-raises the panic: the process exits."""
    replies = {"filter": b"{}", "prioritize": b"[]", "bind": b"{}"}
    with _setup(control_plane, pin.version, replies) as setup:
        replies["preempt"] = json.dumps({"NodeNameToMetaVictims": {setup.nodes[0]: None}}).encode()
        preemptor = setup.create_pod("high", "2")
        setup.extender.first("preempt", preemptor["metadata"]["uid"])
        code = setup.scheduler.popen.wait(WAIT)
        assert code != 0
        log = setup.scheduler.log.read_text(errors="replace")
        assert "invalid memory address or nil pointer dereference" in log, setup.scheduler.tail()
        assert "convertToVictims" in log, setup.scheduler.tail()
