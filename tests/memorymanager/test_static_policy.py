"""The static policy end to end against a hand-set Topology Manager store: default state, allocation in
one node and across a group, hint extension, the group rules, init-container reuse and release."""

from __future__ import annotations

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.memorymanager import (
    Block,
    MachineInfo,
    MemoryAllocationError,
    MemoryManager,
    NUMANode,
    StaticPolicy,
    new_manager,
)
from kubeletemu.memorymanager.state.state_mem import MemoryState
from kubeletemu.topologymanager import TopologyHint
from tests.memorymanager.fixtures import (
    EVICTION,
    KUBE_RESERVED,
    MACHINE,
    RESERVED,
    Gi,
    Mi,
    StoreStub,
    guaranteed,
    pod,
)

HP2 = "hugepages-2Mi"
HP1G = "hugepages-1Gi"


def manager(store: StoreStub) -> MemoryManager:
    return new_manager(
        "Static",
        MACHINE,
        store,
        reserved_memory=RESERVED,
        kube_reserved=KUBE_RESERVED,
        eviction_hard_memory_available=EVICTION,
    )


def hint(*bits: int, preferred: bool = True) -> TopologyHint:
    return TopologyHint(BitMask.of(*bits), preferred)


def test_default_machine_state() -> None:
    tables = manager(StoreStub()).memory_tables()
    for node in (0, 1):
        mem = tables[node]["memory"]
        # 8Gi - 512Mi reserved - 1Gi (2Mi pages) - 2Gi (1Gi pages)
        assert (mem.total, mem.system_reserved, mem.allocatable, mem.free, mem.reserved) == (
            8 * Gi,
            512 * Mi,
            4608 * Mi,
            4608 * Mi,
            0,
        )
        assert (tables[node][HP2].total, tables[node][HP2].allocatable) == (Gi, Gi)
        assert (tables[node][HP1G].total, tables[node][HP1G].free) == (2 * Gi, 2 * Gi)
    blocks = manager(StoreStub()).get_allocatable_memory()
    assert Block((0,), "memory", 4608 * Mi) in blocks and Block((1,), HP1G, 2 * Gi) in blocks


def test_single_node_allocation_and_release() -> None:
    store = StoreStub()
    mm = manager(store)
    p = pod("p1", guaranteed("c", memory="2Gi", hugepages_1Gi="1Gi"))
    hints = mm.get_topology_hints(p, p.containers[0])
    assert hints == {
        "memory": [hint(0), hint(1), hint(0, 1, preferred=False)],
        HP1G: [hint(0), hint(1), hint(0, 1, preferred=False)],
    }
    store.hints[("p1", "c")] = hint(1)
    mm.allocate(p, p.containers[0])
    assert mm.get_memory("p1", "c") == [Block((1,), "memory", 2 * Gi), Block((1,), HP1G, Gi)]
    assert mm.assigned_per_numa()[1] == {"memory": 2 * Gi, HP2: 0, HP1G: Gi}
    assert mm.state.get_machine_state()[1].number_of_assignments == 2
    assert mm.get_memory_numa_nodes(p, p.containers[0]) == {1}
    # Allocate is idempotent.
    mm.allocate(p, p.containers[0])
    assert mm.assigned_per_numa()[1]["memory"] == 2 * Gi
    mm.add_container(p, p.containers[0], "cid-1")
    mm.remove_container("cid-1")
    assert mm.get_memory("p1", "c") == []
    assert mm.assigned_per_numa()[1] == {"memory": 0, HP2: 0, HP1G: 0}
    assert mm.state.get_machine_state()[1].number_of_assignments == 0


