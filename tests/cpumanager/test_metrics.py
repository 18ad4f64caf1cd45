"""The static policy's metric values against hand-computed ones: the gauges derived from the state where the
kubelet derives them (start, fresh allocation, release; master after kubernetes#141261), the pinning and
alignment counters where its Allocate / AllocatePod count them."""

from __future__ import annotations

import pytest

from kubeletemu.cpumanager import (
    CPUAllocationError,
    CPUManagerGauges,
    CPUManagerMetrics,
    CPUSet,
    CPUTopology,
    SMTAlignmentError,
    StaticPolicy,
    new_manager,
)
from kubeletemu.cpumanager.metrics import aligned_at_uncore_cache
from kubeletemu.cpumanager.state import MemoryState
from kubeletemu.pod import Container
from kubeletemu.quantity import Quantity
from tests.cpumanager.helpers import FixedStore, container, pod
from tests.cpumanager.test_policy_static import (
    PLRM,
    _pod_level_managers,
    dual_socket_ht,
    pod_level,
    single_socket_ht,
)


def gauges(shared: int, exclusive: int, *per_numa: int) -> CPUManagerGauges:
    return CPUManagerGauges(shared, exclusive, tuple(enumerate(per_numa)))


def started(
    topology: CPUTopology, reserved: int = 1, options: dict[str, str] | None = None
) -> tuple[StaticPolicy, MemoryState]:
    store = FixedStore()
    policy = StaticPolicy(topology, reserved, None, store, options)
    state = MemoryState()
    policy.start(state)
    return policy, state


def test_start_sets_the_gauges_of_the_idle_node_for_every_numa_node() -> None:
    # topoDualSocketHT: 12 CPUs on NUMA 0 (even ids) and 1 (odd); CPU 0 reserved: 11 CPUs shared.
    policy, _ = started(dual_socket_ht())
    assert policy.metrics() == CPUManagerMetrics(static=True, gauges=gauges(11000, 0, 0, 0))


def test_a_cpu_reused_from_an_init_container_counts_once() -> None:
    """8 CPUs, CPU 0 reserved: init takes 4 (two whole cores), the app container reuses 2 of them. The
    shared pool only shrinks by what left it; the exclusive count is the union; the init container's
    removal gives back only the 2 CPUs the app container does not hold."""
    policy, state = started(single_socket_ht())
    idle = gauges(7000, 0, 0)
    assert policy.gauges == idle
    p = pod("p", [container("app", 2)], init_containers=[container("init", 4)])
    policy.allocate(state, p, p.init_containers[0])
    assert policy.gauges == gauges(3000, 4, 4)
    policy.allocate(state, p, p.containers[0])
    app = state.get_cpu_set("p", "app")
    assert app is not None and app.is_subset_of(state.get_cpu_set("p", "init") or CPUSet())
    assert policy.gauges == gauges(3000, 4, 4)
    policy.remove_container(state, "p", "init")
    assert policy.gauges == gauges(5000, 2, 2)
    policy.remove_container(state, "p", "app")
    assert policy.gauges == idle
    # Both containers asked for exclusive CPUs, both within the single uncore cache.
    assert (policy.pinning_requests, policy.pinning_errors, policy.aligned_uncore_cache) == (2, 0, 2)


def test_the_per_numa_gauge_drops_to_zero_when_a_node_is_released() -> None:
    store = FixedStore()
    policy = StaticPolicy(dual_socket_ht(), 1, None, store)
    state = MemoryState()
    policy.start(state)
    a, b = pod("a", [container("c", 2)]), pod("b", [container("c", 2)])
    store.set("a", "c", [0])
    store.set("b", "c", [1])
    policy.allocate(state, a, a.containers[0])
    assert policy.gauges == gauges(9000, 2, 2, 0)
    policy.allocate(state, b, b.containers[0])
    assert policy.gauges == gauges(7000, 4, 2, 2)
    policy.remove_container(state, "a", "c")
    assert policy.gauges == gauges(9000, 2, 0, 2)
    policy.remove_container(state, "b", "c")
    assert policy.gauges == gauges(11000, 0, 0, 0)


def test_a_restart_derives_the_same_gauges_from_the_restored_state() -> None:
    policy, state = started(single_socket_ht())
    p = pod("p", [container("app", 2)], init_containers=[container("init", 4)])
    for c in (p.init_containers[0], p.containers[0]):
        policy.allocate(state, p, c)
    restarted = StaticPolicy(single_socket_ht(), 1, None, FixedStore())
    restarted.start(state)
    assert restarted.gauges == policy.gauges == gauges(3000, 4, 4)
    # Counters restart from zero with the kubelet.
    assert (restarted.pinning_requests, restarted.pinning_errors) == (0, 0)


