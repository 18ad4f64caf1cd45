"""The self-check: the kubelet's decisions replayed through the emulator, each pod against the kubelet's
own state before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletemu.shadow import replay
from kubeletemu.shadow.replay import (
    MAX_CANDIDATES,
    RESOURCE_ADMISSION,
    RESOURCE_CPUS,
    RESOURCE_DEVICES,
    RESOURCE_MEMORY,
    _backward,
    _device_nodes,
    _forward,
    _result,
    order_key,
    replay_order,
)
from tests.shadow.conftest import mirror_of
from tests.shadow.kubelet_double import PODS, FakeKubelet

GU_A = "11111111-0000-0000-0000-00000000000a"


def test_a_node_where_every_decision_agrees(kubelet: FakeKubelet) -> None:
    result = replay(mirror_of(kubelet))
    assert result.divergences == ()
    assert result.interchangeable_devices == ()
    # gu-a, gu-b, gu-c (prep, proxy, main, helper) and gpu hold something; be and bu hold nothing.
    assert result.containers_checked == 7
    assert result.containers_agreeing == 7
    assert result.order == ("prod/gu-a", "prod/gu-b", "batch/gu-c", "ml/gpu")
    # Agreeing pods get the merged hints of their replay.
    hint = result.affinity[GU_A]["c"]
    assert hint.affinity is not None and hint.affinity.bits() == [0] and hint.preferred


def test_list_order_does_not_matter(short_dir: Path, host: tuple[Path, Path]) -> None:
    kubelet = FakeKubelet(short_dir, shuffle_list=True, host=host)
    kubelet.admit(PODS)
    assert [p.name for p in kubelet.listing.pod_resources] != ["gu-a", "gu-b", "be", "bu", "gu-c", "gpu"]
    result = replay(mirror_of(kubelet))
    assert result.divergences == ()
    assert result.order == ("prod/gu-a", "prod/gu-b", "batch/gu-c", "ml/gpu")


def test_cpus_the_emulator_would_not_assign(kubelet: FakeKubelet) -> None:
    """gu-a got CPUs 1,9 (core 1); a kubelet giving it 8,9 (two half cores) diverges, and only there."""
    kubelet.tamper_cpus(GU_A, "c", [8, 9])
    result = replay(mirror_of(kubelet))
    assert [(d.name, d.container, d.resource, d.kubelet, d.emulator) for d in result.divergences] == [
        ("gu-a", "c", RESOURCE_CPUS, "8,9", "1,9")
    ]
    divergence = result.divergences[0]
    assert divergence.uid == GU_A
    # gu-a (CPU 8 is core 0's second thread) comes first by default; nothing explains its CPUs, so the
    # search admits the GPU pod before it and takes gu-a with its difference. Everything after agrees: each
    # pod is admitted against the kubelet's own assignments, gu-a at 8,9 included.
    assert result.order == ("ml/gpu", "prod/gu-a", "prod/gu-b", "batch/gu-c")
    assert divergence.position == 2
    assert result.containers_agreeing == result.containers_checked - 1
    assert GU_A not in result.affinity


def test_history_the_checkpoints_cannot_show(short_dir: Path, host: tuple[Path, Path]) -> None:
    """A pod placed on NUMA 1 while a since-deleted pod filled NUMA 0: replayed without that pod, it lands on
    NUMA 0. Its CPUs and memory diverge (the limit of an order-less replay, reported as such)."""
    kubelet = FakeKubelet(short_dir, host=host)
    blocker, late = kubelet.admit(
        """\
apiVersion: v1
kind: Pod
metadata: {name: blocker, namespace: t, uid: blocker}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "6", memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: late, namespace: t, uid: late}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "2", memory: 1Gi}}
"""
    )
    kubelet.remove(blocker.uid)
    result = replay(mirror_of(kubelet))
    found = {(d.name, d.resource): (d.kubelet, d.emulator) for d in result.divergences}
    assert found == {
        ("late", RESOURCE_CPUS): ("4,12", "1,9"),
        ("late", RESOURCE_MEMORY): ("memory 1073741824 on NUMA [1]", "memory 1073741824 on NUMA [0]"),
    }
    assert late.uid not in result.affinity


def test_devices_compare_by_numa_placement(kubelet: FakeKubelet) -> None:
    # nic1 is on NUMA 0 like nic0: the kubelet may pick either (Go map order).
    kubelet.tamper_devices(GU_A, "c", "example.com/nic", {"nic1": 0})
    result = replay(mirror_of(kubelet))
    assert result.divergences == ()
    assert result.interchangeable_devices == (
        "prod/gu-a container c: kubelet example.com/nic nic1@[0], kubeletemu example.com/nic nic0@[0]",
    )
    # nic2 is on NUMA 1, away from gu-a's CPUs and memory: a real divergence.
    kubelet.tamper_devices(GU_A, "c", "example.com/nic", {"nic2": 1})
    result = replay(mirror_of(kubelet))
    assert [(d.name, d.resource, d.kubelet, d.emulator) for d in result.divergences] == [
        ("gu-a", RESOURCE_DEVICES, "example.com/nic nic2@[1]", "example.com/nic nic0@[0]")
    ]


def test_a_pod_the_emulator_would_reject(short_dir: Path, host: tuple[Path, Path]) -> None:
    """The kubelet ran best-effort (its command line, say) while its file says single-numa-node: a pod
    spread over both nodes is one the configured policy rejects."""
    kubelet = FakeKubelet(short_dir, policy="best-effort", claimed_policy="single-numa-node", host=host)
    kubelet.admit(
        """\
