"""gRPC ``Simulate`` and ``kubeletemu simulate --live`` through the real daemon: the stream starts from
the pods the daemon holds, the daemon's state does not change, and a file that describes a node of its
own, or is not a Simulation, is INVALID_ARGUMENT."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

import hostprobe
from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.config import load_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.podresources.view import node_name
from kubeletemu.simulate import render_json
from kubeletemu.simulate.spec import parse_live_simulation
from tests.daemon.daemon_process import DaemonProcess
from tests.daemon.test_daemon_admission import admit, pod_yaml
from tests.daemon.test_grpcurl_and_cli import cli

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]

# Four 2-CPU pods, under single-numa-node and under best-effort.
SIMULATION = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Simulation
matrix: {policies: [single-numa-node, best-effort]}
stream:
- pod:
    metadata: {name: w, namespace: sim}
    spec: {containers: [{name: c, resources: {limits: {cpu: "2", memory: 1Gi}}}]}
  repeat: 4
"""
RESIDENTS = [pod_yaml("a", "6"), pod_yaml("b", "6")]


def simulate(daemon: DaemonProcess, text: str = SIMULATION, **kw: object) -> pb.SimulateResponse:
    reply: pb.SimulateResponse = daemon.stub().Simulate(pb.SimulateRequest(simulation=text, **kw), timeout=60)
    return reply


def state(daemon: DaemonProcess) -> tuple[pb.ListPodsResponse, pb.NodeTopology]:
    stub = daemon.stub()
    return stub.ListPods(pb.ListPodsRequest(), timeout=10), stub.GetNodeTopology(
        pb.GetNodeTopologyRequest(), timeout=10
    )


def outcomes(report: dict[str, object]) -> list[tuple[str, int, int, dict[str, int]]]:
    configurations = report["configurations"]
    assert isinstance(configurations, list)
    return [(c["policy"], c["admitted"], c["attempts"], c["rejections"]) for c in configurations]


def test_simulate_starts_from_the_live_pods(make_daemon: MakeDaemon) -> None:
    """The sample node (single-numa-node): NUMA 0 has 7 allocatable CPUs (CPU 0 reserved), NUMA 1 has 8.
    Empty, four 2-CPU pods fit (three on NUMA 0, one on NUMA 1). After a (6 CPUs: NUMA 0, 1 left) and b
    (6 CPUs: NUMA 1, 2 left), only w-1 fits (NUMA 1); single-numa-node refuses the three others with
    TopologyAffinityError, best-effort lets the CPU manager refuse them (1 CPU free)."""
    daemon = make_daemon()
    empty = json.loads(simulate(daemon).json)
    assert outcomes(empty) == [("single-numa-node", 4, 4, {}), ("best-effort", 4, 4, {})]
    assert empty["topology"]["pods"] == 0

    for manifest in RESIDENTS:
        assert admit(daemon, manifest).admitted
    before = state(daemon)
    reply = simulate(daemon)
    assert state(daemon) == before

    report = json.loads(reply.json)
    assert outcomes(report) == [
        ("single-numa-node", 1, 4, {"TopologyAffinityError": 3}),
        ("best-effort", 1, 4, {"UnexpectedAdmissionError": 3}),
    ]
    snn = report["configurations"][0]
    assert [e["affinity"]["c"] for e in snn["events"]] == [[1], None, None, None]
    # The metrics describe the whole node: a's and b's 6 CPUs each, and w-1's 2 on NUMA 1.
    assert [n["cpus"]["exclusive"] for n in snn["numa"]] == [6, 8]
    assert report["topology"]["kind"] == "live" and report["topology"]["pods"] == 2
    assert "simulation on live node" in reply.table and "1/4" in reply.table

    # The daemon's answer is the engine's on a node that admitted the same pods.
    config = load_config([str(daemon.config)])
    machine = Machine.from_host(hostprobe.probe(str(daemon.sysfs_root), str(daemon.procfs_root)))
    node = NodeEmulator(config, machine)
    for manifest in RESIDENTS:
        assert node.admit(parse_pods(manifest)[0]).admitted
    local = parse_live_simulation(SIMULATION, config).run(node, node_name(config))
    assert reply.json == render_json(local)

    # Nothing the simulation admitted is on the node: the real admission of w still fits NUMA 1.
    assert admit(daemon, pod_yaml("w", "2")).admitted


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            SIMULATION.replace("matrix:", "topology: {synthetic: {sockets: 1}}\nmatrix:"),
            "simulation: topology: not allowed here: the simulation runs on the daemon's node",
        ),
        (
            SIMULATION.replace("matrix:", "config: [kubelet.yaml]\nmatrix:"),
            "simulation: config: not allowed here: the simulation runs on the daemon's node",
        ),
        ("kind: Simulation\nstream: [", "simulation: invalid YAML: "),
        (
            SIMULATION.replace("repeat: 4", "repeat: many"),
            "simulation: stream[0].repeat: expected an integer",
        ),
        (
            SIMULATION.replace("- pod:\n", "- pods: residents.yaml\n- pod:\n"),
            "simulation: residents.yaml: not sent with the simulation",
        ),
    ],
    ids=["topology", "config", "malformed-yaml", "bad-field", "unsent-file"],
)
def test_simulate_invalid_argument(make_daemon: MakeDaemon, text: str, message: str) -> None:
    daemon = make_daemon()
    assert admit(daemon, RESIDENTS[0]).admitted
    before = state(daemon)
    with pytest.raises(grpc.RpcError) as caught:
        simulate(daemon, text)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (caught.value.details() or "").startswith(message)
    assert state(daemon) == before


