"""The ``Static`` policy (``memorymanager/policy_static.go``): exclusive memory and hugepages per NUMA
node or NUMA group for Guaranteed pods.

With ``PodLevelResourceManagers`` (from 1.36) a Guaranteed pod with ``spec.resources`` is served at
pod level: hints for the pod's own requests, one pod-level allocation (:meth:`StaticPolicy.allocate_pod`,
see :mod:`kubeletemu.memorymanager.pod_level`) recorded in the state's pod entries, released with the
pod's last container, and charged by the pod entry (not its containers) when a restored state is
validated. Read: the pod-level revision of ``policy_static.go`` in the code index (the one with
``validatePodScopeResources`` and ``podSharedPoolBlocks``; the index names no commit for it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

from kubeletemu.bitmask import BitMask, bitmask_table, subset_sums
from kubeletemu.cpumanager.pod_requests import RequestCalculator
from kubeletemu.memorymanager.errors import MemoryAllocationError, MemoryManagerError
from kubeletemu.memorymanager.machine import MachineInfo
from kubeletemu.memorymanager.pod_level import (
    EmptyPodSharedPoolError,
    container_requested_resources,
    partition_pod,
    pod_requested_resources,
    validate_pod_scope_resources,
)
from kubeletemu.memorymanager.quantity_format import hugepage_resource_name
from kubeletemu.memorymanager.requests import RESOURCE_MEMORY
from kubeletemu.memorymanager.state.state import (
    Block,
    MemoryTable,
    NUMANodeMap,
    NUMANodeState,
    State,
)
from kubeletemu.pod import Container, Pod, QOSClass
from kubeletemu.topologymanager.hint import ProviderHints, TopologyHint
from kubeletemu.topologymanager.provider import Store
from kubeletemu.versions.version import MASTER

POLICY_STATIC = "Static"

# pod UID -> NUMA mask -> resource -> bytes that regular init containers hold and app containers reuse.
ReusableMemory = dict[str, dict[BitMask, dict[str, int]]]

_EMPTY_TABLE = MemoryTable()


# calculateHints' answers without reusable memory, by request and per-NUMA state; bounded.
_HINTS: dict[tuple[object, ...], dict[str, tuple[TopologyHint, ...]]] = {}
_HINTS_KEPT = 65536


# Go's uint64: the kubelet's byte counts and their sums wrap modulo 2^64.
_U64 = 2**64


def _table(machine_state: NUMANodeMap, node_id: int, resource: str) -> MemoryTable:
    """The kubelet dereferences a missing table (nil pointer); we read it as all zeros instead."""
    node = machine_state.get(node_id)
    if node is None:
        return _EMPTY_TABLE
    return node.memory_map.get(resource, _EMPTY_TABLE)


def _groups_equal(a: Sequence[int], b: Sequence[int]) -> bool:
    return sorted(a) == sorted(b)


def _is_hint_in_group(hint: Sequence[int], group: Sequence[int]) -> bool:
    """``isHintInGroup``: every node of ``hint`` is in ``group``."""
    return set(hint) <= set(group)


def find_best_hint(hints: Sequence[TopologyHint]) -> TopologyHint:
    """``findBestHint``: preferred beats non-preferred, then the narrower mask; the first one seeds."""
    best = TopologyHint()
    for hint in hints:
        if best.affinity is None:
            best = hint
            continue
        best_mask = best.affinity
        if hint.preferred and not best.preferred:
            best = hint
            continue
        if (
            hint.preferred == best.preferred
            and hint.affinity is not None
            and hint.affinity.is_narrower_than(best_mask)
        ):
            best = hint
    return best


def is_affinity_violating_numa_allocations(machine_state: NUMANodeMap, mask: BitMask) -> bool:
    """``isAffinityViolatingNUMAAllocations``: a multi-node mask may only reuse nodes of the same group.

    A single-node mask never violates here (unlike the hint filter, which drops grouped nodes).
    """
    bits = mask.bits()
    if len(bits) == 1:
        return False
    for node_id in bits:
        node = machine_state.get(node_id)
        if node is None or node.number_of_assignments == 0:
            continue
        if len(node.cells) == 1 or not _groups_equal(node.cells, bits):
            return True
    return False


class StaticPolicy:
    """``NewPolicyStatic``: refuses to start without reserved ``memory`` on some node."""

    def __init__(
        self,
        machine: MachineInfo,
        system_reserved: Mapping[int, Mapping[str, int]],
        affinity: Store,
        *,
        feature_gates: Mapping[str, bool] | None = None,
        kubelet_version: str = MASTER,
    ) -> None:
        """``feature_gates`` (master's defaults where not given) and ``kubelet_version`` decide how a pod
        with pod-level resources is treated (:meth:`serves`)."""
        total = sum(node.get(RESOURCE_MEMORY, 0) for node in system_reserved.values())
        if total <= 0:
            raise MemoryManagerError("[memorymanager] you should specify the system reserved memory")
        # Memory and the CPU Manager read the same pod-level gates; their defaults are master's.
        self.requests = RequestCalculator(feature_gates, kubelet_version)
        self.machine = machine
        self.system_reserved = {n: dict(r) for n, r in system_reserved.items()}
        self.affinity = affinity
        self._init_runtime()

    def _init_runtime(self) -> None:
        """What the policy accumulates while it runs (fresh at ``NewPolicyStatic``); everything else it
        holds is fixed once built, and :meth:`copy_for` shares it."""
        self.init_containers_reusable_memory: ReusableMemory = {}
        # memory_manager_pinning_{requests,errors}_total since the policy was built.
        self.pinning_requests = 0
        self.pinning_errors = 0

    def copy_for(self, affinity: Store) -> StaticPolicy:
        """The policy ``NewPolicyStatic`` would build with these settings, bound to ``affinity``: the same
        machine, reservations and gates, nothing accumulated (no reusable init-container memory, counters
        at 0). For what-if copies of a running manager, without recomputing what is fixed."""
        policy = copy.copy(self)
        policy.affinity = affinity
        policy._init_runtime()
        return policy

    def name(self) -> str:
        return POLICY_STATIC

    def serves(self, pod: Pod) -> bool:
        """Whether the policy gives hints and exclusive memory to ``pod``: Guaranteed (``GetPodQOS``, which
        reads ``spec.resources`` when PodLevelResources is on) and, from 1.34 (kubernetes#133279), not
        using pod-level resources unless both PodLevelResources and PodLevelResourceManagers are on (then
        the pod is served at pod level by the pod scope, container by container by the container scope).
        A 1.33 kubelet has no pod-level check."""
        if self.requests.qos(pod) is not QOSClass.GUARANTEED:
            return False
        return not self.requests.pod_level_unsupported(pod)

    # ---- start / machine state ------------------------------------------------------------------

    def _system_reserved(self, node_id: int, resource: str) -> int:
        return self.system_reserved.get(node_id, {}).get(resource, 0)

    def get_default_machine_state(self) -> NUMANodeMap:
        """``getDefaultMachineState``: hugepages first, then memory minus reserved and hugepages."""
        state: NUMANodeMap = {}
        for node in self.machine.nodes:
            memory_map: dict[str, MemoryTable] = {}
            hugepages_total = 0
            for page_size, pages in node.hugepages.items():
                name = hugepage_resource_name(page_size)
                reserved = self._system_reserved(node.id, name)
                total = pages * page_size * 1024
                allocatable = (total - reserved) % 2**64
                memory_map[name] = MemoryTable(total, reserved, allocatable, 0, allocatable)
                hugepages_total += total
            reserved = self._system_reserved(node.id, RESOURCE_MEMORY)
            allocatable = (node.memory - reserved - hugepages_total) % 2**64
            memory_map[RESOURCE_MEMORY] = MemoryTable(node.memory, reserved, allocatable, 0, allocatable)
            state[node.id] = NUMANodeState(0, memory_map, [node.id])
        return state

    def start(self, state: State) -> None:
        """``Start`` / ``validateState``: install the default state, or check the restored one.

        The kubelet runs it when it starts, never at admission. It charges every assignment to the default
        machine state and compares; a node's expected group is the affinity of the last block charged to it.
        The kubelet walks the pods and containers in Go's randomized map order, so a state whose node holds
        blocks of different groups (reachable: a single-NUMA hint on a node of a multi-NUMA group passes
        ``isAffinityViolatingNUMAAllocations``, kubernetes#113035) may pass one start and fail the next.
        We walk them in the checkpoint's order, pod UIDs then container names sorted (``encoding/json``
        writes map keys sorted and the kubelet reads them back in that order; for up to 8 entries a map
        the orders Go takes are rotations of it, this one the most frequent), so the answer is one of the
        kubelet's and the same at every start."""
        machine_state = state.get_machine_state()
        assignments = state.get_memory_assignments()
        if not machine_state:
            if assignments:
                raise MemoryManagerError(
                    "[memorymanager] machine state can not be empty when it has memory assignments"
                )
            state.set_machine_state(self.get_default_machine_state())
            return
        expected = self.get_default_machine_state()
        for pod_uid in sorted(assignments):
            containers = assignments[pod_uid]
            # A pod-level pod's containers hold slices of its pod entry: the entry alone is charged.
            if self.requests.pod_level_resource_managers:
                pod_blocks = state.get_pod_memory_blocks(pod_uid)
                if pod_blocks:
                    _charge_expected(expected, pod_blocks, pod_uid, "")
                    continue
            for name in sorted(containers):
                _charge_expected(expected, containers[name], pod_uid, name)
        if not are_machine_states_equal(machine_state, expected):
            raise MemoryManagerError(
                "[memorymanager] the expected machine state is different from the real one"
            )

    # ---- hints ----------------------------------------------------------------------------------

    def get_topology_hints(self, state: State, pod: Pod, container: Container) -> ProviderHints:
        if not self.serves(pod):
            return None
        try:
            requested = container_requested_resources(self.requests, pod, container)
        except MemoryAllocationError:
            return None
        blocks = state.get_memory_blocks(pod.uid, container.name)
        if blocks is not None:
            return regenerate_hints(blocks, requested)
        return self.calculate_hints(state.read_machine_state(), pod, requested)

    def get_pod_topology_hints(self, state: State, pod: Pod) -> ProviderHints:
        """``GetPodTopologyHints``; a pod-level managed pod whose budget leaves a needed pool empty gets
        empty hints for each resource (the Topology Manager then rejects it)."""
        if not self.serves(pod):
            return None
        try:
            requested = pod_requested_resources(self.requests, pod)
        except MemoryAllocationError:
            return None
        if self.requests.pod_level_managed(pod) and validate_pod_scope_resources(self.requests, pod):
            return {resource: [] for resource in requested}
        if not requested:
            return None
        for ctr in pod.all_containers():
            blocks = state.get_memory_blocks(pod.uid, ctr.name)
            if blocks is not None:
                return regenerate_hints(blocks, requested)
        return self.calculate_hints(state.read_machine_state(), pod, requested)

    def _pod_reusable_memory(self, pod_uid: str, mask: BitMask, resource: str) -> int:
        return self.init_containers_reusable_memory.get(pod_uid, {}).get(mask, {}).get(resource, 0)

    def calculate_hints(
        self, machine_state: NUMANodeMap, pod: Pod, requested: Mapping[str, int]
    ) -> dict[str, list[TopologyHint]]:
        """``calculateHints``: every mask with the capacity (allocatable) and the free memory, obeying the
        group rules; preferred = the minimal node count among masks with enough *allocatable*.

        Without reusable init-container memory for the pod, the answer is a function of the request and,
        per NUMA node, its group, its assignment count and the requested resources' free and allocatable
        amounts: it is kept under those (:data:`_HINTS`), since a fleet asks the same question of many
        nodes and many clones of one node."""
        if self.init_containers_reusable_memory.get(pod.uid):
            return self._calculate_hints(machine_state, pod, requested)
        key = (
            tuple(requested.items()),
            tuple(
                (
                    numa,
                    tuple(state.cells),
                    state.number_of_assignments,
                    tuple(
                        (_table(machine_state, numa, r).free, _table(machine_state, numa, r).allocatable)
                        for r in requested
                    ),
                )
                for numa, state in sorted(machine_state.items())
            ),
        )
        kept = _HINTS.get(key)
        if kept is None:
            if len(_HINTS) >= _HINTS_KEPT:
                _HINTS.clear()
            hints = self._calculate_hints(machine_state, pod, requested)
            kept = _HINTS[key] = {resource: tuple(h) for resource, h in hints.items()}
        return {resource: list(h) for resource, h in kept.items()}

    def _calculate_hints(
        self, machine_state: NUMANodeMap, pod: Pod, requested: Mapping[str, int]
    ) -> dict[str, list[TopologyHint]]:
        numa_nodes = sorted(machine_state)
        min_affinity_size = len(numa_nodes)
        fitting: list[tuple[BitMask, int]] = []  # the masks that pass every test, with their sizes
        # The masks and each resource's per-mask free/allocatable sums built once (bitmask_table,
        # subset_sums): the same tests as summing each mask's tables, in the same IterateBitMasks order.
        # The sums are uint64 in the kubelet: a node whose allocatable wrapped below 2^64 (reserved memory and
        # hugepages over its memory, see get_default_machine_state) wraps them back past 2^64.
        order = tuple(numa_nodes)
        frees = {
            r: [
                total % _U64
                for total in subset_sums(order, {n: _table(machine_state, n, r).free for n in numa_nodes})
            ]
            for r in requested
        }
        allocatables = {
            r: [
                total % _U64
                for total in subset_sums(
                    order, {n: _table(machine_state, n, r).allocatable for n in numa_nodes}
                )
            ]
            for r in requested
        }
        wanted = tuple(requested.items())
        for index, (mask, bits) in enumerate(bitmask_table(order)):
            if any(allocatables[r][index] < size for r, size in wanted):
                continue
            single = len(bits) == 1
            min_affinity_size = min(min_affinity_size, len(bits))
            if single and len(machine_state[bits[0]].cells) > 1:
                continue
            if not single and _violates_groups(machine_state, bits):
                continue
            if any(
                (frees[r][index] + self._pod_reusable_memory(pod.uid, mask, r)) % _U64 < size
                for r, size in wanted
            ):
                continue
            fitting.append((mask, len(bits)))
        if not fitting:
            return {}
        # Every resource gets the same masks, preferred when as narrow as the narrowest with the capacity.
        return {
            resource: [TopologyHint(mask, count == min_affinity_size) for mask, count in fitting]
            for resource in requested
        }

    # ---- allocate -------------------------------------------------------------------------------

    def allocate(self, state: State, pod: Pod, container: Container) -> None:
        """``Allocate``: Guaranteed pods only. Every container of one is a pinning request (counted before
        the already-allocated shortcut, as the kubelet counts it); an error is also a pinning error."""
        if not self.serves(pod):
            return
        self.pinning_requests += 1
        try:
            self._allocate(state, pod, container)
        except Exception:
            self.pinning_errors += 1
            raise

    def _allocate(self, state: State, pod: Pod, container: Container) -> None:
        blocks = state.get_memory_blocks(pod.uid, container.name)
        if blocks is not None:
            self._update_pod_reusable_memory(pod, container, blocks)
            return
        hint = self.affinity.get_affinity(pod.uid, container.name)
        requested = container_requested_resources(self.requests, pod, container)
        machine_state = state.get_machine_state()
        mask = self._aligned_mask(machine_state, pod, requested, hint)
        bits = tuple(mask.bits())
        container_blocks: list[Block] = []
        for resource, size in requested.items():
            container_blocks.append(Block(bits, resource, size))
            reusable = self._pod_reusable_memory(pod.uid, mask, resource)
            update_machine_state(machine_state, bits, resource, 0 if reusable >= size else size - reusable)
        self._update_pod_reusable_memory(pod, container, container_blocks)
        state.set_machine_state(machine_state)
        state.set_memory_blocks(pod.uid, container.name, container_blocks)
        self._update_init_containers_memory_blocks(state, pod, container, container_blocks)

    def _aligned_mask(
        self, machine_state: NUMANodeMap, pod: Pod, requested: Mapping[str, int], hint: TopologyHint
    ) -> BitMask:
        """The merged hint, or the default one when it has no affinity, extended until the free memory
        fits the request; refused when it would mix single- and cross-NUMA allocations."""
        best = hint
        if hint.affinity is None:
            default = self._get_default_hint(machine_state, pod, requested)
            if not default.preferred and best.preferred:
                raise MemoryAllocationError("[memorymanager] failed to find the default preferred hint")
            best = default
        assert best.affinity is not None
        if not is_affinity_satisfy_request(machine_state, best.affinity, requested):
            extended = self._extend_topology_manager_hint(machine_state, pod, requested, best.affinity)
            if not extended.preferred and best.preferred:
                raise MemoryAllocationError("[memorymanager] failed to find the extended preferred hint")
            best = extended
        assert best.affinity is not None
        if is_affinity_violating_numa_allocations(machine_state, best.affinity):
            raise MemoryAllocationError("[memorymanager] preferred hint violates NUMA node allocation")
        return best.affinity

    # ---- pod-level allocate (PodLevelResourceManagers) --------------------------------------------

    def allocate_pod(self, state: State, pod: Pod) -> None:
        """``AllocatePod``, called once per pod by the pod scope with PodLevelResourceManagers.

        Guaranteed pods only; a request that cannot be read is skipped (the kubelet logs it and admits).
        Counted as the kubelet counts: one pinning request for the pod, one per init container and per
        app container with requests it partitions; one pinning error if the call fails.
        """
        if self.requests.qos(pod) is not QOSClass.GUARANTEED:
            return
        try:
            total = pod_requested_resources(self.requests, pod)
        except MemoryAllocationError:
            return
        self.pinning_requests += 1
        try:
            self._allocate_pod(state, pod, total)
        except Exception:
            self.pinning_errors += 1
            raise

    def _allocate_pod(self, state: State, pod: Pod, total: Mapping[str, int]) -> None:
        problem = validate_pod_scope_resources(self.requests, pod)
        if problem is not None:
            raise EmptyPodSharedPoolError(problem)
        machine_state = state.get_machine_state()
        containers = list(pod.all_containers())
        if not containers:
            raise MemoryAllocationError(f"pod {pod.namespace}/{pod.name} has no containers")
        # The pod scope stored the pod's hint under every container; the first one's is read.
        hint = self.affinity.get_affinity(pod.uid, containers[0].name)
        mask = self._aligned_mask(machine_state, pod, total, hint)
        bits = tuple(mask.bits())
        partition = partition_pod(self.requests, pod, total, bits)
        self.pinning_requests += partition.pinning_requests
        state.set_pod_memory_blocks(pod.uid, partition.pod_blocks)
        for resource, size in total.items():
            update_machine_state(machine_state, bits, resource, size)
        for container in containers:
            state.set_memory_blocks(pod.uid, container.name, partition.container_blocks[container.name])
        state.set_machine_state(machine_state)

    def _get_default_hint(
        self, machine_state: NUMANodeMap, pod: Pod, requested: Mapping[str, int]
    ) -> TopologyHint:
        hints = self.calculate_hints(machine_state, pod, requested)
        best = find_best_hint(hints.get(RESOURCE_MEMORY, []))
        if not hints or best.affinity is None:
            raise MemoryAllocationError(
                "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory "
                "is available"
            )
        return best

    def _extend_topology_manager_hint(
        self, machine_state: NUMANodeMap, pod: Pod, requested: Mapping[str, int], mask: BitMask
    ) -> TopologyHint:
        hints = self.calculate_hints(machine_state, pod, requested)
        bits = mask.bits()
        filtered = [
            h
            for h in hints.get(RESOURCE_MEMORY, [])
            if h.affinity is not None and _is_hint_in_group(bits, h.affinity.bits())
        ]
        if not filtered:
            raise MemoryAllocationError(
                "[memorymanager] failed to find NUMA nodes to extend the current topology hint"
            )
        return find_best_hint(filtered)

    def _update_pod_reusable_memory(self, pod: Pod, container: Container, blocks: Sequence[Block]) -> None:
        """``updatePodReusableMemory``: only the current pod's entry survives; regular init containers
        register their blocks (max per mask and type), other containers consume the credit."""
        for uid in [u for u in self.init_containers_reusable_memory if u != pod.uid]:
            del self.init_containers_reusable_memory[uid]
        if _is_regular_init_container(pod, container):
            per_mask = self.init_containers_reusable_memory.setdefault(pod.uid, {})
            for block in blocks:
                entry = per_mask.setdefault(BitMask.of(*block.numa_affinity), {})
                if block.size > entry.get(block.type, 0):
                    entry[block.type] = block.size
            return
        for block in blocks:
            mask = BitMask.of(*block.numa_affinity)
            reusable = self._pod_reusable_memory(pod.uid, mask, block.type)
            if reusable != 0:
                entry = self.init_containers_reusable_memory[pod.uid][mask]
                entry[block.type] = 0 if block.size >= reusable else reusable - block.size

    def _update_init_containers_memory_blocks(
        self, state: State, pod: Pod, container: Container, container_blocks: Sequence[Block]
    ) -> None:
        """``updateInitContainersMemoryBlocks``: shrink earlier regular init containers' blocks by what
        this container reused, so the pod's blocks add up to what the node really gave it."""
        for container_block in container_blocks:
            remaining = container_block.size
            for init in pod.init_containers:
                if init.name == container.name or remaining == 0:
                    break
                if init.is_restartable_init:
                    continue
                init_blocks = state.get_memory_blocks(pod.uid, init.name)
                if not init_blocks:
                    continue
                updated: list[Block] = []
                for block in init_blocks:
                    if (
                        block.size != 0
                        and block.type == container_block.type
                        and BitMask.of(*block.numa_affinity) == BitMask.of(*container_block.numa_affinity)
                    ):
                        if block.size > remaining:
                            block = Block(block.numa_affinity, block.type, block.size - remaining)
                            remaining = 0
                        else:
                            remaining -= block.size
                            block = Block(block.numa_affinity, block.type, 0)
                    updated.append(block)
                state.set_memory_blocks(pod.uid, init.name, updated)

    # ---- remove ---------------------------------------------------------------------------------

    def remove_container(self, state: State, pod_uid: str, container_name: str) -> None:
        """``RemoveContainer``: give each block back node by node, ungrouping nodes left unused. With
        PodLevelResourceManagers, a pod with a pod entry gives its pod blocks back with its last
        container and nothing before."""
        if self.requests.pod_level_resource_managers:
            pod_blocks = state.get_pod_memory_blocks(pod_uid)
            if pod_blocks is not None:
                state.delete(pod_uid, container_name)
                if not state.get_memory_assignments().get(pod_uid):
                    self._release(state, pod_blocks)
                    state.delete_pod(pod_uid)
                return
        blocks = state.get_memory_blocks(pod_uid, container_name)
        if blocks is None:
            return
        state.delete(pod_uid, container_name)
        self._release(state, blocks)

    def _release(self, state: State, blocks: Sequence[Block]) -> None:
        """``releaseMemory``."""
        machine_state = state.get_machine_state()
        for block in blocks:
            released = block.size
            for node_id in block.numa_affinity:
                node = machine_state.get(node_id)
                if node is None:
                    continue
                node.number_of_assignments -= 1
                if node.number_of_assignments == 0:
                    node.cells = [node_id]
                if released == 0:
                    continue
                table = node.memory_map.get(block.type)
                if table is None or table.reserved == 0:
                    continue
                if table.reserved < released:
                    released -= table.reserved
                    table.free += table.reserved
                    table.reserved = 0
                    continue
                table.free += released
                table.reserved -= released
                released = 0
        state.set_machine_state(machine_state)

    def get_allocatable_memory(self, state: State) -> list[Block]:
        """``GetAllocatableMemory``: one block per node and resource with non-zero allocatable."""
        out = []
        machine_state = state.get_machine_state()
        for node_id in sorted(machine_state):
            for resource, table in sorted(machine_state[node_id].memory_map.items()):
                if table.allocatable != 0:
                    out.append(Block((node_id,), resource, table.allocatable))
        return out


def _charge_expected(expected: NUMANodeMap, blocks: Sequence[Block], pod_uid: str, name: str) -> None:
    """``updateExpectedMachineState``: charge a restored assignment to the default machine state."""
    for block in blocks:
        remaining = block.size
        for node_id in block.numa_affinity:
            node = expected.get(node_id)
            if node is None:
                raise MemoryManagerError(
                    f"[memorymanager] (pod: {pod_uid}, container: {name}) the memory assignment "
                    "uses the NUMA that does not exist"
                )
            node.number_of_assignments += 1
            node.cells = list(block.numa_affinity)
            table = node.memory_map.get(block.type)
            if table is None:
                raise MemoryManagerError(
                    f"[memorymanager] (pod: {pod_uid}, container: {name}) the memory assignment "
                    "uses memory resource that does not exist"
                )
            remaining = _charge(table, remaining)


def _charge(table: MemoryTable, remaining: int) -> int:
    """Move up to ``remaining`` bytes from free to reserved; return what is left to charge."""
    if remaining == 0 or table.free <= 0:
        return remaining
    if table.free >= remaining:
        table.reserved += remaining
        table.free -= remaining
        return 0
    remaining -= table.free
    table.reserved += table.free
    table.free = 0
    return remaining


def update_machine_state(machine_state: NUMANodeMap, bits: Sequence[int], resource: str, size: int) -> None:
    """``updateMachineState``: every node of the mask joins the group and counts the assignment; the
    bytes are taken from the nodes in ascending order."""
    for node_id in bits:
        node = machine_state[node_id]
        node.number_of_assignments += 1
        node.cells = list(bits)
        if size == 0:
            continue
        table = node.memory_map.get(resource)
        if table is None:
            continue
        size = _charge(table, size)


def _violates_groups(machine_state: NUMANodeMap, bits: Sequence[int]) -> bool:
    for node_id in bits:
        node = machine_state[node_id]
        if node.number_of_assignments > 0 and (len(node.cells) == 1 or not _groups_equal(node.cells, bits)):
            return True
    return False


def is_affinity_satisfy_request(
    machine_state: NUMANodeMap, mask: BitMask, requested: Mapping[str, int]
) -> bool:
    for resource, size in requested.items():
        if sum(_table(machine_state, n, resource).free for n in mask.bits()) % _U64 < size:
            return False
    return True


def regenerate_hints(blocks: Sequence[Block], requested: Mapping[str, int]) -> ProviderHints:
    """``regenerateHints``: the stored blocks must match the request exactly, else no preference (nil)."""
    hints: dict[str, list[TopologyHint]] = {resource: [] for resource in requested}
    if len(blocks) != len(requested):
        return None
    for block in blocks:
        if block.type not in requested or block.size != requested[block.type]:
            return None
        hints[block.type].append(TopologyHint(BitMask.of(*block.numa_affinity), True))
    return hints


def _is_regular_init_container(pod: Pod, container: Container) -> bool:
    for init in pod.init_containers:
        if init.name == container.name:
            return not init.is_restartable_init
    return False


def are_machine_states_equal(ms1: NUMANodeMap, ms2: NUMANodeMap) -> bool:
    """``areMachineStatesEqual``: same nodes, assignments, groups, totals; group-wide free/reserved."""
    if len(ms1) != len(ms2):
        return False
    for node_id, s1 in ms1.items():
        s2 = ms2.get(node_id)
        if s2 is None:
            return False
        if s1.number_of_assignments != s2.number_of_assignments:
            return False
        if not _groups_equal(s1.cells, s2.cells):
            return False
        if len(s1.memory_map) != len(s2.memory_map):
            return False
        for resource, t1 in s1.memory_map.items():
            t2 = s2.memory_map.get(resource)
            if t2 is None:
                return False
            if (t1.total, t1.system_reserved, t1.allocatable) != (
                t2.total,
                t2.system_reserved,
                t2.allocatable,
            ):
                return False
            free1 = sum(_table(ms1, n, resource).free for n in s1.cells)
            reserved1 = sum(_table(ms1, n, resource).reserved for n in s1.cells)
            free2 = sum(_table(ms2, n, resource).free for n in s1.cells)
            reserved2 = sum(_table(ms2, n, resource).reserved for n in s1.cells)
            if free1 != free2 or reserved1 != reserved2:
                return False
    return True
