"""Terminated pods (``status.phase`` Succeeded or Failed) count on their node in no scheduler-side model
(issue 26): kube-scheduler's pod informer drops them (``newPodInformer``'s field selector, v1.33.13 …
v1.36.3), Koordinator's handlers delete their allocations (``util.IsPodTerminated``, a7a1b76). Through
``kubeletemu schedule`` (the CLI in a subprocess) on objects, and ``--live`` on a real daemon's node.

Each case has both sides: the answer with the terminated pod equals the answer without it, and the same
pod Running changes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hostprobe.sample import write_sample_tree
from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.manifest import parse_pods
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.pod_phase import is_pod_terminated
from tests.daemon.daemon_process import REPO, DaemonProcess
from tests.nodes import kubelet_config
from tests.scheduler.koordinator.test_deviceshare_cli import POD as GPU_POD
from tests.scheduler.koordinator.test_deviceshare_cli import _node as gpu_node

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

# 48 CPUs, two NUMA nodes of 24 CPUs and 128Gi each; no policy anywhere (none).
DETAIL = [{"id": c, "core": c // 2, "socket": c // 24, "node": c // 24} for c in range(48)]
ZONE = (
    "  type: Node\n  resources:\n"
    '  - {name: cpu, capacity: "24", allocatable: "24", available: "24"}\n'
    "  - {name: memory, capacity: 128Gi, allocatable: 128Gi, available: 128Gi}\n"
)
KOORDINATOR_NODE = (
    "apiVersion: topology.node.k8s.io/v1alpha2\nkind: NodeResourceTopology\nmetadata:\n  name: node-a\n"
    f"  annotations:\n    node.koordinator.sh/cpu-topology: '{json.dumps({'detail': DETAIL})}'\n"
    f"zones:\n- name: node-0\n{ZONE}- name: node-1\n{ZONE}"
)
# The node: its only bound pod holds 24 CPUs and 128Gi in Koordinator's resource status, all on
# NUMA node 0 (``spread``: half of it on each NUMA node).
ON_NODE_0 = {
    "cpuset": "0-23",
    "numaNodeResources": [{"node": 0, "resources": {"cpu": "24", "memory": "128Gi"}}],
}
SPREAD = {
    "cpuset": "0-11,24-35",
    "numaNodeResources": [{"node": n, "resources": {"cpu": "12", "memory": "64Gi"}} for n in (0, 1)],
}


def holder(phase: str, status: dict[str, Any] = ON_NODE_0) -> str:
    return f"""\
---
apiVersion: v1
kind: Pod
metadata:
  name: holder
  namespace: prod
  labels: {{koordinator.sh/qosClass: LSR}}
  annotations:
    scheduling.koordinator.sh/resource-status: '{json.dumps(status)}'
spec:
  nodeName: node-a
  priority: 9999
  containers: [{{name: c, resources: {{limits: {{cpu: "24", memory: 128Gi}}}}}}]
status: {{phase: {phase}}}
"""


# NodeNUMAResource alone, its args as given: LeastAllocated over cpu and memory.
KOORDINATOR_PROFILE = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: koord
  plugins:
    multiPoint: {disabled: [{name: "*"}]}
    filter: {enabled: [{name: NodeNUMAResource}]}
    score: {enabled: [{name: NodeNUMAResource}]}
  pluginConfig:
  - name: NodeNUMAResource
    args:
      scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]}
"""
SHARED_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: prod}
spec:
  containers: [{name: c, resources: {requests: {cpu: "8", memory: 32Gi}}}]
"""
# The default profile's NUMA-blind fit: a Node object with 48 CPUs and a pod asking 30.
PLAIN_NODE = (
    "apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n"
    'status: {allocatable: {cpu: "48", memory: 256Gi, pods: "110"}}\n'
)
BIG_POD = SHARED_POD.replace('cpu: "8"', 'cpu: "30"').replace("name: web", "name: big")


def schedule(tmp_path: Path, pod: str, objects: str, profile: str | None = None) -> dict[str, Any]:
    (tmp_path / "pod.yaml").write_text(pod)
    (tmp_path / "objects.yaml").write_text(objects)
    args = ["schedule", "-f", "pod.yaml", "--nrt", "objects.yaml", "-o", "json"]
    if profile is not None:
        (tmp_path / "sched.yaml").write_text(profile)
        args += ["--scheduler-config", "sched.yaml"]
    out = subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args], capture_output=True, text=True, cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode in (0, 1), out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def verdicts(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(n["name"], n["fits"], n["reason"], n["score"], n["policy"]) for n in doc["nodes"]]


@pytest.mark.parametrize("phase", ["Failed", "Succeeded"])
def test_koordinator_does_not_count_a_terminated_pod(tmp_path: Path, phase: str) -> None:
    """The issue's case: LeastAllocated on the whole node (policy none) scores the node as if empty."""
    bare = schedule(tmp_path, SHARED_POD, KOORDINATOR_NODE, KOORDINATOR_PROFILE)
    # (48-8)*100//48 = 83 for cpu, (256-32)*100//256 = 87 for memory; their mean, 85.
    assert verdicts(bare) == [("node-a", True, "", 85, "none")]
    terminated = schedule(tmp_path, SHARED_POD, KOORDINATOR_NODE + holder(phase), KOORDINATOR_PROFILE)
    assert verdicts(terminated) == verdicts(bare)
    running = schedule(tmp_path, SHARED_POD, KOORDINATOR_NODE + holder("Running"), KOORDINATOR_PROFILE)
    # (48-32)*100//48 = 33, (256-160)*100//256 = 37: 35.
    assert verdicts(running) == [("node-a", True, "", 35, "none")]


