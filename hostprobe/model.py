"""The probe's result: frozen dataclasses, plus ``HostTopology.to_json_dict()``.

Two views are kept apart on purpose (``shared/spec/hostprobe.md`` §6.5): what the hardware says
(``HostTopology.numa_nodes``/``cpus``/``pci_devices``) and what the kubelet would see through cadvisor
(``HostTopology.kubelet_view``). They differ on real hosts: memory-only nodes, node-level vs uncore L3,
cadvisor's positional distance rows and machine-wide core count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# The kubelet's Topology Manager refuses to start with more NUMA nodes than this unless the
# ``max-allowable-numa-nodes`` policy option raises it (pkg/kubelet/cm/topologymanager).
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8
# bitmask.BitMask is a uint64: ``bit number must be in range 0-63``.
MAX_BITMASK_NODE_ID = 63


class HugePagePool(NamedTuple):
    """One huge page pool: page counts, not bytes."""

    total: int
    free: int


@dataclass(frozen=True)
class CacheInfo:
    """One ``cpuN/cache/indexK`` directory."""

    index: int
    level: int | None
    type: str | None
    id: int | None  # unique per (level, type) machine-wide; absent on old kernels and ppc64
    size_kib: int | None
    shared_cpus: tuple[int, ...] | None  # shared_cpu_list, else shared_cpu_map (cadvisor counts the map)


@dataclass(frozen=True)
class Cpu:
    """A logical CPU (``sys/devices/system/cpu/cpuN``); topology fields are ``None`` where the kernel
    removed them (offline CPUs have no ``topology/`` or ``cache/``)."""

    id: int
    online: bool
    numa_node_id: int | None
    socket_id: int | None  # physical_package_id: platform numbering, not the NUMA id
    die_id: int | None
    cluster_id: int | None
    core_id: int | None  # unique only within a package
    thread_siblings: tuple[int, ...]
    l3_cache_id: int | None  # raw L3 ``id``
    uncore_cache_id: int | None  # the kubelet's UncoreCacheID; None for CPUs the kubelet does not see
    caches: tuple[CacheInfo, ...] = ()

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "online": self.online,
            "numa_node_id": self.numa_node_id,
            "socket_id": self.socket_id,
            "die_id": self.die_id,
            "cluster_id": self.cluster_id,
            "core_id": self.core_id,
            "thread_siblings": list(self.thread_siblings),
            "l3_cache_id": self.l3_cache_id,
            "uncore_cache_id": self.uncore_cache_id,
            "caches": [
                {
                    "index": c.index,
                    "level": c.level,
                    "type": c.type,
                    "id": c.id,
                    "size_kib": c.size_kib,
                    "shared_cpus": None if c.shared_cpus is None else list(c.shared_cpus),
                }
                for c in self.caches
            ],
        }


@dataclass(frozen=True)
class NumaNode:
    """An online NUMA node (``sys/devices/system/node/nodeN``)."""

    id: int
    cpus: tuple[int, ...]  # online CPUs only (the kernel ANDs the cpulist with cpu_online_mask)
    memory_bytes: int | None  # MemTotal of nodeN/meminfo; None where the tree has no meminfo
    memory_free_bytes: int | None
    hugepages: Mapping[int, HugePagePool]  # page size KiB -> pool; only nodes with memory have pools
    distances: Mapping[int, int]  # node id -> distance, the positional row mapped through ``online``
    distance_row: tuple[int, ...] | None  # the row as the kernel prints it (what cadvisor reports)
    online: bool
    possible: bool
    has_normal_memory: bool | None  # None where the tree has no ``has_normal_memory``
    socket_ids: tuple[int, ...]
    initiators: tuple[int, ...] = ()  # HMAT access0 initiator nodes (CXL/PMEM targets)
    cpus_source: str = "cpulist"  # cpulist | cpumap | links | none

    @property
    def has_cpus(self) -> bool:
        return bool(self.cpus)

    @property
    def memory_only(self) -> bool:
        """PMEM, CXL, HBM or GPU memory: memory but no online CPU."""
        return not self.cpus and (self.memory_bytes or 0) > 0

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cpus": list(self.cpus),
            "memory_bytes": self.memory_bytes,
            "memory_free_bytes": self.memory_free_bytes,
            "hugepages": {
                str(size): {"total": pool.total, "free": pool.free} for size, pool in self.hugepages.items()
            },
            "distances": {str(node): dist for node, dist in self.distances.items()},
            "distance_row": None if self.distance_row is None else list(self.distance_row),
            "online": self.online,
            "possible": self.possible,
            "memory_only": self.memory_only,
            "has_normal_memory": self.has_normal_memory,
            "socket_ids": list(self.socket_ids),
            "initiators": list(self.initiators),
            "cpus_source": self.cpus_source,
        }


@dataclass(frozen=True)
class PciDevice:
    """A PCI function (``sys/bus/pci/devices/<domain:bus:dev.fn>``)."""

    address: str
    class_code: str | None  # 24-bit ``0xCCSSPP``
    vendor: str | None
    device: str | None
    subsystem_vendor: str | None
    subsystem_device: str | None
    driver: str | None  # basename of the ``driver`` link (its target is usually not captured)
    numa_node: int | None  # as the kernel says it: -1 = unknown; None = no numa_node file
    local_cpus: tuple[int, ...] | None
    physfn: str | None  # PF address of an SR-IOV VF
    virtfns: tuple[str, ...]  # VF addresses of a PF, by virtfn index
    sriov_totalvfs: int | None
    sriov_numvfs: int | None
    netdevs: tuple[str, ...]
    parent: str | None = None  # upstream PCI function (bridge/port) when the device nests under one

    @property
    def numa_affinity(self) -> int | None:
        """The node a device plugin would report; -1 and absent mean "no topology" (no hint)."""
        return self.numa_node if self.numa_node is not None and self.numa_node >= 0 else None

    @property
    def is_bridge(self) -> bool:
        return (self.class_code or "").lower().startswith("0x0604")

    @property
    def is_virtual_function(self) -> bool:
        return self.physfn is not None

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "class": self.class_code,
            "vendor": self.vendor,
            "device": self.device,
            "subsystem_vendor": self.subsystem_vendor,
            "subsystem_device": self.subsystem_device,
            "driver": self.driver,
            "numa_node": self.numa_node,
            "local_cpus": None if self.local_cpus is None else list(self.local_cpus),
            "physfn": self.physfn,
            "virtfns": list(self.virtfns),
            "sriov_totalvfs": self.sriov_totalvfs,
            "sriov_numvfs": self.sriov_numvfs,
            "netdevs": list(self.netdevs),
            "parent": self.parent,
        }


@dataclass(frozen=True)
class NetInterface:
    """A network interface, from netlink (live) or ``sys/class/net`` (captured trees)."""

    name: str
    ifindex: int | None
    virtual: bool  # under devices/virtual/net (lo, bridges, veth, ifb...)
    kind: str | None  # netlink IFLA_INFO_KIND (bridge, veth, ifb...); None from sysfs
    mac_address: str | None
    operstate: str | None
    mtu: int | None
    parent_device: str | None  # immediate parent: ``0000:60:00.0``, or ``virtio2`` for virtio-net
    pci_address: str | None  # nearest PCI function above the netdev
    numa_node: int | None  # that function's numa_node, as the kernel says it
    physfn: str | None = None  # PF of the function when it is an SR-IOV VF
    phys_port_name: str | None = None
    source: str = "sysfs"  # sysfs | netlink

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ifindex": self.ifindex,
            "virtual": self.virtual,
            "kind": self.kind,
            "mac_address": self.mac_address,
            "operstate": self.operstate,
            "mtu": self.mtu,
            "parent_device": self.parent_device,
            "pci_address": self.pci_address,
            "numa_node": self.numa_node,
            "physfn": self.physfn,
            "phys_port_name": self.phys_port_name,
            "source": self.source,
        }


@dataclass(frozen=True)
class SystemMemory:
    """Machine-wide memory: ``/proc/meminfo`` and ``sys/kernel/mm/hugepages``."""

    mem_total_bytes: int | None
    mem_free_bytes: int | None
    mem_available_bytes: int | None
    default_hugepage_size_kib: int | None  # ``Hugepagesize``: the only size HugePages_* counts cover
    hugepages: Mapping[int, HugePagePool]  # global pools per size; empty where not captured

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "mem_total_bytes": self.mem_total_bytes,
            "mem_free_bytes": self.mem_free_bytes,
            "mem_available_bytes": self.mem_available_bytes,
            "default_hugepage_size_kib": self.default_hugepage_size_kib,
            "hugepages": {
                str(size): {"total": pool.total, "free": pool.free} for size, pool in self.hugepages.items()
            },
        }


@dataclass(frozen=True)
class KubeletCore:
    """cadvisor ``info.Core``: threads grouped by (core_id, physical_package_id) within one node."""

    core_id: int
    socket_id: int
    threads: tuple[int, ...]  # in cadvisor's order (lexicographic ``cpuN`` glob)
    uncore_cache_ids: tuple[int, ...]  # ids of cadvisor's ``UncoreCaches``


@dataclass(frozen=True)
class KubeletNode:
    """cadvisor ``info.Node`` as ``GetNodesInfo`` builds it."""

    id: int
    memory_bytes: int  # 0 when the node has no meminfo (cadvisor logs and carries on)
    hugepages: tuple[tuple[int, int], ...]  # (page size KiB, nr_hugepages)
    cores: tuple[KubeletCore, ...]
    # The L3 is shared by exactly the node's threads (cadvisor's node-cache test). cadvisor files it in
    # ``Node.Caches`` only when ``caches_readable``; otherwise it reports no caches at all.
    node_level_l3: bool
    distances: tuple[int, ...] | None  # positional, as cadvisor parses ``nodeN/distance``
    caches_readable: bool = True  # every core's first thread has complete cache dirs (``id`` included)

    @property
    def num_cores(self) -> int:
        return len(self.cores)

    @property
    def num_threads(self) -> int:
        return sum(len(core.threads) for core in self.cores)

    @property
    def uncore_cache_ids(self) -> tuple[int, ...]:
        """Distinct ``topology.Discover`` UncoreCacheIDs of the node's CPUs (socket id if no uncore cache)."""
        return tuple(
            sorted({c.uncore_cache_ids[0] if c.uncore_cache_ids else c.socket_id for c in self.cores})
        )


