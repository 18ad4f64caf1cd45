"""Simulations on forks of a live node: ``NodeEmulator.fork`` (same pods, same manager states, independent
both ways, optional Topology Manager overrides), ``simulate_live`` (starts from the live pods, leaves the
node alone, shares the replay with fresh-node runs) and the live spec (matrix and stream only)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hostprobe.synthetic import SyntheticHost
from kubeletemu.config import Config, parse_config
from kubeletemu.containermanager import TopologyOverrides
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from kubeletemu.simulate import (
    AdmissionEvent,
    Matrix,
    PodStep,
    RemoveStep,
    SimulationError,
    Step,
    TopologySource,
    render_table,
    run_configuration,
    run_simulation,
    simulate_live,
)
from kubeletemu.simulate.spec import parse_live_simulation, parse_simulation, pod_files

CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: single-numa-node
cpuManagerPolicy: static
reservedSystemCPUs: "0"
memoryManagerPolicy: Static
systemReserved: {memory: 924Mi}
reservedMemory:
- numaNode: 0
  limits: {memory: 1Gi}
"""


def pod(name: str, cpu: str, memory: str = "1Gi", namespace: str = "shop") -> Pod:
    (parsed,) = parse_pods(
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}, uid: uid-{name}}}\n"
        f"spec:\n  containers:\n  - name: c\n    resources:\n"
        f'      limits: {{cpu: "{cpu}", memory: {memory}}}\n'
    )
    return parsed


WEB = pod("web", "4", "4Gi")
WIDE = pod("wide", "10")


@pytest.fixture(scope="module")
def machine() -> Machine:
    # 2 × 4 cores × 2 threads: NUMA 0 = CPUs 0-3,8-11 (7 allocatable, CPU 0 reserved), NUMA 1 = 8 CPUs.
    return TopologySource.synthetic_host(SyntheticHost()).machine()


@pytest.fixture
def config() -> Config:
    return parse_config(CONFIG)


@pytest.fixture
def live(machine: Machine, config: Config) -> NodeEmulator:
    """Two residents of 4 CPUs: the first on NUMA 0 (3 CPUs left there), the second on NUMA 1 (4 left)."""
    node = NodeEmulator(config, machine)
    for resident in (pod("resident-1", "4", "2Gi"), pod("resident-2", "4", "2Gi")):
        assert node.admit(resident).admitted
    return node


def held(node: NodeEmulator) -> list[tuple[str, tuple[tuple[str, tuple[int, ...], tuple[object, ...]], ...]]]:
    """Every admitted pod with each container's CPUs and memory blocks."""
    return [(p.uid, tuple((c.name, c.cpu_ids, c.memory) for c in cs)) for p, cs in node.pods()]


def free_cpus(node: NodeEmulator) -> list[tuple[int, ...]]:
    return [n.free_cpu_ids for n in node.topology().numa_nodes]


# ---- fork ------------------------------------------------------------------------------------------


def test_fork_holds_what_the_node_holds(live: NodeEmulator) -> None:
    fork = live.fork()
    assert held(fork) == held(live)
    assert fork.topology() == live.topology()
    # Whole cores first: resident-1 took cores 1 and 2 (CPUs 1,2,9,10), resident-2 cores 4 and 5.
    assert free_cpus(fork) == [(3, 8, 11), (6, 7, 14, 15)]
    for uid in ("uid-resident-1", "uid-resident-2"):
        assert fork.get_affinity(uid, "c") == live.get_affinity(uid, "c")
    assert fork.get_affinity("uid-resident-2", "c").affinity is not None
    assert fork.state_dir is None and fork.registry.directory is None


def test_fork_and_node_are_independent(live: NodeEmulator) -> None:
    before_held, before_free = held(live), free_cpus(live)
    fork = live.fork()
    assert fork.admit(pod("guest", "2")).admitted
    assert held(live) == before_held and free_cpus(live) == before_free
    assert "uid-guest" not in live.registry
    live.remove("uid-resident-1")
    assert "uid-resident-1" in fork.registry
    # The guest took the free core 3 (CPUs 3,11) beside resident-1, which the fork still holds.
    assert free_cpus(fork)[0] == (8,)
    assert free_cpus(live)[0] == (1, 2, 3, 8, 9, 10, 11)


