"""Each mechanism of the fleet's dynamics, through ``kubeletemu fleet`` as a user runs it (a subprocess per
call) on a small fleet: four nodes of two 16-CPU NUMA nodes under single-numa-node, a stream of 4- and
10-CPU Guaranteed pods that outgrows them, RTE on a 30 s ticker with its notify file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.conftest import KUBELET_CONFIG

pytestmark = pytest.mark.slow

KUBELETEMU = [sys.executable, "-m", "kubeletemu.cli"]

RACE = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Fleet
seed: 1
nodeGroups:
- name: n
  count: 4
  kubeletVersion: "1.36"
  topology:
    synthetic: {sockets: 2, coresPerSocket: 8, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 32}
  config: [kubelet-config.yaml]
exporter: {period: 30s, notifyFile: true}
schedulers:
- {name: default, model: default}
- name: reserve
  model: NodeResourceTopologyMatch
  args: {scoringStrategy: {type: MostAllocated}, cacheResyncPeriodSeconds: 1}
workload:
  templates:
  - pod: {metadata: {name: a}, spec: {containers: [{name: c, resources: {limits: {cpu: "4", memory: 2Gi}}}]}}
  - pod: {metadata: {name: b}, spec: {containers: [{name: c, resources: {limits: {cpu: "10", memory: 2Gi}}}]}}
  rate: 1
  total: 40
  startupLatency: {fixed: 8s}
  drain: 60s
matrix: {schedulers: [reserve], seeds: [4]}
"""


def fleet(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "kubelet-config.yaml").write_text(KUBELET_CONFIG)
    (tmp_path / "fleet.yaml").write_text(text)
    return subprocess.run(
        [*KUBELETEMU, "fleet", "-f", str(tmp_path / "fleet.yaml"), *args],
        capture_output=True, text=True, check=False, timeout=900,
    )  # fmt: skip


def results(tmp_path: Path, text: str) -> list[dict[str, Any]]:
    out = fleet(tmp_path, text, "-o", "json", "--workers", "2")
    assert out.returncode == 0, out.stderr
    configurations: list[dict[str, Any]] = json.loads(out.stdout)["configurations"]
    return configurations


def test_the_start_up_race_loses_reservations_and_the_log_names_the_flush(tmp_path: Path) -> None:
    """Pods Pending for 8 s after their bind: the overreserve cache's Dedicated informer leaves them out of
    the pod set, so an NRT written before their admission matches it, a resync flushes the node on it and
    the reservations are gone; the next pods land on resources those pods hold, and the kubelet rejects
    them. Started at once, no flush is stale and nothing is rejected."""
    [slow_run] = results(tmp_path, RACE)
    [fast_run] = results(tmp_path, RACE.replace("startupLatency: {fixed: 8s}", "startupLatency: {fixed: 0s}"))
    assert slow_run["stale_flushes"] > 0 and slow_run["reservations_lost"] > 0
    assert slow_run["topology_affinity_errors"] > 0
    assert slow_run["errors_after_stale_flush"] == slow_run["topology_affinity_errors"]
    log = slow_run["log"]
    flushes = [
        re.match(
            r"\s*([\d.]+)s  resync flushed (\S+) on its NRT written at ([\d.]+)s, before the admission of",
            line,
        )
        for line in log
    ]
    flushed = {m.group(2): float(m.group(1)) for m in flushes if m}
    assert flushed
    for m in flushes:
        if m:
            assert float(m.group(3)) < float(m.group(1))
    rejections = [
        re.match(
            r"\s*([\d.]+)s  (\S+) rejected by (\S+): TopologyAffinityError; (\S+) was flushed at ([\d.]+)s",
            line,
        )
        for line in log
    ]
    named = [m for m in rejections if m]
    assert len(named) == slow_run["topology_affinity_errors"]
    for m in named:
        node, at = m.group(3), float(m.group(5))
        assert m.group(4) == node and flushed.get(node) is not None and at <= float(m.group(1))
    assert fast_run["stale_flushes"] == 0 and fast_run["topology_affinity_errors"] == 0
    assert fast_run["log"] == []


