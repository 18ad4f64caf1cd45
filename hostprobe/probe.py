"""``probe()``: read a host's topology from a sysfs root and a procfs root."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from hostprobe import net, parse
from hostprobe.cpus import CpuFacts, CpuState, read_cpus
from hostprobe.crosscheck import memory_mismatch_note, psutil_cross_check
from hostprobe.kubelet_view import build_kubelet_view
from hostprobe.memory import read_system_memory
from hostprobe.model import Cpu, HostTopology, KubeletView, NumaNode, PciDevice
from hostprobe.numa import NodeFacts, NodeState, read_nodes
from hostprobe.paths import HostReader
from hostprobe.pci import read_pci_devices


def probe(
    sysfs_root: str | os.PathLike[str] = "/sys",
    procfs_root: str | os.PathLike[str] = "/proc",
    *,
    netlink: bool | None = None,
) -> HostTopology:
    """Probe the NUMA topology below ``sysfs_root`` and ``procfs_root``.

    ``netlink``: list interfaces through netlink (pyroute2); ``None`` means "when the roots are the live
    ``/sys`` and ``/proc``". Raises ``ProbeError`` (naming the file) for unreadable or malformed files.
    """
    reader = HostReader(sysfs_root, procfs_root)
    live = os.path.realpath(reader.sys_root) == "/sys" and os.path.realpath(reader.proc_root) == "/proc"
    if not reader.proc_present:
        reader.note(f"procfs root {reader.proc_root} absent: meminfo, cmdline and cpuinfo values are unknown")

    cpu_state = read_cpus(reader)
    node_state = read_nodes(reader)
    memory = read_system_memory(reader)
    pci_devices = read_pci_devices(reader)
    pci_by_address = {dev.address: dev for dev in pci_devices}

    interfaces = net.read_sysfs_interfaces(reader, pci_by_address)
    use_netlink = live if netlink is None else netlink
    if use_netlink:
        try:
            interfaces = net.merge_netlink(net.read_netlink_links(), interfaces)
        except net.NetlinkUnavailable as exc:
            reader.note(f"{exc}; interfaces listed from sysfs instead")
    # A PCI function's netdevs: its own net/ entries plus those mapped to it through a virtio parent.
    netdevs: dict[str, set[str]] = {}
    for iface in interfaces:
        if iface.pci_address:
            netdevs.setdefault(iface.pci_address, set()).add(iface.name)
    pci_devices = tuple(
        dev if not netdevs.get(dev.address) else _with_netdevs(dev, netdevs[dev.address])
        for dev in pci_devices
    )

    cpuinfo = reader.text(reader.proc("cpuinfo")) if reader.proc_present else None
    view = build_kubelet_view(
        cpu_state.cpus,
        [n for n in node_state.nodes if n.online],
        online_file=cpu_state.online_file,
        cpuinfo=cpuinfo,
        memory_capacity_bytes=memory.mem_total_bytes,
    )
    cpus = _assemble_cpus(reader, cpu_state, node_state, view)
    nodes = _assemble_nodes(reader, node_state, cpus)

    note = memory_mismatch_note(nodes, memory.mem_total_bytes)
    if note:
        reader.note(note)
    topology = HostTopology(
        sysfs_root=reader.sys_root,
        procfs_root=reader.proc_root,
        live=live,
        numa_nodes=nodes,
        possible_node_ids=node_state.possible_ids,
        cpus=cpus,
        isolated_cpus=cpu_state.isolated,
        isolated_cpus_source=cpu_state.isolated_source,
        nohz_full_cpus=cpu_state.nohz_full,
        memory=memory,
        pci_devices=pci_devices,
        net_interfaces=interfaces,
        kubelet_view=view,
        diagnostics=(),
    )
    if live:
        check = psutil_cross_check(topology)
        for line in check.disagreements:
            reader.note(line)
    return _with_diagnostics(topology, reader.diagnostics)


def _with_netdevs(dev: PciDevice, names: set[str]) -> PciDevice:
    return replace(dev, netdevs=tuple(sorted(set(dev.netdevs) | names)))


def _with_diagnostics(topology: HostTopology, diagnostics: Sequence[str]) -> HostTopology:
    return replace(topology, diagnostics=tuple(diagnostics))


def _assemble_cpus(
    reader: HostReader, state: CpuState, nodes: NodeState, view: KubeletView
) -> tuple[Cpu, ...]:
    """Settle each CPU's node: the online node cpulists, then the lists as captured (offline CPUs), then the
    ``nodeN/cpuM`` links, then the ``cpuN/nodeK`` links (which may name an offline node)."""
    online_nodes = [n for n in nodes.nodes if n.online]
    online_cpus = {c.id for c in state.cpus if c.online}
    node_of: dict[int, int] = {}
    for node in online_nodes:
        for cpu_id in node.listed_cpus:
            if cpu_id in online_cpus:
                node_of.setdefault(cpu_id, node.id)
    for node in online_nodes:
        for cpu_id in (*node.listed_cpus, *node.linked_cpus):
            node_of.setdefault(cpu_id, node.id)
    uncore = {c.cpu_id: c.uncore_cache_id for c in view.cpus}
    online_node_ids = {n.id for n in online_nodes}
    orphans: dict[int, list[int]] = {}
    result = []
    for facts in state.cpus:
        node_id = node_of.get(facts.id)
        if node_id is None and facts.node_links:
            node_id = facts.node_links[0]
        if facts.online and nodes.present and node_id not in online_node_ids:
            orphans.setdefault(-1 if node_id is None else node_id, []).append(facts.id)
        result.append(_cpu(facts, node_id, uncore.get(facts.id)))
    for node_id, cpu_ids in sorted(orphans.items()):
        where = "no NUMA node" if node_id < 0 else f"NUMA node {node_id}, which is not online"
        reader.note(f"CPUs {parse.format_cpulist(cpu_ids)} are online but belong to {where}")
    return tuple(result)


def _cpu(facts: CpuFacts, node_id: int | None, uncore: int | None) -> Cpu:
    l3 = facts.l3
    return Cpu(
        id=facts.id,
        online=facts.online,
        numa_node_id=node_id,
        socket_id=facts.socket_id,
        die_id=facts.die_id,
        cluster_id=facts.cluster_id,
        core_id=facts.core_id,
        thread_siblings=facts.thread_siblings,
        l3_cache_id=l3.id if l3 is not None else None,
        uncore_cache_id=uncore,
        caches=facts.caches,
    )


def _assemble_nodes(reader: HostReader, state: NodeState, cpus: Sequence[Cpu]) -> tuple[NumaNode, ...]:
    online_cpus = {c.id for c in cpus if c.online}
    socket_of = {c.id: c.socket_id for c in cpus}
    nodes = []
    for facts in state.nodes:
        node_cpus = tuple(c for c in facts.listed_cpus if c in online_cpus)
        stale = sorted(set(facts.listed_cpus) - online_cpus)
        if stale and facts.cpus_source != "links":
            reader.note(
                f"node{facts.id}: {facts.cpus_source} names CPUs that are not online "
                f"({parse.format_cpulist(stale)})"
            )
        nodes.append(_node(facts, node_cpus, socket_of))
    return tuple(nodes)


def _node(facts: NodeFacts, node_cpus: tuple[int, ...], socket_of: dict[int, int | None]) -> NumaNode:
    mem = facts.memory
    return NumaNode(
        id=facts.id,
        cpus=node_cpus,
        memory_bytes=None if mem.total_kib is None else mem.total_kib * 1024,
        memory_free_bytes=None if mem.free_kib is None else mem.free_kib * 1024,
        hugepages=mem.hugepages,
        distances=facts.distances,
        distance_row=facts.distance_row,
        online=facts.online,
        possible=facts.possible,
        has_normal_memory=facts.has_normal_memory,
        socket_ids=tuple(sorted({s for c in node_cpus if (s := socket_of.get(c)) is not None})),
        initiators=facts.initiators,
        cpus_source=facts.cpus_source,
    )
