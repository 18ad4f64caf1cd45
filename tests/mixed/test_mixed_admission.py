"""Mixed admissions (CPU + memory + hugepages + devices) under each Topology Manager policy and scope.

Expectations are worked out by hand from the machine in ``harness.py`` (2 nodes x 8 CPUs, CPU 0
reserved; 4.5Gi memory, 1Gi of 2Mi pages and 2Gi of 1Gi pages allocatable per node; nic0/nic1 on node 0,
nic2 on node 1, gpu0 on node 1). Providers merge in the kubelet's order: devices, CPU, memory.
"""

from __future__ import annotations

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.topologymanager import TopologyHint
from tests.memorymanager.fixtures import Gi, Mi
from tests.mixed.harness import GPU, NIC, Node, container, pod

TAE = "TopologyAffinityError"
TAE_MSG = "Resources cannot be allocated with Topology locality"
UAE = "UnexpectedAdmissionError"


def hint(*bits: int, preferred: bool = True) -> TopologyHint:
    return TopologyHint(BitMask.of(*bits), preferred)


def assert_nothing_held(node: Node, uid: str) -> None:
    assert node.cpus.get_exclusively_assigned_cpus().is_empty()
    assert all(v == 0 for tables in node.memory.assigned_per_numa().values() for v in tables.values())
    assert node.devices.pod_devices.pods() == set()
    assert node.memory.numa_groups() == {0: [0], 1: [1]}


def test_best_effort_container_all_resources_follow_the_gpu() -> None:
    # gpu0 exists only on node 1: devices [{1}P, {0,1}N]; CPU, memory and 1Gi pages offer {0}P, {1}P, {0,1}N.
    node = Node("best-effort", "container")
    p = pod("a", container("c", cpu="2", memory="1Gi", hp1g="1Gi", gpu=1))
    result = node.admit(p)
    assert result.admit
    assert node.affinity("a", "c") == hint(1)
    assert node.cpu_ids("a", "c") == [8, 9]  # the first free core of node 1
    assert node.memory_blocks("a", "c") == {((1,), "memory", Gi), ((1,), "hugepages-1Gi", Gi)}
    assert node.device_ids("a", "c") == {GPU: {"gpu0"}}


def test_restricted_rejects_an_unsatisfiable_device_request_and_holds_nothing() -> None:
    node = Node("restricted", "container")
    result = node.admit(pod("a", container("c", cpu="2", memory="1Gi", gpu=2)))
    assert (result.admit, result.reason, result.message) == (False, TAE, TAE_MSG)
    assert node.cpus.get_exclusively_assigned_cpus().is_empty()
    assert node.memory.get_memory("a", "c") == []


def test_cpu_and_memory_must_agree_exactly_for_a_preferred_merge() -> None:
    # 12 CPUs need both nodes ({0,1} preferred by capacity); 1Gi of memory prefers one node. {0,1}P AND {0}P
    # is {0} but not preferred (the masks differ), so no merged hint is preferred.
    restricted = Node("restricted", "container")
    result = restricted.admit(pod("a", container("c", cpu="12", memory="1Gi")))
    assert (result.admit, result.reason) == (False, TAE)
    assert restricted.cpus.get_exclusively_assigned_cpus().is_empty()
    # best-effort takes the non-preferred hint closest to the widest narrowest-offer (2 nodes): {0,1}.
    best_effort = Node("best-effort", "container")
    assert best_effort.admit(pod("a", container("c", cpu="12", memory="1Gi"))).admit
    assert best_effort.affinity("a", "c") == hint(0, 1, preferred=False)
    cpus = best_effort.cpu_ids("a", "c")
    assert len(cpus) == 12 and set(range(8, 16)) <= set(cpus) and 0 not in cpus
    # The memory block spans both nodes and groups them; the bytes come from node 0 first.
    assert best_effort.memory_blocks("a", "c") == {((0, 1), "memory", Gi)}
    assert best_effort.memory.numa_groups() == {0: [0, 1], 1: [0, 1]}
    assert best_effort.memory.assigned_per_numa()[0]["memory"] == Gi


