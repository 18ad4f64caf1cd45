"""The ``exact`` and ``exact-numa`` setups on real node emulators: the cycle with each node's WouldAdmit as
Filter binds only pods the node admits; keeping answers per pod shape and node state changes no decision;
``exact-numa`` picks the fewest NUMA nodes, then the tightest fit, as the kubelet then places the pod; and
both run through ``kubeletemu fleet``."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hostprobe.synthetic import GIB_KIB, SyntheticHost
from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.fleet.cycle import CycleOutcome, ExactNUMAFit, ExactScheduler
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.objects import Node
from kubeletemu.simulate.metrics import container_numa_nodes
from tests.fleet.conftest import KUBELET_CONFIG
from tests.nodes import kubelet_config, probe_machine

# 4 NUMA nodes of 4 CPUs (2 cores x 2 threads) and 4 GiB each; best-effort lets a pod's CPUs span NUMA
# nodes (the static CPU Manager; memory unpinned).
HOST = SyntheticHost(
    sockets=2, cores_per_socket=4, threads_per_core=2, nodes_per_socket=2, node_memory_kib=4 * GIB_KIB
)
CONFIG = kubelet_config(
    "best-effort", managers='cpuManagerPolicy: static\nkubeReserved: {cpu: "1", memory: 512Mi}\n'
)
SHAPES = ((1, 1), (2, 1), (3, 2), (6, 3))  # (CPUs, GiB): the largest needs two NUMA nodes


@pytest.fixture(scope="module")
def emulators_factory(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], dict[str, NodeEmulator]]:
    machine = probe_machine(tmp_path_factory.mktemp("host"), HOST)
    config = parse_config(CONFIG)

    def build() -> dict[str, NodeEmulator]:
        return {f"n{i}": NodeEmulator(config, machine) for i in range(5)}

    return build


def make_pod(index: int, cpus: int, gib: int) -> Pod:
    limits = {"cpu": Quantity.parse(str(cpus)), "memory": Quantity.parse(f"{gib}Gi")}
    name = f"p{index:03d}"
    return Pod(name, "default", f"uid-{name}", (Container("c", limits, limits),))


def infos(emulators: dict[str, NodeEmulator], bound: dict[str, dict[str, Pod]]) -> list[NodeInfo]:
    return [
        NodeInfo(
            name,
            Node(name, allocatable=emulator.allocatable.allocatable),
            pods=tuple(bound[name].values()),
        )
        for name, emulator in emulators.items()
    ]


def drive(
    scheduler_for: Callable[[dict[str, NodeEmulator]], ExactScheduler], steps: int, build: Any
) -> list[Any]:
    """Pods of random shapes scheduled one by one, each chosen node's kubelet admitting it, the oldest
    pod leaving every third step: what each cycle decided and what the kubelet answered."""
    emulators = build()
    scheduler = scheduler_for(emulators)
    bound: dict[str, dict[str, Pod]] = {name: {} for name in emulators}
    order: list[tuple[str, str]] = []
    rng = random.Random(11)
    log: list[Any] = []
    for step in range(steps):
        cpus, gib = rng.choice(SHAPES)
        pod = make_pod(step, cpus, gib)
        outcome = scheduler.schedule(pod, infos(emulators, bound))
        admitted = None
        if outcome.chosen is not None:
            name = outcome.chosen.name
            report = emulators[name].admit(replace(pod, node_name=name))
            admitted = report.admitted
            if report.admitted:
                bound[name][pod.uid] = pod
                order.append((name, pod.uid))
        if step % 3 == 2 and order:
            name, uid = order.pop(0)
            emulators[name].remove(uid)
            del bound[name][uid]
        log.append(
            (
                outcome.chosen.name if outcome.chosen else None,
                admitted,
                outcome.evaluated_nodes,
                sorted(outcome.unschedulable_plugins),
                outcome.reason,
                scheduler.next_start_node_index,
            )
        )
    log.append(("asked", scheduler.would_admit.asked))
    return log


@pytest.mark.parametrize("numa", [False, True], ids=["exact", "exact-numa"])
def test_kept_answers_change_no_decision_and_every_bound_pod_is_admitted(
    numa: bool, emulators_factory: Callable[[], dict[str, NodeEmulator]]
) -> None:
    kept = drive(lambda e: ExactScheduler(e, numa=numa), 60, emulators_factory)
    asked_every_time = drive(lambda e: ExactScheduler(e, numa=numa, memo=False), 60, emulators_factory)
    assert kept[:-1] == asked_every_time[:-1]
    # The kept answers saved calls to the kubelet.
    assert kept[-1][1] < asked_every_time[-1][1]
    decisions = kept[:-1]
    assert any(chosen is None for chosen, *_ in decisions)  # the fleet filled up: some pods found no node
    for chosen, admitted, _, plugins, reason, _ in decisions:
        if chosen is not None:
            assert admitted is True  # never a TopologyAffinityError or any other rejection
        else:
            assert "WouldAdmit" in plugins or "NodeResourcesFit" in plugins
            assert reason.startswith("0/5 nodes are available:")


def test_exact_numa_picks_fewest_numa_nodes_then_tightest(
    emulators_factory: Callable[[], dict[str, NodeEmulator]],
) -> None:
    emulators = emulators_factory()
    scheduler = ExactScheduler(emulators, numa=True, rng=random.Random(3), version="1.34")
    [(score_model, _)] = scheduler.profile.scores
    assert isinstance(score_model, ExactNUMAFit)
    bound: dict[str, dict[str, Pod]] = {name: {} for name in emulators}
    rng = random.Random(5)
    spanning = 0
    for step in range(40):
        cpus, gib = rng.choice(SHAPES)
        pod = make_pod(step, cpus, gib)
        nodes = infos(emulators, bound)
        outcome: CycleOutcome = scheduler.schedule(pod, nodes)
        if outcome.chosen is None:
            continue
        by_name = {n.name: n for n in nodes}
        keys = {s.name: score_model.key(pod, by_name[s.name]) for s in outcome.scores} or {
            outcome.chosen.name: score_model.key(pod, outcome.chosen)
        }
        assert keys[outcome.chosen.name] == min(keys.values())
        verdict = scheduler.would_admit.verdict(pod, outcome.chosen.name)
        report = emulators[outcome.chosen.name].admit(replace(pod, node_name=outcome.chosen.name))
        assert report.admitted
        placed = set().union(
            *(container_numa_nodes(emulators[outcome.chosen.name].machine, c) for c in report.containers)
        )
        # The key's NUMA nodes are where the kubelet then puts the pod.
        assert placed == verdict.numa_nodes and keys[outcome.chosen.name][0] == len(placed)
        spanning += len(placed) > 1
        bound[outcome.chosen.name][pod.uid] = pod
    assert spanning  # the 6-CPU pods had to span NUMA nodes


def test_normalize_gives_the_best_key_alone_the_top_score() -> None:
    fit = ExactNUMAFit.__new__(ExactNUMAFit)
    assert fit.normalize_scores(make_pod(0, 1, 1), ["a", "b", "c", "d"], [5, 9, 5, 7]) == [100, 0, 100, 49]
    assert fit.normalize_scores(make_pod(0, 1, 1), ["a", "b"], [4, 4]) == [100, 100]


FLEET = """\
apiVersion: kubeletemu.io/v1alpha1
kind: Fleet
seed: 2
nodeGroups:
- name: w
  count: 5
  topology:
    synthetic: {sockets: 2, coresPerSocket: 8, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 32}
  config: [kubelet-config.yaml]