def test_pinning_counts_only_containers_that_ask_for_exclusive_cpus() -> None:
    policy, state = started(single_socket_ht())
    burstable = pod("b", [container("c", 1, limit_cpu=2)])
    fractional = pod("f", [container("c", "1500m")])
    for p in (burstable, fractional):
        policy.allocate(state, p, p.containers[0])
    assert (policy.pinning_requests, policy.pinning_errors) == (0, 0)
    too_big = pod("g", [container("c", 9)])
    with pytest.raises(CPUAllocationError):
        policy.allocate(state, too_big, too_big.containers[0])
    assert (policy.pinning_requests, policy.pinning_errors) == (1, 1)
    # A failed allocation takes nothing: the gauges are the idle node's.
    assert policy.gauges == gauges(7000, 0, 0)
    # A container already in the state is still a request (the kubelet counts before that shortcut).
    ok = pod("o", [container("c", 2)])
    policy.allocate(state, ok, ok.containers[0])
    policy.allocate(state, ok, ok.containers[0])
    assert (policy.pinning_requests, policy.pinning_errors, policy.aligned_uncore_cache) == (3, 1, 1)
    assert policy.gauges == gauges(5000, 2, 2)


def test_full_pcpus_only_counts_physical_cpu_alignment() -> None:
    policy, state = started(single_socket_ht(), options={"full-pcpus-only": "true"})
    whole = pod("w", [container("c", 2)])
    policy.allocate(state, whole, whole.containers[0])
    odd = pod("o", [container("c", 3)])
    with pytest.raises(SMTAlignmentError):
        policy.allocate(state, odd, odd.containers[0])
    metrics = policy.metrics()
    assert (metrics.aligned_physical_cpu, metrics.aligned_physical_cpu_failures) == (1, 1)
    assert (metrics.pinning_requests, metrics.pinning_errors) == (2, 1)
    # Without the option the physical_cpu counters never move.
    plain, plain_state = started(single_socket_ht())
    plain.allocate(plain_state, whole, whole.containers[0])
    assert (plain.aligned_physical_cpu, plain.aligned_physical_cpu_failures) == (0, 0)


def two_uncore_caches() -> CPUTopology:
    # One socket, one NUMA node, 8 single-thread cores: uncore cache 0 = CPUs 0-3, cache 1 = CPUs 4-7.
    return CPUTopology.from_rows([[cpu, cpu, 0, 0, cpu // 4] for cpu in range(8)])


def test_uncore_cache_alignment_of_fresh_allocations() -> None:
    topology = two_uncore_caches()
    assert aligned_at_uncore_cache(topology, CPUSet.of(5))
    assert aligned_at_uncore_cache(topology, CPUSet.of(4, 7))
    assert not aligned_at_uncore_cache(topology, CPUSet.of(3, 4))
    assert not aligned_at_uncore_cache(topology, CPUSet.of(4, 99))  # unknown CPU
    policy, state = started(topology, reserved=0)
    small, wide = pod("s", [container("c", 2)]), pod("w", [container("c", 5)])
    policy.allocate(state, small, small.containers[0])
    policy.allocate(state, wide, wide.containers[0])
    assert (policy.pinning_requests, policy.aligned_uncore_cache) == (2, 1)


def test_pod_level_bubble_counts_every_exclusive_slice_and_the_whole_bubble() -> None:
    """The bubble (6 CPUs, NUMA 1) counts as exclusive while any container of the pod holds its slice;
    one pinning request per exclusive container ("a"), none for the shared one ("b")."""
    tm, cpu = _pod_level_managers("restricted", PLRM)
    p = pod_level("p", 6, [container("a", 2), container("b", "500m")])
    assert tm.admit(p).admit
    busy = CPUManagerMetrics(
        static=True, pinning_requests=1, aligned_uncore_cache=1, gauges=gauges(5000, 6, 0, 6)
    )
    assert cpu.metrics() == busy
    cpu.remove_container_by_ref("p", "a")
    assert cpu.metrics() == busy
    cpu.remove_container_by_ref("p", "b")
    assert cpu.metrics().gauges == gauges(11000, 0, 0, 0)


def test_pod_level_refusal_is_one_pinning_error() -> None:
    tm, cpu = _pod_level_managers("best-effort", PLRM)
    # Exclusive "a" takes the whole budget, leaving the shared "b" nothing: AllocatePod refuses.
    p = pod_level("p", 2, [container("a", 2), container("b", "500m")])
    assert not tm.admit(p).admit
    assert cpu.pinning_counts() == (0, 1)
    assert cpu.metrics().gauges == gauges(11000, 0, 0, 0)


def test_pod_level_resources_without_the_gate_are_not_pinned() -> None:
    tm, cpu = _pod_level_managers("restricted", {})
    p = pod_level("p", 6, [container("a", 2), container("b", "500m")])
    assert tm.admit(p).admit
    assert cpu.pinning_counts() == (0, 0)


def test_none_policy_neither_counts_nor_sets() -> None:
    cpu = new_manager(
        "none", None, dual_socket_ht(), FixedStore(), node_allocatable_cpu_reservation=Quantity(1)
    )
    p = pod("p", [Container(name="c", requests={"cpu": Quantity(2)}, limits={"cpu": Quantity(2)})])
    cpu.allocate(p, p.containers[0])
    assert cpu.metrics() == CPUManagerMetrics()
