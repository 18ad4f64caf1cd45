"""Property-based fuzzing of the gRPC API with manifests and structured pods, through the real daemon.

Every input is answered OK or ``INVALID_ARGUMENT``; an invalid one names the field at fault (a pod built
valid then broken in one place names that place). A WouldAdmit, and an Admit that is refused (invalid,
or not admitted), leave ListPods and every file of the state directory byte-identical."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import grpc
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc
from tests.daemon.daemon_process import DaemonProcess
from tests.daemon.state_checks import file_hashes
from tests.daemon.test_daemon_admission import admit, pod_yaml

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]

EXAMPLES = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
# What a message names when the text is no pod at all: the YAML error (and its position), the document
# that is no object, or how many pods there were.
WHOLE_DOCUMENT = re.compile(
    r"invalid YAML: |\(document \d+\): expected a Kubernetes object|must hold exactly one pod"
)
FIELD = re.compile(r"\b(apiVersion|kind|metadata|spec)(\.[A-Za-z]+|\[\d+\])*[.:\[]")

RESOURCES = ["cpu", "memory", "example.com/dev", "hugepages-2Mi", "ephemeral-storage"]
GOOD_QUANTITY = {
    "cpu": ["1", "2", "500m", "250m", "3"],
    "memory": ["64Mi", "128Mi", "1Gi", "100M", "2Gi"],
    "example.com/dev": ["1", "2"],
    "hugepages-2Mi": ["2Mi", "4Mi"],
    "ephemeral-storage": ["1Gi"],
}
BAD_QUANTITY = ["abc", "1.2.3", "--1", "1Ki1", "", "1m1", "NaN", "1ki"]


@st.composite
def containers(draw: st.DrawFn, prefix: str, count: tuple[int, int]) -> list[dict[str, Any]]:
    """Valid containers: hugepages come with memory, and like devices only as limits (not overcommitable)."""
    out = []
    for i in range(draw(st.integers(*count))):
        names = set(draw(st.lists(st.sampled_from(RESOURCES), max_size=3, unique=True)))
        if "hugepages-2Mi" in names:
            names.add("memory")
        amounts = {r: draw(st.sampled_from(GOOD_QUANTITY[r])) for r in sorted(names)}
        limits = bool(names & {"hugepages-2Mi", "example.com/dev"}) or draw(st.booleans())
        out.append({"name": f"{prefix}{i}", "resources": {"limits" if limits else "requests": amounts}})
    return out


@st.composite
def valid_pods(draw: st.DrawFn, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": draw(containers("c", (1, 3)))}
    init = draw(containers("i", (0, 2)))
    if init:
        if draw(st.booleans()):
            init[0]["restartPolicy"] = "Always"
        spec["initContainers"] = init
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": draw(st.sampled_from(["default", "fuzz", "kube-system"])),
    }
    if draw(st.booleans()):
        metadata["uid"] = f"uid-{name}"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _set(pod: dict[str, Any], path: list[str | int], value: Any) -> None:
    target: Any = pod
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


@st.composite
def broken_pods(draw: st.DrawFn, name: str) -> tuple[dict[str, Any], str]:
    """A valid pod broken in one place, and the field path the answer must name."""
    pod = draw(valid_pods(name))
    i = draw(st.integers(0, len(pod["spec"]["containers"]) - 1))
    container = f"spec.containers[{i}]"
    choice = draw(
        st.sampled_from(["quantity", "name", "namespace", "containers", "duplicate", "restart", "device"])
    )
    if choice == "quantity":
        resource = draw(st.sampled_from(["cpu", "memory"]))
        pod["spec"]["containers"][i]["resources"] = {
            "limits": {resource: draw(st.sampled_from(BAD_QUANTITY))}
        }
        return pod, f"{container}.resources.limits.{resource}"
    if choice == "name":
        pod["metadata"]["name"] = draw(st.sampled_from(["Bad Name", "-x", "a_b", "x" * 260]))
        return pod, "metadata.name"
    if choice == "namespace":
        pod["metadata"]["namespace"] = draw(st.sampled_from(["Bad_NS", "-ns", "n" * 70]))
        return pod, "metadata.namespace"
    if choice == "containers":
        pod["spec"]["containers"] = []
        return pod, "spec.containers"
    if choice == "duplicate":
        pod["spec"]["containers"].append(dict(pod["spec"]["containers"][i]))
        return pod, f"spec.containers[{len(pod['spec']['containers']) - 1}].name"
    if choice == "restart":
        pod["spec"]["initContainers"] = [{"name": "i0", "restartPolicy": "Sometimes"}]
        return pod, "spec.initContainers[0].restartPolicy"
    _set(pod, ["spec", "containers", i, "resources"], {"limits": {"example.com/dev": "500m"}})
    return pod, f"{container}.resources.limits.example.com/dev"


def structured(pod: dict[str, Any]) -> pb.Pod:
    def container(c: dict[str, Any]) -> pb.Container:
        resources = c.get("resources", {})
        return pb.Container(
            name=c["name"],
            restart_policy=c.get("restartPolicy", ""),
            resources=pb.ResourceRequirements(
                requests=resources.get("requests", {}), limits=resources.get("limits", {})
            ),
        )

    spec, metadata = pod["spec"], pod["metadata"]
    return pb.Pod(
        name=metadata["name"],
        namespace=metadata["namespace"],
        uid=metadata.get("uid", ""),
        containers=[container(c) for c in spec["containers"]],
        init_containers=[container(c) for c in spec.get("initContainers", [])],
    )


def sources(pod: dict[str, Any], form: str) -> pb.PodSource:
    if form == "structured":
        return pb.PodSource(pod=structured(pod))
    text = json.dumps(pod) if form == "json" else yaml.safe_dump(pod)
    return pb.PodSource(manifest=text)


class Node:
    """The daemon, and what it holds before each call."""

    def __init__(self, daemon: DaemonProcess) -> None:
        self.daemon = daemon
        self.stub = admission_pb2_grpc.AdmissionStub(daemon.channel())

    def state(self) -> tuple[pb.ListPodsResponse, dict[str, str]]:
        return self.stub.ListPods(pb.ListPodsRequest(), timeout=10), file_hashes(self.daemon.state_dir)

    def answer(self, method: str, request: Any) -> tuple[grpc.StatusCode, Any]:
        try:
            return grpc.StatusCode.OK, getattr(self.stub, method)(request, timeout=30)
        except grpc.RpcError as err:
            return err.code(), err.details()

    def try_source(self, source: pb.PodSource, field: str | None, valid: bool = False) -> None:
        """WouldAdmit then Admit; the invariants of the module docstring. ``field``: the one expected in
        the error, for a pod broken on purpose; ``valid``: a pod that must be accepted."""
        before = self.state()
        would = self.answer("WouldAdmit", pb.WouldAdmitRequest(pod=source))
        assert self.state() == before
        admitted = self.answer("Admit", pb.AdmitRequest(pod=source))
        assert would[0] == admitted[0], (would, admitted)
        code, reply = admitted
        assert code in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT), (code, reply)
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            assert not valid, reply
            assert isinstance(reply, str) and (FIELD.search(reply) or WHOLE_DOCUMENT.search(reply)), reply
            if field is not None:
                assert field in reply, (field, reply)
            assert self.state() == before
            return
        assert field is None, f"{field} broken, yet accepted"
        assert (reply.admitted, reply.reason, reply.message) == (
            would[1].admitted,
            would[1].reason,
            would[1].message,
        )
        if not reply.admitted:
            assert self.state() == before
            return
        self.stub.RemovePod(pb.RemovePodRequest(uid=reply.uid), timeout=10)
        assert self.state()[0] == before[0]


def _node(make_daemon: MakeDaemon) -> Node:
    daemon = make_daemon()
    assert admit(daemon, pod_yaml("resident", "2", dev=1)).admitted
    return Node(daemon)


def test_fuzzed_pods_are_answered_ok_or_invalid_naming_the_field(make_daemon: MakeDaemon) -> None:
    node = _node(make_daemon)
    names = (f"f{n}" for n in itertools.count())

    @EXAMPLES
    @given(
        data=st.data(),
        form=st.sampled_from(["yaml", "json", "structured"]),
        broken=st.booleans(),
    )
    def check(data: st.DataObject, form: str, broken: bool) -> None:
        name = next(names)
        if broken:
            pod, field = data.draw(broken_pods(name))
        else:
            pod, field = data.draw(valid_pods(name)), None
        node.try_source(sources(pod, form), field, valid=not broken)

    check()


def test_fuzzed_text_is_answered_ok_or_invalid(make_daemon: MakeDaemon) -> None:
    node = _node(make_daemon)
    names = (f"t{n}" for n in itertools.count())
    fragments = st.sampled_from(
        ["apiVersion: v1\n", "kind: Pod\n", "metadata:\n", "  name: {name}\n", "spec:\n", "  containers:\n",
         "  - name: c\n", "    resources: {limits: {cpu: '1', memory: 64Mi}}\n", "---\n", "[", "{", "\t",
         "- x\n", ": :\n", "&a *a\n", "!!binary x\n", "kind: Deployment\n", "null\n"]
    )  # fmt: skip

    @EXAMPLES
    @given(st.one_of(st.text(max_size=200), st.lists(fragments, max_size=14).map("".join)))
    def check(text: str) -> None:
        node.try_source(pb.PodSource(manifest=text.replace("{name}", next(names))), None)

    check()


# Each identifier the API server (or, for the UID, the emulator's state directory) bounds: where it goes in
# a manifest, the longest valid value of a given length, and the field an over-long one is refused on.
def _at(path: list[str | int]) -> Callable[[dict[str, Any], str], None]:
    return lambda pod, value: _set(pod, path, value)


def _label(kind: str) -> Callable[[dict[str, Any], str], None]:
    def put(pod: dict[str, Any], value: str) -> None:
        key, item = (value, "v") if kind == "key" else ("app", value)
        pod["metadata"]["labels"] = {key: item}

    return put


def _annotation(pod: dict[str, Any], value: str) -> None:
    pod["metadata"]["annotations"] = {"a": value}


LIMITS: dict[str, tuple[int, Callable[[int], str], Callable[[dict[str, Any], str], None], str]] = {
    "name": (253, lambda n: "a" * n, _at(["metadata", "name"]), "metadata.name"),
    "namespace": (63, lambda n: "b" * n, _at(["metadata", "namespace"]), "metadata.namespace"),
    "uid": (128, lambda n: "\u00e9" * n, _at(["metadata", "uid"]), "metadata.uid"),
    "container": (63, lambda n: "c" * n, _at(["spec", "containers", 0, "name"]), "spec.containers[0].name"),
    "label key": (63, lambda n: "k" * n, _label("key"), "metadata.labels"),
    "label value": (63, lambda n: "v" * n, _label("value"), "metadata.labels"),
    "annotations": (256 * 1024 - 1, lambda n: "x" * n, _annotation, "metadata.annotations"),
}


def test_identifiers_at_and_past_each_limit(make_daemon: MakeDaemon) -> None:
    """At its limit an identifier is accepted (OK, admitted or not, and the admitted pod's files written);
    one past it or far past it, ``INVALID_ARGUMENT`` naming the field in a short message; every time, the
    node stays writable (each valid pod is admitted and removed again)."""
    node = _node(make_daemon)
    names = (f"l{n}" for n in itertools.count())

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        which=st.sampled_from(sorted(LIMITS)),
        over=st.sampled_from([-1, 0, 1, 2, 1000]),
        form=st.sampled_from(["yaml", "json"]),
    )
    def check(which: str, over: int, form: str) -> None:
        limit, value_of, put, field = LIMITS[which]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": next(names), "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "64Mi"}}}]},
        }
        put(pod, value_of(limit + over))
        valid = over <= 0
        node.try_source(sources(pod, form), None if valid else field, valid=valid)
        if not valid:
            details = node.answer("Admit", pb.AdmitRequest(pod=sources(pod, form)))[1]
            assert isinstance(details, str) and len(details) < 600, len(details)

    check()
