"""KEP-6007's motivating scenario on a 2-NUMA node, through the emulator and through ``simulate``.

Node: 2 sockets × 4 cores × 2 threads, one NUMA node per socket: NUMA 0 = CPUs 0-3,8-11, NUMA 1 = CPUs
4-7,12-15. Static CPU manager with CPU 0 reserved: 7 allocatable CPUs on NUMA 0, 8 on NUMA 1.
single-numa-node, container scope, memory manager None (only the CPU signal exists). One device,
``example.com/dev``, on NUMA 1.

Stream: a device-bound pod ``pinned`` (3 CPUs + the device: NUMA 1 is the only choice), then identical
Guaranteed pods ``app``, each with a 1-CPU container ``small`` then a 3-CPU container ``big``.
A container can go wherever its CPUs fit; with two candidates the tie-break decides. Free CPUs are
written (NUMA 0, NUMA 1); the score is exclusive·100 // allocatable (7 and 8 allocatable).

Default (narrowest: NUMA 0 on a tie), free (7, 5) after ``pinned``:
  app-1  small -> 0 (6, 5); big -> 0 (3, 5)
  app-2  small -> 0 (2, 5); big: NUMA 0 has 2 < 3 -> 1 (2, 2)
  app-3  small -> 0 (1, 2); big fits nowhere: TopologyAffinityError (small released: (2, 2))
  app-4, app-5 likewise.                                       => 2 apps admitted, 3 pods in all
most-allocated (and prefer-most-allocated-numa-node): scores start at 0 vs 3·100//8 = 37
  app-1  small: 0 vs 37 -> 1 (7, 4); big: 0 vs 50 -> 1 (7, 1)
  app-2  small: 0 vs 87 -> 1 (7, 0); big: only NUMA 0 -> 0 (4, 0)
  app-3  small: only NUMA 0 (3, 0); big: NUMA 0 (0, 0)   <- admitted: NUMA 1 was filled first
  app-4  small fits nowhere: rejected                          => 3 apps admitted, 4 pods in all
least-allocated: 0 vs 37 -> NUMA 0 first
  app-1  small -> 0 (6, 5), score 14 vs 37; big -> 0 (3, 5)
  app-2  small: 57 vs 37 -> 1 (3, 4); big: 57 vs 50 -> 1 (3, 1)
  app-3  small: 57 vs 87 -> 0 (2, 1); big fits nowhere: rejected  => 2 apps admitted, 3 pods in all
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import pytest

import hostprobe
from hostprobe.synthetic import SyntheticHost, write_tree
from kubeletemu.config import Config, parse_config
from kubeletemu.daemon import convert
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from kubeletemu.simulate import AdmissionEvent, Matrix, PodStep, run_simulation

CONFIG = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: single-numa-node
topologyManagerScope: container
cpuManagerPolicy: static
reservedSystemCPUs: "0"
featureGates: {TopologyManagerPolicyAlphaOptions: true}
topologyManagerPolicyOptions: {}
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
devices:
- resourceName: example.com/dev
  devices:
  - {id: dev0, numaNodes: [1]}
"""

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default, uid: uid-pinned}
spec:
  containers:
  - name: c
    resources:
      limits: {cpu: "3", memory: 1Gi, example.com/dev: "1"}
---
apiVersion: v1
kind: Pod
metadata: {name: app, namespace: default, uid: uid-app}
spec:
  containers:
  - name: small
    resources:
      limits: {cpu: "1", memory: 256Mi}
  - name: big
    resources:
      limits: {cpu: "3", memory: 256Mi}
