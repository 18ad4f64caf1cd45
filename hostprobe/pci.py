"""PCI functions: ``sys/bus/pci/devices`` (Documentation/ABI/testing/sysfs-bus-pci).

``numa_node`` is a tri-state: a node id, ``-1`` (unknown: no ACPI ``_PXM``), or no file at all (no
CONFIG_NUMA, trimmed captures). It is kept as the kernel says it; ``PciDevice.numa_affinity`` gives the
kubelet's reading, where -1 means "no topology".
"""

from __future__ import annotations

import os
import re

from hostprobe import parse
from hostprobe.model import PciDevice
from hostprobe.paths import HostReader

_VIRTFN = re.compile(r"^virtfn(\d+)$")


def read_pci_devices(reader: HostReader) -> tuple[PciDevice, ...]:
    base = reader.sys("bus", "pci", "devices")
    devices = []
    for name in reader.listdir(base):
        if not parse.is_pci_address(name):
            reader.note(f"{base}/{name}: not a PCI address; skipped")
            continue
        path = reader.follow(os.path.join(base, name))
        if path is None or not os.path.isdir(path):
            reader.note(f"{base}/{name}: link does not lead to a device directory; skipped")
            continue
        devices.append(_read_device(reader, name, path))
    return tuple(sorted(devices, key=lambda d: parse.parse_pci_address(d.address) or (0, 0, 0, 0)))


def device_dir(reader: HostReader, address: str) -> str | None:
    return reader.follow(reader.sys("bus", "pci", "devices", address))


def _read_device(reader: HostReader, address: str, path: str) -> PciDevice:
    entries = set(reader.listdir(path))

    def word(attr: str) -> str | None:
        return reader.word(os.path.join(path, attr)) if attr in entries else None

    def integer(attr: str) -> int | None:
        return reader.integer(os.path.join(path, attr)) if attr in entries else None

    if "local_cpulist" in entries:
        local_cpus = reader.cpulist(os.path.join(path, "local_cpulist"), optional=True)
    elif "local_cpus" in entries:
        local_cpus = reader.cpumask(os.path.join(path, "local_cpus"), optional=True)
    else:
        local_cpus = None

    virtfns = sorted((int(m.group(1)), name) for name in entries if (m := _VIRTFN.match(name)))
    netdevs = set(reader.listdir(os.path.join(path, "net"))) if "net" in entries else set()
    for child in entries:
        # virtio-net: the netdev hangs off a virtioN device below the PCI function.
        if child.startswith("virtio") and child[6:].isdigit():
            netdevs.update(reader.listdir(os.path.join(path, child, "net")))

    parent = os.path.basename(os.path.dirname(path))
    return PciDevice(
        address=address,
        class_code=word("class"),
        vendor=word("vendor"),
        device=word("device"),
        subsystem_vendor=word("subsystem_vendor"),
        subsystem_device=word("subsystem_device"),
        driver=reader.link_name(os.path.join(path, "driver")) if "driver" in entries else None,
        numa_node=integer("numa_node"),
        local_cpus=local_cpus,
        physfn=reader.link_name(os.path.join(path, "physfn")) if "physfn" in entries else None,
        virtfns=tuple(reader.link_name(os.path.join(path, name)) or name for _, name in virtfns),
        sriov_totalvfs=integer("sriov_totalvfs"),
        sriov_numvfs=integer("sriov_numvfs"),
        netdevs=tuple(sorted(netdevs)),
        parent=parent if parse.is_pci_address(parent) else None,
    )
