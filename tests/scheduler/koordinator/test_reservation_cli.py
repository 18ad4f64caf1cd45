"""``kubeletemu schedule`` with a Koordinator Reservation: its owner reuses the reserved CPUs, another pod
does not (koordinator-sh/koordinator a7a1b76, nodenumaresource/reservation.go)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubeletemu.cli.common import read_pod_files
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.scheduler.koordinator.model import NodeNUMAResource
from kubeletemu.scheduler.objects import read_objects
from kubeletemu.scheduler.profile import node_infos

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

REPO = Path(__file__).resolve().parents[3]
DETAIL = [{"id": c, "core": c // 2, "socket": c // 4, "node": c // 4} for c in range(8)]
CLUSTER = f"""\
apiVersion: topology.node.k8s.io/v1alpha2
kind: NodeResourceTopology
metadata:
  name: node-a
  annotations:
    node.koordinator.sh/cpu-topology: '{json.dumps({"detail": DETAIL})}'
zones:
- name: node-0
  type: Node
  resources: [{{name: cpu, capacity: "4", allocatable: "4", available: "4"}}]
- name: node-1
  type: Node
  resources: [{{name: cpu, capacity: "4", allocatable: "4", available: "4"}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: busy
  namespace: prod
  annotations:
    scheduling.koordinator.sh/resource-status: '{{"cpuset": "4-7"}}'
spec:
  nodeName: node-a
  containers: [{{name: c, resources: {{requests: {{cpu: "4"}}}}}}]
---
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata:
  name: r1
  uid: r1-uid
  annotations:
    scheduling.koordinator.sh/resource-status: '{{"cpuset": "0-3"}}'
spec:
  owners: [{{labelSelector: {{matchLabels: {{app: web}}}}}}]
status:
  phase: Available
  nodeName: node-a
  allocatable: {{cpu: "4"}}
"""
SCHED = (
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
    "- plugins: {multiPoint: {enabled: [{name: NodeNUMAResource}]}}\n"
)


def _pod(name: str, app: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: prod
  labels: {{app: {app}, koordinator.sh/qosClass: LSR}}
  annotations:
    scheduling.koordinator.sh/resource-spec: '{{"requiredCPUBindPolicy": "FullPCPUs"}}'
spec:
  priority: 9999
  containers: [{{name: c, resources: {{requests: {{cpu: "4"}}}}}}]
"""


def _schedule(tmp_path: Path, pod: str, cluster: str = "cluster.yaml") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "schedule", "-f", pod, "--nrt", cluster,
         "--scheduler-config", "sched.yaml", "-o", "json"],
        capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=60, check=False,
    )  # fmt: skip


def test_owner_reuses_reserved_cpus_other_pod_does_not(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "sched.yaml").write_text(SCHED)
    (tmp_path / "owner.yaml").write_text(_pod("web", "web"))
    (tmp_path / "other.yaml").write_text(_pod("batch", "batch"))
    owner = _schedule(tmp_path, "owner.yaml")
    assert owner.returncode == 0, owner.stderr
    doc = json.loads(owner.stdout)
    assert doc["chosen"] == "node-a" and doc["nodes"][0]["fits"] is True
    other = _schedule(tmp_path, "other.yaml")
    assert other.returncode == 1, other.stderr
    [node] = json.loads(other.stdout)["nodes"]
    assert node["fits"] is False and node["reason"] == "not enough cpus available to satisfy request"
    # Reserve: the owner lands on the reserved CPUs.
    cluster = read_objects([str(tmp_path / "cluster.yaml")])
    [info] = node_infos(cluster)
    [web] = read_pod_files([str(tmp_path / "owner.yaml")])
    got = NodeNUMAResource().reserve_allocation(web, info)
    assert got.status.ok and got.allocation is not None
    assert got.allocation.cpuset == CPUSet(range(4))
    # Without the reservation CPUs 0-3 are free: the other pod fits too, so the reservation refused it.
    (tmp_path / "bare.yaml").write_text(CLUSTER.split("---\napiVersion: scheduling")[0])
    bare = _schedule(tmp_path, "other.yaml", "bare.yaml")
    assert bare.returncode == 0 and json.loads(bare.stdout)["chosen"] == "node-a"


def test_bad_reservation_names_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "sched.yaml").write_text(SCHED)
    (tmp_path / "owner.yaml").write_text(_pod("web", "web"))
    (tmp_path / "bad.yaml").write_text(
        CLUSTER.replace("phase: Available", "allocatePolicy: Loose\n  phase: Available")
    )
    (tmp_path / "bad2.yaml").write_text(
        CLUSTER.replace("spec:\n  owners", "spec:\n  allocatePolicy: Loose\n  owners")
    )
    bad = _schedule(tmp_path, "owner.yaml", "bad2.yaml")
    assert bad.returncode == 2
    assert bad.stderr.startswith(
        'kubeletemu: bad2.yaml: Reservation "r1" (document 3): spec.allocatePolicy: Unsupported value'
    )
    (tmp_path / "bad3.yaml").write_text(
        CLUSTER.replace("owners: [{labelSelector", "owners: [{controller: {name: x}, labelSelector")
    )
    bad3 = _schedule(tmp_path, "owner.yaml", "bad3.yaml")
    assert bad3.returncode == 2 and "spec.owners[0].controller: not supported" in bad3.stderr
