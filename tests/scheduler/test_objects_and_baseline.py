"""The scheduler side's inputs (NRT, Node and Pod objects), the NUMA-blind baseline NodeResourcesFit, profiles
from a KubeSchedulerConfiguration, and ``kubeletemu schedule``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubeletemu.config import ConfigError
from kubeletemu.manifest import parse_pods
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.noderesourcesfit import (
    BALANCED_NAME,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    NodeResourcesFitArgs,
    non_zero_requests,
)
from kubeletemu.scheduler.objects import Node, ObjectError, parse_objects, read_objects
from kubeletemu.scheduler.profile import default_profile, load_profile, node_infos, parse_profiles, schedule

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

REPO = Path(__file__).resolve().parents[2]

CLUSTER = """\
apiVersion: v1
kind: List
items:
- apiVersion: topology.node.k8s.io/v1alpha2
  kind: NodeResourceTopology
  metadata: {name: node-a, annotations: {topology.node.k8s.io/fingerprint: pfp0v001aa}}
  topologyPolicies: [SingleNUMANodeContainerLevel]
  attributes: [{name: topologyManagerScope, value: pod}]
  zones:
  - name: node-0
    type: Node
    costs: [{name: node-0, value: 10}, {name: node-1, value: 20}]
    resources:
    - {name: cpu, capacity: "8", allocatable: "7", available: 2500m}
    - {name: memory, capacity: 16Gi, allocatable: 15Gi, available: 10Gi}
  - name: node-1
    type: Node
    resources:
    - {name: cpu, capacity: "8", allocatable: "8", available: "8"}
- apiVersion: v1
  kind: Node
  metadata: {name: node-a, labels: {zone: a}}
  status:
    allocatable: {cpu: "15", memory: 31Gi, pods: "110"}
- apiVersion: v1
  kind: Node
  metadata: {name: node-b}
  status:
    allocatable: {cpu: "4", memory: 8Gi, pods: "2"}
- apiVersion: v1
  kind: Pod
  metadata: {name: placed, namespace: x}
  spec: {nodeName: node-b, containers: [{name: c, resources: {requests: {cpu: "3"}}}]}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: prod}
spec:
  containers:
  - name: app
    resources:
      limits: {cpu: "2", memory: 1Gi}
