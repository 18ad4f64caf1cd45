"""Generated hostile input against the real daemon (issue 40): pod manifests with one hostile value planted
where a reader reaches it or where nothing reads it (a lone surrogate, a quantity past int64, an integer
thousands of digits long, an alias chain, deep nesting, a long list), and raw request bytes.

The invariants, for every example: the answer is OK or ``INVALID_ARGUMENT`` (a refusal is never another
code, never a daemon fault); a refusal names the document's field or what was wrong with the text, and
changes nothing (pods listed, free CPUs, every state file, no ``.tmp`` left); another client's ListPods is
answered within a bound while the hostile call is handled.

Bounded and reproducible: a fixed number of examples from a fixed seed, printed (set
``KUBELETEMU_FUZZ_SEED`` to try another; Hypothesis prints the failing example and how to replay it).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from tests.daemon.daemon_process import DaemonProcess
from tests.daemon.test_daemon_admission import admit, pod_yaml
from tests.daemon.test_hostile_input import answered_meanwhile, assert_answered_meanwhile, node_state

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]

SEED = int(os.environ.get("KUBELETEMU_FUZZ_SEED", "40"))
EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    database=None,  # the same examples on every machine: nothing replayed from a local database
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# What a refusal names: a field of the document, or what is wrong with the text as a whole.
NAMED = re.compile(
    r"document \d+: [^:]+: |\(document \d+(, items\[\d+\])?\): \S+: |invalid (YAML|JSON): |"
    r"^pod(\.manifest)?: |the request is not a valid "
)
PLACES = {
    "metadata.uid": ["metadata", "uid"],
    "metadata.name": ["metadata", "name"],
    "metadata.annotations.note": ["metadata", "annotations", "note"],
    "spec.overhead.cpu": ["spec", "overhead", "cpu"],
    "spec.containers[0].resources.limits.cpu": ["spec", "containers", 0, "resources", "limits", "cpu"],
    "spec.priority": ["spec", "priority"],
    "ignored": ["ignored"],
}
MARK = "@HOSTILE@"


@st.composite
def hostile_json(draw: st.DrawFn) -> str:
    """Raw JSON text of one hostile value."""
    kind = draw(st.sampled_from(["surrogate", "exponent", "digits", "integer", "nesting", "list"]))
    if kind == "surrogate":
        code = draw(st.integers(0xD800, 0xDFFF))
        around = draw(st.sampled_from(["", "abc", "uid-"]))
        return json.dumps(around)[:-1] + f"\\u{code:04x}" + json.dumps(around)[1:]
    if kind == "exponent":
        return json.dumps(f"{draw(st.integers(1, 9))}e{draw(st.integers(19, 10**7))}")
    if kind == "digits":
        return json.dumps("9" * draw(st.integers(20, 6000)))
    if kind == "integer":
        return "9" * draw(st.integers(65, 6000))
    if kind == "nesting":
        depth = draw(st.integers(400, 3000))
        return "[" * depth + "]" * depth
    return "[" + ",".join(["0"] * draw(st.integers(10_000, 80_000))) + "]"


def planted(place: list[str | int], name: str) -> str:
    """A valid Guaranteed pod with :data:`MARK` at ``place``."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]},
    }
    target: Any = pod
    for key in place[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[place[-1]] = MARK
    return json.dumps(pod)


@st.composite
def alias_chains(draw: st.DrawFn, name: str) -> str:
    """YAML whose ``levels`` anchors each repeat the one before ``width`` times, aliased at a place."""
    levels, width = draw(st.integers(2, 10)), draw(st.integers(2, 12))
    lines = ["  l1: &l1 [" + ", ".join(['"x"'] * width) + "]"]
    lines += [f"  l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * width) + "]" for n in range(2, levels + 1)]
    at = draw(st.sampled_from(["cpu", "memory", "ignored"]))
    limits = {"cpu": '"2"', "memory": "1Gi"}
    if at != "ignored":
        limits[at] = f"*l{levels}"
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nanchors:\n"
        + "\n".join(lines)
        + ("\nignored: *l" + str(levels) if at == "ignored" else "")
        + "\nspec:\n  containers:\n  - name: app\n    resources:\n      limits: {"
        + ", ".join(f"{k}: {v}" for k, v in limits.items())
        + "}\n"
    )


