"""``Schedule`` over gRPC and ``kubeletemu schedule --live``: the daemon's own node first, as its exporter
would publish it, then the objects given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
import yaml

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from tests.daemon.daemon_process import REPO, DaemonProcess

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

MakeDaemon = Callable[..., DaemonProcess]

OTHER = """\
apiVersion: v1
kind: Node
metadata: {name: other}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "10"}
"""


def pod(name: str, cpu: str) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns}}\nspec:\n  containers:\n"
        f'  - name: c\n    resources:\n      limits: {{cpu: "{cpu}", memory: 1Gi}}\n'
    )


def ask(daemon: DaemonProcess, manifest: str, objects: str = "", config: str = "") -> pb.ScheduleResponse:
    request = pb.ScheduleRequest(
        pod=pb.PodSource(manifest=manifest), objects=objects, scheduler_config=config
    )
    reply = daemon.stub().Schedule(request, timeout=10)
    assert isinstance(reply, pb.ScheduleResponse)
    return reply


def test_schedule_on_the_daemons_node_and_the_objects_given(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    daemon = make_daemon()
    own = daemon.stub().GetNodeResourceTopology(pb.GetNodeResourceTopologyRequest(), timeout=10).name
    small = ask(daemon, pod("small", "1"), OTHER)
    assert [(n.name, n.fits, n.HasField("score")) for n in small.nodes] == [
        (own, True, True),
        ("other", True, True),
    ]
    assert small.chosen == own  # 15 allocatable CPUs score better than 2
    # 12 CPUs: more than the other node has; the daemon's node (15 allocatable) still fits NUMA-blind.
    big = ask(daemon, pod("big", "12"), OTHER)
    assert [(n.name, n.fits, n.reason) for n in big.nodes] == [
        (own, True, ""),
        ("other", False, "Insufficient cpu"),
    ]
    # Admitted pods are on the node: 6 of 15 allocatable CPUs taken, 12 no longer fit anywhere.
    admitted = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=pod("taken", "6"))), timeout=10)
    assert admitted.admitted
    after = ask(daemon, pod("big", "12"), OTHER)
    assert [n.reason for n in after.nodes] == ["Insufficient cpu", "Insufficient cpu"] and after.chosen == ""
    # 9 CPUs: the NUMA-blind baseline sends it here, where the kubelet refuses it (8 CPUs per NUMA node).
    nine = pod("nine", "9")
    assert ask(daemon, nine, OTHER).chosen == own
    would = daemon.stub().WouldAdmit(pb.WouldAdmitRequest(pod=pb.PodSource(manifest=nine)), timeout=10)
    assert (would.admitted, would.reason) == (False, "TopologyAffinityError")
    # The CLI asks the daemon the same question and prints the same answer.
    (tmp_path / "other.yaml").write_text(OTHER)
    (tmp_path / "nine.yaml").write_text(nine)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "schedule", "-f", "nine.yaml", "--nrt", "other.yaml",
         "--live", "--socket", str(daemon.socket), "-o", "json"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["chosen"] == own and [n["name"] for n in doc["nodes"]] == [own, "other"]
    assert doc["nodes"][1] == {
        "name": "other",
        "fits": False,
        "reason": "Insufficient cpu",
        "score": None,
        "scores": [],
        "policy": "",
    }
    # Which model decided, and each plugin's share of the total.
    assert doc["profile"]["name"] == "default-scheduler"
    scores = doc["nodes"][0]["scores"]
    assert [s["plugin"] for s in scores] == ["NodeResourcesFit", "NodeResourcesBalancedAllocation"]
    assert doc["nodes"][0]["score"] == sum(s["score"] * s["weight"] for s in scores)


@pytest.mark.parametrize(
    ("objects", "config", "fragment"),
    [
        (OTHER.replace("name: other", "name: {own}"), "", "which is this daemon's own node"),
        (
            OTHER.replace('cpu: "2"', "cpu: many"),
            "",
            'objects: Node "other" (document 1): status.allocatable[cpu]',
        ),
        (
            "",
            "kind: KubeSchedulerConfiguration\napiVersion: v9\n",
            "scheduler config: apiVersion: Unsupported",
        ),
    ],
)
def test_bad_schedule_requests_are_invalid_arguments(
    module_daemon: DaemonProcess, objects: str, config: str, fragment: str
) -> None:
    daemon = module_daemon
    own = daemon.stub().GetNodeResourceTopology(pb.GetNodeResourceTopologyRequest(), timeout=10).name
    with pytest.raises(grpc.RpcError) as err:
        ask(daemon, pod("p", "1"), objects.replace("{own}", own), config)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert fragment in (err.value.details() or "")


def test_nrt_in_koordlets_flavour_feeds_koordinator(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    """``kubeletemu nrt --flavour koordlet`` publishes the node as koordlet does; Koordinator's model reads
    it (its CPU topology and the kubelet's policy), NodeResourceTopologyMatch reads RTE's."""
    daemon = make_daemon()  # single-numa-node, container scope
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kubeletemu.cli", *args, "--socket", str(daemon.socket)],
            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60, check=False,
        )  # fmt: skip

    koordlet = cli("nrt", "--flavour", "koordlet")
    assert koordlet.returncode == 0, koordlet.stderr
    doc = yaml.safe_load(koordlet.stdout)
    assert doc["topologyPolicies"] == ["SingleNUMANodeContainerLevel"]
    assert {"node.koordinator.sh/cpu-topology", "kubelet.koordinator.sh/cpu-manager-policy"} <= set(
        doc["metadata"]["annotations"]
    )
    # koordlet reports the hardware: each zone's 8 CPUs, where RTE publishes the allocatable.
    cpu = {z["name"]: next(r for r in z["resources"] if r["name"] == "cpu") for z in doc["zones"]}
    assert cpu["node-0"] == {"name": "cpu", "capacity": "8", "allocatable": "8", "available": "8"}
    rte = yaml.safe_load(cli("nrt").stdout)
    assert "topologyPolicies" not in rte
    (tmp_path / "koordlet.yaml").write_text(koordlet.stdout)
    (tmp_path / "sched.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- plugins: {multiPoint: {enabled: [{name: NodeNUMAResource}]}}\n"
    )
    (tmp_path / "pod.yaml").write_text(pod("p", "2"))
    out = subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "schedule", "-f", "pod.yaml", "--nrt", "koordlet.yaml",
         "--scheduler-config", "sched.yaml", "-o", "json"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    [node] = json.loads(out.stdout)["nodes"]
    assert node["fits"] is True and node["score"] is not None
    bad = cli("nrt", "--flavour", "nrt-exporter")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