apiVersion: v1
kind: Pod
metadata: {name: wide, namespace: t, uid: wide}
spec:
  containers:
  - name: c
    resources: {limits: {cpu: "10", memory: 1Gi}}
"""
    )
    result = replay(mirror_of(kubelet))
    assert len(result.divergences) == 1
    divergence = result.divergences[0]
    assert (divergence.name, divergence.container, divergence.resource) == ("wide", "c", RESOURCE_ADMISSION)
    assert divergence.emulator == "rejected"
    assert divergence.kubelet.startswith("cpus 1-3,") or divergence.kubelet.startswith("cpus 1,")
    assert divergence.detail == "TopologyAffinityError: Resources cannot be allocated with Topology locality"


def test_order_key(kubelet: FakeKubelet) -> None:
    mirror = mirror_of(kubelet)
    cpus = mirror.emulator.machine.cpu_topology.cpu_details
    pods = {p.key: p for p in mirror.reconstruction.pods}
    # gu-a holds CPUs 1 and 9 (core 1 on NUMA 0) and nic0.
    assert order_key(pods["prod/gu-a"], cpus)[:4] == (0, 1, 1, "nic0")
    assert order_key(pods["ml/gpu"], cpus)[3] == "gpu-both"
    assert order_key(pods["ml/gpu"], cpus)[0] > 1  # no CPUs: after every pod with CPUs
    # A sibling thread sorts with its core: CPU 12 is core 4's second thread on NUMA 1.
    assert cpus[12].core_id == 4
    # Pods holding nothing exclusive are not replayed.
    assert [p.key for p in replay_order(tuple(pods.values()), cpus)] == [
        "prod/gu-a",
        "prod/gu-b",
        "batch/gu-c",
        "ml/gpu",
    ]


@pytest.mark.parametrize("policy", ["none", "best-effort", "restricted", "single-numa-node"])
def test_agreement_under_every_policy(short_dir: Path, host: tuple[Path, Path], policy: str) -> None:
    kubelet = FakeKubelet(short_dir, policy=policy, host=host)
    kubelet.admit(PODS)
    result = replay(mirror_of(kubelet))
    assert result.divergences == ()
    assert result.containers_checked == 7


def test_the_search_finds_an_order_the_default_misses(kubelet: FakeKubelet) -> None:
    """Given the pods in the worst order (the reverse of the admissions), taking them as they come
    diverges, while the forward search finds an order that explains every decision."""
    mirror = mirror_of(kubelet)
    cm = mirror.emulator.cm
    nodes_of = _device_nodes(mirror)
    worst = list(reversed(replay_order(mirror.reconstruction.pods, cm.cpus.topology.cpu_details)))
    naive = _result(_forward(cm, worst, nodes_of, max_candidates=1), nodes_of)
    assert {d.name for d in naive.divergences} >= {"gu-b", "gu-c"}
    searched = _result(_forward(cm, worst, nodes_of, MAX_CANDIDATES), nodes_of)
    assert searched.divergences == ()
    assert searched.order.index("prod/gu-a") < searched.order.index("prod/gu-b")
    # The backward search is greedy too, and here peels gu-a first (it fits last as well), after which
    # gu-c no longer does: both directions run, and the one with fewer divergences is reported.
    backward = _result(_backward(cm, worst, nodes_of, MAX_CANDIDATES), nodes_of)
    assert backward.order[-1] == "prod/gu-a" and backward.divergences


def test_memory_manager_none(short_dir: Path, host: tuple[Path, Path]) -> None:
    """Without memory blocks the memory of Guaranteed containers is unknown: a placeholder keeps them
    Guaranteed, and the CPUs still replay exactly."""
    kubelet = FakeKubelet(short_dir, static_memory=False, host=host)
    kubelet.admit(PODS)
    mirror = mirror_of(kubelet)
    result = replay(mirror)
    assert result.divergences == ()
    # gu-a c, gu-b c, gu-c prep, proxy, main; gpu train (the fractional helper now holds nothing)
    assert result.containers_checked == 6
    placeholders = {p.key: p.placeholders for p in mirror.reconstruction.pods}
    assert placeholders["prod/gu-a"] == ("c: memory unknown (no memory blocks), 1 byte assumed",)
    assert "helper: cpu unknown (no exclusive CPUs: fractional), 1m assumed" in placeholders["batch/gu-c"]
