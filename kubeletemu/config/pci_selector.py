"""PCI function selectors for emulated device-plugin resources, after the SR-IOV network device plugin's
``resourceList[].selectors``.

Every field is a list; a function must match at least one entry of each field given (fields AND, entries
OR), as in the SR-IOV plugin. Hex ids are compared without ``0x`` and case-insensitively. Fields:

- ``vendors`` / ``devices``: PCI vendor and device ids (``"8086"``, ``"154c"``);
- ``classes``: class-code prefixes of 2, 4 or 6 hex digits (``"02"`` any network controller,
  ``"0200"`` Ethernet, ``"0302"`` 3D controller) - an addition of ours;
- ``drivers``: the bound driver (``"iavf"``, ``"vfio-pci"``);
- ``pciAddresses``: exact functions (``"0000:3b:02.0"``);
- ``pfNames``: the physical function's netdev (``"ens785f0"``); ``"ens785f0#0-3,8"`` keeps only the VFs
  of that PF with those indexes. A PF's own netdev name also selects the PF itself (no ``#``);
- ``isVF``: ``true`` keeps only SR-IOV virtual functions, ``false`` only other functions - ours too.

A selected function becomes one device whose id is its PCI address and whose NUMA node is the function's
``numa_node`` (none when the kernel says ``-1``), as device plugins report it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletemu.config import fields
from kubeletemu.config.fields import Where

_HEX_ID = re.compile(r"^(0x)?([0-9a-fA-F]{4})$")
_CLASS = re.compile(r"^(0x)?([0-9a-fA-F]{2}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6})$")
_BDF = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_PF_NAME = re.compile(r"^([^#\s/]+)(?:#(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*))?$")
_MAX_VF_INDEX = 0xFFFF
_KEYS = ("vendors", "devices", "classes", "drivers", "pciAddresses", "pfNames", "isVF")


class PCIFunction(Protocol):
    """What a selector reads of a PCI function (``hostprobe``'s ``PciDevice`` has these)."""

    @property
    def address(self) -> str: ...
    @property
    def class_code(self) -> str | None: ...
    @property
    def vendor(self) -> str | None: ...
    @property
    def device(self) -> str | None: ...
    @property
    def driver(self) -> str | None: ...
    @property
    def physfn(self) -> str | None: ...
    @property
    def virtfns(self) -> Sequence[str]: ...
    @property
    def netdevs(self) -> Sequence[str]: ...


def _hex(value: str | None) -> str:
    text = (value or "").lower()
    return text[2:] if text.startswith("0x") else text


@dataclass(frozen=True)
class PFName:
    """A ``pfNames`` entry: a PF netdev and, optionally, the VF indexes kept (``None`` = no ``#``)."""

    netdev: str
    vf_indexes: frozenset[int] | None = None


@dataclass(frozen=True)
class PCISelector:
    vendors: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    drivers: tuple[str, ...] = ()
    pci_addresses: tuple[str, ...] = ()
    pf_names: tuple[PFName, ...] = ()
    is_vf: bool | None = None

    def select(self, functions: Iterable[PCIFunction]) -> list[PCIFunction]:
        """The matching functions, in the order given (PFs are looked up among the same functions)."""
        candidates = list(functions)
        by_address = {fn.address: fn for fn in candidates}
        return [fn for fn in candidates if self._matches(fn, by_address)]

    def _matches(self, fn: PCIFunction, by_address: dict[str, PCIFunction]) -> bool:
        is_vf = fn.physfn is not None
        if self.is_vf is not None and self.is_vf != is_vf:
            return False
        if self.vendors and _hex(fn.vendor) not in self.vendors:
            return False
        if self.devices and _hex(fn.device) not in self.devices:
            return False
        if self.classes and not any(_hex(fn.class_code).startswith(c) for c in self.classes):
            return False
        if self.drivers and fn.driver not in self.drivers:
            return False
        if self.pci_addresses and fn.address.lower() not in self.pci_addresses:
            return False
        return not self.pf_names or any(self._matches_pf(fn, name, by_address) for name in self.pf_names)

    @staticmethod
    def _matches_pf(fn: PCIFunction, name: PFName, by_address: dict[str, PCIFunction]) -> bool:
        if fn.physfn is None:
            return name.vf_indexes is None and name.netdev in fn.netdevs
        pf = by_address.get(fn.physfn)
        if pf is None or name.netdev not in pf.netdevs:
            return False
        if name.vf_indexes is None:
            return True
        return fn.address in pf.virtfns and pf.virtfns.index(fn.address) in name.vf_indexes


def parse_pci_selector(where: Where, path: str, value: Any) -> PCISelector:
    doc = fields.mapping(where, path, value)
    for key in doc:
        if key not in _KEYS:
            raise where.error(f"{path}.{key}", f"unknown field; expected one of {', '.join(_KEYS)}")

    def entries(key: str, pattern: re.Pattern[str], what: str) -> tuple[str, ...]:
        result = []
        for index, raw in enumerate(fields.sequence(where, f"{path}.{key}", doc.get(key))):
            entry_path = f"{path}.{key}[{index}]"
            text = fields.scalar_text(where, entry_path, raw)
            if not pattern.match(text):
                raise where.error(entry_path, f"{text!r} is not {what}")
            result.append(_hex(text) if pattern is not _BDF else text.lower())
        return tuple(result)

    drivers = tuple(
        fields.string(where, f"{path}.drivers[{i}]", d)
        for i, d in enumerate(fields.sequence(where, f"{path}.drivers", doc.get("drivers")))
    )
    pf_names = tuple(
        _pf_name(where, f"{path}.pfNames[{i}]", raw)
        for i, raw in enumerate(fields.sequence(where, f"{path}.pfNames", doc.get("pfNames")))
    )
    is_vf = None if doc.get("isVF") is None else fields.boolean(where, f"{path}.isVF", doc["isVF"])
    selector = PCISelector(
        vendors=entries("vendors", _HEX_ID, "a 4-digit hex vendor id such as 8086"),
        devices=entries("devices", _HEX_ID, "a 4-digit hex device id such as 154c"),
        classes=entries("classes", _CLASS, "a PCI class prefix of 2, 4 or 6 hex digits such as 0200"),
        drivers=drivers,
        pci_addresses=entries("pciAddresses", _BDF, "a PCI address such as 0000:3b:02.0"),
        pf_names=pf_names,
        is_vf=is_vf,
    )
    if selector == PCISelector(is_vf=is_vf):
        raise where.error(
            path, "select by at least one of vendors, devices, classes, drivers, pciAddresses, pfNames"
        )
    return selector


def _pf_name(where: Where, path: str, raw: Any) -> PFName:
    text = fields.string(where, path, raw)
    match = _PF_NAME.match(text)
    if match is None:
        raise where.error(path, f"{text!r} is not a netdev name, optionally with VF indexes (ens785f0#0-3,8)")
    netdev, ranges = match.groups()
    if ranges is None:
        return PFName(netdev)
    indexes: set[int] = set()
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        low, high = int(first), int(last or first)
        if low > high:
            raise where.error(path, f"VF index range {part!r} runs backwards")
        if high > _MAX_VF_INDEX:
            raise where.error(path, f"VF index {high} is beyond any PF (sriov_totalvfs is 16-bit)")
        indexes.update(range(low, high + 1))
    return PFName(netdev, frozenset(indexes))
