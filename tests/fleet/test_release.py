"""When the kubelet releases an ended pod's exclusive CPUs and memory (issue 44, item 4), through
``kubeletemu fleet`` as a user runs it, on one node of one NUMA node: 8 CPUs (1 reserved), 16 GiB.

A Guaranteed one-shot pod of 6 CPUs starts at 1 s and exits at 6 s. Its CPUs and memory stay with the
CPU and Memory Managers until a stale-state sweep: the CPU Manager's next reconcile
(``cpuManagerReconcilePeriod``) or the node's next admission, which sweeps first (kubernetes v1.37.2
``cpu_manager.go``, ``memory_manager.go``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.test_mechanisms import KUBELETEMU
from tests.nodes import kubelet_config, static_managers

pytestmark = pytest.mark.slow

FLEET = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Fleet
nodeGroups:
- name: n
  count: 1
  kubeletVersion: "{version}"
  topology:
    synthetic: {{sockets: 1, coresPerSocket: 4, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 16}}
  config: [kubelet-config.yaml]
schedulers:
- {{name: default, model: default}}
- {{name: exact, model: exact}}
workload:
  trace: trace.yaml
  startupLatency: {{fixed: 1s}}
  drain: 20s
matrix: {{schedulers: [default, exact], seeds: [1]}}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, annotations: {{fleet.kubeletemu.io/arrival: "{at}"{lifetime}}}}}
spec: {{containers: [{{name: c, resources: {{limits: {{cpu: "{cpu}", memory: 4Gi}}}}}}]}}
"""
# Six CPUs for 5 s from its start at 1 s.
ONE_SHOT = POD.format(name="one-shot", at="0s", lifetime=', fleet.kubeletemu.io/lifetime: "5s"', cpu="6")


def _pod(name: str, at: str, cpu: str) -> str:
    return POD.format(name=name, at=at, lifetime="", cpu=cpu)


def _run(tmp_path: Path, period: str, trace: list[str], version: str = "1.36") -> list[dict[str, Any]]:
    managers = static_managers(1024) + f"cpuManagerReconcilePeriod: {period}\n"
    (tmp_path / "kubelet-config.yaml").write_text(kubelet_config("single-numa-node", managers=managers))
    (tmp_path / "trace.yaml").write_text("---\n".join(trace))
    (tmp_path / "fleet.yaml").write_text(FLEET.format(version=version))
    out = subprocess.run(
        [*KUBELETEMU, "fleet", "-f", str(tmp_path / "fleet.yaml"), "-o", "json", "--workers", "1"],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    runs: list[dict[str, Any]] = json.loads(out.stdout)["configurations"]
    assert [r["scheduler"] for r in runs] == ["default", "exact"]
    return runs


def _cpu_use(run: dict[str, Any]) -> float:
    [numa] = run["numa_utilisation"]
    return float(numa["cpu"])


def test_an_ended_pods_cpus_stay_held_until_the_cpu_managers_reconcile(tmp_path: Path) -> None:
    """No pod is admitted after the exit (a pod of 40 CPUs never fits, so the run lasts its drain, 20 s):
    with a 1 h reconcile period the ended pod's 6 CPUs and its memory are still held when the run ends;
    with a 2 s period the reconcile releases the CPUs within 2 s of the exit, and the memory (the Memory
    Manager has no loop) stays held."""
    trace = [ONE_SHOT, _pod("never-fits", "0s", "40")]
    for run in _run(tmp_path, "1h", trace):
        assert _cpu_use(run) == pytest.approx(6 / 7)  # 6 of the 7 CPUs the static policy hands out
        released = run["released_after_exit"]
        assert released["cpu"] == {
            "at_reconcile": 0, "at_admission": 0, "held_p50_s": None, "held_max_s": None, "still_held": 1,
        }  # fmt: skip
        assert released["memory"]["still_held"] == 1
        assert run["completed"] == 1 and run["simulated_s"] == 20.0
    for run in _run(tmp_path, "2s", trace):
        cpu, memory = run["released_after_exit"]["cpu"], run["released_after_exit"]["memory"]
        assert cpu["at_reconcile"] == 1 and cpu["at_admission"] == 0 and cpu["still_held"] == 0
        assert 0 < cpu["held_max_s"] <= 2.0
        assert memory["at_reconcile"] == 0 and memory["still_held"] == 1
        assert _cpu_use(run) == 0.0


def test_a_pod_admitted_before_the_reconcile_finds_the_ended_pods_cpus_free(tmp_path: Path) -> None:
    """A second 6-CPU pod bound at 8 s, 2 s after the exit and long before the 1 h reconcile: its
    admission's sweep (``removeStaleState`` in the CPU and Memory Managers' hint and Allocate calls)
    releases the ended pod's CPUs and memory first, so the kubelet admits it; the exact filter's
    WouldAdmit answers the same."""
    for run in _run(tmp_path, "1h", [ONE_SHOT, _pod("next", "8s", "6")]):
        assert run["topology_affinity_errors"] == 0 and run["other_admission_errors"] == 0
        assert run["never_running"] == 0 and run["admissions"] == 2
        for manager in ("cpu", "memory"):
            released = run["released_after_exit"][manager]
            assert released["at_admission"] == 1 and released["at_reconcile"] == 0
            assert released["held_max_s"] == pytest.approx(2.0)
            assert released["still_held"] == 0
        assert _cpu_use(run) == pytest.approx(6 / 7)  # the second pod's


def test_a_bad_reconcile_period_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kubelet-config.yaml").write_text(
        kubelet_config("single-numa-node", managers=static_managers(1024) + "cpuManagerReconcilePeriod: 10\n")
    )
    (tmp_path / "trace.yaml").write_text(ONE_SHOT)
    (tmp_path / "fleet.yaml").write_text(FLEET.format(version="1.36"))
    out = subprocess.run(
        [*KUBELETEMU, "fleet", "-f", str(tmp_path / "fleet.yaml")],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2
    [line] = out.stderr.strip().splitlines()
    assert "cpuManagerReconcilePeriod" in line and "expected a string" in line
