"""gRPC ``Simulate`` in shadow mode: the stream starts from the real kubelet's node as mirrored (and follows
it when the kubelet changes), and neither the mirror nor the kubelet's files change."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.simulate import render_json
from kubeletemu.simulate.spec import parse_live_simulation
from tests.shadow.kubelet_double import FakeKubelet, PodResourcesDouble, tree_digest
from tests.shadow.shadow_daemon import ShadowDaemon, wait_for

# Three 2-CPU pods, under the kubelet's own settings (single-numa-node, container scope).
SIMULATION = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Simulation
stream:
- pod:
    metadata: {name: w, namespace: sim}
    spec: {containers: [{name: c, resources: {limits: {cpu: "2", memory: 1Gi}}}]}
  repeat: 3
"""

# Takes NUMA 1's last four free CPUs on the real node.
FOUR = """\
apiVersion: v1
kind: Pod
metadata: {name: four, namespace: prod, uid: 33333333-0000-0000-0000-000000000004}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "4", memory: 1Gi}}
"""


@pytest.fixture
def daemon(kubelet: FakeKubelet, short_dir: Path) -> Iterator[ShadowDaemon]:
    workdir = short_dir / "d"
    workdir.mkdir()
    with PodResourcesDouble(kubelet):
        running = ShadowDaemon(kubelet, workdir).start()
        try:
            yield running
        finally:
            running.stop()


def simulate(daemon: ShadowDaemon, text: str = SIMULATION) -> pb.SimulateResponse:
    reply: pb.SimulateResponse = daemon.stub().Simulate(pb.SimulateRequest(simulation=text), timeout=60)
    return reply


def admissions(reply: pb.SimulateResponse) -> list[tuple[str, bool, str, list[int] | None]]:
    (configuration,) = json.loads(reply.json)["configurations"]
    return [(e["pod"], e["admitted"], e["reason"], e["affinity"]["c"]) for e in configuration["events"]]


def test_simulate_answers_for_the_real_node(kubelet: FakeKubelet, daemon: ShadowDaemon) -> None:
    """The kubelet's node (tests/shadow/kubelet_double.PODS) has 1 free CPU on NUMA 0 (CPU 8) and 4 on
    NUMA 1 (6, 7, 14, 15): w-1 and w-2 fit NUMA 1, w-3 fits no single node. After the kubelet admits a
    4-CPU pod on NUMA 1, none fits."""
    stub = daemon.stub()
    listed = stub.ListPods(pb.ListPodsRequest(), timeout=10)
    files = tree_digest(kubelet.root)
    generation = daemon.report().generation

    reply = simulate(daemon)
    assert admissions(reply) == [
        ("sim/w-1", True, "", [1]),
        ("sim/w-2", True, "", [1]),
        ("sim/w-3", False, "TopologyAffinityError", None),
    ]
    report = json.loads(reply.json)
    assert report["topology"] == {"kind": "live", "name": "node-a", "pods": 6}
    assert report["configurations"][0]["label"] == "single-numa-node/container/-"
    assert [n["cpus"]["free"] for n in report["configurations"][0]["numa"]] == [1, 0]
    # The same answer as the kubelet's own node forked in process (the mirror is exact here).
    local = parse_live_simulation(SIMULATION, kubelet.emulator.config).run(kubelet.emulator, "node-a")
    assert reply.json == render_json(local)

    # Nothing changed: the mirror, the kubelet's files; Admit stays refused.
    assert stub.ListPods(pb.ListPodsRequest(), timeout=10) == listed
    assert tree_digest(kubelet.root) == files
    assert daemon.report().generation == generation
    with pytest.raises(grpc.RpcError) as refused:
        stub.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=FOUR)), timeout=10)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION

    # The kubelet admits a pod: the next simulation starts from the node as it is now.
    kubelet.admit(FOUR)
    wait_for(lambda: daemon.report().generation > generation)
    assert [reason for _, _, reason, _ in admissions(simulate(daemon))] == ["TopologyAffinityError"] * 3


def test_simulate_refuses_a_node_of_its_own(daemon: ShadowDaemon) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        simulate(daemon, SIMULATION.replace("stream:", "topology: {host: {}}\nstream:"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "topology: not allowed here: the simulation runs on the daemon's node" in (
        caught.value.details() or ""
    )
