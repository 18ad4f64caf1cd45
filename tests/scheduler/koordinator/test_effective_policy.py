"""The reported ``policy`` is the one Koordinator's Filter applies to this pod on this node (issue 26):
``getNUMATopologyPolicy`` (node label, else the kubelet's policy from the NRT) merged with the pod's
``scheduling.koordinator.sh/numa-topology-spec`` by ``mergeTopologyPolicy`` (koordinator-sh/koordinator
a7a1b76, ``nodenumaresource/plugin.go`` ``Filter``, ``util.go``). On a conflict Filter refuses the node and
the node's own policy is reported. Through ``kubeletemu schedule`` (CLI subprocess: table and JSON) and the
daemon's gRPC ``Schedule``.
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
from tests.daemon.daemon_process import REPO, DaemonProcess
from tests.nodes import kubelet_config

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

ZONES = "".join(
    f"- name: node-{n}\n  type: Node\n  resources:\n"
    '  - {name: cpu, capacity: "4", allocatable: "4", available: "4"}\n'
    "  - {name: memory, capacity: 8Gi, allocatable: 8Gi, available: 8Gi}\n"
    for n in (0, 1)
)


def nrt(name: str, policies: str = "") -> str:
    """A node known from its NRT alone (no labels); ``policies``: its legacy ``topologyPolicies``."""
    listed = f"topologyPolicies: [{policies}]\n" if policies else ""
    return (
        f"---\napiVersion: topology.node.k8s.io/v1alpha2\nkind: NodeResourceTopology\n"
        f"metadata: {{name: {name}}}\n{listed}zones:\n{ZONES}"
    )


def labelled(name: str, policy: str) -> str:
    """A Node labelled with Koordinator's NUMA topology policy, next to its NRT."""
    return nrt(name) + (
        f"---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n"
        f"  labels: {{node.koordinator.sh/numa-topology-policy: {policy}}}\n"
        'status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}\n'
    )


CLUSTER = (
    nrt("bare") + nrt("kubelet-single", "SingleNUMANodePodLevel") + labelled("label-single", "SingleNUMANode")
)


def profile(plugin: str = "NodeNUMAResource") -> str:
    """The plugin alone, the default filters and scores disabled."""
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        '- plugins:\n    multiPoint: {disabled: [{name: "*"}]}\n'
        f"    filter: {{enabled: [{{name: {plugin}}}]}}\n    score: {{enabled: [{{name: {plugin}}}]}}\n"
        f"  pluginConfig:\n  - name: {plugin}\n    args: {{scoringStrategy: {{type: LeastAllocated}}}}\n"
    )


def pod(policy: str | None) -> str:
    spec = (
        f"  annotations:\n    scheduling.koordinator.sh/numa-topology-spec: "
        f"'{json.dumps({'numaTopologyPolicy': policy})}'\n"
        if policy
        else ""
    )
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\n{spec}"
        'spec: {containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]}\n'
    )


def schedule(tmp_path: Path, manifest: str, *args: str, plugin: str = "NodeNUMAResource") -> str:
    (tmp_path / "pod.yaml").write_text(manifest)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "sched.yaml").write_text(profile(plugin))
    out = subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "schedule", "-f", "pod.yaml", "--nrt", "cluster.yaml",
         "--scheduler-config", "sched.yaml", *args],
        capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode in (0, 1), out.stderr
    return out.stdout


def json_policies(tmp_path: Path, manifest: str, plugin: str = "NodeNUMAResource") -> dict[str, Any]:
    doc = json.loads(schedule(tmp_path, manifest, "-o", "json", plugin=plugin))
    return {n["name"]: (n["policy"], n["fits"], n["reason"]) for n in doc["nodes"]}


def table_policies(tmp_path: Path, manifest: str) -> dict[str, str]:
    """The POLICY column of the table, by node (columns found by the header's alignment)."""
    lines = schedule(tmp_path, manifest).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("NODE "))
    start, end = lines[header].index("POLICY"), lines[header].index("REASON")
    return {line.split()[0]: line[start:end].strip() for line in lines[header + 1 :] if line.strip()}


MISMATCH = "node(s) NUMA Topology policy not match"


def test_pod_level_policy_is_the_policy_on_a_node_without_one(tmp_path: Path) -> None:
    assert json_policies(tmp_path, pod("Restricted")) == {
        "bare": ("Restricted", True, ""),
        "kubelet-single": ("SingleNUMANode", False, MISMATCH),
        "label-single": ("SingleNUMANode", False, MISMATCH),
    }
    assert table_policies(tmp_path, pod("Restricted")) == {
        "bare": "Restricted",
        "kubelet-single": "SingleNUMANode",
        "label-single": "SingleNUMANode",
    }


def test_without_a_pod_level_policy_the_nodes_policy_is_reported(tmp_path: Path) -> None:
    assert json_policies(tmp_path, pod(None)) == {
        "bare": ("none", True, ""),
        "kubelet-single": ("SingleNUMANode", True, ""),
        "label-single": ("SingleNUMANode", True, ""),
    }
    assert json_policies(tmp_path, pod("SingleNUMANode")) == {
        "bare": ("SingleNUMANode", True, ""),
        "kubelet-single": ("SingleNUMANode", True, ""),
        "label-single": ("SingleNUMANode", True, ""),
    }


def test_the_design_model_merges_the_pod_policy_too(tmp_path: Path) -> None:
    got = json_policies(tmp_path, pod("BestEffort"), plugin="NodeNUMAResourceDesign")
    assert got["bare"] == ("BestEffort", True, "")
    assert got["label-single"] == ("SingleNUMANode", False, MISMATCH)


@pytest.fixture
def daemon(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    tree = write_sample_tree(tmp_path_factory.mktemp("sample"))
    process = DaemonProcess.in_dir(tmp_path, kubelet_config("none"), (Path(tree[0]), Path(tree[1]))).start()
    yield process
    process.stop()


def test_grpc_schedule_reports_the_effective_policy(daemon: DaemonProcess) -> None:
    """The daemon's own node (koordlet's NRT: its kubelet runs policy none) comes first."""
    request = pb.ScheduleRequest(
        pod=pb.PodSource(manifest=pod("Restricted")), objects=CLUSTER, scheduler_config=profile()
    )
    reply = daemon.stub().Schedule(request, timeout=20)
    got = [(n.name, n.policy, n.fits, n.reason) for n in reply.nodes]
    assert got[1:] == [
        ("bare", "Restricted", True, ""),
        ("kubelet-single", "SingleNUMANode", False, MISMATCH),
        ("label-single", "SingleNUMANode", False, MISMATCH),
    ]
    assert got[0][1:] == ("Restricted", True, "")
    plain = daemon.stub().Schedule(
        pb.ScheduleRequest(pod=pb.PodSource(manifest=pod(None)), objects=CLUSTER, scheduler_config=profile()),
        timeout=20,
    )
    assert [n.policy for n in plain.nodes] == ["none", "none", "SingleNUMANode", "SingleNUMANode"]