class Node:
    """The daemon and the invariants of the module docstring."""

    def __init__(self, daemon: DaemonProcess) -> None:
        self.daemon = daemon
        self.stub = daemon.stub()
        self.raw_admit = daemon.channel().unary_unary("/kubeletemu.v1.Admission/Admit")
        self.raw_would_admit = daemon.channel().unary_unary("/kubeletemu.v1.Admission/WouldAdmit")

    def call(self, method: Callable[[Any], Any], request: Any) -> tuple[grpc.StatusCode, Any]:
        answer: list[tuple[grpc.StatusCode, Any]] = []

        def hostile() -> None:
            try:
                answer.append((grpc.StatusCode.OK, method(request, timeout=60)))
            except grpc.RpcError as err:
                answer.append((err.code(), err.details() or ""))

        waits, took = answered_meanwhile(self.daemon, hostile)
        assert_answered_meanwhile(waits, took, f"seed {SEED}")
        return answer[0]

    def check(
        self, would: Callable[[Any], Any], admit: Callable[[Any], Any], request: Any, note: str
    ) -> None:
        """WouldAdmit then Admit of one request; an admitted pod is removed again."""
        before = node_state(self.daemon)
        for method in (would, admit):
            code, reply = self.call(method, request)
            assert code in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT), (
                f"seed {SEED}",
                note,
                code,
                reply,
            )
            if code == grpc.StatusCode.INVALID_ARGUMENT:
                assert NAMED.search(reply) and len(reply) < 600, (f"seed {SEED}", note, reply)
                assert node_state(self.daemon) == before, (f"seed {SEED}", note, reply)
                continue
            response = pb.AdmitResponse.FromString(reply) if isinstance(reply, bytes) else reply
            if method is admit and response.admitted:
                self.stub.RemovePod(pb.RemovePodRequest(uid=response.uid), timeout=10)
            assert node_state(self.daemon)[:2] == before[:2], (f"seed {SEED}", note)
        assert not list(self.daemon.state_dir.rglob("*.tmp")), (f"seed {SEED}", note)


@pytest.fixture
def node(make_daemon: MakeDaemon) -> Node:
    print(f"hypothesis seed {SEED} (KUBELETEMU_FUZZ_SEED)")
    daemon = make_daemon()
    assert admit(daemon, pod_yaml("resident", "2", dev=1)).admitted
    return Node(daemon)


def test_fuzzed_hostile_manifests(node: Node) -> None:
    names = (f"h{n}" for n in itertools.count())

    @seed(SEED)
    @EXAMPLES
    @given(data=st.data(), place=st.sampled_from(sorted(PLACES)), aliases=st.booleans())
    def check(data: st.DataObject, place: str, aliases: bool) -> None:
        name = next(names)
        if aliases:
            text = data.draw(alias_chains(name))
        else:
            text = planted(PLACES[place], name).replace(json.dumps(MARK), data.draw(hostile_json()))
        request = pb.PodSource(manifest=text)
        node.check(
            node.stub.WouldAdmit,
            node.stub.Admit,
            pb.AdmitRequest(pod=request),
            f"{place}: {text[:200]}",
        )

    check()


def _mutated(data: bytes, flips: list[tuple[int, int]], cut: int) -> bytes:
    out = bytearray(data)
    for at, value in flips:
        out[at % len(out)] = value
    return bytes(out[: max(0, len(out) - cut)])


def test_fuzzed_raw_request_bytes(node: Node) -> None:
    """Bytes that may or may not be an AdmitRequest (a WouldAdmitRequest's field 1 is the same PodSource)."""
    valid = pb.AdmitRequest(pod=pb.PodSource(manifest=pod_yaml("raw", "1"))).SerializeToString()
    # A manifest whose UTF-8 is broken by a surrogate's bytes (ED A0 80): field 1 (pod), field 2 (manifest).
    manifest = b"metadata: {uid: \xed\xa0\x80}"
    broken = b"\x0a" + bytes([len(manifest) + 2]) + b"\x12" + bytes([len(manifest)]) + manifest

    @seed(SEED)
    @EXAMPLES
    @given(
        st.one_of(
            st.binary(max_size=256),
            st.builds(
                _mutated,
                st.just(valid),
                st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
                st.integers(0, 8),
            ),
            st.just(broken),
        )
    )
    def check(raw: bytes) -> None:
        node.check(node.raw_would_admit, node.raw_admit, raw, raw[:80].hex())

    check()
