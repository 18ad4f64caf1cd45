"""The node feed's state: a mirror rebuilt from a node's NodeState (through its protobuf message) answers
every would_admit as the node does, on the real machine captures; the host and configuration codecs are
exact."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostprobe
from hostprobe.model import HostTopology
from hostprobe.model_json import HostJSONError, host_from_json_dict
from kubeletemu._proto.kubeletemu.v1 import feed_pb2 as pb
from kubeletemu.config import parse_config
from kubeletemu.emulator import EmulatorError, NodeEmulator, PodExistsError
from kubeletemu.feed.config_codec import ConfigCodecError, decode_config, encode_config
from kubeletemu.feed.state import NodeStateError, snapshot, to_emulator
from kubeletemu.feed.wire import state_from_message, state_message
from kubeletemu.machine import Machine
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from tests.conftest import CaptureStore
from tests.hostprobe.hostprobe_capture_support import FIXTURE_NAMES
from tests.nodes import kubelet_config, static_managers

DEVICE = "example.com/dev"

# Configurations a node of every capture runs: the static CPU Manager under three Topology Manager
# settings, two with the static Memory Manager (one with policy options), one with devices and an older
# kubelet.
CONFIGS = {
    "single-numa-container": kubelet_config(
        "single-numa-node", managers='cpuManagerPolicy: static\nreservedSystemCPUs: "0"\n'
    ),
    "restricted-pod": kubelet_config(
        "restricted",
        "pod",
        managers='cpuManagerPolicy: static\nreservedSystemCPUs: "0"\n',
        emulator='kubeletVersion: "1.34"\ndevices:\n- resourceName: example.com/dev\n  devices:\n'
        "  - {id: d0, numaNodes: [0]}\n  - {id: d1, numaNodes: [0]}\n  - {id: d2}\n",
    ),
    "best-effort-memory": kubelet_config("best-effort"),
    "restricted-options": kubelet_config(
        "restricted",
        managers=static_managers()
        + 'cpuManagerPolicyOptions: {full-pcpus-only: "true", distribute-cpus-across-numa: "true"}\n'
        + 'topologyManagerPolicyOptions: {prefer-closest-numa-nodes: "true"}\n',
    ),
}


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, HostTopology]:
    store = CaptureStore(tmp_path_factory.mktemp("feed-captures"))
    found = {}
    for name in FIXTURE_NAMES:
        capture = store.get(name)
        found[name] = hostprobe.probe(str(capture.sys), str(capture.proc))
    return found


def test_host_round_trips_on_every_capture(hosts: dict[str, HostTopology]) -> None:
    assert len(hosts) == len(FIXTURE_NAMES)
    for name, host in hosts.items():
        doc = json.loads(json.dumps(host.to_json_dict()))
        decoded = host_from_json_dict(doc)
        assert decoded == host, name
        assert decoded.to_json_dict() == doc, name


def test_host_decoder_names_the_bad_key(hosts: dict[str, HostTopology]) -> None:
    doc = json.loads(json.dumps(next(iter(hosts.values())).to_json_dict()))
    doc["cpus"][1]["core_id"] = "seven"
    with pytest.raises(HostJSONError, match=r"host\.cpus\[1\]\.core_id: expected an integer"):
        host_from_json_dict(doc)
    doc["cpus"][1]["core_id"] = 7
    del doc["kubelet_view"]
    with pytest.raises(HostJSONError, match=r"host\.kubelet_view: missing"):
        host_from_json_dict(doc)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_config_round_trips(name: str) -> None:
    config = parse_config(CONFIGS[name])
    encoded = json.loads(json.dumps(encode_config(config)))
    assert decode_config(encoded) == config
    encoded["kubelet"]["max_pods"] = "many"
    with pytest.raises(ConfigCodecError, match=r"config\.kubelet\.max_pods: expected int"):
        decode_config(encoded)


def _node(host: HostTopology, text: str) -> NodeEmulator | None:
    """The node a kubelet with ``text`` runs on ``host``; None where that kubelet refuses to start there."""
    try:
        return NodeEmulator(parse_config(text), Machine.from_host(host))
    except (EmulatorError, ValueError):
        return None


def _nodes(hosts: dict[str, HostTopology]) -> list[tuple[str, NodeEmulator]]:
    nodes = []
    for host_name, host in hosts.items():
        for config_name, text in CONFIGS.items():
            node = _node(host, text)
            if node is not None:
                nodes.append((f"{host_name}/{config_name}", node))
    return nodes


def _quantities(values: dict[str, str]) -> dict[str, Quantity]:
    return {k: Quantity.parse(v) for k, v in values.items()}


@st.composite
def pods(draw: st.DrawFn, uid: str) -> Pod:
    def container(name: str) -> Container:
        resources = {
            "cpu": draw(st.sampled_from(["1", "2", "3", "4", "6", "500m"])),
            "memory": f"{draw(st.integers(1, 6))}Gi",
        }
        guaranteed = draw(st.integers(0, 5)) > 0
        # An extended resource's request equals its limit (a manifest that differs is refused).
        if guaranteed and draw(st.integers(0, 4)) == 0:
            resources[DEVICE] = str(draw(st.integers(1, 2)))
        limits = resources if guaranteed else {}
        return Container(name, _quantities(resources), _quantities(limits))

    init = tuple(container(f"init{i}") for i in range(draw(st.integers(0, 1))))
    containers = tuple(container(f"c{i}") for i in range(draw(st.integers(1, 3))))
    return Pod(name=uid, namespace="default", uid=uid, containers=containers, init_containers=init)


def _mirror(node: NodeEmulator) -> NodeEmulator:
    state = snapshot("n1", 7, node, incarnation="run")
    message = pb.NodeState.FromString(state_message(state).SerializeToString())
    decoded = state_from_message(message)
    assert decoded == state
    return to_emulator(decoded)


def _answer(node: NodeEmulator, pod: Pod) -> Any:
    try:
        return node.would_admit(pod)
    except EmulatorError as err:
        return type(err), str(err)


@pytest.fixture(scope="module")
def nodes(hosts: dict[str, HostTopology]) -> list[tuple[str, NodeEmulator]]:
    found = _nodes(hosts)
    # The captures a kubelet starts on with these configurations; on the others it stops at start-up (no
    # MemTotal in the captured meminfo, a node id over 63, CPU 0 offline while reserved).
    assert {name.split("/")[0] for name, _ in found} == {
        "ghw-xeon-l5640-2s-igbvf",
        "hwloc-2s8c2t-sriov-ve",
        "hwloc-amd-4s-8numa",
        "ocp-worker-2s20c2t-cascadelake",
    }
    return found


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(data=st.data())
def test_mirror_answers_as_the_node(nodes: list[tuple[str, NodeEmulator]], data: st.DataObject) -> None:
    name, template = data.draw(st.sampled_from(nodes), label="node")
    node = template.fork()
    admitted: list[str] = []
    for step in range(data.draw(st.integers(0, 12), label="steps")):
        if admitted and data.draw(st.integers(0, 3), label="remove?") == 0:
            uid = admitted.pop(data.draw(st.integers(0, len(admitted) - 1), label="which"))
            node.remove(uid)
            continue
        pod = data.draw(pods(f"p{step}"), label="admit")
        try:
            if node.admit(pod).admitted:
                admitted.append(pod.uid)
        except PodExistsError:
            raise
        except EmulatorError:
            pass
    mirror = _mirror(node)
    assert mirror.pods() == node.pods(), name
    for i in range(4):
        pod = data.draw(pods(f"q{i}"), label="question")
        assert _answer(mirror, pod) == _answer(node, pod), name
    # The mirror is a node of its own: admitting on it answers as admitting on the node.
    pod = data.draw(pods("last"), label="admitted on both")
    assert _answer(mirror, pod) == _answer(node, pod)
    assert mirror.admit(pod) == node.admit(pod)
    assert mirror.pods() == node.pods()


def test_rebuilt_state_names_what_does_not_decode(nodes: list[tuple[str, NodeEmulator]]) -> None:
    state = snapshot("n1", 1, nodes[0][1])
    with pytest.raises(NodeStateError, match="node n1: cpu state"):
        to_emulator(replace(state, cpu_state=b"{}"))
    with pytest.raises(NodeStateError, match="node n1: memory state"):
        to_emulator(replace(state, memory_state=b"[]"))
    message = state_message(state)
    message.config_json = "{}"
    with pytest.raises(NodeStateError, match=r"node n1: config_json: config\.kubelet: missing"):
        state_from_message(message)