@dataclass(frozen=True)
class KubeletCpu:
    """``topology.CPUInfo`` from the kubelet's ``topology.Discover``."""

    cpu_id: int
    core_id: int  # lowest thread id of the core: platform-unique, unlike sysfs core_id
    socket_id: int
    numa_node_id: int
    uncore_cache_id: int


@dataclass(frozen=True)
class KubeletView:
    """What a kubelet would see on this host (cadvisor ``MachineInfo`` + ``topology.Discover``)."""

    nodes: tuple[KubeletNode, ...]  # cadvisor order: lexicographic ``nodeN`` glob (node10 before node2)
    cpus: tuple[KubeletCpu, ...]  # by CPU id
    num_cpus: int  # MachineInfo.NumCores: threads over all nodes
    num_cores: int  # Discover's NumCores: sum of cadvisor cores
    num_sockets: int  # MachineInfo.NumSockets
    num_physical_cores: int  # MachineInfo.NumPhysicalCores: machine-wide distinct core ids (undercounts)
    num_numa_nodes: int  # Discover's NumNUMANodes: nodes that own CPUs
    num_uncore_caches: int
    memory_capacity_bytes: int | None  # MachineInfo.MemoryCapacity (/proc/meminfo MemTotal)
    warnings: tuple[str, ...] = field(default=())
    cadvisor_errors: tuple[str, ...] = field(default=())  # GetNodesInfo would fail: no MachineInfo at all

    @property
    def topology_node_ids(self) -> tuple[int, ...]:
        """``NUMAInfo.Nodes``: every cadvisor topology node, memory-only ones included."""
        return tuple(node.id for node in self.nodes)

    @property
    def num_topology_nodes(self) -> int:
        return len(self.nodes)

    @property
    def node_ids_over_63(self) -> tuple[int, ...]:
        return tuple(sorted(i for i in self.topology_node_ids if i > MAX_BITMASK_NODE_ID))

    @property
    def topology_manager_default_limit_exceeded(self) -> bool:
        return self.num_topology_nodes > DEFAULT_MAX_ALLOWABLE_NUMA_NODES

    @property
    def distances_indexed_by_id_mismatch(self) -> bool:
        """The kubelet reads positional distance rows as ``d[a][b]``: wrong unless node ids are 0..N-1."""
        return sorted(self.topology_node_ids) != list(range(self.num_topology_nodes))

    def startup_errors(
        self,
        topology_manager_policy: str = "best-effort",
        max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
    ) -> tuple[str, ...]:
        """Errors that stop the kubelet from starting on this host with the given settings.

        Mirrors ``topologymanager.NewManager``: with policy ``none`` the node count is never checked;
        otherwise more topology nodes than ``max-allowable-numa-nodes`` (strictly greater) is fatal. A
        cadvisor failure to build ``MachineInfo`` is fatal in any case.
        """
        errors = list(self.cadvisor_errors)
        if topology_manager_policy != "none" and self.num_topology_nodes > max_allowable_numa_nodes:
            errors.append(f"unsupported on machines with more than {max_allowable_numa_nodes} NUMA Nodes")
        return tuple(errors)

    @property
    def refusal_reasons(self) -> tuple[str, ...]:
        """``startup_errors`` for a NUMA-aware policy with the default options."""
        return self.startup_errors()

    @property
    def would_refuse_to_start(self) -> bool:
        return bool(self.refusal_reasons)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "nodes": [
                {
                    "id": n.id,
                    "memory_bytes": n.memory_bytes,
                    "hugepages": [{"page_size_kib": s, "num_pages": p} for s, p in n.hugepages],
                    "num_cores": n.num_cores,
                    "num_threads": n.num_threads,
                    "node_level_l3": n.node_level_l3,
                    "caches_readable": n.caches_readable,
                    "uncore_cache_ids": list(n.uncore_cache_ids),
                    "distances": None if n.distances is None else list(n.distances),
                    "cores": [
                        {
                            "core_id": c.core_id,
                            "socket_id": c.socket_id,
                            "threads": list(c.threads),
                            "uncore_cache_ids": list(c.uncore_cache_ids),
                        }
                        for c in n.cores
                    ],
                }
                for n in self.nodes
            ],
            "cpus": [
                {
                    "cpu_id": c.cpu_id,
                    "core_id": c.core_id,
                    "socket_id": c.socket_id,
                    "numa_node_id": c.numa_node_id,
                    "uncore_cache_id": c.uncore_cache_id,
                }
                for c in self.cpus
            ],
            "num_cpus": self.num_cpus,
            "num_cores": self.num_cores,
            "num_sockets": self.num_sockets,
            "num_physical_cores": self.num_physical_cores,
            "num_numa_nodes_with_cpus": self.num_numa_nodes,
            "num_topology_nodes_incl_memory_only": self.num_topology_nodes,
            "num_uncore_caches": self.num_uncore_caches,
            "memory_capacity_bytes": self.memory_capacity_bytes,
            "topology_manager_default_limit_exceeded": self.topology_manager_default_limit_exceeded,
            "node_ids_over_63": list(self.node_ids_over_63),
            "distances_indexed_by_id_mismatch": self.distances_indexed_by_id_mismatch,
            "would_refuse_to_start": self.would_refuse_to_start,
            "refusal_reasons": list(self.refusal_reasons),
            "warnings": list(self.warnings),
            "cadvisor_errors": list(self.cadvisor_errors),
        }


