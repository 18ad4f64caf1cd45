"""State classes (kubeletemu.scheduler.state_class): nodes of one class answer every pod alike, so the
answers WouldAdmit shares between them are the ones each node gives when asked itself.

Checked on seeded fleets of nodes of two configurations (static managers under single-numa-node, and the
none CPU policy under best-effort), each node filled by its own stream of Guaranteed, Burstable and
BestEffort pods with pod names and UIDs of its own, some nodes then freeing a pod: every node's shared
answer to every pod shape equals its own ``would_admit`` (admitted, reason, message, NUMA nodes, exclusive
CPUs, pinned memory).
"""

from __future__ import annotations

import dataclasses
import random
from types import MappingProxyType

import pytest

from kubeletemu.config import parse_config
from kubeletemu.emulator import EmulatorError, NodeEmulator
from kubeletemu.feed.state import snapshot, to_emulator
from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod
from kubeletemu.scheduler.exact import ExactNUMAFit, WouldAdmit
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.objects import Node
from kubeletemu.scheduler.state_class import state_class
from tests.nodes import kubelet_config, probe_machine, static_managers

STATIC = kubelet_config("single-numa-node", managers=static_managers())
NONE = kubelet_config("best-effort")


def pod(name: str, cpu: str, memory: str, *, limits: bool = True) -> Pod:
    resources: dict[str, object] = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = {"cpu": cpu, "memory": memory}
    return pod_from_manifest({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]},
    })  # fmt: skip


SHAPES = [("1", "1Gi"), ("2", "2Gi"), ("3", "1Gi"), ("4", "4Gi"), ("6", "1Gi"), ("7", "2Gi"), ("500m", "1Gi")]