"""

DEFAULT: dict[str, str] = {}
MOST = {"numa-allocation-strategy": "most-allocated"}
LEAST = {"numa-allocation-strategy": "least-allocated"}
FIRST_DRAFT = {"prefer-most-allocated-numa-node": "true"}
STREAM_LENGTH = 5


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    sys_root, proc_root = write_tree(tmp_path_factory.mktemp("kep6007"), SyntheticHost())
    return Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))


def config(options: Mapping[str, str]) -> Config:
    text = CONFIG.replace(
        "topologyManagerPolicyOptions: {}", f"topologyManagerPolicyOptions: {dict(options)}"
    )
    return parse_config(text)


def templates() -> tuple[Pod, Pod]:
    pinned, app = parse_pods(PODS)
    return pinned, app


def replay(machine: Machine, options: Mapping[str, str]) -> tuple[NodeEmulator, list[tuple[str, bool, str]]]:
    node = NodeEmulator(config(options), machine)
    pinned, app = templates()
    apps = [
        dataclasses.replace(app, name=f"app-{i}", uid=f"uid-app-{i}") for i in range(1, STREAM_LENGTH + 1)
    ]
    outcomes = []
    for pod in [pinned, *apps]:
        report = node.admit(pod)
        placed = []
        for container in report.containers if report.admitted else ():
            assert container.affinity is not None and container.affinity.affinity is not None
            placed.append(f"{container.name}:{container.affinity.affinity.bits()[0]}")
        outcomes.append((pod.name, report.admitted, ",".join(placed)))
    return node, outcomes


def test_machine_is_the_one_worked_out(machine: Machine) -> None:
    assert machine.cpus_of([0]) == [0, 1, 2, 3, 8, 9, 10, 11]
    assert machine.cpus_of([1]) == [4, 5, 6, 7, 12, 13, 14, 15]


def test_default_tie_break_admits_two_apps(machine: Machine) -> None:
    node, outcomes = replay(machine, DEFAULT)
    assert outcomes == [
        ("pinned", True, "c:1"),
        ("app-1", True, "small:0,big:0"),
        ("app-2", True, "small:0,big:1"),
        ("app-3", False, ""),
        ("app-4", False, ""),
        ("app-5", False, ""),
    ]
    assert node.cm.cpus.exclusive_cpus_per_numa() == {0: 5, 1: 6}


@pytest.mark.parametrize(
    "options", [MOST, FIRST_DRAFT], ids=["most-allocated", "prefer-most-allocated-numa-node"]
)
def test_most_allocated_admits_three_apps(machine: Machine, options: Mapping[str, str]) -> None:
    node, outcomes = replay(machine, options)
    assert outcomes == [
        ("pinned", True, "c:1"),
        ("app-1", True, "small:1,big:1"),
        ("app-2", True, "small:1,big:0"),
        ("app-3", True, "small:0,big:0"),
        ("app-4", False, ""),
        ("app-5", False, ""),
    ]
    assert node.cm.cpus.exclusive_cpus_per_numa() == {0: 7, 1: 8}


def test_least_allocated_spreads_and_admits_two(machine: Machine) -> None:
    _, outcomes = replay(machine, LEAST)
    assert outcomes == [
        ("pinned", True, "c:1"),
        ("app-1", True, "small:0,big:0"),
        ("app-2", True, "small:1,big:1"),
        ("app-3", False, ""),
        ("app-4", False, ""),
        ("app-5", False, ""),
    ]


def test_simulate_counts(machine: Machine) -> None:
    pinned, app = templates()
    matrix = Matrix(options=(DEFAULT, MOST, LEAST, FIRST_DRAFT))
    report = run_simulation(machine, config(DEFAULT), matrix, [PodStep(pinned), PodStep(app, STREAM_LENGTH)])
    counts = {
        r.configuration.options_label: (r.admitted, r.first_rejection, r.topology_affinity_errors)
        for r in report.results
    }
    assert counts == {
        "-": (3, 3, 3),
        "numa-allocation-strategy=most-allocated": (4, 4, 2),
        "numa-allocation-strategy=least-allocated": (3, 3, 3),
        "prefer-most-allocated-numa-node=true": (4, 4, 2),
    }
    default, most, least, first = report.results
    assert most.admitted > default.admitted
    # Which signal decided, for every placement a score made.
    decided = [
        (event.pod, [(d.decided_by, d.chosen.bits(), d.over.bits()) for d in event.decisions])
        for event in first.events
        if isinstance(event, AdmissionEvent) and event.decisions
    ]
    assert decided == [
        ("default/app-1", [(("cpu",), [1], [0]), (("cpu",), [1], [0])]),
        ("default/app-2", [(("cpu",), [1], [0])]),
    ]
    assert default.score_decisions == 0
    # app-3 to app-5 of least-allocated had their small container placed by a score, then were rejected.
    assert (most.admissions_decided_by_score, least.admissions_decided_by_score) == (2, 2)
    assert least.score_decisions == 2 + 2 + 1 + 1 + 1


@pytest.mark.parametrize(("options", "signal"), [(MOST, "cpu"), (FIRST_DRAFT, "cpu")])
def test_score_decisions_reach_the_admit_answer(
    machine: Machine, options: Mapping[str, str], signal: str
) -> None:
    """After the pinned pod takes 3 CPUs of NUMA 1, a 1-CPU container ties between NUMA 0 and 1; the
    score picks NUMA 1 over the default NUMA 0. WouldAdmit and Admit both say so, in the engine's report
    and in the gRPC answer (ScoreDecision: container, chosen, over, deciding signal, JSON detail)."""
    node = NodeEmulator(config(options), machine)
    pinned, app = templates()
    assert node.admit(pinned).admitted
    for ask in (node.would_admit, node.admit):
        report = ask(app)
        assert report.admitted
        container, decision = report.numa_decisions[0]
        assert (container, decision.chosen.bits(), decision.over.bits()) == ("small", [1], [0])
        message = convert.admit_response(report).score_decisions[0]
        assert (message.container, list(message.chosen), list(message.over)) == ("small", [1], [0])
        assert signal in message.signal.split(",")
        assert json.loads(message.detail)["overrode_default"] is True
