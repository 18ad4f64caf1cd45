"""The cpu accumulator (``nodenumaresource/cpu_accumulator.go``) on hand-computed cases, and Reserve's
cpuset agreeing with the count Filter and Score use."""

from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.lifecycle.resources import Resource
from kubeletemu.scheduler.koordinator.allocation import PodAllocation, allocations_from
from kubeletemu.scheduler.koordinator.cpu_accumulator import (
    ERR_NOT_ENOUGH_CPUS,
    AccumulatorError,
    CPUAccumulator,
    go_sort_slice,
    take_cpus,
    take_preferred_cpus,
)
from kubeletemu.scheduler.koordinator.cpu_topology import CPUInfo, CPUTopology, cpu_topology_for_test
from kubeletemu.scheduler.koordinator.merge import NUMATopologyHint
from kubeletemu.scheduler.koordinator.options import NUMANodeResource
from kubeletemu.scheduler.koordinator.plugin import NodeNUMAResourcePlugin, PreFilterState
from kubeletemu.scheduler.koordinator.resources import AllocateRefused, NodeState, allocate
from tests.scheduler.koordinator.codec import cpu_options

FULL, SPREAD = "FullPCPUs", "SpreadByPCPUs"
MOST, LEAST = "MostAllocated", "LeastAllocated"
NONE, PCPU, NUMA = "None", "PCPULevel", "NUMANodeLevel"


def _held(topology: CPUTopology, cpus: set[int], exclusive: str = "") -> dict[int, CPUInfo]:
    return {c: replace(topology.details[c], ref_count=1, exclusive_policy=exclusive) for c in cpus}


def _take(
    shape: tuple[int, int, int, int],
    allocated: set[int],
    needed: int,
    bind: str,
    strategy: str = MOST,
    exclusive: str = NONE,
    held_exclusive: str = "",
) -> CPUSet:
    topology = cpu_topology_for_test(*shape)
    available = topology.cpus().difference(CPUSet(allocated))
    held = _held(topology, allocated, held_exclusive)
    return take_cpus(topology, 1, available, held, needed, bind, exclusive, strategy)


# 1 socket, 1 NUMA node, 4 cores of 2 CPUs: core k = CPUs {2k, 2k+1}.
def test_full_pcpus_takes_whole_cores() -> None:
    assert _take((1, 1, 4, 2), set(), 4, FULL) == CPUSet([0, 1, 2, 3])


def test_spread_by_pcpus_takes_one_cpu_per_core() -> None:
    assert _take((1, 1, 4, 2), set(), 4, SPREAD) == CPUSet([0, 2, 4, 6])


def test_spread_by_pcpus_doubles_up_only_when_cores_run_out() -> None:
    # 6 CPUs on 4 cores: one of each core (0, 2, 4, 6), then the second CPUs of the first cores (1, 3).
    assert _take((1, 1, 4, 2), set(), 6, SPREAD) == CPUSet([0, 1, 2, 3, 4, 6])


# 2 sockets of one NUMA node each, 4 cores of 2 CPUs: node 0 = CPUs 0-7, node 1 = CPUs 8-15. Core 0 held.
@pytest.mark.parametrize(
    ("strategy", "want"),
    [(MOST, [2, 3]), (LEAST, [8, 9])],  # node 0 has 6 whole free CPUs, node 1 has 8
)
def test_full_pcpus_numa_order(strategy: str, want: list[int]) -> None:
    assert _take((2, 1, 4, 2), {0, 1}, 2, FULL, strategy) == CPUSet(want)


@pytest.mark.parametrize(
    ("strategy", "want"),
    # node 0: 7 free CPUs, one per core = [1, 2, 4, 6]; node 1: 8 free, [8, 10, 12, 14]
    [(MOST, [1, 2]), (LEAST, [8, 10])],
)
def test_spread_by_pcpus_numa_order(strategy: str, want: list[int]) -> None:
    assert _take((2, 1, 4, 2), {0}, 2, SPREAD, strategy) == CPUSet(want)


def test_full_pcpus_across_sockets_takes_the_fullest_socket_first() -> None:
    # 2 sockets of 2 cores (4 CPUs each); socket 0 keeps one whole core [2, 3]. 6 > CPUs per socket:
    # socket 1 whole (4-7), then 2 more from socket 0.
    assert _take((2, 1, 2, 2), {0, 1}, 6, FULL) == CPUSet([2, 3, 4, 5, 6, 7])


def test_full_pcpus_fallback_keeps_socket_order_on_ties() -> None:
    # 3 idle sockets of 4 CPUs, 6 needed: socket 0 whole, then, of the tied sockets 1 and 2 (stable sort),
    # the first core of socket 1.
    assert _take((3, 1, 2, 2), set(), 6, FULL) == CPUSet([0, 1, 2, 3, 4, 5])


def test_pcpu_level_exclusivity_skips_cores_of_exclusive_pods() -> None:
    # CPU 0 held PCPU-exclusively: a PCPU-exclusive pod avoids core 0 (CPU 1); one without does not.
    assert _take((1, 1, 4, 2), {0}, 2, SPREAD, exclusive=PCPU, held_exclusive=PCPU) == CPUSet([2, 4])
    assert _take((1, 1, 4, 2), {0}, 2, SPREAD, exclusive=NONE, held_exclusive=PCPU) == CPUSet([1, 2])


