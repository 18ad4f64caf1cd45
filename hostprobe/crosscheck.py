"""Consistency checks: per-node memory against ``/proc/meminfo``, and the live probe against psutil.

psutil can only confirm what it can see (``shared/spec/hostprobe.md`` §3.1): the online CPU count
(``sysconf(_SC_NPROCESSORS_ONLN)``) and MemTotal of ``/proc/meminfo``; it knows nothing about NUMA.

Why the per-node sum should equal ``/proc/meminfo`` MemTotal: both are sums of the same per-zone
``managed_pages`` counters (``si_meminfo`` vs ``si_meminfo_node``), so they only drift while memory is
hot-(un)plugged or ballooned between the two reads; one memory block (``memory/block_size_bytes``, 128 MiB
on x86 by default) covers that. A kernel that initialises struct pages lazily (``deferred_init=lazy`` on
Firecracker VMs) counts the not-yet-initialised pages in MemTotal but not in the zones, so the node sum
stays far below it; that case is recognised by the node sum matching ``/proc/zoneinfo``'s managed pages.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hostprobe.model import HostTopology, NumaNode

DEFAULT_MEMORY_BLOCK_BYTES = 128 * 1024 * 1024
_ZONE_HEADER = re.compile(r"^Node\s+(\d+),\s+zone\s+(\S+)")
_MANAGED = re.compile(r"^\s+managed\s+(\d+)")


def memory_block_bytes(sysfs_root: str) -> int:
    try:
        with open(os.path.join(sysfs_root, "devices", "system", "memory", "block_size_bytes")) as handle:
            return int(handle.read().strip(), 16)
    except (OSError, ValueError):
        return DEFAULT_MEMORY_BLOCK_BYTES


def node_memory_sum(nodes: Sequence[NumaNode]) -> int | None:
    if not nodes or any(node.memory_bytes is None for node in nodes):
        return None
    return sum(node.memory_bytes or 0 for node in nodes)


def memory_mismatch_note(
    nodes: Sequence[NumaNode], mem_total_bytes: int | None, tolerance: int = DEFAULT_MEMORY_BLOCK_BYTES
) -> str | None:
    """A diagnostic when the nodes' MemTotal do not add up to ``/proc/meminfo`` MemTotal."""
    node_sum = node_memory_sum(nodes)
    if node_sum is None or mem_total_bytes is None or abs(node_sum - mem_total_bytes) <= tolerance:
        return None
    return (
        f"sum of node MemTotal ({node_sum} bytes) differs from /proc/meminfo MemTotal "
        f"({mem_total_bytes} bytes) by more than a memory block: the kubelet's memory manager sees the "
        "node figures"
    )


def zoneinfo_managed_bytes(procfs_root: str) -> int | None:
    """Sum of ``managed`` pages over all zones of ``/proc/zoneinfo``, in bytes."""
    try:
        with open(os.path.join(procfs_root, "zoneinfo")) as handle:
            text = handle.read()
    except OSError:
        return None
    pages = 0
    seen = False
    for line in text.splitlines():
        match = _MANAGED.match(line)
        if match:
            pages += int(match.group(1))
            seen = True
    return pages * os.sysconf("SC_PAGE_SIZE") if seen else None


@dataclass(frozen=True)
class LiveCrossCheck:
    """The live probe next to psutil's figures."""

    psutil_cpu_count: int | None
    online_cpus: int
    psutil_memory_bytes: int
    proc_mem_total_bytes: int | None
    node_mem_total_bytes: int | None  # None where the host has no node directories
    zone_managed_bytes: int | None
    tolerance_bytes: int

    @property
    def cpu_count_agrees(self) -> bool:
        return self.psutil_cpu_count == self.online_cpus

    @property
    def proc_memory_agrees(self) -> bool:
        return self.proc_mem_total_bytes == self.psutil_memory_bytes

    @property
    def node_memory_agrees(self) -> bool | None:
        if self.node_mem_total_bytes is None:
            return None
        return abs(self.node_mem_total_bytes - self.psutil_memory_bytes) <= self.tolerance_bytes

    @property
    def deferred_page_init(self) -> bool:
        """Node sum below MemTotal but equal to the zones' managed pages: struct pages still uninitialised."""
        if self.node_mem_total_bytes is None or self.zone_managed_bytes is None or self.node_memory_agrees:
            return False
        return (
            abs(self.node_mem_total_bytes - self.zone_managed_bytes) <= self.tolerance_bytes
            and self.node_mem_total_bytes < self.psutil_memory_bytes
        )

    @property
    def disagreements(self) -> tuple[str, ...]:
        lines = []
        if not self.cpu_count_agrees:
            lines.append(f"psutil counts {self.psutil_cpu_count} online CPUs, sysfs {self.online_cpus}")
        if not self.proc_memory_agrees:
            lines.append(
                f"psutil total memory {self.psutil_memory_bytes} != /proc/meminfo MemTotal "
                f"{self.proc_mem_total_bytes}"
            )
        if self.deferred_page_init:
            lines.append(
                "node MemTotal sum matches /proc/zoneinfo managed pages but not /proc/meminfo MemTotal: the "
                "kernel has not initialised all struct pages yet (deferred page init)"
            )
        return tuple(lines)


def psutil_cross_check(topology: HostTopology) -> LiveCrossCheck:
    """Compare a live probe with psutil (which always reads the live ``/proc``)."""
    import psutil

    return LiveCrossCheck(
        psutil_cpu_count=psutil.cpu_count(),
        online_cpus=len(topology.online_cpus),
        psutil_memory_bytes=psutil.virtual_memory().total,
        proc_mem_total_bytes=topology.memory.mem_total_bytes,
        node_mem_total_bytes=node_memory_sum(topology.numa_nodes),
        zone_managed_bytes=zoneinfo_managed_bytes(topology.procfs_root),
        tolerance_bytes=memory_block_bytes(topology.sysfs_root),
    )
