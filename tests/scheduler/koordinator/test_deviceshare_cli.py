"""``kubeletemu schedule`` with Koordinator Device objects: the GPU's NUMA node decides the NUMA fit
(DeviceShare's hints merged with NodeNUMAResource's under single-numa-node), and bad Device objects are
refused naming file and field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCHED = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: koord-scheduler
  plugins:
    multiPoint:
      enabled: [{name: NodeNUMAResource}]
"""
POD = """apiVersion: v1
kind: Pod
metadata: {name: gpu-pod, namespace: default}
spec:
  containers:
  - name: c
    resources:
      requests: {cpu: "4", memory: 1Gi, nvidia.com/gpu: "1"}
      limits: {cpu: "4", memory: 1Gi, nvidia.com/gpu: "1"}
"""


def _node(name: str, gpu_numa: int, held: bool = False) -> str:
    """Two NUMA nodes (4 and 2 CPUs), single-numa-node by label, one GPU on ``gpu_numa``; ``held``: a pod
    bound to the node holds the GPU (its device-allocated annotation)."""
    zones = "".join(
        f"""
- name: node-{i}
  type: Node
  resources:
  - {{name: cpu, capacity: "{c}", allocatable: "{c}", available: "{c}"}}
  - {{name: memory, capacity: 8Gi, allocatable: 8Gi, available: 8Gi}}"""
        for i, c in enumerate((4, 2))
    )
    holder = ""
    if held:
        allocated = json.dumps({"gpu": [{"minor": 0, "resources": {"koordinator.sh/gpu-core": "100"}}]})
        holder = f"""---
apiVersion: v1
kind: Pod
metadata:
  name: holder-{name}
  namespace: default
  annotations: {{scheduling.koordinator.sh/device-allocated: '{allocated}'}}
spec:
  nodeName: {name}
  containers: [{{name: c}}]
"""
    return f"""apiVersion: topology.node.k8s.io/v1alpha2
kind: NodeResourceTopology
metadata: {{name: {name}}}
topologyPolicies: [SingleNUMANodePodLevel]
zones:{zones}
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{node.koordinator.sh/numa-topology-policy: SingleNUMANode}}
status:
  allocatable: {{cpu: "8", memory: 16Gi, nvidia.com/gpu: "1", pods: "110"}}
---
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Device
metadata: {{name: {name}}}
spec:
  devices:
  - type: gpu
    id: GPU-{name}
    minor: 0
    health: true
    resources:
      koordinator.sh/gpu-core: "100"
      koordinator.sh/gpu-memory: 16Gi
      koordinator.sh/gpu-memory-ratio: "100"
    topology: {{socketID: 0, nodeID: {gpu_numa}, pcieID: pci0}}
{holder}"""


def _schedule(tmp_path: Path, cluster: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "cluster.yaml").write_text(cluster)
    (tmp_path / "sched.yaml").write_text(SCHED)
    (tmp_path / "pod.yaml").write_text(POD)
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "schedule", "-f", "pod.yaml", "--nrt", "cluster.yaml",
         "--scheduler-config", "sched.yaml", "-o", "json"],
        capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=60, check=False,
    )  # fmt: skip


def test_gpu_numa_node_decides(tmp_path: Path) -> None:
    """The 4 CPUs fit only NUMA node 0: a GPU there aligns, a GPU on NUMA node 1 cannot."""
    result = _schedule(tmp_path, _node("node-b", 1) + "---\n" + _node("node-a", 0))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["chosen"] == "node-a"
    by_name = {n["name"]: n for n in doc["nodes"]}
    assert by_name["node-a"]["fits"] is True
    assert by_name["node-b"]["fits"] is False
    assert by_name["node-b"]["reason"] == (
        "Unaligned NUMA Hint cause cpu prefer [01] among [01 11],gpu prefer [10] among [10],"
        "memory prefer [01] among [01 11]"
    )


def test_gpu_held_by_a_bound_pod(tmp_path: Path) -> None:
    """The only GPU is taken (device-allocated on a bound pod): the whole-node allocation fails in the GPU
    topology walk, and that status is DeviceShare's answer to the Topology Manager."""
    result = _schedule(tmp_path, _node("node-a", 0, held=True))
    assert result.returncode == 1, result.stderr
    (node,) = json.loads(result.stdout)["nodes"]
    assert node["fits"] is False
    assert node["reason"] == "Insufficient GPU Devices"


def test_bad_device_object_names_file_and_field(tmp_path: Path) -> None:
    cluster = _node("node-a", 0).replace("    minor: 0\n", "")
    result = _schedule(tmp_path, cluster)
    assert result.returncode == 2
    assert (
        'cluster.yaml: Device "node-a" (document 3): spec.devices[0].minor: Required value' in result.stderr
    )