def test_restricted_memory_that_fits_nowhere_fails_in_allocate() -> None:
    # 20Gi fits no mask: the memory provider answers an empty map ("no preference"), the CPU's {0} wins,
    # the CPUs are allocated, then memory cannot extend {0}; the emulator releases the CPUs at once.
    node = Node("restricted", "container")
    result = node.admit(pod("a", container("c", cpu="2", memory="20Gi")))
    assert not result.admit
    assert result.reason == UAE
    assert result.message == (
        "Allocate failed due to [memorymanager] failed to find NUMA nodes to extend the current topology "
        "hint, which is unexpected"
    )
    assert node.cpus.get_exclusively_assigned_cpus().is_empty()


def test_single_numa_node_nil_hint_uses_the_memory_default_hint() -> None:
    # Shared-pool CPUs (500m) give no CPU hints and 20Gi gives no memory hints: the merged hint is
    # {nil, preferred} and memory's default hint finds nothing.
    node = Node("single-numa-node", "container")
    result = node.admit(pod("a", container("c", cpu="500m", memory="20Gi")))
    assert (result.admit, result.reason) == (False, UAE)
    assert result.message == (
        "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with "
        "enough memory is available, which is unexpected"
    )
    # With memory that fits, memory's own hints decide: the narrowest preferred, node 0.
    assert node.admit(pod("b", container("c", cpu="500m", memory="3Gi"))).admit
    assert node.affinity("b", "c") == hint(0)
    assert node.memory_blocks("b", "c") == {((0,), "memory", 3 * Gi)}


def test_single_numa_node_rejects_memory_that_needs_two_nodes() -> None:
    node = Node("single-numa-node", "container")
    result = node.admit(pod("a", container("c", cpu="12", memory="6Gi")))
    assert (result.admit, result.reason, result.message) == (False, TAE, TAE_MSG)


def test_pod_scope_one_merge_for_every_container_with_init_reuse() -> None:
    # Pod requests: cpu max(2, 1+1) = 2, memory 2Gi, 2Mi pages 512Mi, nics max(1, 1+1) = 2.
    # Two nics fit only node 0 (nic0, nic1): devices [{0}P, {0,1}N]; the merge is {0} preferred.
    node = Node("restricted", "pod")
    init = container("init", cpu="2", memory="2Gi", nic=1)
    apps = (
        container("c1", cpu="1", memory="1Gi", hp2="256Mi", nic=1),
        container("c2", cpu="1", memory="1Gi", hp2="256Mi", nic=1),
    )
    p = pod("p", *apps, init=(init,))
    assert node.admit(p).admit
    for name in ("init", "c1", "c2"):
        assert node.affinity("p", name) == hint(0)
    assert node.cpu_ids("p", "init") == [2, 3]  # CPU 0 is reserved, so core 1 is the first free core
    # App containers pick from free + reusable CPUs of node 0 by topology: one CPU comes from the core with
    # the fewest free CPUs (core 0: only CPU 1 is free), the next from the lowest fully free core (core 1).
    assert node.cpu_ids("p", "c1") == [1]
    assert node.cpu_ids("p", "c2") == [2]
    # Memory: the app containers reuse the init container's 2Gi; the 2Mi pages are new.
    assert node.memory.assigned_per_numa()[0] == {
        "memory": 2 * Gi,
        "hugepages-2Mi": 512 * Mi,
        "hugepages-1Gi": 0,
    }
    assert node.memory_blocks("p", "c1") == {((0,), "memory", Gi), ((0,), "hugepages-2Mi", 256 * Mi)}
    assert node.memory_blocks("p", "init") == {((0,), "memory", 0)}
    # Devices: c1 gets the init container's nic back, c2 the other node-0 nic.
    assert node.device_ids("p", "init") == {NIC: {"nic0"}}
    assert node.device_ids("p", "c1") == {NIC: {"nic0"}}
    assert node.device_ids("p", "c2") == {NIC: {"nic1"}}