def test_numa_level_exclusivity_skips_numa_nodes_of_exclusive_pods() -> None:
    held = {"held_exclusive": NUMA}
    assert _take((2, 1, 4, 2), {0}, 2, SPREAD, exclusive=NUMA, **held) == CPUSet([8, 10])
    assert _take((2, 1, 4, 2), {0}, 2, SPREAD, exclusive=NONE, **held) == CPUSet([1, 2])


def test_not_enough_cpus() -> None:
    with pytest.raises(AccumulatorError, match=ERR_NOT_ENOUGH_CPUS):
        _take((1, 1, 2, 2), {0}, 4, FULL)


def test_preferred_cpus_first() -> None:
    topology = cpu_topology_for_test(1, 1, 4, 2)
    got = take_preferred_cpus(topology, 1, topology.cpus(), CPUSet([5, 7]), {}, 3, SPREAD, NONE, MOST)
    assert got == CPUSet([0, 5, 7])


def test_spread_cpus_round_robins_cores() -> None:
    topology = cpu_topology_for_test(1, 1, 3, 2)
    acc = CPUAccumulator(topology, 1, topology.cpus(), {}, 6, NONE, MOST)
    assert acc.spread_cpus([0, 1, 2, 3, 4, 5]) == [0, 2, 4, 1, 3, 5]
    assert acc.spread_cpus([0, 1]) == [0, 1]


def test_go_sort_slice_is_stable_up_to_twelve() -> None:
    items = [(2, "a"), (1, "b"), (2, "c"), (1, "d")]
    assert go_sort_slice(items, lambda x, y: x[0] < y[0]) == [(1, "b"), (1, "d"), (2, "a"), (2, "c")]
    with pytest.raises(NotImplementedError):
        go_sort_slice(list(range(13)), lambda x, y: x < y)


# ---- allocate: the chosen CPUs against the count Filter and Score use ----------------------------------


def _node(shape: tuple[int, int, int, int], held: set[int], labels: dict[str, str]) -> NodeState:
    topology = cpu_topology_for_test(*shape)
    options = cpu_options(topology, topology.num_nodes)
    allocation = allocations_from([PodAllocation(uid="held", cpuset=CPUSet(held))] if held else [], topology)
    return NodeState(
        name="n",
        options=options,
        allocation=allocation,
        labels=labels,
        allocatable=Resource.from_list({"cpu": Fraction(topology.num_cpus)}),
    )


def test_reserve_takes_cpus_on_the_hinted_numa_node() -> None:
    node = _node((2, 1, 4, 2), set(), {})
    state = PreFilterState(
        request_cpu_bind=True,
        requests={"cpu": Fraction(4)},
        preferred_cpu_bind_policy=FULL,
        num_cpus_needed=4,
    )
    got = NodeNUMAResourcePlugin().reserve_allocation(state, node, NUMATopologyHint(BitMask.of(1)))
    assert got.status.ok and got.allocation is not None
    assert got.allocation.cpuset == CPUSet([8, 9, 10, 11])
    assert got.allocation.numa_node_resources == (NUMANodeResource(1, {"cpu": Fraction(4)}),)


SHAPES = [(1, 1, 4, 2), (2, 1, 4, 2), (2, 2, 2, 2), (2, 1, 4, 1)]
HELD = [set(), {0}, {0, 1}, {0, 2, 9}]
POLICIES = [
    ("", FULL, ""),  # preferred FullPCPUs
    ("", SPREAD, ""),
    (FULL, "", ""),  # required by the pod
    ("", FULL, "SpreadByPCPUs"),  # required by the node label
    ("", FULL, "FullPCPUsOnly"),
]


@pytest.mark.parametrize(("shape", "held"), list(itertools.product(SHAPES, HELD)))
def test_chosen_cpus_agree_with_the_count(shape: tuple[int, int, int, int], held: set[int]) -> None:
    """Filter and Score count CPUs without choosing them: the choice must succeed and fail alike."""
    plugin = NodeNUMAResourcePlugin()
    for (required, preferred, node_bind), needed, strategy in itertools.product(
        POLICIES, range(1, 10), [MOST, LEAST]
    ):
        labels = {"node.koordinator.sh/numa-allocate-strategy": strategy}
        if node_bind:
            labels["node.koordinator.sh/cpu-bind-policy"] = node_bind
        node = _node(shape, held, labels)
        topology = node.options.cpu_topology
        assert topology is not None
        state = PreFilterState(
            request_cpu_bind=True,
            requests={"cpu": Fraction(needed)},
            required_cpu_bind_policy=required,
            preferred_cpu_bind_policy=preferred,
            num_cpus_needed=needed,
        )
        masks = [None, *(NUMATopologyHint(BitMask.of(i)) for i in range(topology.num_nodes))]
        for hint in masks:
            opts = plugin.resource_options(state, node, True, hint)
            try:
                counted: object = allocate(node, opts).num_cpus
            except AllocateRefused as refused:
                counted = refused.status
            try:
                chosen = allocate(node, opts, pick_cpus=True)
            except AllocateRefused as refused:
                assert counted == refused.status, (required, preferred, node_bind, needed, hint)
                continue
            assert counted == chosen.num_cpus == chosen.cpuset.size() == needed
            assert chosen.cpuset.intersection(CPUSet(held)).is_empty()