def test_koordinator_single_numa_pod_gets_the_terminated_pods_cpus(tmp_path: Path) -> None:
    """A pod-level SingleNUMANode pod asking 24 CPUs needs a whole NUMA node. Running, the holder leaves
    12 CPUs on each; Failed, its CPUs are free again and the answer is the empty node's."""
    pinned = SHARED_POD.replace(
        "metadata: {name: web, namespace: prod}",
        "metadata:\n  name: pinned\n  namespace: prod\n  annotations:\n"
        '    scheduling.koordinator.sh/numa-topology-spec: \'{"numaTopologyPolicy": "SingleNUMANode"}\'',
    ).replace('cpu: "8"', 'cpu: "24"')
    bare = schedule(tmp_path, pinned, KOORDINATOR_NODE, KOORDINATOR_PROFILE)
    assert bare["chosen"] == "node-a" and bare["nodes"][0]["policy"] == "SingleNUMANode"
    failed = schedule(tmp_path, pinned, KOORDINATOR_NODE + holder("Failed", SPREAD), KOORDINATOR_PROFILE)
    assert verdicts(failed) == verdicts(bare)
    running = schedule(tmp_path, pinned, KOORDINATOR_NODE + holder("Running", SPREAD), KOORDINATOR_PROFILE)
    unaligned = "Unaligned NUMA Hint cause cpu prefer [11] among [11],memory prefer [11] among [11]"
    assert verdicts(running) == [("node-a", False, unaligned, None, "SingleNUMANode")]


def test_deviceshare_frees_the_gpu_of_a_terminated_pod(tmp_path: Path) -> None:
    """DeviceShare's node cache drops a terminated pod's ``device-allocated`` GPU (eventhandler_pod.go)."""
    free = schedule(tmp_path, GPU_POD, gpu_node("node-a", 0), KOORDINATOR_PROFILE)
    assert free["chosen"] == "node-a"
    held = gpu_node("node-a", 0, held=True)
    assert held.endswith("  containers: [{name: c}]\n")
    failed = schedule(tmp_path, GPU_POD, held + "status: {phase: Failed}\n", KOORDINATOR_PROFILE)
    assert verdicts(failed) == verdicts(free)
    running = schedule(tmp_path, GPU_POD, held + "status: {phase: Running}\n", KOORDINATOR_PROFILE)
    assert running["chosen"] is None and running["nodes"][0]["fits"] is False


@pytest.mark.parametrize("phase", ["Failed", "Succeeded"])
def test_default_profile_fit_and_scores_do_not_count_a_terminated_pod(tmp_path: Path, phase: str) -> None:
    objects = PLAIN_NODE + holder(phase)
    bare = schedule(tmp_path, BIG_POD, PLAIN_NODE)
    assert bare["chosen"] == "node-a" and bare["nodes"][0]["fits"] is True
    assert verdicts(schedule(tmp_path, BIG_POD, objects)) == verdicts(bare)
    running = schedule(tmp_path, BIG_POD, PLAIN_NODE + holder("Running"))
    assert running["chosen"] is None
    assert [(n["fits"], n["reason"]) for n in running["nodes"]] == [(False, "Insufficient cpu")]


def test_node_info_drops_terminated_pods_in_order() -> None:
    pods = parse_pods(
        "".join(
            f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns}}\n"
            f"spec: {{nodeName: n, containers: [{{name: c}}]}}\nstatus: {{phase: {phase}}}\n"
            for name, phase in (("a", "Running"), ("b", "Failed"), ("c", "Pending"), ("d", "Succeeded"))
        )
    )
    assert [p.name for p in pods if is_pod_terminated(p)] == ["b", "d"]
    info = NodeInfo("n", pods=tuple(pods))
    assert [p.name for p in info.pods] == ["a", "c"]


# ---- the daemon's own node (schedule --live): its admitted pods bound to it ------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    sys_root, proc_root = write_sample_tree(tmp_path_factory.mktemp("sample"))
    return Path(sys_root), Path(proc_root)


@pytest.fixture
def daemon(tmp_path: Path, tree: tuple[Path, Path]) -> Iterator[DaemonProcess]:
    # The sample host: 16 CPUs, 1 kube-reserved: 15 allocatable.
    process = DaemonProcess.in_dir(tmp_path, kubelet_config("none"), tree).start()
    yield process
    process.stop()


def _admit(daemon: DaemonProcess, name: str, cpu: str, phase: str) -> None:
    manifest = (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns, uid: uid-{name}}}\n"
        f'spec: {{containers: [{{name: c, resources: {{limits: {{cpu: "{cpu}", memory: 1Gi}}}}}}]}}\n'
        f"status: {{phase: {phase}}}\n"
    )
    reply = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
    assert reply.admitted, reply.message


def test_live_node_does_not_count_its_terminated_pods(daemon: DaemonProcess, tmp_path: Path) -> None:
    pod = tmp_path / "ten.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: ten, namespace: ns}\n"
        'spec: {containers: [{name: c, resources: {limits: {cpu: "10", memory: 1Gi}}}]}\n'
    )

    def ask() -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "kubeletemu.cli", "schedule", "-f", str(pod), "--live",
             "--socket", str(daemon.socket), "-o", "json"],
            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=60,
            check=False,
        )  # fmt: skip
        assert out.returncode in (0, 1), out.stderr
        doc: dict[str, Any] = json.loads(out.stdout)
        return doc

    _admit(daemon, "done", "6", "Failed")
    [node] = ask()["nodes"]
    assert (node["fits"], node["reason"]) == (True, "")  # 10 of 15 CPUs: the Failed pod's 6 are not counted
    _admit(daemon, "busy", "6", "Running")
    [node] = ask()["nodes"]
    assert (node["fits"], node["reason"]) == (False, "Insufficient cpu")  # 6 + 10 > 15