def filled(base: NodeEmulator, node: int, rng: random.Random) -> NodeEmulator:
    """The base node with a seeded stream of pods, named for this node; sometimes one freed again."""
    emulator = base.fork()
    admitted = []
    for j in range(rng.randrange(5)):
        cpu, memory = rng.choice(SHAPES[:4])
        asked = pod(f"n{node}-p{j}", cpu, memory, limits=rng.random() < 0.8)
        if emulator.admit(asked).admitted:
            admitted.append(asked.uid)
    if admitted and rng.random() < 0.3:
        emulator.remove(rng.choice(admitted))
    return emulator


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> list[NodeEmulator]:
    machine = probe_machine(tmp_path_factory.mktemp("state-class"))
    return [NodeEmulator(parse_config(text), machine) for text in (STATIC, NONE)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_shared_answers_are_each_nodes_own(bases: list[NodeEmulator], seed: int) -> None:
    rng = random.Random(seed)
    nodes = {f"w{i:03d}": filled(bases[i % 2], i, rng) for i in range(120)}
    shared = WouldAdmit(nodes, share=True)
    own = WouldAdmit(nodes, memo=False)
    for k, (cpu, memory) in enumerate(SHAPES):
        for limits in (True, False):
            asked = pod(f"ask-{k}-{int(limits)}", cpu, memory, limits=limits)
            for name in nodes:
                assert shared.verdict(asked, name) == own.verdict(asked, name), (name, cpu, memory, limits)
    classes = {state_class(node) for node in nodes.values()}
    # Sharing happened, and only where states are equal: fewer classes than nodes, more than one.
    assert 2 < len(classes) < len(nodes)
    assert shared.shared_hits > 0
    assert shared.asked + shared.shared_hits == own.asked


def test_nodes_of_one_class_score_alike(bases: list[NodeEmulator]) -> None:
    """ExactNUMAFit's score (what the extender's Prioritize shares by class), each node asked alone."""
    rng = random.Random(11)
    nodes = {f"w{i:03d}": filled(bases[i % 2], i, rng) for i in range(80)}
    fit = ExactNUMAFit(WouldAdmit(nodes, memo=False))
    by_class: dict[object, list[str]] = {}
    for name, node in nodes.items():
        by_class.setdefault(state_class(node), []).append(name)
    shared = [names for names in by_class.values() if len(names) > 1]
    assert shared
    for k, (cpu, memory) in enumerate(SHAPES):
        asked = pod(f"ask-{k}", cpu, memory)
        for names in shared:
            scores = set()
            for name in names:
                node = nodes[name]
                allocatable = MappingProxyType(dict(node.allocatable.allocatable))
                info = NodeInfo(
                    name, Node(name=name, allocatable=allocatable), pods=tuple(node.registry.pods())
                )
                scores.add(fit.score(asked, info) if fit.would_admit.verdict(asked, name).admitted else None)
            assert len(scores) == 1, (names, cpu, memory, scores)


def test_a_mirror_rebuilt_from_the_feed_is_in_its_nodes_class(bases: list[NodeEmulator]) -> None:
    rng = random.Random(7)
    for i in range(10):
        node = filled(bases[i % 2], i, rng)
        assert state_class(to_emulator(snapshot(f"w{i}", 1, node))) == state_class(node)


def test_equal_pods_on_other_cpus_are_another_class(bases: list[NodeEmulator]) -> None:
    first, second = bases[0].fork(), bases[0].fork()
    first.admit(pod("a", "2", "1Gi"))
    first.admit(pod("b", "2", "1Gi"))
    first.remove("uid-a")  # b holds the CPUs after a's
    second.admit(pod("c", "2", "1Gi"))  # c holds a's
    assert state_class(first) != state_class(second)
    third = bases[0].fork()
    third.admit(pod("d", "2", "1Gi"))  # same shape, same CPUs as c: the same class
    assert state_class(third) == state_class(second)


def test_a_pod_already_on_a_node_is_refused_there_whatever_its_class_shares(
    bases: list[NodeEmulator],
) -> None:
    holder, twin = bases[0].fork(), bases[0].fork()
    held = pod("held", "2", "1Gi")
    holder.admit(held)
    twin.admit(pod("other", "2", "1Gi"))
    assert state_class(holder) == state_class(twin)
    answers = WouldAdmit({"twin": twin, "holder": holder}, share=True)
    assert answers.verdict(held, "twin").admitted
    with pytest.raises(EmulatorError, match="already admitted"):
        answers.verdict(held, "holder")


def test_nodes_named_and_placed_apart_share_their_class(bases: list[NodeEmulator]) -> None:
    """Each member of a ``kubeletemu nodes`` group, or each node's daemon, has its own node name, sockets
    and directories: none of them decides an admission, so equal nodes still share. The kubelet version
    does decide, and splits them."""
    base = bases[0]

    def node(**settings: object) -> NodeEmulator:
        config = dataclasses.replace(
            base.config, emulator=dataclasses.replace(base.config.emulator, **settings)
        )
        emulator = NodeEmulator(config, base.machine)
        emulator.admit(pod(f"p-{len(settings)}-{abs(hash(tuple(settings.items()))) % 1000}", "2", "1Gi"))
        return emulator

    first = node(node_name="worker-000", socket="/run/a.sock", state_dir="/var/lib/a")
    second = node(node_name="worker-001", socket="/run/b.sock", state_dir="/var/lib/b", log_level="debug")
    older = node(node_name="worker-002", kubelet_version="1.34")
    assert state_class(first) == state_class(second)
    assert state_class(older) != state_class(first)
    nodes = {"first": first, "second": second, "older": older}
    shared, own = WouldAdmit(nodes, share=True), WouldAdmit(nodes, memo=False)
    for k, (cpu, memory) in enumerate(SHAPES):
        asked = pod(f"q-{k}", cpu, memory)
        for name in nodes:
            assert shared.verdict(asked, name) == own.verdict(asked, name), (name, cpu)
    assert shared.shared_hits == len(SHAPES)  # the second node took the first's answers
