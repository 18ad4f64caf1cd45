"""``kind: Simulation`` files: a full spec on a synthetic shape, each topology source, and the one-line
errors bad input gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletemu.simulate import PodStep, RemoveStep, SimulationError, render_table
from kubeletemu.simulate.spec import load_simulation, parse_simulation

KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
reservedSystemCPUs: "0"
topologyManagerPolicy: best-effort
"""

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "3", memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: default}
spec:
  containers:
  - name: c
    resources: {requests: {cpu: 100m}}
"""

SPEC = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Simulation
topology:
  synthetic: {sockets: 2, coresPerSocket: 4, threadsPerCore: 2, memoryGiBPerNode: 8}
config: kubelet.yaml
featureGates: {TopologyManagerPolicyAlphaOptions: true}
matrix:
  policies: [single-numa-node]
  scopes: [container, pod]
  options:
  - {}
  - {numa-allocation-strategy: most-allocated}
stream:
- pods: pods.yaml
- pod:
    metadata: {name: app}
    spec:
      containers:
      - name: c
        resources: {limits: {cpu: "2", memory: 512Mi}}
  repeat: 4
- remove: app
  count: 2
- remove: pinned
"""


def write(tmp_path: Path, spec: str = SPEC) -> Path:
    (tmp_path / "kubelet.yaml").write_text(KUBELET)
    (tmp_path / "pods.yaml").write_text(PODS)
    path = tmp_path / "sim.yaml"
    path.write_text(spec)
    return path


def test_full_spec(tmp_path: Path) -> None:
    simulation = load_simulation(write(tmp_path))
    assert simulation.topology.kind == "synthetic"
    assert simulation.config.kubelet.cpu_manager_policy == "static"
    assert simulation.config.kubelet.feature_gates["TopologyManagerPolicyAlphaOptions"] is True
    assert [c.label for c in simulation.matrix.configurations(simulation.config)] == [
        "single-numa-node/container/-",
        "single-numa-node/container/numa-allocation-strategy=most-allocated",
        "single-numa-node/pod/-",
        "single-numa-node/pod/numa-allocation-strategy=most-allocated",
    ]
    steps = simulation.stream
    assert [type(s).__name__ for s in steps] == ["PodStep", "PodStep", "PodStep", "RemoveStep", "RemoveStep"]
    assert isinstance(steps[2], PodStep) and (steps[2].template.name, steps[2].repeat) == ("app", 4)
    assert steps[3] == RemoveStep("app", 2)
    report = simulation.run()
    assert [r.admitted for r in report.results] == [6, 6, 6, 6]
    assert all(r.running_pods == 3 for r in report.results)
    assert render_table(report).startswith("simulation on synthetic: 4 configuration(s), kubelet master\n")


def test_topology_sources(tmp_path: Path) -> None:
    base = "apiVersion: kubeletemu.io/v1alpha1\nkind: Simulation\nstream: [{remove: x}]\n"
    host = parse_simulation(base, "s.yaml", tmp_path)
    assert (host.topology.kind, host.topology.sysfs_root, host.topology.procfs_root) == (
        "host",
        "/sys",
        "/proc",
    )
    archive = parse_simulation(base + "topology: {capture: {archive: caps/x.tar.gz}}\n", "s.yaml", tmp_path)
    assert archive.topology.archive == str(tmp_path / "caps" / "x.tar.gz")
    assert archive.topology.name == "x"
    dirs = parse_simulation(base + "topology: {capture: {sysfsRoot: cap/sys}}\n", "s.yaml", tmp_path)
    assert (dirs.topology.sysfs_root, dirs.topology.procfs_root) == (
        str(tmp_path / "cap/sys"),
        str(tmp_path / "cap/proc"),
    )


