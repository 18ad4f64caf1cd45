"""The mechanisms of issue 44 (where the fleet departed from a cluster), through ``kubeletemu fleet`` as a
user runs it, on the small fleet of :mod:`tests.fleet.test_mechanisms`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.test_mechanisms import RACE, fleet, results

pytestmark = pytest.mark.slow

# A ReplicaSet of one pod no node can take (40 CPUs on nodes of 32): it never runs.
HUGE = (
    "  - replicas: 1\n"
    '    pod: {metadata: {name: huge}, spec: {containers: [{name: c, resources: {limits: {cpu: "40"}}}]}}\n'
)


def test_a_pod_that_never_runs_is_censored_not_given_the_run_length(tmp_path: Path) -> None:
    """41 slots, one never Running: its rank decides the p99 of time to Running (and the longest pending
    wait), which is then null with the censored count beside it, and the table says ``> run length``; the
    median, decided by pods that ran, is a number. The summary has no mean for a figure censored in a
    seed."""
    text = RACE.replace("schedulers: [reserve], seeds: [4]", "schedulers: [default], seeds: [4, 5]")
    text = text.replace("  rate: 1\n", HUGE + "  rate: 1\n")
    text = text.replace("total: 40", "total: 40\n  lifetime: {fixed: 5s}")  # every other pod runs
    out = fleet(tmp_path, text, "-o", "json", "--workers", "1")
    assert out.returncode == 0, out.stderr
    document = json.loads(out.stdout)
    for run in document["configurations"]:
        assert run["never_running"] == 1 and run["pending_censored"] == 1
        assert run["time_to_running_p99_s"] is None and run["time_to_running_max_s"] is None
        assert run["pending_max_s"] is None  # over 100 pod objects: their p99 is decided by bound ones
        assert isinstance(run["time_to_running_p50_s"], float) and run["time_to_running_p50_s"] < 60
        huge = run["templates"]["huge"]
        assert huge["never_running"] == 1 and huge["time_to_running_p50_s"] is None
        assert run["templates"]["a"]["never_running"] == 0
    [summary] = document["summaries"]
    assert summary["time_to_running_p99_s"] == {"mean": None, "low": None, "high": None, "censored_seeds": 2}
    assert summary["time_to_running_p50_s"]["censored_seeds"] == 0
    assert summary["time_to_running_p50_s"]["mean"] is not None
    table = fleet(tmp_path, text, "-o", "wide", "--workers", "1")
    assert table.returncode == 0, table.stderr
    row, *per_run = [line for line in table.stdout.splitlines() if line.startswith("default ")]
    assert row.split()[-4:] == [">", "run", "length", "1"]  # time to Running p99, never Running
    assert len(per_run) == 2
    assert all(line.count("> run length") == 2 for line in per_run)  # pending max, to Running p99


def _controlled(text: str, a: str, b: str) -> str:
    """RACE's templates ``a`` and ``b`` under the given controller lines."""
    text = text.replace("  - pod: {metadata: {name: a}", f"  - {a}\n    pod: {{metadata: {{name: a}}")
    return text.replace("  - pod: {metadata: {name: b}", f"  - {b}\n    pod: {{metadata: {{name: b}}")


def test_a_job_replaces_a_rejected_pod_after_its_backoff_and_a_bare_pod_is_never_replaced(
    tmp_path: Path,
) -> None:
    """The NUMA-blind default scheduler's rejected pods: a ReplicaSet's (the default) are replaced within a
    second; a Job's only after its pod-failure backoff, 10 s from the failed pod's creation timestamp (to
    the second); a bare pod, or a Job with backoffLimit 0, never — its slot closes without Running."""
    base = RACE.replace("schedulers: [reserve]", "schedulers: [default]")
    base = base.replace("total: 40", "total: 40\n  lifetime: {fixed: 5s}")  # room for every pod
    [replica_set] = results(tmp_path, base)
    [job] = results(tmp_path, _controlled(base, "controller: Job", "controller: Job"))
    [bare] = results(tmp_path, _controlled(base, "controller: Pod", "controller: Job\n    backoffLimit: 0"))
    for run in (replica_set, job, bare):
        assert run["topology_affinity_errors"] > 0
    assert replica_set["replacement_delay_s"]["max"] < 1.0
    assert job["replacements"] > 0
    assert job["replacement_delay_s"]["min"] >= 9.1 - 1e-6  # 10 s from the second it was created, + 0.1 s
    assert bare["replacements"] == 0
    # Every rejected slot closed: never Running, and the run did not wait for it.
    assert bare["never_running"] == bare["topology_affinity_errors"] == bare["failed_at_end"]