def test_cross_numa_group_and_its_rules() -> None:
    store = StoreStub()
    mm = manager(store)
    big = pod("big", guaranteed("c", memory="6Gi"))
    # 6Gi fits no single node (4.5Gi allocatable each): only the pair, preferred.
    assert mm.get_topology_hints(big, big.containers[0]) == {"memory": [hint(0, 1)]}
    store.hints[("big", "c")] = hint(0, 1)
    mm.allocate(big, big.containers[0])
    tables = mm.memory_tables()
    # Taken from the nodes in ascending order: all of node 0 first.
    assert (tables[0]["memory"].reserved, tables[1]["memory"].reserved) == (4608 * Mi, 1536 * Mi)
    assert mm.numa_groups() == {0: [0, 1], 1: [0, 1]}
    small = pod("small", guaranteed("c", memory="1Gi"))
    # Grouped nodes can't serve single-node hints; the pair stays, not preferred (one node would do by
    # capacity).
    assert mm.get_topology_hints(small, small.containers[0]) == {"memory": [hint(0, 1, preferred=False)]}
    # A single-node hint from the Topology Manager does not fit in node 0 (no free memory left there):
    # it is extended to the group, and a preferred hint may not become non-preferred.
    store.hints[("small", "c")] = hint(0)
    with pytest.raises(
        MemoryAllocationError, match=r"^\[memorymanager\] failed to find the extended preferred hint$"
    ):
        mm.allocate(small, small.containers[0])
    store.hints[("small", "c")] = hint(0, preferred=False)
    mm.allocate(small, small.containers[0])
    assert mm.get_memory("small", "c") == [Block((0, 1), "memory", Gi)]
    # Releasing the big pod keeps the group while the small one lives in it.
    mm.remove_pod("big")
    assert mm.numa_groups() == {0: [0, 1], 1: [0, 1]}
    mm.remove_pod("small")
    assert mm.numa_groups() == {0: [0], 1: [1]}
    assert mm.assigned_per_numa() == {0: {"memory": 0, HP2: 0, HP1G: 0}, 1: {"memory": 0, HP2: 0, HP1G: 0}}


def test_single_node_hint_inside_a_group_is_not_a_violation() -> None:
    """``isAffinityViolatingNUMAAllocations`` skips single-node masks: the hint filter is stricter."""
    store = StoreStub()
    mm = manager(store)
    big = pod("big", guaranteed("c", memory="5Gi"))
    store.hints[("big", "c")] = hint(0, 1)
    mm.allocate(big, big.containers[0])
    other = pod("o", guaranteed("c", memory="256Mi"))
    store.hints[("o", "c")] = hint(1, preferred=False)
    mm.allocate(other, other.containers[0])
    assert mm.get_memory("o", "c") == [Block((1,), "memory", 256 * Mi)]


def test_multi_node_mask_across_a_single_node_allocation_is_rejected() -> None:
    store = StoreStub()
    mm = manager(store)
    first = pod("a", guaranteed("c", memory="1Gi"))
    store.hints[("a", "c")] = hint(0)
    mm.allocate(first, first.containers[0])
    second = pod("b", guaranteed("c", memory="1Gi"))
    store.hints[("b", "c")] = hint(0, 1, preferred=False)
    with pytest.raises(
        MemoryAllocationError, match=r"^\[memorymanager\] preferred hint violates NUMA node allocation$"
    ):
        mm.allocate(second, second.containers[0])


def test_nil_topology_hint_uses_the_default_hint() -> None:
    mm = manager(StoreStub())
    p = pod("p", guaranteed("c", memory="3Gi"))
    mm.allocate(p, p.containers[0])
    assert mm.get_memory("p", "c") == [Block((0,), "memory", 3 * Gi)]
    too_big = pod("q", guaranteed("c", memory="20Gi"))
    # Nothing fits: the hint provider says "no preference" (empty map) ...
    assert mm.get_topology_hints(too_big, too_big.containers[0]) == {}
    # ... and Allocate fails.
    with pytest.raises(MemoryAllocationError, match="failed to get the default NUMA affinity"):
        mm.allocate(too_big, too_big.containers[0])


def test_non_guaranteed_pods_are_ignored() -> None:
    mm = manager(StoreStub())
    from kubeletemu.pod import Container
    from kubeletemu.quantity import Quantity

    burstable = pod("b", Container("c", requests={"memory": Quantity.parse("1Gi")}))
    assert mm.get_topology_hints(burstable, burstable.containers[0]) is None
    assert mm.get_pod_topology_hints(burstable) is None
    mm.allocate(burstable, burstable.containers[0])
    assert mm.get_memory("b", "c") == []