ERRORS = {
    "not YAML": ("{", "s.yaml: invalid YAML: "),
    "two documents": ("a: 1\n---\nb: 2\n", "s.yaml: expected one Simulation document, got 2"),
    "wrong kind": ("kind: Pod\n", "s.yaml: kind: expected Simulation, got 'Pod'"),
    "wrong apiVersion": (
        "kind: Simulation\napiVersion: v1\n",
        "s.yaml: apiVersion: expected kubeletemu.io/v1alpha1",
    ),
    "unknown top field": (
        "{H}steps: []\n",
        "s.yaml: steps: unknown field: expected one of apiVersion, config",
    ),
    "no stream": ("{H}", "s.yaml: stream: expected at least one step"),
    "two sources": (
        "{H}stream: [{remove: x}]\ntopology: {host: {}, synthetic: {}}\n",
        "s.yaml: topology: expected exactly one of host, capture, synthetic",
    ),
    "unknown source": (
        "{H}stream: [{remove: x}]\ntopology: {cloud: {}}\n",
        "s.yaml: topology: unknown source 'cloud'",
    ),
    "capture without roots": (
        "{H}stream: [{remove: x}]\ntopology: {capture: {}}\n",
        "s.yaml: topology.capture: expected archive, or sysfsRoot (and procfsRoot)",
    ),
    "synthetic typo": (
        "{H}stream: [{remove: x}]\ntopology: {synthetic: {socket: 2}}\n",
        "s.yaml: topology.synthetic.socket: unknown field: expected one of sockets",
    ),
    "synthetic not an integer": (
        "{H}stream: [{remove: x}]\ntopology: {synthetic: {sockets: two}}\n",
        "s.yaml: topology.synthetic.sockets: expected an integer, got a string",
    ),
    "synthetic shape": (
        "{H}stream: [{remove: x}]\ntopology: {synthetic: {threadsPerCore: 0}}\n",
        "s.yaml: topology.synthetic: threadsPerCore must be at least 1, got 0",
    ),
    "unknown policy": (
        "{H}stream: [{remove: x}]\nmatrix: {policies: [strict]}\n",
        's.yaml: matrix: unknown policy "strict"',
    ),
    "matrix typo": (
        "{H}stream: [{remove: x}]\nmatrix: {policy: [none]}\n",
        "s.yaml: matrix.policy: unknown field",
    ),
    "options not a map": (
        "{H}stream: [{remove: x}]\nmatrix: {options: [yes]}\n",
        "s.yaml: matrix.options[0]: expected a mapping, got a boolean",
    ),
    "step with two kinds": (
        "{H}stream: [{remove: x, pods: y.yaml}]\n",
        "s.yaml: stream[0]: expected exactly one of pods, pod, remove",
    ),
    "repeat zero": (
        "{H}stream: [{pod: {metadata: {name: a}, spec: {containers: [{name: c}]}}, repeat: 0}]\n",
        "s.yaml: stream[0].repeat: must be at least 1, got 0",
    ),
    "count on a pod": (
        "{H}stream: [{pod: {metadata: {name: a}, spec: {containers: [{name: c}]}}, count: 2}]\n",
        "s.yaml: stream[0].count: unknown field: expected pod and repeat",
    ),
    "bad inline pod": (
        "{H}stream:\n- pod:\n    metadata: {name: a}\n"
        "    spec: {containers: [{name: c, resources: {requests: {cpu: x}}}]}\n",
        's.yaml: stream[0].pod: pod "a" (document 1): spec.containers[0].resources.requests.cpu: '
        'invalid quantity "x"',
    ),
    "missing manifest file": ("{H}stream: [{pods: nowhere.yaml}]\n", "nowhere.yaml: cannot read: "),
    "missing config file": (
        "{H}stream: [{remove: x}]\nconfig: [nowhere.yaml]\n",
        "nowhere.yaml: cannot read: ",
    ),
    "bad feature gate": (
        "{H}stream: [{remove: x}]\nfeatureGates: {X: maybe}\n",
        "s.yaml: featureGates[X]: expected true or false, got a string",
    ),
}
HEADER = "apiVersion: kubeletemu.io/v1alpha1\nkind: Simulation\n"


@pytest.mark.parametrize(("text", "message"), ERRORS.values(), ids=ERRORS)
def test_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SimulationError) as info:
        parse_simulation(text.replace("{H}", HEADER), "s.yaml", tmp_path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(SimulationError, match=r"sim\.yaml: cannot read: "):
        load_simulation(tmp_path / "sim.yaml")
