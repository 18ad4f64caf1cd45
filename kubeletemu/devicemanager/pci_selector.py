"""PCI functions as device-plugin devices, chosen by selectors in the manner of the SR-IOV network device
plugin's ``resourceList`` (``selectors: {vendors, devices, drivers, pciAddresses, rootDevices, ...}``).

The PCI functions come from hostprobe; this module only needs their attributes, read structurally, so it
does not import hostprobe. Within a field the values are alternatives; all given fields must match. As
in the SR-IOV plugin, a PF that has VFs is not offered itself (its VFs are).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletemu.devicemanager.devices import Device
from kubeletemu.devicemanager.errors import DeviceManagerError

_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")
_PCI_ADDRESS = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


class PCIFunction(Protocol):
    """What a hostprobe PCI device offers. ``class``, ``physfn`` and ``is_vf`` are read leniently (see
    :func:`describe`): Python cannot name an attribute ``class``."""

    @property
    def address(self) -> str: ...

    @property
    def vendor(self) -> str: ...

    @property
    def device(self) -> str: ...


@dataclass(frozen=True)
class PCIFunctionInfo:
    """The normalised view: lower-case hex without ``0x``, full ``dddd:bb:dd.f`` addresses."""

    address: str
    vendor: str
    device: str
    pci_class: str
    driver: str | None
    numa_node: int | None
    physfn: str | None
    is_vf: bool


def _hex(value: Any, width: int | None = None) -> str:
    text = str(value or "").strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    if width is not None and text:
        text = text.zfill(width)
    return text


def normalise_address(address: str) -> str:
    text = address.strip().lower()
    if not _PCI_ADDRESS.match(text):
        raise DeviceManagerError(f"invalid PCI address {address!r} (expected dddd:bb:dd.f)")
    return text if text.count(":") == 2 else "0000:" + text


def _attr(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, Mapping) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


def describe(fn: PCIFunction | Mapping[str, Any]) -> PCIFunctionInfo:
    """Read a PCI function object (or a hostprobe JSON dict) into :class:`PCIFunctionInfo`."""
    address = _attr(fn, "address")
    if not isinstance(address, str):
        raise DeviceManagerError(f"PCI function without an address: {fn!r}")
    numa = _attr(fn, "numa_node", "numaNode")
    physfn = _attr(fn, "physfn", "physfn_address", "pf_address", "physfnAddress")
    is_vf = _attr(fn, "is_vf", "is_virtfn", "isVF")
    return PCIFunctionInfo(
        address=normalise_address(address),
        vendor=_hex(_attr(fn, "vendor"), 4),
        device=_hex(_attr(fn, "device"), 4),
        pci_class=_hex(_attr(fn, "class", "class_", "pci_class", "device_class", "klass"), 6),
        driver=_attr(fn, "driver"),
        numa_node=numa if isinstance(numa, int) and not isinstance(numa, bool) and numa >= 0 else None,
        physfn=normalise_address(physfn) if isinstance(physfn, str) and physfn else None,
        is_vf=bool(is_vf) if is_vf is not None else bool(physfn),
    )


_FIELDS = ("vendors", "devices", "drivers", "pciAddresses", "classes", "rootDevices", "isVF")


@dataclass(frozen=True)
class PCISelector:
    """``pciSelector`` of the EmulatorConfiguration. Empty fields match everything.

    ``classes`` match by prefix (``"02"`` = any network controller, ``"0200"`` = Ethernet);
    ``rootDevices`` are PF addresses (a VF matches when its PF is listed, a PF when it is listed itself);
    ``isVF`` keeps only VFs (true) or only non-VFs (false).
    """

    vendors: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    drivers: tuple[str, ...] = ()
    pci_addresses: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    root_devices: tuple[str, ...] = ()
    is_vf: bool | None = None

    @classmethod
    def from_config(cls, raw: Mapping[str, Any]) -> PCISelector:
        if not isinstance(raw, Mapping):
            raise DeviceManagerError(f"pciSelector must be a mapping, got {type(raw).__name__}")
        unknown = sorted(set(raw) - set(_FIELDS))
        if unknown:
            raise DeviceManagerError(f"pciSelector: unknown field(s) {unknown}; known: {list(_FIELDS)}")

        def strings(name: str) -> list[str]:
            value = raw.get(name, [])
            if (
                isinstance(value, str)
                or not isinstance(value, list)
                or not all(isinstance(v, str) for v in value)
            ):
                raise DeviceManagerError(f"pciSelector.{name} must be a list of strings, got {value!r}")
            return value

        def hexes(name: str, width: int | None) -> tuple[str, ...]:
            values = strings(name)
            for v in values:
                if not _HEX.match(v.strip()):
                    raise DeviceManagerError(f"pciSelector.{name}: {v!r} is not a hexadecimal id")
            return tuple(_hex(v, width) for v in values)

        is_vf = raw.get("isVF")
        if is_vf is not None and not isinstance(is_vf, bool):
            raise DeviceManagerError(f"pciSelector.isVF must be a boolean, got {is_vf!r}")
        return cls(
            vendors=hexes("vendors", 4),
            devices=hexes("devices", 4),
            drivers=tuple(strings("drivers")),
            pci_addresses=tuple(normalise_address(a) for a in strings("pciAddresses")),
            classes=hexes("classes", None),
            root_devices=tuple(normalise_address(a) for a in strings("rootDevices")),
            is_vf=is_vf,
        )

    def matches(self, fn: PCIFunctionInfo) -> bool:
        if self.vendors and fn.vendor not in self.vendors:
            return False
        if self.devices and fn.device not in self.devices:
            return False
        if self.drivers and fn.driver not in self.drivers:
            return False
        if self.pci_addresses and fn.address not in self.pci_addresses:
            return False
        if self.classes and not any(fn.pci_class.startswith(c) for c in self.classes):
            return False
        if self.root_devices and (fn.physfn or fn.address) not in self.root_devices:
            return False
        return self.is_vf is None or fn.is_vf == self.is_vf


def select_pci_functions(
    functions: Iterable[PCIFunction | Mapping[str, Any]], selector: PCISelector
) -> list[PCIFunctionInfo]:
    """The matching functions, by address; PFs whose VFs are present are left out."""
    infos = [describe(f) for f in functions]
    parents = {f.physfn for f in infos if f.physfn}
    chosen = [f for f in infos if f.address not in parents and selector.matches(f)]
    return sorted(chosen, key=lambda f: f.address)


def devices_from_pci(
    functions: Iterable[PCIFunction | Mapping[str, Any]], selector: PCISelector
) -> list[Device]:
    """Device-plugin devices: id = PCI address, topology = the function's NUMA node (none when -1)."""
    return [
        Device(f.address, None if f.numa_node is None else (f.numa_node,))
        for f in select_pci_functions(functions, selector)
    ]