def test_init_container_memory_is_reused_by_app_containers() -> None:
    store = StoreStub()
    mm = manager(store)
    p = pod("p", guaranteed("app", memory="2Gi"), init=(guaranteed("init", memory="3Gi"),))
    for name in ("init", "app"):
        store.hints[("p", name)] = hint(0)
    assert mm.get_pod_topology_hints(p) == {"memory": [hint(0), hint(1), hint(0, 1, preferred=False)]}
    mm.allocate(p, p.init_containers[0])
    mm.allocate(p, p.containers[0])
    # The app container's 2Gi come out of the init container's 3Gi: 3Gi charged in all.
    assert mm.assigned_per_numa()[0]["memory"] == 3 * Gi
    assert mm.get_memory("p", "app") == [Block((0,), "memory", 2 * Gi)]
    assert mm.get_memory("p", "init") == [Block((0,), "memory", Gi)]
    mm.remove_pod("p")
    assert mm.assigned_per_numa()[0]["memory"] == 0


def test_restart_hints_regenerated_from_blocks() -> None:
    store = StoreStub()
    mm = manager(store)
    p = pod("p", guaranteed("c", memory="1Gi", hugepages_2Mi="64Mi"))
    store.hints[("p", "c")] = hint(1)
    mm.allocate(p, p.containers[0])
    assert mm.get_topology_hints(p, p.containers[0]) == {"memory": [hint(1)], HP2: [hint(1)]}
    changed = pod("p", guaranteed("c", memory="2Gi", hugepages_2Mi="64Mi"))
    assert mm.get_topology_hints(changed, changed.containers[0]) is None


def test_stale_state_of_inactive_pods_is_released() -> None:
    store = StoreStub()
    active: list[str] = []
    mm = new_manager(
        "Static",
        MACHINE,
        store,
        reserved_memory=RESERVED,
        kube_reserved=KUBE_RESERVED,
        eviction_hard_memory_available=EVICTION,
        active_pods=lambda: active,
    )
    p = pod("gone", guaranteed("c", memory="1Gi"))
    mm.allocate(p, p.containers[0])
    assert mm.get_memory("gone", "c")
    q = pod("new", guaranteed("c", memory="1Gi"))
    mm.get_topology_hints(q, q.containers[0])
    assert mm.get_memory("gone", "c") == []


def test_none_policy_does_nothing() -> None:
    mm = new_manager("None", MACHINE, StoreStub())
    p = pod("p", guaranteed("c"))
    assert mm.get_topology_hints(p, p.containers[0]) is None
    mm.allocate(p, p.containers[0])
    assert mm.get_memory("p", "c") == []


def test_per_mask_sums_wrap_as_the_kubelets_uint64() -> None:
    """calculateHints sums each mask's free and allocatable bytes in uint64 (v1.37.2 policy_static.go). A
    node whose reserved memory and hugepages exceed its memory has an allocatable that wrapped below 2^64
    (getDefaultMachineState); adding another node's bytes wraps the sum past 2^64 to a small number, so
    the kubelet offers no mask holding both nodes. Found by the node oracle (tests/oracle)."""
    machine = MachineInfo([NUMANode(0, 2 * Gi, {1048576: 2}), NUMANode(1, 2 * Gi)])
    policy = StaticPolicy(machine, {0: {"memory": 1 * Gi}}, StoreStub())
    state = MemoryState()
    policy.start(state)
    assert state.get_machine_state()[0].memory_map["memory"].allocatable == 2**64 - 1 * Gi
    container = guaranteed("c", memory=str(3 * Gi // 2))
    hints = policy.get_topology_hints(state, pod("p", container), container)
    # Node 0 alone: 2^64 - 1Gi; node 1 alone: 2Gi; both: 1Gi (wrapped), short of 1.5Gi.
    assert hints == {"memory": [hint(0), hint(1)]}