def test_a_bind_to_admission_delay_fails_an_exact_filter_that_forgets_assumed_pods(tmp_path: Path) -> None:
    """The kubelet sees each Binding 2 s after it is stored, and a fifth of the binds fail (ForgetPod,
    requeue): the exact filter that answers on what the kubelets hold forgets the pods in flight and their
    nodes reject some; counting assumed pods, as kube-scheduler's cache does, no pod is rejected. Without
    the delay (the default) neither is rejected."""
    text = RACE.replace(
        "- {name: default, model: default}",
        "- {name: blind, model: exact, args: {countAssumedPods: false}}\n- {name: exact, model: exact}",
    ).replace("schedulers: [reserve]", "schedulers: [blind, exact]")
    text = text.replace("total: 40", "total: 40\n  lifetime: {fixed: 5s}")
    delayed = (
        text
        + "binding: {latency: {uniform: [0s, 200ms]}, failureRate: 0.2, kubeletWatchLatency: {fixed: 2s}}\n"
    )
    blind, exact = results(tmp_path, delayed)
    assert blind["topology_affinity_errors"] > 0
    assert exact["topology_affinity_errors"] == 0
    for run in (blind, exact):
        assert run["bind_failures"] > 0 and run["never_running"] == 0
    at_once = results(tmp_path, text)
    assert [r["topology_affinity_errors"] for r in at_once] == [0, 0]
    assert [r["bind_failures"] for r in at_once] == [0, 0]


TIES = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Fleet
schedulerVersion: "{version}"
parallelism: {parallelism}
nodeGroups:
{groups}
schedulers:
- {{name: default, model: default}}
workload:
  trace: trace.yaml
  startupLatency: {{fixed: 1s}}
  drain: 30s
matrix: {{seeds: [1, 2, 3]}}
"""
GROUP = """\
- name: {name}
  count: 3
  topology:
    synthetic: {{sockets: 2, coresPerSocket: 8, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 32}}
  config: [kubelet-config.yaml]
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: p{n}, annotations: {{fleet.kubeletemu.io/arrival: "{n}"}}}}
spec: {{containers: [{{name: c, resources: {{limits: {{cpu: "4", memory: 2Gi}}}}}}]}}
"""


def _placements(tmp_path: Path, groups: str, version: str, parallelism: int) -> list[list[Any]]:
    """Per seed: where the trace's pods sit at the end (each node's NUMA nodes' CPU use, by node name)."""
    (tmp_path / "trace.yaml").write_text("---\n".join(POD.format(n=n) for n in range(1, 9)))
    text = TIES.format(
        version=version,
        parallelism=parallelism,
        groups="".join(GROUP.format(name=name) for name in groups.split()),
    )
    runs = results(tmp_path, text)
    return [sorted([u["node"], u["numa"], u["cpu"]] for u in run["numa_utilisation"]) for run in runs]


@pytest.mark.parametrize("version", ["1.34", "1.36"])
def test_the_tie_order_changes_with_the_seed_and_not_with_the_node_lists_order(
    tmp_path: Path, version: str
) -> None:
    """Six identical nodes, the same trace of 4-CPU pods in every seed, so the default scores tie: with
    ``parallelism: 16`` the feasible nodes come in the order the filter's goroutines found them, drawn from
    the seed — 1.34's ``selectHost`` reservoir and 1.36's score heap both break ties by it. The node list in
    either order (its groups swapped) places the pods alike; another seed places them elsewhere."""
    forward = _placements(tmp_path, "a b", version, 16)
    assert _placements(tmp_path, "b a", version, 16) == forward
    assert len({json.dumps(p) for p in forward}) > 1