"""


def pod(text: str = POD):  # type: ignore[no-untyped-def]
    [only] = parse_pods(text)
    return only


def test_objects_are_read_in_order_with_exact_quantities() -> None:
    objects = parse_objects(CLUSTER, "cluster.yaml")
    assert [type(o).__name__ for o in objects] == ["NodeResourceTopology", "Node", "Node", "Pod"]
    nrt = objects[0]
    assert nrt.name == "node-a" and nrt.topology_policies == ("SingleNUMANodeContainerLevel",)  # type: ignore[union-attr]
    zone = nrt.zones[0]  # type: ignore[union-attr]
    cpu = zone.resource("cpu")
    assert cpu is not None and cpu.available == Quantity.parse("2500m") and cpu.allocatable.amount == 7
    assert [c.value for c in zone.costs] == [10, 20]
    assert nrt.attribute("topologyManagerScope") == "pod"  # type: ignore[union-attr]
    placed = objects[3]
    assert placed.node_name == "node-b"  # type: ignore[union-attr]


def test_a_directory_is_read_in_name_order_and_nodes_keep_first_seen_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(CLUSTER)
    (tmp_path / "a.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-z"}})
    )
    (tmp_path / "notes.txt").write_text("ignored")
    cluster = read_objects([str(tmp_path)])
    assert cluster.node_names == ["node-z", "node-a", "node-b"]
    assert [p.name for p in cluster.pods_on("node-b")] == ["placed"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            CLUSTER.replace("topology.node.k8s.io/v1alpha2", "topology.node.k8s.io/v1alpha1"),
            'c.yaml: NodeResourceTopology "node-a" (document 1, items[0]): apiVersion: Unsupported value: '
            '"topology.node.k8s.io/v1alpha1"',
        ),
        (
            CLUSTER.replace("available: 2500m", "available: lots"),
            'NodeResourceTopology "node-a" (document 1, items[0]): zones[0].resources[0].available:',
        ),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "kind: 'ConfigMap' is not supported"),
        ("kind: [", "c.yaml: invalid YAML"),
    ],
)
def test_bad_objects_name_the_file_object_and_field(text: str, fragment: str) -> None:
    with pytest.raises(ObjectError) as err:
        parse_objects(text, "c.yaml")
    assert fragment in str(err.value)


def nodes() -> dict[str, NodeInfo]:
    cluster = read_objects_from_text(CLUSTER)
    return {info.name: info for info in node_infos(cluster)}


def read_objects_from_text(text: str):  # type: ignore[no-untyped-def]
    from kubeletemu.scheduler.objects import Cluster

    cluster = Cluster()
    for obj in parse_objects(text, "cluster.yaml"):
        cluster.add(obj)
    return cluster


def test_node_resources_fit_filter_reasons() -> None:
    fit = NodeResourcesFit()
    by_name = nodes()
    assert fit.filter(pod(), by_name["node-a"]).ok
    status = fit.filter(pod(), by_name["node-b"])  # 4 CPUs, 3 requested by the placed pod; 2 pods max
    assert status.reasons == ("Insufficient cpu",)
    big = pod(POD.replace("memory: 1Gi}", 'memory: 1Gi, example.com/gpu: "1"}'))
    full = NodeInfo(
        "n", Node("n", allocatable={"cpu": Quantity(8), "memory": Quantity(2**33), "pods": Quantity(1)})
    )
    full = NodeInfo("n", full.node, None, (pod(),))
    assert fit.filter(big, full).reasons == ("Too many pods", "Insufficient example.com/gpu")
    # Only its NRT known: allocatable is the zones' sum (15 CPUs, 15Gi), and no pod-count limit.
    nrt_only = NodeInfo("node-a", None, by_name["node-a"].topology, ())
    assert fit.filter(pod(), nrt_only).ok
    assert fit.filter(pod(POD.replace("memory: 1Gi", "memory: 16Gi")), nrt_only).reasons == (
        "Insufficient memory",
    )
    ignoring = NodeResourcesFit(NodeResourcesFitArgs(ignored_resource_groups=frozenset({"example.com"})))
    assert ignoring.filter(big, full).reasons == ("Too many pods",)


def test_node_resources_fit_scores_by_hand() -> None:
    by_name = nodes()
    # LeastAllocated: cpu (15000-2000)*100//15000 = 86, memory (31Gi-1Gi)*100//31Gi = 96 -> (86+96)//2 = 91.
    assert NodeResourcesFit().score(pod(), by_name["node-a"]) == 91
    most = NodeResourcesFit(NodeResourcesFitArgs(strategy="MostAllocated"))
    assert most.score(pod(), by_name["node-a"]) == (2000 * 100 // 15000 + 100 // 31) // 2  # (13+3)//2 = 8
    # Balanced: fractions 2/15 and 1/31, std = |f1 - f2| / 2 -> int((1 - std) * 100) = 94.
    assert NodeResourcesBalancedAllocation().score(pod(), by_name["node-a"]) == 94
    # A container without requests counts 100m and 200Mi for scoring (not for fitting).
    empty = pod("apiVersion: v1\nkind: Pod\nmetadata: {name: e}\nspec: {containers: [{name: c}]}\n")
    requests = non_zero_requests(empty)
    assert (requests["cpu"], requests["memory"]) == (Quantity.parse("100m").amount, 200 * 1024 * 1024)


def test_the_default_profile_sums_fit_and_balanced_allocation() -> None:
    decision = schedule(pod(), list(nodes().values()), default_profile())
    assert decision.chosen == "node-a"
    assert [(v.name, v.fits, v.score) for v in decision.nodes] == [
        ("node-a", True, 91 + 94),
        ("node-b", False, None),
    ]


SCHEDULER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: most
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
      enabled: [{name: NodeResourcesFit, weight: 3}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}}
- schedulerName: blind
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
    filter:
      enabled: [{name: TaintToleration}]
"""