@dataclass(frozen=True)
class HostTopology:
    """Everything the probe found on one host (live or captured)."""

    sysfs_root: str
    procfs_root: str
    live: bool
    numa_nodes: tuple[NumaNode, ...]  # online nodes, by id
    possible_node_ids: tuple[int, ...]
    cpus: tuple[Cpu, ...]  # every cpuN directory, online and offline, by id
    isolated_cpus: tuple[int, ...]
    isolated_cpus_source: str | None  # "sysfs" (cpu/isolated), "cmdline" (isolcpus=), None
    nohz_full_cpus: tuple[int, ...]
    memory: SystemMemory
    pci_devices: tuple[PciDevice, ...]  # by address
    net_interfaces: tuple[NetInterface, ...]  # by name
    kubelet_view: KubeletView
    diagnostics: tuple[str, ...] = ()

    # -- lookups -------------------------------------------------------------------------------------
    def node(self, node_id: int) -> NumaNode:
        for node in self.numa_nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def cpu(self, cpu_id: int) -> Cpu:
        for cpu in self.cpus:
            if cpu.id == cpu_id:
                return cpu
        raise KeyError(cpu_id)

    def pci_device(self, address: str) -> PciDevice:
        for dev in self.pci_devices:
            if dev.address == address:
                return dev
        raise KeyError(address)

    def net_interface(self, name: str) -> NetInterface:
        for iface in self.net_interfaces:
            if iface.name == name:
                return iface
        raise KeyError(name)

    @property
    def online_cpus(self) -> tuple[int, ...]:
        return tuple(cpu.id for cpu in self.cpus if cpu.online)

    @property
    def online_node_ids(self) -> tuple[int, ...]:
        return tuple(node.id for node in self.numa_nodes if node.online)

    @property
    def offline_node_ids(self) -> tuple[int, ...]:
        """Possible nodes that are not online (firmware hot-plug windows, offlined nodes)."""
        present = {node.id for node in self.numa_nodes}
        return tuple(i for i in self.possible_node_ids if i not in present)

    @property
    def memory_only_node_ids(self) -> tuple[int, ...]:
        return tuple(node.id for node in self.numa_nodes if node.memory_only)

    @property
    def socket_ids(self) -> tuple[int, ...]:
        return tuple(sorted({c.socket_id for c in self.cpus if c.online and c.socket_id is not None}))

    @property
    def l3_groups(self) -> tuple[tuple[int, ...], ...]:
        """Online CPUs sharing an L3, in order of lowest CPU: by (socket, L3 id), or by the sharing set
        where the kernel gives no cache id."""
        online = set(self.online_cpus)
        groups: dict[object, set[int]] = {}
        for cpu in self.cpus:
            if not cpu.online:
                continue
            l3 = next((c for c in cpu.caches if c.level == 3), None)
            if l3 is None:
                continue
            key: object = (
                (cpu.socket_id, l3.id) if l3.id is not None else frozenset(online & set(l3.shared_cpus or ()))
            )
            groups.setdefault(key, set()).add(cpu.id)
        return tuple(sorted((tuple(sorted(g)) for g in groups.values()), key=lambda g: g[0]))

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "sysfs_root": self.sysfs_root,
            "procfs_root": self.procfs_root,
            "live": self.live,
            "numa_nodes": [node.to_json_dict() for node in self.numa_nodes],
            "possible_node_ids": list(self.possible_node_ids),
            "offline_node_ids": list(self.offline_node_ids),
            "cpus": [cpu.to_json_dict() for cpu in self.cpus],
            "online_cpus": list(self.online_cpus),
            "isolated_cpus": list(self.isolated_cpus),
            "isolated_cpus_source": self.isolated_cpus_source,
            "nohz_full_cpus": list(self.nohz_full_cpus),
            "memory": self.memory.to_json_dict(),
            "pci_devices": [dev.to_json_dict() for dev in self.pci_devices],
            "net_interfaces": [iface.to_json_dict() for iface in self.net_interfaces],
            "kubelet_view": self.kubelet_view.to_json_dict(),
            "diagnostics": list(self.diagnostics),
        }