@pytest.mark.parametrize(("version", "stays"), [("1.33", False), ("1.34", True), ("1.36", True)])
def test_a_failed_pod_keeps_its_node_mismatched_from_kubelet_1_34(
    tmp_path: Path, version: str, stays: bool
) -> None:
    """RTE signing every listed pod (``fingerprintMethod: all``): a pod the kubelet rejected stays Failed,
    the cache's Dedicated informer keeps it in the node's pod set; a 1.33 kubelet still lists it, so the
    node's fingerprint matches again, while from 1.34 ``List`` returns active pods only and the node never
    matches again (the cache never flushes it)."""
    text = RACE.replace('kubeletVersion: "1.36"', f'kubeletVersion: "{version}"').replace(
        "notifyFile: true}", "notifyFile: true, fingerprintMethod: all}"
    )
    [run] = results(tmp_path, text)
    assert run["kubelet_versions"] == [version]
    failed_nodes = sorted(run["errors_per_node"])
    assert failed_nodes and run["failed_at_end"] == run["topology_affinity_errors"] > 0
    mismatched = set(run["fingerprint_mismatch_at_end"])
    if stays:
        assert set(failed_nodes) <= mismatched
    else:
        assert not set(failed_nodes) & mismatched


def test_a_replacement_is_created_only_after_the_failed_pod_is_observed(tmp_path: Path) -> None:
    """The NUMA-blind default scheduler's rejected pods, replaced by their ReplicaSet: the replacement comes
    once its informer shows the failure and its sync has run, never sooner (3 s + 2 s here; 0.1 s + 0.1 s
    by default), at most one per Failed pod, and the Failed pods stay."""
    base = RACE.replace("schedulers: [reserve]", "schedulers: [default]")
    slow = base + "controllers:\n  replicaSet: {informerDelay: 3s, syncDelay: 2s}\n"
    [observed], [default] = results(tmp_path, slow), results(tmp_path, base)
    for run, delay in ((observed, 5.0), (default, 0.2)):
        assert run["topology_affinity_errors"] > 0
        # Each Failed pod stays; each is replaced unless the run ended before its replacement was due.
        assert run["failed_at_end"] == run["topology_affinity_errors"]
        assert 0 < run["replacements"] <= run["topology_affinity_errors"]
        # A sync in progress when the failure is seen delays it further (the key is synced again after).
        assert run["replacement_delay_s"]["min"] >= delay - 1e-9
    assert observed["replacement_delay_s"]["min"] > default["replacement_delay_s"]["max"]