def test_fork_keeps_its_own_admissions(live: NodeEmulator) -> None:
    """The memory and device managers sweep stale state on each admission, against the active pods: the
    fork's own (a fork swept against the live node's pods would drop what it admitted itself)."""
    fork = live.fork()
    assert fork.admit(pod("first", "2")).admitted
    assert fork.admit(pod("second", "2")).admitted
    cpus = {p.name: cs[0].cpu_ids for p, cs in fork.pods()}
    memory = {p.name: [(b.size, b.numa_nodes) for b in cs[0].memory] for p, cs in fork.pods()}
    assert memory["first"] == [(1 << 30, (0,))] and memory["second"] == [(1 << 30, (1,))]
    # first: NUMA 0's free core 3; second: NUMA 0 has one CPU left, so NUMA 1's first free core, 6.
    assert cpus["first"] == (3, 11) and cpus["second"] == (6, 14)
    assert free_cpus(fork) == [(8,), (7, 15)]


def test_fork_with_overrides(live: NodeEmulator) -> None:
    """6 CPUs fit no single NUMA node (3 and 4 free): single-numa-node, the live setting, refuses the
    pod; a best-effort fork admits it across both nodes, and then has 1 CPU left for wide (10 CPUs)."""
    fork = live.fork(TopologyOverrides(policy="best-effort"))
    assert (fork.cm.topology_manager_policy, live.cm.topology_manager_policy) == (
        "best-effort",
        "single-numa-node",
    )
    assert fork.config is live.config
    six = pod("six", "6")
    assert not live.would_admit(six).admitted
    assert live.would_admit(six).reason == "TopologyAffinityError"
    free = set(free_cpus(fork)[0] + free_cpus(fork)[1])
    report = fork.admit(six)
    assert report.admitted
    taken = set(report.containers[0].cpu_ids)
    assert len(taken) == 6 and taken < free
    assert taken & {3, 8, 11} and taken & {6, 7, 14, 15}
    refused = fork.admit(WIDE)
    assert (refused.admitted, refused.reason) == (False, "UnexpectedAdmissionError")
    assert "six" not in {p.name for p, _ in live.pods()}


# ---- simulate_live ---------------------------------------------------------------------------------


def test_simulate_live_starts_from_the_live_pods(
    machine: Machine, config: Config, live: NodeEmulator
) -> None:
    """Three webs (4 CPUs each) after the residents: under single-numa-node only NUMA 1 has 4 CPUs left,
    so web-1 is admitted there and web-2, web-3 are TopologyAffinityErrors; removing web-1 lets web-4
    in. On an empty node the three webs fit (NUMA 0 once, NUMA 1 twice). best-effort puts web-1 on
    NUMA 1 too; web-2 then needs 4 CPUs of the 3 left (NUMA 0): the CPU manager refuses."""
    before_held, before_topology = held(live), live.topology()
    stream = [PodStep(WEB, 3), RemoveStep("web", 1), PodStep(WEB, 1)]
    matrix = Matrix(policies=("single-numa-node", "best-effort"))
    report = simulate_live(live, matrix, stream, "node-a")
    assert report.topology == {"kind": "live", "name": "node-a", "pods": 2}
    snn, best_effort = report.results
    events = [(e.pod, e.admitted, e.reason) for e in snn.events if isinstance(e, AdmissionEvent)]
    assert events == [
        ("shop/web-1", True, ""),
        ("shop/web-2", False, "TopologyAffinityError"),
        ("shop/web-3", False, "TopologyAffinityError"),
        ("shop/web-4", True, ""),
    ]
    assert (snn.attempts, snn.admitted, snn.running_pods, snn.topology_affinity_errors) == (4, 2, 1, 2)
    # The metrics describe the whole node: the residents' 4 + 4 CPUs and web-4's 4.
    assert [(n.cpus_exclusive, n.cpus_allocatable) for n in snn.numa] == [(4, 7), (8, 8)]
    assert [n.memory_assigned for n in snn.numa] == [2 << 30, 6 << 30]
    assert (best_effort.admitted, dict(best_effort.rejections)) == (2, {"UnexpectedAdmissionError": 2})
    assert best_effort.configuration.policy == "best-effort"
    # The live node is as it was.
    assert held(live) == before_held and live.topology() == before_topology
    fresh = run_simulation(machine, config, Matrix(), stream[:1])
    assert fresh.results[0].admitted == 3
    assert "live node node-a (2 pod(s) before the stream): 2 configuration(s)" in render_table(report)


def test_simulate_live_on_an_empty_node_is_a_fresh_run(machine: Machine, config: Config) -> None:
    """The same replay: a fork of an empty node reports what a fresh node reports, event for event."""
    stream = [PodStep(WEB, 3), PodStep(WIDE), RemoveStep("web"), PodStep(WEB, 2)]
    matrix = Matrix(("best-effort", "single-numa-node"), ("container", "pod"))
    live = simulate_live(NodeEmulator(config, machine), matrix, stream)
    fresh = run_simulation(machine, config, matrix, stream)
    assert [r.to_dict() for r in live.results] == [r.to_dict() for r in fresh.results]
    assert sum(r.admitted for r in live.results) > 0


