"""The human-readable table printed by ``python -m hostprobe``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from hostprobe.model import HostTopology, PciDevice
from hostprobe.parse import format_cpulist

# Endpoint classes worth listing (storage, network, display/GPU, co-processor, accelerator).
_INTERESTING_CLASS_PREFIXES = ("0x01", "0x02", "0x03", "0x0b", "0x12")
GIB = 1024**3


def render_table(topology: HostTopology) -> str:
    out: list[str] = []
    source = "live host" if topology.live else "captured tree"
    out.append(f"hostprobe: {topology.sysfs_root} + {topology.procfs_root} ({source})")
    out.append("")
    _nodes(topology, out)
    _cpus(topology, out)
    _pci(topology, out)
    _net(topology, out)
    _kubelet(topology, out)
    if topology.diagnostics:
        out.append("Diagnostics:")
        out.extend(f"  - {line}" for line in topology.diagnostics)
    return "\n".join(out).rstrip() + "\n"


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _short_list(ids: Iterable[int], width: int = 36) -> str:
    ids = list(ids)
    text = format_cpulist(ids)
    if len(text) <= width:
        return text or "-"
    cut = text[: width - 1].rsplit(",", 1)[0]
    return f"{cut},… ({len(ids)})"


def _gib(value: int | None) -> str:
    return "-" if value is None else f"{value / GIB:.1f} GiB"


def _nodes(topology: HostTopology, out: list[str]) -> None:
    nodes = topology.numa_nodes
    extra = (
        f", offline (possible) {format_cpulist(topology.offline_node_ids)}"
        if topology.offline_node_ids
        else ""
    )
    memory_only = format_cpulist(topology.memory_only_node_ids) or "none"
    out.append(
        f"NUMA nodes: {len(nodes)} ({format_cpulist(n.id for n in nodes) or 'none'}){extra}; "
        f"memory-only: {memory_only}"
    )
    if nodes:
        rows = [("NODE", "CPUS", "SOCKETS", "MEMORY", "HUGEPAGES (nr/free)", "DISTANCES")]
        for node in nodes:
            pages = " ".join(f"{_page_size(size)}:{p.total}/{p.free}" for size, p in node.hugepages.items())
            rows.append(
                (
                    str(node.id) + ("" if node.online else " (offline)"),
                    _short_list(node.cpus),
                    format_cpulist(node.socket_ids) or "-",
                    _gib(node.memory_bytes),
                    pages or "-",
                    " ".join(f"{k}:{v}" for k, v in node.distances.items()) or "-",
                )
            )
        out.extend(_table(rows))
    out.append("")


def _page_size(kib: int) -> str:
    return (
        f"{kib // (1024 * 1024)}G"
        if kib % (1024 * 1024) == 0
        else f"{kib // 1024}M"
        if kib % 1024 == 0
        else f"{kib}K"
    )


def _cpus(topology: HostTopology, out: list[str]) -> None:
    online = [c for c in topology.cpus if c.online]
    offline = [c.id for c in topology.cpus if not c.online]
    cores = {(c.socket_id, c.thread_siblings) for c in online if c.thread_siblings}
    threads = sorted({len(s) for _, s in cores})
    out.append(
        f"CPUs: {len(online)} online ({_short_list([c.id for c in online], 48)})"
        + (f", offline {format_cpulist(offline)}" if offline else "")
    )
    out.append(
        f"  sockets {len(topology.socket_ids)}, cores {len(cores)}, threads/core "
        f"{'/'.join(map(str, threads)) or '-'}, L3 groups "
        f"{len({(c.socket_id, c.l3_cache_id) for c in online if c.l3_cache_id is not None}) or '-'}"
    )
    isolated = format_cpulist(topology.isolated_cpus) or "none"
    source = f" (from {topology.isolated_cpus_source})" if topology.isolated_cpus_source else ""
    out.append(
        f"  isolated {isolated}{source}; nohz_full {format_cpulist(topology.nohz_full_cpus) or 'none'}"
    )
    out.append("")


def _interesting(dev: PciDevice) -> bool:
    cls = (dev.class_code or "").lower()
    return cls.startswith(_INTERESTING_CLASS_PREFIXES) or bool(
        dev.netdevs or dev.virtfns or dev.physfn or dev.sriov_totalvfs
    )


def _pci(topology: HostTopology, out: list[str]) -> None:
    devices = topology.pci_devices
    counts = Counter("absent" if d.numa_node is None else str(d.numa_node) for d in devices)
    by_node = ", ".join(f"node {k}: {v}" for k, v in sorted(counts.items()))
    out.append(f"PCI devices: {len(devices)}" + (f" ({by_node})" if devices else ""))
    shown = [d for d in devices if _interesting(d)]
    if shown:
        rows = [("ADDRESS", "CLASS", "VENDOR:DEVICE", "DRIVER", "NUMA", "SR-IOV", "NETDEVS")]
        for dev in shown:
            sriov = (
                f"PF {dev.sriov_numvfs}/{dev.sriov_totalvfs} VFs"
                if dev.sriov_totalvfs is not None
                else f"VF of {dev.physfn}"
                if dev.physfn
                else "-"
            )
            rows.append(
                (
                    dev.address,
                    dev.class_code or "?",
                    f"{(dev.vendor or '?').removeprefix('0x')}:{(dev.device or '?').removeprefix('0x')}",
                    dev.driver or "-",
                    "absent" if dev.numa_node is None else str(dev.numa_node),
                    sriov,
                    ",".join(dev.netdevs) or "-",
                )
            )
        out.extend(_table(rows))
        if len(shown) < len(devices):
            out.append(f"  (+{len(devices) - len(shown)} bridges and other system devices)")
    out.append("")


def _net(topology: HostTopology, out: list[str]) -> None:
    ifaces = topology.net_interfaces
    out.append(f"Network interfaces: {len(ifaces)}" + (f" (from {ifaces[0].source})" if ifaces else ""))
    if ifaces:
        rows = [("NAME", "IFINDEX", "KIND", "STATE", "PARENT", "PCI", "NUMA")]
        for i in ifaces:
            rows.append(
                (
                    i.name,
                    "-" if i.ifindex is None else str(i.ifindex),
                    i.kind or ("virtual" if i.virtual else "device"),
                    i.operstate or "-",
                    i.parent_device or "-",
                    i.pci_address or "-",
                    "-" if i.numa_node is None else str(i.numa_node),
                )
            )
        out.extend(_table(rows))
    out.append("")


def _kubelet(topology: HostTopology, out: list[str]) -> None:
    view = topology.kubelet_view
    out.append("Kubelet view (cadvisor + topology.Discover):")
    out.append(
        f"  topology nodes {view.num_topology_nodes} ({', '.join(map(str, view.topology_node_ids)) or '-'}), "
        f"with CPUs {view.num_numa_nodes}; CPUs {view.num_cpus}, cores {view.num_cores}, sockets "
        f"{view.num_sockets}, uncore caches {view.num_uncore_caches}"
    )
    uncore = "; ".join(
        f"node {n.id}: {format_cpulist(n.uncore_cache_ids) or '-'}" for n in view.nodes if n.cores
    )
    if uncore:
        out.append(f"  uncore cache ids: {uncore}")
    if view.would_refuse_to_start:
        out.append("  a kubelet with a NUMA-aware topology manager policy would REFUSE TO START:")
        out.extend(f"    - {reason}" for reason in view.refusal_reasons)
    else:
        out.append("  a kubelet would start with the default topology manager options")
    out.extend(f"  ! {w}" for w in view.warnings)
    out.append("")
