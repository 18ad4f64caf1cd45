"""Write synthetic sysfs/procfs trees: the layouts no real capture provides, and the bundled sample.

The files follow the kernel's formats (``shared/spec/hostprobe.md`` §1): node cpulists ANDed with the
online mask, distance rows over the online nodes in id order, hugepage pools only on nodes with memory,
no ``topology/`` or ``cache/`` for offline CPUs, SR-IOV ``physfn``/``virtfnN`` links, virtio-net netdevs
below a ``virtioN`` child of their PCI function, relative symlinks everywhere.

``write_tree(dest, SyntheticHost(...))`` returns ``(dest/sys, dest/proc)``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from hostprobe.parse import format_cpulist, format_cpumask, parse_pci_address

GIB_KIB = 1024 * 1024


@dataclass(frozen=True)
class SyntheticPciFunction:
    """A PCI function; VFs get ``physfn``/``virtfnN`` links to and from it."""

    address: str  # any domain width: "0000:3b:00.0", "10000:01:00.0"
    class_code: str = "0x020000"
    vendor: str = "0x8086"
    device: str = "0x1583"
    numa_node: int | None = 0  # None: no numa_node file at all; -1: unknown
    driver: str | None = "i40e"
    netdevs: tuple[str, ...] = ()  # net/<name> directly below the function
    virtio_netdevs: tuple[str, ...] = ()  # virtio-net: <function>/virtioN/net/<name>
    sriov_totalvfs: int | None = None
    vfs: tuple[SyntheticPciFunction, ...] = ()
    bridge: str | None = None  # address of an upstream port the directory nests under


@dataclass(frozen=True)
class SyntheticHost:
    """Parameters of a synthetic host. Defaults: 2 sockets × 4 cores × 2 threads, one node per socket."""

    sockets: int = 2
    cores_per_socket: int = 4
    threads_per_core: int = 2
    nodes_per_socket: int = 1  # >1: sub-NUMA clustering / NPS
    cpu_node_ids: tuple[int, ...] | None = None  # ids of the CPU nodes, socket by socket; default 0..n-1
    memory_only_node_ids: tuple[int, ...] = ()  # CXL/PMEM/GPU memory: online, no CPUs
    offline_node_ids: tuple[int, ...] = ()  # in ``possible`` but not online: no directory
    node_memory_kib: Mapping[int, int] | int = 16 * GIB_KIB  # per node; 0 = memoryless
    hugepage_sizes_kib: tuple[int, ...] = (2048, 1048576)
    hugepages: Mapping[int, Mapping[int, tuple[int, int]]] = field(
        default_factory=dict
    )  # node->size->(nr,free)
    distances: Mapping[tuple[int, int], int] = field(default_factory=dict)  # overrides of the default matrix
    initiators: Mapping[int, tuple[int, ...]] = field(
        default_factory=dict
    )  # memory node -> access0 initiators
    offline_cpus: tuple[int, ...] = ()
    interleaved_numbering: bool = False  # cpu ids alternate sockets (0 on socket 0, 1 on socket 1, ...)
    cache_ids: bool = True  # False: no cache/index*/id (old kernels, arm64 without PPTT)
    l3_cores: int | None = None  # cores per L3; None = one L3 per socket
    new_topology_names: bool = True  # False: only thread_siblings_list/core_siblings_list (pre-5.x)
    isolated: str | None = ""  # cpu/isolated content; None = no file
    cmdline: str = "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro"
    pci_functions: tuple[SyntheticPciFunction, ...] = ()
    virtual_netdevs: tuple[str, ...] = ("lo",)
    with_cpu_online_file: bool = True
    with_proc: bool = True

    # -- derived layout ------------------------------------------------------------------------------
    @property
    def num_cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core

    @property
    def cpu_nodes(self) -> tuple[int, ...]:
        count = self.sockets * self.nodes_per_socket
        ids = self.cpu_node_ids if self.cpu_node_ids is not None else tuple(range(count))
        if len(ids) != count:
            raise ValueError(f"cpu_node_ids needs {count} ids, got {len(ids)}")
        return tuple(ids)

    @property
    def online_node_ids(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.cpu_nodes) | set(self.memory_only_node_ids)))

    def layout(self) -> list[CpuPlace]:
        """Where every CPU id sits, in id order."""
        places = []
        for socket in range(self.sockets):
            for core in range(self.cores_per_socket):
                for thread in range(self.threads_per_core):
                    if self.interleaved_numbering:
                        cpu = (thread * self.cores_per_socket + core) * self.sockets + socket
                    else:
                        cpu = (thread * self.sockets + socket) * self.cores_per_socket + core
                    node_index = core * self.nodes_per_socket // self.cores_per_socket
                    node = self.cpu_nodes[socket * self.nodes_per_socket + node_index]
                    l3_cores = self.l3_cores or self.cores_per_socket
                    l3 = socket * -(-self.cores_per_socket // l3_cores) + core // l3_cores
                    places.append(CpuPlace(cpu, socket, core, thread, node, l3))
        return sorted(places)

    def memory_kib(self, node: int) -> int:
        if isinstance(self.node_memory_kib, int):
            return self.node_memory_kib
        return self.node_memory_kib.get(node, 0)

    def home_node(self, node: int) -> int:
        """The CPU node a memory-only node hangs off (its first initiator, else round-robin)."""
        if node in self.cpu_nodes:
            return node
        if self.initiators.get(node):
            return self.initiators[node][0]
        return self.cpu_nodes[self.memory_only_node_ids.index(node) % len(self.cpu_nodes)]

    def distance(self, a: int, b: int) -> int:
        if (a, b) in self.distances:
            return self.distances[(a, b)]
        if (b, a) in self.distances:
            return self.distances[(b, a)]
        if a == b:
            return 10
        cpu_nodes = self.cpu_nodes
        if a in cpu_nodes and b in cpu_nodes:
            same_socket = (
                cpu_nodes.index(a) // self.nodes_per_socket == cpu_nodes.index(b) // self.nodes_per_socket
            )
            return 11 if same_socket else 21
        if self.home_node(a) == b or self.home_node(b) == a:
            return 17
        return 28


class CpuPlace(NamedTuple):
    cpu: int
    socket: int
    core: int
    thread: int
    node: int
    l3: int


def write_tree(dest: str | os.PathLike[str], host: SyntheticHost) -> tuple[Path, Path]:
    """Write ``host`` below ``dest``; returns (sysfs root, procfs root)."""
    root = Path(dest)
    sys_root, proc_root = root / "sys", root / "proc"
    places = host.layout()
    online = [p.cpu for p in places if p.cpu not in host.offline_cpus]
    _write_cpus(sys_root, host, places, set(online))
    _write_nodes(sys_root, host, places, set(online))
    _write_global_hugepages(sys_root, host)
    ifindex = _write_virtual_netdevs(sys_root, host)
    for function in host.pci_functions:
        ifindex = _write_pci_function(sys_root, host, function, set(online), places, ifindex)
    if host.with_proc:
        _write_proc(proc_root, host, places, set(online))
    return sys_root, proc_root


# -- helpers ---------------------------------------------------------------------------------------


def _put(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if content.endswith("\n") else content + "\n")


def _link(link: Path, target: Path) -> None:
    """A relative symlink, as sysfs has."""
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(target, link.parent))


def _write_cpus(sys_root: Path, host: SyntheticHost, places: list[CpuPlace], online: set[int]) -> None:
    cpu_dir = sys_root / "devices" / "system" / "cpu"
    nr = host.num_cpus
    everything = range(nr)
    if host.with_cpu_online_file:
        _put(cpu_dir / "online", format_cpulist(online))
    _put(cpu_dir / "offline", format_cpulist(set(everything) - online))
    _put(cpu_dir / "possible", format_cpulist(everything))
    _put(cpu_dir / "present", format_cpulist(everything))
    _put(cpu_dir / "kernel_max", str(max(nr, 64) - 1))
    if host.isolated is not None:
        _put(cpu_dir / "isolated", host.isolated)
    by_cpu = {p.cpu: p for p in places}
    siblings = {p.cpu: [q.cpu for q in places if (q.socket, q.core) == (p.socket, p.core)] for p in places}
    package = {p.cpu: [q.cpu for q in places if q.socket == p.socket] for p in places}
    l3_group = {p.cpu: [q.cpu for q in places if q.l3 == p.l3] for p in places}
    for place in places:
        base = cpu_dir / f"cpu{place.cpu}"
        base.mkdir(parents=True, exist_ok=True)
        if place.cpu != 0:  # cpu0 usually cannot be unplugged and has no online file
            _put(base / "online", "1" if place.cpu in online else "0")
        _link(base / f"node{place.node}", sys_root / "devices" / "system" / "node" / f"node{place.node}")
        if place.cpu not in online:
            continue  # the kernel removes topology/ and cache/ of offline CPUs
        topo = base / "topology"
        live_siblings = [c for c in siblings[place.cpu] if c in online]
        live_package = [c for c in package[place.cpu] if c in online]
        _put(topo / "physical_package_id", str(place.socket))
        _put(topo / "core_id", str(place.core))
        if host.new_topology_names:
            _put(topo / "die_id", "0")
            _put(topo / "cluster_id", str(place.core))
            _put(topo / "core_cpus_list", format_cpulist(live_siblings))
            _put(topo / "core_cpus", format_cpumask(live_siblings, nr))
            _put(topo / "package_cpus_list", format_cpulist(live_package))
        _put(topo / "thread_siblings_list", format_cpulist(live_siblings))
        _put(topo / "thread_siblings", format_cpumask(live_siblings, nr))
        _put(topo / "core_siblings_list", format_cpulist(live_package))
        core_index = place.socket * host.cores_per_socket + place.core
        caches = [
            (1, "Data", core_index, "48K", siblings[place.cpu]),
            (1, "Instruction", core_index, "32K", siblings[place.cpu]),
            (2, "Unified", core_index, "2048K", siblings[place.cpu]),
            (3, "Unified", by_cpu[place.cpu].l3, "32768K", l3_group[place.cpu]),
        ]
        for index, (level, kind, cache_id, size, shared) in enumerate(caches):
            cache = base / "cache" / f"index{index}"
            _put(cache / "level", str(level))
            _put(cache / "type", kind)
            _put(cache / "size", size)
            if host.cache_ids:
                _put(cache / "id", str(cache_id))
            _put(cache / "shared_cpu_list", format_cpulist(shared))
            _put(cache / "shared_cpu_map", format_cpumask(shared, nr))


def _write_nodes(sys_root: Path, host: SyntheticHost, places: list[CpuPlace], online: set[int]) -> None:
    node_dir = sys_root / "devices" / "system" / "node"
    online_nodes = host.online_node_ids
    possible = sorted(set(online_nodes) | set(host.offline_node_ids))
    with_cpu = sorted({p.node for p in places if p.cpu in online})
    with_memory = [n for n in online_nodes if host.memory_kib(n) > 0]
    _put(node_dir / "online", format_cpulist(online_nodes))
    _put(node_dir / "possible", format_cpulist(possible))
    _put(node_dir / "has_cpu", format_cpulist(with_cpu))
    _put(node_dir / "has_memory", format_cpulist(with_memory))
    # Memory-only nodes usually come up as ZONE_MOVABLE (kmem/CXL), so not in has_normal_memory.
    _put(node_dir / "has_normal_memory", format_cpulist(n for n in with_memory if n in host.cpu_nodes))
    _put(node_dir / "has_generic_initiator", "")
    for node in online_nodes:
        base = node_dir / f"node{node}"
        cpus = [p.cpu for p in places if p.node == node]
        live = [c for c in cpus if c in online]
        _put(base / "cpulist", format_cpulist(live))
        _put(base / "cpumap", format_cpumask(live, host.num_cpus))
        for cpu in cpus:  # links for offline CPUs too
            _link(base / f"cpu{cpu}", sys_root / "devices" / "system" / "cpu" / f"cpu{cpu}")
        _put(base / "distance", " ".join(str(host.distance(node, other)) for other in online_nodes))
        total = host.memory_kib(node)
        pools = host.hugepages.get(node, {})
        used = sum(size * nr for size, (nr, _free) in pools.items())
        free = max(total - used - total // 20, 0)
        lines = [
            f"Node {node} MemTotal:       {total} kB",
            f"Node {node} MemFree:        {free} kB",
            f"Node {node} MemUsed:        {total - free} kB",
            f"Node {node} HugePages_Total: {pools.get(2048, (0, 0))[0]:5d}",
            f"Node {node} HugePages_Free:  {pools.get(2048, (0, 0))[1]:5d}",
            f"Node {node} HugePages_Surp:      0",
        ]
        _put(base / "meminfo", "\n".join(lines))
        if total > 0:  # hugetlb registers per-node pools only for nodes in N_MEMORY
            for size in host.hugepage_sizes_kib:
                nr, free_pages = pools.get(size, (0, 0))
                pool = base / "hugepages" / f"hugepages-{size}kB"
                _put(pool / "nr_hugepages", str(nr))
                _put(pool / "free_hugepages", str(free_pages))
                _put(pool / "surplus_hugepages", "0")
        for initiator in host.initiators.get(node, ()):
            _link(base / "access0" / "initiators" / f"node{initiator}", node_dir / f"node{initiator}")


def _write_global_hugepages(sys_root: Path, host: SyntheticHost) -> None:
    base = sys_root / "kernel" / "mm" / "hugepages"
    for size in host.hugepage_sizes_kib:
        nr = sum(host.hugepages.get(n, {}).get(size, (0, 0))[0] for n in host.online_node_ids)
        free = sum(host.hugepages.get(n, {}).get(size, (0, 0))[1] for n in host.online_node_ids)
        pool = base / f"hugepages-{size}kB"
        for name, value in (
            ("nr_hugepages", nr),
            ("free_hugepages", free),
            ("resv_hugepages", 0),
            ("surplus_hugepages", 0),
            ("nr_overcommit_hugepages", 0),
        ):
            _put(pool / name, str(value))


def _write_netdev(sys_root: Path, netdev_dir: Path, parent: Path | None, ifindex: int) -> None:
    _put(netdev_dir / "ifindex", str(ifindex))
    _put(netdev_dir / "iflink", str(ifindex))
    mac = (
        "00:00:00:00:00:00"
        if netdev_dir.name == "lo"
        else f"02:00:00:00:{ifindex // 256:02x}:{ifindex % 256:02x}"
    )
    _put(netdev_dir / "address", mac)
    _put(netdev_dir / "operstate", "up")
    _put(netdev_dir / "mtu", "1500")
    _put(netdev_dir / "type", "772" if netdev_dir.name == "lo" else "1")
    if parent is not None:
        _link(netdev_dir / "device", parent)
    _link(sys_root / "class" / "net" / netdev_dir.name, netdev_dir)


def _write_virtual_netdevs(sys_root: Path, host: SyntheticHost) -> int:
    ifindex = 1
    for name in host.virtual_netdevs:
        _write_netdev(sys_root, sys_root / "devices" / "virtual" / "net" / name, None, ifindex)
        ifindex += 1
    return ifindex


def _function_dir(sys_root: Path, host: SyntheticHost, address: str) -> Path:
    parts = parse_pci_address(address)
    if parts is None:
        raise ValueError(f"not a PCI address: {address}")
    domain = address.rsplit(":", 2)[0]
    chain = [address]
    current = address
    by_address = _all_functions(host)
    while (upstream := by_address[current].bridge if current in by_address else None) is not None:
        chain.insert(0, upstream)
        current = upstream
    root_bus = chain[0].rsplit(":", 2)[1]
    return sys_root.joinpath("devices", f"pci{domain}:{root_bus}", *chain)


def _all_functions(host: SyntheticHost) -> dict[str, SyntheticPciFunction]:
    found: dict[str, SyntheticPciFunction] = {}
    for function in host.pci_functions:
        found[function.address] = function
        for vf in function.vfs:
            found[vf.address] = vf
    return found


def _write_pci_function(
    sys_root: Path,
    host: SyntheticHost,
    function: SyntheticPciFunction,
    online: set[int],
    places: list[CpuPlace],
    ifindex: int,
    physfn: Path | None = None,
) -> int:
    path = (
        _function_dir(sys_root, host, function.address)
        if physfn is None
        else physfn.parent / function.address
    )
    path.mkdir(parents=True, exist_ok=True)
    _link(sys_root / "bus" / "pci" / "devices" / function.address, path)
    _put(path / "class", function.class_code)
    _put(path / "vendor", function.vendor)
    _put(path / "device", function.device)
    _put(path / "subsystem_vendor", function.vendor)
    _put(path / "subsystem_device", "0x0000")
    if function.numa_node is not None:
        _put(path / "numa_node", str(function.numa_node))
    local = [
        p.cpu
        for p in places
        if p.cpu in online and (function.numa_node in (None, -1) or p.node == function.numa_node)
    ]
    _put(path / "local_cpulist", format_cpulist(local))
    _put(path / "local_cpus", format_cpumask(local, host.num_cpus))
    if function.driver:
        driver_dir = sys_root / "bus" / "pci" / "drivers" / function.driver
        driver_dir.mkdir(parents=True, exist_ok=True)
        _link(path / "driver", driver_dir)
    if function.sriov_totalvfs is not None or function.vfs:
        _put(path / "sriov_totalvfs", str(function.sriov_totalvfs or len(function.vfs)))
        _put(path / "sriov_numvfs", str(len(function.vfs)))
    for name in function.netdevs:
        _write_netdev(sys_root, path / "net" / name, path, ifindex)
        ifindex += 1
    for number, name in enumerate(function.virtio_netdevs):
        virtio = path / f"virtio{number}"
        _write_netdev(sys_root, virtio / "net" / name, virtio, ifindex)
        ifindex += 1
    if physfn is not None:
        _link(path / "physfn", physfn)
    for index, vf in enumerate(function.vfs):
        ifindex = _write_pci_function(sys_root, host, vf, online, places, ifindex, physfn=path)
        _link(path / f"virtfn{index}", path.parent / vf.address)
    return ifindex


def _write_proc(proc_root: Path, host: SyntheticHost, places: list[CpuPlace], online: set[int]) -> None:
    total = sum(host.memory_kib(n) for n in host.online_node_ids)
    pools = [pool for node in host.online_node_ids for pool in host.hugepages.get(node, {}).items()]
    hugetlb = sum(size * nr for size, (nr, _free) in pools)
    default = host.hugepage_sizes_kib[0] if host.hugepage_sizes_kib else 2048
    meminfo = [
        f"MemTotal:       {total} kB",
        f"MemFree:        {total * 9 // 10} kB",
        f"MemAvailable:   {total * 9 // 10} kB",
        f"HugePages_Total: {sum(nr for size, (nr, _f) in pools if size == default):6d}",
        f"HugePages_Free:  {sum(free for size, (_n, free) in pools if size == default):6d}",
        "HugePages_Rsvd:        0",
        "HugePages_Surp:        0",
        f"Hugepagesize:   {default} kB",
        f"Hugetlb:        {hugetlb} kB",
    ]
    _put(proc_root / "meminfo", "\n".join(meminfo))
    _put(proc_root / "cmdline", host.cmdline)
    blocks = [
        f"processor\t: {p.cpu}\nphysical id\t: {p.socket}\ncore id\t\t: {p.core}\n"
        for p in places
        if p.cpu in online
    ]
    _put(proc_root / "cpuinfo", "\n".join(blocks))