def test_cli_simulate_socket(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    """``--live`` asks the daemon; a ``pods:`` file is read by the CLI and sent along; same outputs as a
    local run (table, JSON, chart); errors are one line, exit status 2."""
    daemon = make_daemon()
    for manifest in RESIDENTS:
        assert admit(daemon, manifest).admitted
    (tmp_path / "w.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: w, namespace: sim}\n"
        'spec: {containers: [{name: c, resources: {limits: {cpu: "2", memory: 1Gi}}}]}\n'
    )
    spec = tmp_path / "sim.yaml"
    spec.write_text(SIMULATION.split("stream:")[0] + "stream:\n- pods: w.yaml\n  repeat: 4\n")
    before = state(daemon)
    out = cli(daemon, "simulate", "--live", "-f", str(spec), "-o", "json", "--chart", str(tmp_path / "c.png"))
    assert out.returncode == 0, out.stderr
    assert out.stdout == simulate(daemon).json + "\n"
    assert outcomes(json.loads(out.stdout))[0] == ("single-numa-node", 1, 4, {"TopologyAffinityError": 3})
    # The chart is drawn by the CLI from the JSON the daemon sent (the daemon has no plotting library).
    from kubeletemu.plot import simulation_chart

    drawn_here = simulation_chart(json.loads(out.stdout), tmp_path / "here.png")
    assert (tmp_path / "c.png").read_bytes() == drawn_here.read_bytes()
    table = cli(daemon, "simulate", "--live", "-f", str(spec))
    assert table.returncode == 0 and table.stdout.startswith("simulation on live node ")
    assert state(daemon) == before

    spec.write_text(SIMULATION.replace("matrix:", "config: [k.yaml]\nmatrix:"))
    refused = cli(daemon, "simulate", "--live", "-f", str(spec))
    assert refused.returncode == 2
    assert refused.stderr.startswith("kubeletemu: INVALID_ARGUMENT: simulation: config: not allowed here")
    missing = cli(daemon, "simulate", "--live", "-f", str(tmp_path / "nope.yaml"))
    assert (missing.returncode, missing.stderr.strip()) == (
        2,
        f"kubeletemu: {tmp_path / 'nope.yaml'}: cannot read: No such file or directory",
    )
