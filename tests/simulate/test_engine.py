"""The simulation engine on a small synthetic node: stream expansion (names, UIDs, removals), metrics,
configurations the kubelet refuses, determinism, and the three outputs."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from hostprobe.synthetic import SyntheticHost, write_tree
from kubeletemu.config import parse_config
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.simulate import (
    AdmissionEvent,
    Matrix,
    PodStep,
    RemovalEvent,
    RemoveStep,
    SimulationError,
    TopologySource,
    render_json,
    render_table,
    run_simulation,
    simulate,
    synthetic_shape,
)
from kubeletemu.simulate.inputs import expand

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

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  containers:
  - name: c
    resources:
      limits: {cpu: "4", memory: 4Gi}
---
apiVersion: v1
kind: Pod
metadata: {name: wide, namespace: hpc}
spec:
  containers:
  - name: c
    resources:
      limits: {cpu: "10", memory: 1Gi}
"""


@pytest.fixture(scope="module")
def machine() -> Machine:
    # 2 × 4 cores × 2 threads: NUMA 0 = CPUs 0-3,8-11 (7 allocatable, CPU 0 reserved), NUMA 1 = 8 CPUs.
    return TopologySource.synthetic_host(SyntheticHost()).machine()


def pods() -> tuple:  # type: ignore[type-arg]
    return tuple(parse_pods(PODS))


def test_expand_names_and_uids() -> None:
    web, wide = pods()
    stream = [PodStep(web, 2), PodStep(wide), PodStep(web, 1), RemoveStep("web-2")]
    expanded = [(i, [inst.pod.name for inst in instances]) for i, _, instances in expand(stream)]
    # Numbering continues across steps; a single instance of a fresh template keeps its name.
    assert expanded == [(0, ["web-1", "web-2"]), (1, ["wide"]), (2, ["web-3"]), (3, [])]
    uids = [inst.pod.uid for _, _, instances in expand(stream) for inst in instances]
    assert len(set(uids)) == 4
    assert uids == [inst.pod.uid for _, _, instances in expand(stream) for inst in instances]
    with pytest.raises(SimulationError, match="repeat must be at least 1"):
        PodStep(web, 0)
    with pytest.raises(SimulationError, match="count must be at least 1"):
        RemoveStep("web", 0)


def test_run_and_metrics(machine: Machine) -> None:
    """single-numa-node: web (4 CPUs, 4Gi) fits NUMA 0 once (7 CPUs), NUMA 1 twice (8): 3 webs, the 4th
    is rejected. wide (10 CPUs) never fits one node. Removing web-1 frees NUMA 0 for web-5."""
    web, wide = pods()
    stream = [PodStep(web, 4), PodStep(wide), RemoveStep("web-1"), PodStep(web, 1), RemoveStep("nothing")]
    report = run_simulation(machine, parse_config(CONFIG), Matrix(), stream)
    (result,) = report.results
    assert result.configuration.label == "single-numa-node/container/-"
    admissions = [e for e in result.events if isinstance(e, AdmissionEvent)]
    assert [(e.pod, e.admitted, e.affinity) for e in admissions] == [
        ("shop/web-1", True, (("c", (0,)),)),
        ("shop/web-2", True, (("c", (1,)),)),
        ("shop/web-3", True, (("c", (1,)),)),
        ("shop/web-4", False, (("c", None),)),
        ("hpc/wide", False, (("c", None),)),
        ("shop/web-5", True, (("c", (0,)),)),
    ]
    removals = [e for e in result.events if isinstance(e, RemovalEvent)]
    assert removals == [RemovalEvent(2, "web-1", ("shop/web-1",)), RemovalEvent(4, "nothing", ())]
    assert (result.attempts, result.admitted, result.running_pods) == (6, 4, 3)
    assert (result.first_rejection, result.first_rejection_pod) == (3, "shop/web-4")
    assert result.topology_affinity_errors == 2
    assert dict(result.rejections) == {"TopologyAffinityError": 2}
    assert [(n.node, n.cpus_exclusive, n.cpus_allocatable, n.cpu_percent) for n in result.numa] == [
        (0, 4, 7, 57.1),
        (1, 8, 8, 100.0),
    ]
    assert [n.memory_assigned for n in result.numa] == [4 << 30, 8 << 30]
    assert result.largest_free_cpus == 3
    free = [n.free_memory for n in result.numa]
    assert result.largest_free_memory == max(f for f in free if f is not None)
    assert result.spread_containers == 0


