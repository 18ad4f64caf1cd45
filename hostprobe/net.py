"""Network interfaces, mapped to their PCI function and NUMA node.

Names and link state come from netlink (pyroute2 ``IPRoute.get_links``) on a live host and from
``sys/class/net`` for a captured tree; the PCI function and its NUMA node always come from sysfs. The
mapping resolves ``<netdev>/device`` and walks up until a directory is named like a PCI address, so a
virtio-net interface (``device`` -> ``…/0000:00:03.0/virtio2``) still reaches its PCI function, which
ghw's ``subsystem == pci`` test misses.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import NamedTuple

from hostprobe import parse
from hostprobe.model import NetInterface, PciDevice
from hostprobe.paths import HostReader


class NetlinkUnavailable(Exception):
    """pyroute2 is missing or the netlink socket is not permitted here."""


class NetlinkLink(NamedTuple):
    """The attributes of one RTM_NEWLINK message the probe uses."""

    name: str
    ifindex: int
    address: str | None
    operstate: str | None
    mtu: int | None
    kind: str | None  # IFLA_INFO_KIND: set for virtual links (bridge, veth, ifb...)
    parent: str | None  # IFLA_PARENT_DEV_NAME (kernel >= 5.15): "0000:3b:00.0", "virtio2"


def read_sysfs_interfaces(reader: HostReader, pci: Mapping[str, PciDevice]) -> tuple[NetInterface, ...]:
    base = reader.sys("class", "net")
    interfaces = []
    for name in reader.listdir(base):
        path = reader.follow(os.path.join(base, name))
        if path is None or not os.path.isdir(path):
            reader.note(f"{base}/{name}: link does not lead to a netdev directory; skipped")
            continue
        interfaces.append(_read_interface(reader, name, path, pci))
    return tuple(interfaces)


def _read_interface(reader: HostReader, name: str, path: str, pci: Mapping[str, PciDevice]) -> NetInterface:
    devices_root = reader.sys("devices")
    virtual = path.startswith(os.path.join(devices_root, "virtual") + os.sep)
    parent_dir = (
        reader.follow(os.path.join(path, "device")) if reader.exists(os.path.join(path, "device")) else None
    )
    pci_address = _nearest_pci_function(parent_dir, devices_root) if parent_dir else None
    numa_node = physfn = None
    if pci_address is not None:
        device = pci.get(pci_address)
        if device is not None:
            numa_node, physfn = device.numa_node, device.physfn
        else:
            numa_node = reader.integer(
                reader.sys("bus", "pci", "devices", pci_address, "numa_node"), optional=True
            )

    def attr(attr_name: str) -> str | None:
        return reader.word(os.path.join(path, attr_name), optional=True)

    return NetInterface(
        name=name,
        ifindex=_to_int(attr("ifindex")),
        virtual=virtual or parent_dir is None,
        kind=None,
        mac_address=attr("address"),
        operstate=attr("operstate"),
        mtu=_to_int(attr("mtu")),
        parent_device=os.path.basename(parent_dir) if parent_dir else None,
        pci_address=pci_address,
        numa_node=numa_node,
        physfn=physfn,
        phys_port_name=attr("phys_port_name"),
        source="sysfs",
    )


def _nearest_pci_function(directory: str, devices_root: str) -> str | None:
    current = directory
    while current.startswith(devices_root + os.sep):
        base = os.path.basename(current)
        if parse.is_pci_address(base):
            return base
        current = os.path.dirname(current)
    return None


def _to_int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def read_netlink_links() -> list[NetlinkLink]:
    """Links of this network namespace through netlink (live hosts only)."""
    try:
        from pyroute2 import IPRoute
    except ImportError as exc:  # pragma: no cover - pyroute2 is a declared dependency
        raise NetlinkUnavailable(f"pyroute2 not importable: {exc}") from exc
    links = []
    try:
        with IPRoute() as ipr:
            for msg in ipr.get_links():
                linkinfo = msg.get_attr("IFLA_LINKINFO")
                links.append(
                    NetlinkLink(
                        name=str(msg.get_attr("IFLA_IFNAME")),
                        ifindex=int(msg["index"]),
                        address=msg.get_attr("IFLA_ADDRESS"),
                        operstate=msg.get_attr("IFLA_OPERSTATE"),
                        mtu=msg.get_attr("IFLA_MTU"),
                        kind=linkinfo.get_attr("IFLA_INFO_KIND") if linkinfo is not None else None,
                        parent=msg.get_attr("IFLA_PARENT_DEV_NAME"),
                    )
                )
    except Exception as exc:  # socket refused, NetlinkError...: fall back to sysfs, never fail the probe
        raise NetlinkUnavailable(f"netlink: {exc}") from exc
    return links


def merge_netlink(links: list[NetlinkLink], from_sysfs: tuple[NetInterface, ...]) -> tuple[NetInterface, ...]:
    """Netlink names the links; sysfs (joined by name) adds the PCI function and NUMA node.

    A link sysfs does not show (another mount namespace's sysfs) keeps netlink's parent as a hint only.
    """
    by_name = {iface.name: iface for iface in from_sysfs}
    merged = []
    for link in links:
        known = by_name.get(link.name)
        parent = link.parent
        base = known or NetInterface(
            name=link.name,
            ifindex=None,
            virtual=parent is None,
            kind=None,
            mac_address=None,
            operstate=None,
            mtu=None,
            parent_device=parent,
            pci_address=parent if parent and parse.is_pci_address(parent) else None,
            numa_node=None,
        )
        merged.append(
            replace(
                base,
                ifindex=link.ifindex,
                kind=link.kind,
                mac_address=link.address or base.mac_address,
                operstate=(link.operstate or "").lower() or base.operstate,
                mtu=link.mtu if link.mtu is not None else base.mtu,
                parent_device=base.parent_device or parent,
                source="netlink",
            )
        )
    return tuple(sorted(merged, key=lambda iface: iface.name))