def test_a_configuration_the_kubelet_refuses(machine: Machine, config: Config, live: NodeEmulator) -> None:
    """An option the kubelet does not know fails that cell with the kubelet's error, as on a fresh node;
    the other cells run."""
    matrix = Matrix(options=({}, {"no-such-option": "true"}))
    good, bad = simulate_live(live, matrix, [PodStep(WEB)]).results
    assert good.error is None and good.admitted == 1
    fresh = run_configuration(machine, config, bad.configuration, [PodStep(WEB)])
    assert bad.error is not None and bad.error == fresh.error
    assert "no-such-option" in bad.error


# ---- the live spec ---------------------------------------------------------------------------------


def anonymous(step: Step) -> Step:
    """Without the template's UID (a manifest without one gets a random one; instances get their own)."""
    if isinstance(step, PodStep):
        return dataclasses.replace(step, template=dataclasses.replace(step.template, uid=""))
    return step


HEAD = "apiVersion: kubeletemu.io/v1alpha1\nkind: Simulation\n"
STREAM = """\
matrix: {policies: [best-effort], scopes: [pod]}
stream:
- pods: residents.yaml
  repeat: 2
- pod: {metadata: {name: app}, spec: {containers: [{name: c, resources: {limits: {cpu: "1", memory: 1Gi}}}]}}
- remove: app
"""
RESIDENTS = """\
apiVersion: v1
kind: Pod
metadata: {name: r1}
spec: {containers: [{name: c, resources: {limits: {cpu: "2", memory: 1Gi}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: r2}
spec: {containers: [{name: c}]}
"""


def test_live_spec_matches_the_file_spec(tmp_path: Path, config: Config) -> None:
    """A ``pods:`` file travels as text; the steps are those the local reader makes from the file."""
    (tmp_path / "residents.yaml").write_text(RESIDENTS)
    files = pod_files(HEAD + STREAM, tmp_path)
    assert files == {"residents.yaml": RESIDENTS}
    live = parse_live_simulation(HEAD + STREAM, config, "sim.yaml", files)
    local = parse_simulation(HEAD + STREAM, "sim.yaml", tmp_path)
    assert live.matrix == local.matrix
    assert [anonymous(s) for s in live.stream] == [anonymous(s) for s in local.stream]
    assert [type(s).__name__ for s in live.stream] == ["PodStep", "PodStep", "PodStep", "RemoveStep"]
    assert [s.template.name for s in live.stream if isinstance(s, PodStep)] == ["r1", "r2", "app"]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("topology: {synthetic: {sockets: 1}}\n", "topology"),
        ("config: [kubelet.yaml]\n", "config"),
        ("featureGates: {TopologyManagerPolicyAlphaOptions: true}\n", "featureGates"),
        ("topology: {}\n", "topology"),
    ],
)
def test_live_spec_refuses_node_fields(config: Config, extra: str, field: str) -> None:
    text = HEAD + extra + "stream:\n- pod: {metadata: {name: a}, spec: {containers: [{name: c}]}}\n"
    with pytest.raises(SimulationError, match=rf"^req: {field}: not allowed here: .*daemon's node"):
        parse_live_simulation(text, config, "req")


def test_live_spec_errors(config: Config, tmp_path: Path) -> None:
    with pytest.raises(SimulationError, match=r"^req: invalid YAML: .*\(line \d+, column \d+\)"):
        parse_live_simulation("kind: [Simulation", config, "req")
    with pytest.raises(SimulationError, match=r"^req: kind: expected Simulation"):
        parse_live_simulation("kind: Pod\n", config, "req")
    with pytest.raises(SimulationError, match=r"^req: residents.yaml: not sent with the simulation"):
        parse_live_simulation(HEAD + STREAM, config, "req", {})
    with pytest.raises(SimulationError, match=r"req: stream\[0\].repeat: must be at least 1"):
        parse_live_simulation(HEAD + "stream:\n- {pods: x.yaml, repeat: 0}\n", config, "req", {"x.yaml": ""})
    with pytest.raises(SimulationError, match=r"residents.yaml: cannot read"):
        pod_files(HEAD + STREAM, tmp_path)
    # Not a Simulation: nothing to send, the daemon's parse says what is wrong.
    assert pod_files("kind: [", tmp_path) == {}
    assert pod_files("- a\n- b\n", tmp_path) == {}