schedulers:
- {name: default, model: default}
- {name: exact, model: exact}
- {name: exact-numa, model: exact-numa}
workload:
  templates:
  - weight: 2
    pod: {metadata: {name: a}, spec: {containers: [{name: c, resources: {limits: {cpu: "3", memory: 2Gi}}}]}}
  - weight: 1
    pod: {metadata: {name: b}, spec: {containers: [{name: c, resources: {limits: {cpu: "6", memory: 4Gi}}}]}}
  rate: 2
  total: 120
  lifetime: {exponential: 30s}
  drain: 60s
"""


@pytest.mark.slow
def test_exact_setups_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "kubelet-config.yaml").write_text(KUBELET_CONFIG)
    (tmp_path / "fleet.yaml").write_text(FLEET)
    out = subprocess.run(
        [sys.executable, "-m", "kubeletemu.cli", "fleet", "-f", str(tmp_path / "fleet.yaml"), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    results = {c["name"]: c for c in json.loads(out.stdout)["configurations"]}
    assert set(results) == {"default/seed=2", "exact/seed=2", "exact-numa/seed=2"}
    for name in ("exact/seed=2", "exact-numa/seed=2"):
        assert results[name]["topology_affinity_errors"] == 0
        assert results[name]["other_admission_errors"] == 0
    assert results["default/seed=2"]["topology_affinity_errors"] > 0
