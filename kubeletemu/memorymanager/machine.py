"""The slice of cadvisor's ``MachineInfo`` the memory manager reads: memory and hugepages per NUMA node."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kubeletemu.memorymanager.errors import MemoryManagerError


@dataclass(frozen=True)
class NUMANode:
    """``cadvisorapi.Node``: ``memory`` in bytes, ``hugepages`` page size in KiB -> number of pages."""

    id: int
    memory: int
    hugepages: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if not isinstance(self.id, int) or self.id < 0:
            raise MemoryManagerError(f"invalid NUMA node id {self.id!r}")
        if not isinstance(self.memory, int) or self.memory < 0:
            raise MemoryManagerError(f"NUMA node {self.id}: invalid memory size {self.memory!r}")
        for size, pages in self.hugepages.items():
            if not isinstance(size, int) or size <= 0 or not isinstance(pages, int) or pages < 0:
                raise MemoryManagerError(
                    f"NUMA node {self.id}: invalid hugepages entry {size!r} KiB x {pages!r} pages"
                )


@dataclass(frozen=True)
class MachineInfo:
    """NUMA nodes in cadvisor order; ``memory_capacity`` (MemTotal) defaults to the sum of the nodes."""

    nodes: tuple[NUMANode, ...]
    memory_capacity: int | None = None

    def __init__(self, nodes: Iterable[NUMANode], memory_capacity: int | None = None) -> None:
        object.__setattr__(self, "nodes", tuple(nodes))
        object.__setattr__(self, "memory_capacity", memory_capacity)
        ids = [n.id for n in self.nodes]
        if len(set(ids)) != len(ids):
            raise MemoryManagerError(f"duplicate NUMA node ids in machine info: {ids}")

    @property
    def node_ids(self) -> list[int]:
        return [n.id for n in self.nodes]

    @property
    def capacity_memory(self) -> int:
        return self.memory_capacity if self.memory_capacity is not None else sum(n.memory for n in self.nodes)

    def hugepage_sizes(self) -> list[int]:
        """Every page size (KiB) any node reports: these become ``hugepages-*`` capacity entries."""
        return sorted({size for n in self.nodes for size in n.hugepages})
