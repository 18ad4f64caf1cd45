"""Kubelet versions in simulations (issue 16): the ``kubeletVersions`` matrix axis, a config file's
``kubeletVersion``, the report naming each configuration's version, and a live node asked as another
version.

``strict-cpu-reservation`` is beta in 1.33 and 1.34 and GA from 1.35 (kubernetes#134388): with
``CPUManagerPolicyBetaOptions`` off, a 1.34 kubelet refuses to start and a 1.35 one runs the stream.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hostprobe.synthetic import GIB_KIB, SyntheticHost
from kubeletemu.manifest import parse_pods
from kubeletemu.simulate import Matrix, PodStep, SimulationError, render_json, render_table, simulate_live
from kubeletemu.simulate.spec import parse_simulation
from tests.podresources.nodes import container, general_config, make_emulator, pod_manifest

KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
cpuManagerPolicyOptions: {strict-cpu-reservation: "true"}
reservedSystemCPUs: "0"
topologyManagerPolicy: single-numa-node
featureGates: {CPUManagerPolicyBetaOptions: false}
"""

SPEC = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Simulation
topology:
  synthetic: {sockets: 2, coresPerSocket: 4, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 8}
config: [kubelet.yaml]
matrix: {kubeletVersions: [%s], scopes: [container, pod]}
stream:
- pod: {metadata: {name: app}, spec: {containers: [{name: c, resources: {limits: {cpu: "2", memory: 1Gi}}}]}}
  repeat: 3
"""


def write(tmp_path: Path, versions: str, kubelet: str = KUBELET) -> str:
    (tmp_path / "kubelet.yaml").write_text(kubelet)
    return SPEC % versions


def test_the_versions_axis_runs_each_version(tmp_path: Path) -> None:
    simulation = parse_simulation(write(tmp_path, '"1.34", v1.35.2'), "sim.yaml", tmp_path)
    assert simulation.matrix.kubelet_versions == ("1.34", "1.35")
    report = simulation.run()
    cells = [(r.configuration.kubelet_version, r.configuration.scope) for r in report.results]
    assert cells == [("1.34", "container"), ("1.34", "pod"), ("1.35", "container"), ("1.35", "pod")]
    refused = (
        'CPU Manager Policy Beta-level Options not enabled, but option "strict-cpu-reservation" provided'
    )
    assert all(refused in (r.error or "") for r in report.results[:2])
    assert [(r.error, r.admitted) for r in report.results[2:]] == [(None, 3), (None, 3)]

    doc = json.loads(render_json(report, events=False))
    assert [c["kubeletVersion"] for c in doc["configurations"]] == ["1.34", "1.34", "1.35", "1.35"]
    table = render_table(report).splitlines()
    assert table[0] == "simulation on synthetic: 4 configuration(s)"  # mixed versions: a column instead
    assert table[1].split()[:4] == ["#", "KUBELET", "POLICY", "SCOPE"]
    assert table[2].split()[:3] == ["1", "1.34", "single-numa-node"]
    assert "kubelet would not start:" in table[2]
    assert table[4].split()[:2] == ["3", "1.35"] and "3/3" in table[4]


def test_a_config_files_version_is_the_default(tmp_path: Path) -> None:
    kubelet = KUBELET.replace("featureGates: {CPUManagerPolicyBetaOptions: false}\n", "")
    kubelet += (
        "---\napiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\nkubeletVersion: '1.33'\n"
    )
    spec = write(tmp_path, "", kubelet).replace("kubeletVersions: [], ", "")
    report = parse_simulation(spec, "sim.yaml", tmp_path).run()
    assert {r.configuration.kubelet_version for r in report.results} == {"1.33"}
    assert render_table(report).splitlines()[0] == "simulation on synthetic: 2 configuration(s), kubelet 1.33"


def test_gates_a_version_refuses_are_that_cells_error(tmp_path: Path) -> None:
    # KubeletPodResourcesListUseActivePods exists from 1.34: a 1.33 kubelet refuses the name.
    kubelet = KUBELET.replace(
        "featureGates: {CPUManagerPolicyBetaOptions: false}",
        "featureGates: {KubeletPodResourcesListUseActivePods: true}",
    ).replace('cpuManagerPolicyOptions: {strict-cpu-reservation: "true"}\n', "")
    report = parse_simulation(write(tmp_path, '"1.33", "1.34"', kubelet), "sim.yaml", tmp_path).run()
    errors = [r.error for r in report.results]
    assert all(
        "unrecognized feature gate: KubeletPodResourcesListUseActivePods (kubeletVersion 1.33)" in (e or "")
        for e in errors[:2]
    )
    assert errors[2:] == [None, None]


@pytest.mark.parametrize("version", ['"1.29"', "latest", "1.3"])
def test_unsupported_version_names_the_file_and_the_range(tmp_path: Path, version: str) -> None:
    with pytest.raises(SimulationError) as err:
        parse_simulation(write(tmp_path, version), "sim.yaml", tmp_path)
    assert str(err.value).startswith("sim.yaml: matrix: kubeletVersion ")
    assert str(err.value).endswith(": supported: 1.33, 1.34, 1.35, 1.36, 1.37, master")


def test_a_live_node_forked_as_other_versions(tmp_path: Path) -> None:
    """The what-if of an upgrade: a node holding pods, its fork per version. Pod-level requests count in
    the node fit from 1.34 (``PodLevelResources`` beta, on); 1.33 (the gate alpha, off; no pod-features
    admit handler) ignores them, fits the container's nothing and admits the pod."""
    host = SyntheticHost(node_memory_kib=16 * GIB_KIB)
    node = make_emulator(tmp_path, host, general_config(memory_policy="None"))
    holder = parse_pods(pod_manifest("holder", "ns", containers=container("c", 'cpu: "8", memory: 1Gi')), "t")
    assert node.admit(holder[0]).admitted
    pod_level = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: plr, namespace: ns}\n"
        'spec:\n  resources: {requests: {cpu: "8"}}\n  containers:\n  - name: c\n'
    )
    [template] = parse_pods(pod_level, "t")
    report = simulate_live(node, Matrix(kubelet_versions=("1.33", "1.34")), [PodStep(template)], "node-a")
    assert [(r.configuration.kubelet_version, r.admitted) for r in report.results] == [
        ("1.33", 1),
        ("1.34", 0),
    ]
    assert dict(report.results[0].rejections) == {}
    assert dict(report.results[1].rejections) == {"OutOfcpu": 1}
    assert len(node.registry) == 1  # the live node is untouched
