"""The NUMA nodes' memory as the running kubelet saw it when it started.

The kubelet reads cadvisor's ``MachineInfo`` once, at start (``cm.NewContainerManager`` hands it to the
memory manager, whose ``getDefaultMachineState`` sets each node's totals, pkg/kubelet/cm/memorymanager/
policy_static.go at v1.37.2) and keeps those totals while it runs. A node's memory can change afterwards:
memory hot-plugged by virtio-mem (the e2e VM's NUMA node 0 grew by 640 MiB within minutes of a kubelet's
start), hugepages allocated at run time. A restarted kubelet would then refuse its own checkpoint ("the
expected machine state is different from the real one"); the running one goes on with the start-time
totals, which its memory manager checkpoint records. The mirror takes them from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kubeletemu.machine import Machine
from kubeletemu.memorymanager import MachineInfo, NUMANode
from kubeletemu.memorymanager.quantity_format import hugepage_resource_name
from kubeletemu.memorymanager.state.state import NUMANodeState

RESOURCE_MEMORY = "memory"


def _node_at_start(node: NUMANode, state: NUMANodeState, notes: list[str]) -> NUMANode:
    tables = state.memory_map
    memory = node.memory
    if (table := tables.get(RESOURCE_MEMORY)) is not None and table.total != memory:
        notes.append(
            f"NUMA node {node.id}: memory {table.total} bytes in the kubelet's memory manager checkpoint, "
            f"{memory} probed now (the kubelet reads it once, at start; hot-plugged memory?): the mirror "
            "uses the checkpoint's"
        )
        memory = table.total
    hugepages = dict(node.hugepages)
    for page_kib, pages in node.hugepages.items():
        table = tables.get(hugepage_resource_name(page_kib))
        if table is not None and table.total != pages * page_kib * 1024:
            at_start = table.total // (page_kib * 1024)
            notes.append(
                f"NUMA node {node.id}: {at_start} hugepages of {page_kib} KiB in the kubelet's memory "
                f"manager checkpoint, {pages} probed now: the mirror uses the checkpoint's"
            )
            hugepages[page_kib] = at_start
    return NUMANode(node.id, memory, hugepages)


def machine_at_kubelet_start(
    machine: Machine, machine_state: Mapping[int, NUMANodeState]
) -> tuple[Machine, list[str]]:
    """``machine`` with each NUMA node's memory and hugepage totals taken from the memory manager
    checkpoint's machine state where they differ, and a note per change. Nodes the checkpoint lacks (the
    ``None`` policy records none) keep their probed totals; a node set that differs is left for the
    managers' start to refuse, as the kubelet refuses it."""
    notes: list[str] = []
    nodes = [
        _node_at_start(node, machine_state[node.id], notes) if node.id in machine_state else node
        for node in machine.memory.nodes
    ]
    if not notes:
        return machine, []
    memory = MachineInfo(nodes, memory_capacity=machine.memory.memory_capacity)
    return replace(machine, memory=memory), notes