def test_profiles_from_a_kube_scheduler_configuration() -> None:
    profiles = parse_profiles(SCHEDULER_CONFIG, "sched.yaml")
    assert list(profiles) == ["most", "blind"]
    most = profiles["most"]
    [(model, weight)] = most.scores
    assert weight == 3 and isinstance(model, NodeResourcesFit) and model.args.strategy == "MostAllocated"
    assert most.filters == (model,)  # one model per plugin, shared by its extension points
    decision = schedule(pod(), list(nodes().values()), most)
    assert decision.nodes[0].score == 3 * (2000 * 100 // 15000)
    # Nothing modelled left: every node passes, every score is 0, the first node wins.
    blind = schedule(pod(), list(nodes().values()), profiles["blind"])
    assert [(v.fits, v.score) for v in blind.nodes] == [(True, 0), (True, 0)] and blind.chosen == "node-a"


@pytest.mark.parametrize(
    ("replace", "fragment"),
    [
        (
            "type: MostAllocated",
            "sched.yaml: profiles[0].pluginConfig[0].args: scoringStrategy.type: Unsupported value",
        ),
        (
            "name: TaintToleration",
            'sched.yaml: profiles[1].plugins.filter.enabled[0].name: unknown plugin "Bogus"',
        ),
        ("kubescheduler.config.k8s.io/v1", "sched.yaml: apiVersion: Unsupported value"),
    ],
)
def test_bad_scheduler_configurations_name_file_and_field(replace: str, fragment: str) -> None:
    bad = {
        "type: MostAllocated": "type: Cheapest",
        "name: TaintToleration": "name: Bogus",
        "kubescheduler.config.k8s.io/v1": "kubescheduler.config.k8s.io/v1beta3",
    }[replace]
    with pytest.raises(ConfigError) as err:
        parse_profiles(SCHEDULER_CONFIG.replace(replace, bad), "sched.yaml")
    assert fragment in str(err.value)


def test_load_profile_by_name(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCHEDULER_CONFIG)
    assert load_profile(str(path), None).name == "most"
    assert load_profile(str(path), "blind").name == "blind"
    with pytest.raises(ConfigError, match=r"no profile \"nope\" \(profiles: most, blind\)"):
        load_profile(str(path), "nope")
    assert load_profile(None, None).name == "default-scheduler"


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


def test_schedule_command(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "pod.yaml").write_text(POD)
    out = run_cli("schedule", "-f", "pod.yaml", "--nrt", "cluster.yaml", "-o", "json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    fit, balanced = {"plugin": "NodeResourcesFit", "weight": 1}, {"plugin": BALANCED_NAME, "weight": 1}
    assert json.loads(out.stdout) == {
        "pod": "prod/web",
        "profile": {"name": "default-scheduler", "filter": ["NodeResourcesFit"], "score": [fit, balanced]},
        "nodes": [
            {
                "name": "node-a",
                "fits": True,
                "reason": "",
                "score": 185,
                "scores": [{**fit, "score": 91}, {**balanced, "score": 94}],
                "policy": "",
            },
            {
                "name": "node-b",
                "fits": False,
                "reason": "Insufficient cpu",
                "score": None,
                "scores": [],
                "policy": "",
            },
        ],
        "chosen": "node-a",
    }
    table = run_cli("schedule", "-f", "pod.yaml", "--nrt", "cluster.yaml", cwd=tmp_path)
    assert table.stdout.splitlines()[:2] == [
        "prod/web: scheduled on node-a",
        "profile default-scheduler: filter NodeResourcesFit; score NodeResourcesFit (weight 1), "
        f"{BALANCED_NAME} (weight 1)",
    ]
    assert table.stdout.splitlines()[4].split()[:4] == ["node-a", "yes", "185", "(91+94)"]
    (tmp_path / "huge.yaml").write_text(POD.replace('cpu: "2"', 'cpu: "64"'))
    none = run_cli("schedule", "-f", "huge.yaml", "--nrt", "cluster.yaml", cwd=tmp_path)
    assert none.returncode == 1 and "no node fits" in none.stdout
    (tmp_path / "bad.yaml").write_text(CLUSTER.replace("v1alpha2", "v1alpha1"))
    bad = run_cli("schedule", "-f", "pod.yaml", "--nrt", "bad.yaml", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("kubeletemu: bad.yaml: NodeResourceTopology")


def test_schedule_command_refuses_bad_scheduler_configs_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "pod.yaml").write_text(POD)
    cases = {
        "strategy.yaml": (
            SCHEDULER_CONFIG.replace("type: MostAllocated", "type: Cheapest"),
            "strategy.yaml: profiles[0].pluginConfig[0].args: scoringStrategy.type: Unsupported value",
        ),
        "plugin.yaml": (
            SCHEDULER_CONFIG.replace("name: TaintToleration", "name: Bogus"),
            'plugin.yaml: profiles[1].plugins.filter.enabled[0].name: unknown plugin "Bogus"',
        ),
        "nrtargs.yaml": (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
            "- plugins: {multiPoint: {enabled: [{name: NodeResourceTopologyMatch}]}}\n"
            "  pluginConfig:\n  - name: NodeResourceTopologyMatch\n"
            "    args: {scoringStrategy: {type: Fastest}}\n",
            'nrtargs.yaml: profiles[0].pluginConfig[0].args: scoringStrategy.type: Invalid value: "Fastest"',
        ),
    }
    for name, (text, fragment) in cases.items():
        (tmp_path / name).write_text(text)
        out = run_cli(
            "schedule", "-f", "pod.yaml", "--nrt", "cluster.yaml", "--scheduler-config", name, cwd=tmp_path
        )
        assert out.returncode == 2, (name, out.stderr)
        assert out.stderr.startswith("kubeletemu: ") and fragment in out.stderr, out.stderr
        assert len(out.stderr.splitlines()) == 1
