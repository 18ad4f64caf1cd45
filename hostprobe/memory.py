"""Memory and huge pages: ``nodeN/meminfo``, ``nodeN/hugepages``, ``proc/meminfo`` and
``sys/kernel/mm/hugepages`` (Documentation/admin-guide/mm/hugetlbpage.rst)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from hostprobe import parse
from hostprobe.errors import ProbeError
from hostprobe.model import HugePagePool, SystemMemory
from hostprobe.paths import HostReader

KIB = 1024


@dataclass(frozen=True)
class NodeMemory:
    total_kib: int | None
    free_kib: int | None
    hugepages: dict[int, HugePagePool]
    meminfo_present: bool


def read_node_memory(reader: HostReader, node_dir: str, entries: set[str]) -> NodeMemory:
    """MemTotal/MemFree from ``nodeN/meminfo`` and the per-node huge page pools.

    The ``Node N HugePages_*`` lines of meminfo count the default size only, so pools come from
    ``nodeN/hugepages/hugepages-<size>kB``; those directories exist only for nodes with memory (N_MEMORY).
    """
    total = free = None
    present = "meminfo" in entries
    if present:
        path = os.path.join(node_dir, "meminfo")
        values = reader.parsed(path, parse.parse_node_meminfo, "node meminfo") or {}
        if "MemTotal" not in values:
            raise ProbeError(path, "no 'Node N MemTotal: <kB>' line")
        total, free = values["MemTotal"], values.get("MemFree")
    pools = read_hugepage_pools(reader, os.path.join(node_dir, "hugepages")) if "hugepages" in entries else {}
    return NodeMemory(total_kib=total, free_kib=free, hugepages=pools, meminfo_present=present)


def read_hugepage_pools(reader: HostReader, directory: str) -> dict[int, HugePagePool]:
    """``hugepages-<size>kB/{nr,free}_hugepages`` below ``directory``, keyed by size in KiB (ascending)."""
    pools: dict[int, HugePagePool] = {}
    for name in reader.listdir(directory):
        size = parse.hugepage_size_from_dirname(name)
        if size is None:
            continue
        pool_dir = os.path.join(directory, name)
        total = reader.integer(os.path.join(pool_dir, "nr_hugepages"))
        free = reader.integer(os.path.join(pool_dir, "free_hugepages"))
        if total is None:
            reader.note(f"{pool_dir}: no nr_hugepages; pool skipped")
            continue
        pools[size] = HugePagePool(total=total, free=free if free is not None else 0)
    return dict(sorted(pools.items()))


def read_system_memory(reader: HostReader) -> SystemMemory:
    """``proc/meminfo`` (its HugePages_* lines cover only ``Hugepagesize``) and the global pools."""
    values: dict[str, int] = {}
    if reader.proc_present:
        values = reader.parsed(reader.proc("meminfo"), parse.parse_meminfo, "meminfo") or {}

    def to_bytes(key: str) -> int | None:
        return values[key] * KIB if key in values else None

    return SystemMemory(
        mem_total_bytes=to_bytes("MemTotal"),
        mem_free_bytes=to_bytes("MemFree"),
        mem_available_bytes=to_bytes("MemAvailable"),
        default_hugepage_size_kib=values.get("Hugepagesize"),
        hugepages=read_hugepage_pools(reader, reader.sys("kernel", "mm", "hugepages")),
    )