def test_remove_by_template_takes_the_oldest(machine: Machine) -> None:
    web, _ = pods()
    stream = [PodStep(web, 3), RemoveStep("web", 2), RemoveStep("web", 5)]
    report = run_simulation(machine, parse_config(CONFIG), Matrix(), stream)
    removals = [e.removed for e in report.results[0].events if isinstance(e, RemovalEvent)]
    assert removals == [("shop/web-1", "shop/web-2"), ("shop/web-3",)]
    assert report.results[0].running_pods == 0
    assert all(n.cpus_exclusive == 0 for n in report.results[0].numa)


def test_spread_under_best_effort(machine: Machine) -> None:
    _, wide = pods()
    report = run_simulation(machine, parse_config(CONFIG), Matrix(policies=("best-effort",)), [PodStep(wide)])
    (result,) = report.results
    assert result.admitted == 1
    assert result.spread_containers == 1
    (event,) = result.events
    assert isinstance(event, AdmissionEvent) and event.affinity == (("c", (0, 1)),)


def test_configurations_the_kubelet_refuses(machine: Machine, tmp_path: Path) -> None:
    web, _ = pods()
    matrix = Matrix(
        policies=("best-effort", "single-numa-node"),
        options=({"prefer-most-allocated-numa-node": "true"}, {"numa-allocation-strategy": "spread"}),
    )
    report = run_simulation(machine, parse_config(CONFIG), matrix, [PodStep(web)])
    errors = [r.error for r in report.results]
    gate = "topology manager policy alpha-level options not enabled, but option"
    assert errors == [
        f'{gate} "prefer-most-allocated-numa-node" provided',
        f'{gate} "numa-allocation-strategy" provided',
        f'{gate} "prefer-most-allocated-numa-node" provided',
        f'{gate} "numa-allocation-strategy" provided',
    ]
    table = render_table(report)
    assert "kubelet would not start: topology manager policy alpha-level options not enabled" in table
    assert json.loads(render_json(report))["configurations"][0] == {
        "policy": "best-effort",
        "scope": "container",
        "options": {"prefer-most-allocated-numa-node": "true"},
        "label": "best-effort/container/prefer-most-allocated-numa-node=true",
        "kubeletVersion": "master",
        "error": f'{gate} "prefer-most-allocated-numa-node" provided',
    }
    # A report in which no configuration ran still charts (every row says so, the heatmaps are empty).
    from PIL import Image

    from kubeletemu.plot import simulation_chart

    with Image.open(simulation_chart(json.loads(render_json(report)), tmp_path / "c.png")) as chart:
        assert chart.format == "PNG" and chart.size == (1400, 360)


def test_matrix_validation() -> None:
    with pytest.raises(SimulationError, match='unknown policy "best"'):
        Matrix(policies=("best",))
    with pytest.raises(SimulationError, match='unknown scope "node"'):
        Matrix(scopes=("node",))


def test_matrix_defaults_to_the_base_config() -> None:
    config = parse_config(CONFIG.replace("single-numa-node", "restricted"))
    (only,) = Matrix().configurations(config)
    assert (only.policy, only.scope, dict(only.options)) == ("restricted", "container", {})
    product = Matrix(
        ("none", "best-effort"), ("pod",), ({}, {"prefer-closest-numa-nodes": "true"})
    ).configurations(config)
    assert [c.label for c in product] == [
        "none/pod/-",
        "none/pod/prefer-closest-numa-nodes=true",
        "best-effort/pod/-",
        "best-effort/pod/prefer-closest-numa-nodes=true",
    ]