def test_best_effort_admits_what_devices_cannot_serve_then_allocation_fails() -> None:
    node = Node("best-effort", "container")
    assert node.admit(pod("a", container("c", cpu="1", memory="1Gi", nic=2))).admit
    assert node.device_ids("a", "c") == {NIC: {"nic0", "nic1"}}
    # Only nic2 is left: the device hints are [] yet best-effort admits; the device manager then refuses.
    result = node.admit(pod("b", container("c", cpu="1", memory="1Gi", nic=2)))
    assert (result.admit, result.reason) == (False, UAE)
    assert result.message == (
        "Allocate failed due to requested number of devices unavailable for example.com/nic. "
        "Requested: 2, Available: 1, which is unexpected"
    )
    assert node.memory.get_memory("b", "c") == []
    # Under restricted the same pod is a TopologyAffinityError before any allocation.
    strict = Node("restricted", "container")
    assert strict.admit(pod("a", container("c", cpu="1", memory="1Gi", nic=2))).admit
    result = strict.admit(pod("b", container("c", cpu="1", memory="1Gi", nic=2)))
    assert (result.admit, result.reason) == (False, TAE)


def test_existing_numa_group_pulls_later_pods_into_it() -> None:
    """Before kubernetes#138244 (1.33-1.35): the gpu's hints include {0,1}, so a later pod joins the group."""
    # 5Gi needs both nodes: memory [{0,1}P]; the 4-CPU request prefers one node, so the merge is {0,1}
    # non-preferred (restricted would refuse it).
    node = Node("best-effort", "container", kubelet_version="1.35")
    assert not Node("restricted", "container").admit(pod("big", container("c", cpu="4", memory="5Gi"))).admit
    assert node.admit(pod("big", container("c", cpu="4", memory="5Gi"))).admit
    assert node.affinity("big", "c") == hint(0, 1, preferred=False)
    tables = node.memory.memory_tables()
    assert (tables[0]["memory"].reserved, tables[1]["memory"].reserved) == (4608 * Mi, 512 * Mi)
    # A small pod next to gpu0: memory may only use the whole group (single nodes are taken out), so
    # memory offers [{0,1}N] and the merge widens from the gpu's {1} to {0,1}.
    assert node.admit(pod("small", container("c", cpu="500m", memory="1Gi", gpu=1))).admit
    assert node.affinity("small", "c") == hint(0, 1, preferred=False)
    assert node.memory_blocks("small", "c") == {((0, 1), "memory", Gi)}
    assert node.device_ids("small", "c") == {GPU: {"gpu0"}}
    node.remove("big")
    node.remove("small")
    assert node.memory.numa_groups() == {0: [0], 1: [1]}
    assert all(v == 0 for t in node.memory.assigned_per_numa().values() for v in t.values())


@pytest.mark.parametrize("version", ["1.36", "1.37", "master"])
def test_device_hints_over_device_nodes_keep_a_later_pod_on_the_gpus_node(version: str) -> None:
    """kubernetes#138244 (1.36+): the gpu offers only {1}P, so the merge with memory's [{0,1}N] is {1}
    non-preferred; a single-node hint never violates the NUMA allocation rule, so the Memory Manager
    allocates on node 1 alone and node 1 leaves the {0,1} group (its Cells become [1])."""
    node = Node("best-effort", "container", kubelet_version=version)
    assert node.admit(pod("big", container("c", cpu="4", memory="5Gi"))).admit
    assert node.affinity("big", "c") == hint(0, 1, preferred=False)
    assert node.admit(pod("small", container("c", cpu="500m", memory="1Gi", gpu=1))).admit
    assert node.affinity("small", "c") == hint(1, preferred=False)
    assert node.memory_blocks("small", "c") == {((1,), "memory", Gi)}
    assert node.device_ids("small", "c") == {GPU: {"gpu0"}}
    assert node.memory.numa_groups() == {0: [0, 1], 1: [1]}
    node.remove("big")
    node.remove("small")
    assert all(v == 0 for t in node.memory.assigned_per_numa().values() for v in t.values())


def test_policy_none_allocates_without_alignment() -> None:
    # No merge: every provider reads a nil hint. Memory takes its default (narrowest preferred: node 0),
    # the gpu is on node 1 regardless.
    node = Node("none", "container")
    assert node.admit(pod("a", container("c", cpu="2", memory="1Gi", hp2="2Mi", gpu=1))).admit
    assert node.memory_blocks("a", "c") == {((0,), "memory", Gi), ((0,), "hugepages-2Mi", 2 * Mi)}
    assert node.device_ids("a", "c") == {GPU: {"gpu0"}}
    assert len(node.cpu_ids("a", "c")) == 2
