"""The scorer wired to a container manager's managers (``kubeletemu.numa_scoring``): the signals, the
holder bound after construction, the request-aware taps, and the decisions an admission reports."""

from __future__ import annotations

import pytest

import hostprobe
from hostprobe.synthetic import SyntheticHost, write_tree
from kubeletemu import numa_scoring
from kubeletemu.bitmask import BitMask
from kubeletemu.config import parse_config
from kubeletemu.containermanager import ContainerManager
from kubeletemu.machine import Machine
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import PodLevelAllocator
from kubeletemu.topologymanager.numa_scorer import AllocationStrategyTieBreaker, PreferMostAllocatedTieBreaker

GI = 1 << 30
BASE = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
topologyManagerPolicy: {policy}
topologyManagerPolicyOptions: {options}
featureGates: {{TopologyManagerPolicyAlphaOptions: true}}
cpuManagerPolicy: {cpu}
memoryManagerPolicy: {memory}
reservedSystemCPUs: "0"
systemReserved: {{memory: 924Mi}}
{reserved}
---
apiVersion: kubeletemu.io/v1alpha1
kind: EmulatorConfiguration
devices:
- resourceName: example.com/dev
  devices:
  - {{id: d0, numaNodes: [1]}}
"""
RESERVED = "reservedMemory:\n- numaNode: 0\n  limits: {memory: 1Gi}"


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    host = SyntheticHost(hugepages={0: {2048: (4, 4)}, 1: {2048: (4, 4)}})
    sys_root, proc_root = write_tree(tmp_path_factory.mktemp("scoring"), host)
    return Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))


def manager(
    machine: Machine,
    *,
    policy: str = "single-numa-node",
    options: str = "{}",
    cpu: str = "static",
    memory: str = "Static",
) -> ContainerManager:
    text = BASE.format(
        policy=policy,
        options=options,
        cpu=cpu,
        memory=memory,
        reserved=RESERVED if memory == "Static" else "",
    )
    return ContainerManager(parse_config(text), machine)


def guaranteed(name: str, cpus: int, memory: str = "1Gi", extra: dict[str, str] | None = None) -> Container:
    limits = {"cpu": Quantity.parse(cpus), "memory": Quantity.parse(memory)}
    limits.update({k: Quantity.parse(v) for k, v in (extra or {}).items()})
    return Container(name, requests=limits, limits=limits)


def pod(name: str, *containers: Container) -> Pod:
    return Pod(name, "default", f"uid-{name}", containers)


def test_signals_read_the_managers(machine: Machine) -> None:
    cm = manager(machine)
    signals = numa_scoring.signals_of(cm)
    assert [s.name for s in signals] == ["cpu", "memory", "hugepages-1Gi", "hugepages-2Mi", "example.com/dev"]
    usage = {s.name: s.usage() for s in signals}
    assert usage["cpu"] == {0: (0, 7), 1: (0, 8)}  # CPU 0 reserved
    assert usage["hugepages-2Mi"] == {0: (0, 4 * 2 << 20), 1: (0, 4 * 2 << 20)}
    assert usage["example.com/dev"] == {1: (0, 1)}
    memory_allocatable = usage["memory"]
    assert memory_allocatable is not None and memory_allocatable[0][1] == memory_allocatable[1][1] - GI
    assert cm.allocate(pod("a", guaranteed("c", 3, "2Gi", extra={"example.com/dev": "1"}))).result.admit
    usage = {s.name: s.usage() for s in signals}  # read again: the current state
    assert usage["cpu"] == {0: (0, 7), 1: (3, 8)}
    assert usage["memory"] is not None and usage["memory"][1][0] == 2 * GI
    assert usage["example.com/dev"] == {1: (1, 1)}


def test_non_static_managers_give_no_signal(machine: Machine) -> None:
    cm = manager(machine, cpu="none", memory="None")
    usage = {s.name: s.usage() for s in numa_scoring.signals_of(cm)}
    assert usage == {"cpu": None, "memory": None, "example.com/dev": {1: (0, 1)}}


def test_holder_has_no_opinion_until_bound(machine: Machine) -> None:
    holder = numa_scoring.NUMAScoring()
    assert holder.choose(BitMask.of(0), BitMask.of(1), both_preferred=True) is None
    assert holder.drain() == [] and holder.decisions == ()
    cm = manager(machine, options="{prefer-most-allocated-numa-node: 'true'}")
    holder.bind(cm)
    assert isinstance(holder.breaker, PreferMostAllocatedTieBreaker)
    # Bound, it reads the live managers: the pinned pod makes NUMA 1 the busier node.
    assert cm.allocate(pod("a", guaranteed("c", 3, extra={"example.com/dev": "1"}))).result.admit
    assert holder.choose(BitMask.of(0), BitMask.of(1), both_preferred=True) == BitMask.of(1)


@pytest.mark.parametrize(
    ("policy", "options", "kind"),
    [
        ("none", "{}", None),
        ("best-effort", "{}", None),
        ("single-numa-node", "{prefer-most-allocated-numa-node: 'true'}", PreferMostAllocatedTieBreaker),
        ("restricted", "{numa-allocation-strategy: most-allocated}", AllocationStrategyTieBreaker),
    ],
)
def test_container_manager_carries_the_scorer(
    machine: Machine, policy: str, options: str, kind: type | None
) -> None:
    cm = manager(machine, policy=policy, options=options)
    scoring = cm.numa_scoring
    if kind is None:
        assert not scoring.active
        assert scoring.choose(BitMask.of(0), BitMask.of(1), both_preferred=True) is None
        return
    assert isinstance(scoring.breaker, kind)
    # The policy merges with it (handed to new_manager by the container manager).
    assert cm.topology.policy.tie_breaker is scoring
    taps = [p for p in cm.topology.scope.hint_providers if isinstance(p, numa_scoring.HintTap)]
    assert len(taps) == (3 if kind is AllocationStrategyTieBreaker else 0)


def test_taps_pass_everything_through(machine: Machine) -> None:
    cm = manager(machine, policy="best-effort", options="{numa-allocation-strategy: least-allocated}")
    taps = cm.topology.scope.hint_providers
    assert [t.provider for t in taps] == [cm.devices, cm.cpus, cm.memory]
    for tap in taps:
        assert isinstance(tap, PodLevelAllocator) == isinstance(tap.provider, PodLevelAllocator)
    workload = pod("a", guaranteed("c", 2))
    assert taps[1].get_topology_hints(workload, workload.containers[0]) == cm.cpus.get_topology_hints(
        workload, workload.containers[0]
    )
    # An admission records the resources of the last merge (its only container): cpu and memory.
    result = cm.allocate(workload)
    assert result.result.admit
    assert cm.numa_scoring.requested == {"cpu", "memory"}


def test_strategy_scores_only_the_requested_resources(machine: Machine) -> None:
    """The device on NUMA 1 is allocated (100%), CPUs of both nodes are free. A CPU-only container does
    not see the device: least-allocated places it by CPU and memory alone; one that asks for a device of
    the same resource would see it."""
    cm = manager(machine, policy="best-effort", options="{numa-allocation-strategy: least-allocated}")
    scoring = cm.numa_scoring
    assert cm.allocate(pod("pinned", guaranteed("c", 1, extra={"example.com/dev": "1"}))).result.admit
    breaker = scoring.breaker
    assert isinstance(breaker, AllocationStrategyTieBreaker)
    scoring.requested = {"cpu"}
    # cpu: NUMA 0 0/7 -> max(1, 0) = 1, NUMA 1 1/8 -> 12.
    assert (breaker.score(BitMask.of(0)).score, breaker.score(BitMask.of(1)).score) == (1, 12)
    scoring.requested = None  # unknown: every signal, the device's 100% included
    assert breaker.score(BitMask.of(1)).parts[-1] == ("example.com/dev", 100)


def test_decisions_are_reported_per_admission(machine: Machine) -> None:
    cm = manager(machine, options="{numa-allocation-strategy: most-allocated}")
    scoring = cm.numa_scoring
    assert cm.allocate(pod("pinned", guaranteed("c", 2, extra={"example.com/dev": "1"}))).result.admit
    assert scoring.drain() == []  # NUMA 1 was the only choice: no tie
    result = cm.allocate(pod("next", guaranteed("c", 2)))
    assert result.result.admit
    # The container manager's answer carries them, tagged with the container whose merge they broke.
    ((container, decision),) = result.numa_decisions
    assert container == "c"
    assert (decision.chosen, decision.over, decision.overrode_default) == (BitMask.of(1), BitMask.of(0), True)
    assert decision.decided_by == ("cpu", "memory")
    assert result.containers[0].affinity is not None
    assert result.containers[0].affinity.affinity == BitMask.of(1)