def test_the_same_file_twice_gives_the_same_json_to_the_byte(tmp_path: Path) -> None:
    """Two schedulers, two seeds each: ``-o json`` is the same bytes on a second run (on the pool), the
    per-seed entries under ``configurations`` and a summary per configuration under ``summaries``."""
    text = RACE.replace("schedulers: [reserve], seeds: [4]", "schedulers: [default, reserve], seeds: [4, 5]")
    first = fleet(tmp_path, text, "-o", "json", "--workers", "2")
    second = fleet(tmp_path, text, "-o", "json", "--workers", "1")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    document = json.loads(first.stdout)
    assert [c["name"] for c in document["configurations"]] == [
        "default/seed=4",
        "default/seed=5",
        "reserve/overreserve/resync=1s/exporter=30s/seed=4",
        "reserve/overreserve/resync=1s/exporter=30s/seed=5",
    ]
    summaries = document["summaries"]
    assert [(s["name"], s["seeds"]) for s in summaries] == [
        ("default", [4, 5]),
        ("reserve/overreserve/resync=1s/exporter=30s", [4, 5]),
    ]
    for summary, pair in zip(
        summaries, (document["configurations"][:2], document["configurations"][2:]), strict=True
    ):
        for key in ("topology_affinity_errors", "pending_p99_s", "time_to_running_p99_s"):
            figure = summary[key]
            values = [r[key] for r in pair]
            assert set(figure) - {"censored_seeds"} == {"mean", "low", "high"}
            if None in values:  # a wait that never ended decides the percentile in that seed
                censored = values.count(None)
                assert figure == {"mean": None, "low": None, "high": None, "censored_seeds": censored}
                continue
            assert figure.get("censored_seeds", 0) == 0
            assert figure["mean"] == pytest.approx(sum(values) / 2, abs=1e-6)
            assert figure["low"] <= figure["mean"] <= figure["high"]
        assert set(summary["templates"]) == {"a", "b"}
    # Paired over the common seeds: A − B per seed, and in how many seeds each was lower.
    runs = document["configurations"]
    for comparison in document["comparisons"]:
        assert (comparison["a"], comparison["b"]) == tuple(s["name"] for s in summaries)
        pairs = [
            (a[comparison["figure"]], b[comparison["figure"]])
            for a, b in zip(runs[:2], runs[2:], strict=True)
            if a[comparison["figure"]] is not None and b[comparison["figure"]] is not None
        ]
        assert comparison["seeds"] == len(pairs)
        assert comparison["a_better"] == sum(x < y for x, y in pairs)
        assert comparison["b_better"] == sum(x > y for x, y in pairs)
        if pairs:
            mean = sum(x - y for x, y in pairs) / len(pairs)
            assert comparison["mean_difference"] == pytest.approx(mean, abs=1e-6)
    assert len(document["comparisons"]) == 3  # one pair of setups, three figures


def test_pop_from_backoff_changes_the_attempts_between_scheduler_1_32_and_1_33(tmp_path: Path) -> None:
    """The same scheduler under kube-scheduler 1.32 and 1.33, side by side: from 1.33 a pod waiting out its
    backoff is popped as soon as activeQ is empty (``SchedulerPopFromBackoffQ``, KEP-5142) and the backoffQ
    flush waits for its window, so the same pods are attempted a different number of times."""
    text = RACE.replace("startupLatency: {fixed: 8s}", "startupLatency: {fixed: 2s}").replace(
        "- name: reserve\n",
        '- name: q132\n  schedulerVersion: "1.32"\n  model: NodeResourceTopologyMatch\n'
        "  args: {scoringStrategy: {type: MostAllocated}, cacheResyncPeriodSeconds: 1}\n"
        '- name: reserve\n  schedulerVersion: "1.33"\n',
    )
    text = text.replace("schedulers: [reserve]", "schedulers: [q132, reserve]")
    old, new = results(tmp_path, text)
    assert (old["scheduler_version"], new["scheduler_version"]) == ("1.32", "1.33")
    assert old["pods_created"] == new["pods_created"]
    assert old["scheduling_attempts"] != new["scheduling_attempts"]


def test_a_replica_set_template_is_created_by_its_first_sync(tmp_path: Path) -> None:
    """A template with ``replicas``: its ReplicaSet creates the pods at its first sync (``syncDelay`` after
    the start), beside the arrival process's one-shot pods; each replica is a slot of its own."""
    text = RACE.replace(
        "  - pod: {metadata: {name: b}",
        "  - replicas: 6\n    pod: {metadata: {name: b}",
    ).replace("total: 40", "total: 20")
    text += "controllers:\n  replicaSet: {informerDelay: 1s, syncDelay: 2s}\n"
    [run] = results(tmp_path, text)
    assert run["pods_total"] == 26
    replicas, arrivals = run["templates"]["b"], run["templates"]["a"]
    assert replicas["pods"] >= 6 and arrivals["pods"] >= 20
    # Created at 2 s, Running 8 s after a bind: no replica runs before 10 s.
    assert replicas["time_to_running_p50_s"] >= 10.0