@pytest.mark.slow
def test_outputs_are_deterministic(tmp_path: Path) -> None:
    """Two runs from scratch (fresh probe, fresh nodes) give byte-identical table, JSON and chart."""
    web, wide = pods()
    stream = [PodStep(web, 3), PodStep(wide), RemoveStep("web")]
    matrix = Matrix(
        ("best-effort", "single-numa-node"),
        ("container", "pod"),
        ({}, {"numa-allocation-strategy": "least-allocated"}),
    )
    config = parse_config(CONFIG + "featureGates: {TopologyManagerPolicyAlphaOptions: true}\n")
    shape = synthetic_shape(sockets=2, cores_per_socket=4)
    runs = [
        simulate(TopologySource.synthetic_host(shape, "two-node"), config, matrix, stream) for _ in range(2)
    ]
    assert render_table(runs[0]) == render_table(runs[1])
    assert render_json(runs[0]) == render_json(runs[1])
    from kubeletemu.plot import simulation_chart

    charts = [simulation_chart(json.loads(render_json(r)), tmp_path / f"{i}.png") for i, r in enumerate(runs)]
    assert charts[0].read_bytes() == charts[1].read_bytes()
    assert runs[0].topology == {"kind": "synthetic", "name": "two-node"}


def test_topology_source_errors(tmp_path: Path) -> None:
    with pytest.raises(SimulationError, match="is not a directory"):
        TopologySource.capture_dirs(str(tmp_path / "missing" / "sys"), str(tmp_path / "proc")).machine()
    bogus = tmp_path / "bogus.tar.gz"
    bogus.write_bytes(b"not a tarball")
    with pytest.raises(SimulationError, match="cannot extract"):
        TopologySource.capture_archive(str(bogus)).machine()
    with pytest.raises(
        SimulationError, match=r"coresPerSocket \(3\) must be a multiple of nodesPerSocket \(2\)"
    ):
        synthetic_shape(cores_per_socket=3, nodes_per_socket=2)
    with pytest.raises(SimulationError, match="sockets must be at least 1"):
        synthetic_shape(sockets=0)


def test_synthetic_shapes_any_numa_count() -> None:
    machine = TopologySource.synthetic_host(
        synthetic_shape(sockets=2, cores_per_socket=4, nodes_per_socket=2)
    ).machine()
    assert machine.numa_node_ids == [0, 1, 2, 3]
    assert machine.cpus_of([3]) == [6, 7, 14, 15]


def _archive(path: Path, host: SyntheticHost, work: Path) -> None:
    top = work / "capture"
    shutil.rmtree(top, ignore_errors=True)
    write_tree(top, host)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(top, arcname="capture")


def test_a_shape_or_an_archive_is_probed_once_until_it_changes(tmp_path: Path) -> None:
    """A fleet probes its node groups for every configuration: a synthetic shape gives the same Machine
    each time, a different shape another; an archive is probed again once it is replaced."""
    two = TopologySource.synthetic_host(synthetic_shape(sockets=2, cores_per_socket=2))
    assert two.machine() is two.machine()
    four = TopologySource.synthetic_host(synthetic_shape(sockets=2, cores_per_socket=2, nodes_per_socket=2))
    assert four.machine().numa_node_ids == [0, 1, 2, 3] and two.machine().numa_node_ids == [0, 1]
    archive = tmp_path / "capture.tar.gz"
    _archive(archive, synthetic_shape(sockets=2, cores_per_socket=2), tmp_path)
    source = TopologySource.capture_archive(str(archive))
    first = source.machine()
    assert source.machine() is first and first.numa_node_ids == [0, 1]
    _archive(archive, synthetic_shape(sockets=4, cores_per_socket=2), tmp_path)
    os.utime(archive, ns=(1, 1))  # another mtime whatever the clock's resolution
    assert source.machine().numa_node_ids == [0, 1, 2, 3]
