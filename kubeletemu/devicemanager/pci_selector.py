"""PCI functions offered as device-plugin devices, chosen by a selector in the manner of the SR-IOV network
device plugin's ``resourceList[].selectors`` (k8snetworkplumbingwg/sriov-network-device-plugin).

Functions are hostprobe ``PciDevice`` objects, read through the :class:`PCIFunction` protocol (no hostprobe
import). As in the plugin's ``GetFilteredDevices``, every field given must match and an empty field does
not filter; within a field the entries are alternatives. Fields and their plugin counterparts:

- ``vendors``, ``devices``, ``drivers``, ``pciAddresses``: the plugin's selectors of those names
  (``vendorSelector``, ``deviceSelector``, ``driverSelector``, ``pciAddressSelector``);
- ``pfNames``: ``pfNameSelector``. Only VFs have a PF name (``utils.GetPfName`` is empty for other
  functions): the first netdev of the VF's PF, compared case-insensitively. ``ens785f0#0-3,8`` keeps the
  VFs with those ``virtfnN`` indexes (``isSelected``); when several entries name the same PF only the
  first counts (``getItem``);
- ``rootDevices``: ``rootDeviceSelector``, the same with the PF's PCI address (``utils.GetPfAddr``);
- ``classes`` (class-code prefixes) and ``isVF`` are ours.

Before any field, the plugin's ``netDeviceProvider.AddTargetDevices`` drops a network PF that has VFs
enabled (``IsSriovPF && SriovConfigured``: ``sriov_totalvfs`` present, ``sriov_numvfs`` > 0): its VFs are
offered, the PF is not. ``accelDeviceProvider`` (class 0x12) has no such rule, so only network
controllers (class 0x02) are dropped. The plugin's other discovery rule, skipping the NIC that carries the
host's default route, has no counterpart here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from kubeletemu.devicemanager.devices import Device

# The class code of network controllers: the plugin's ``NetDeviceType`` device code.
_NETWORK_CLASS = "02"


class PCIFunction(Protocol):
    """What a selector reads of a PCI function: hostprobe's ``PciDevice`` attribute names."""

    @property
    def address(self) -> str: ...
    @property
    def class_code(self) -> str | None: ...  # "0x020000"
    @property
    def vendor(self) -> str | None: ...  # "0x8086"
    @property
    def device(self) -> str | None: ...
    @property
    def driver(self) -> str | None: ...
    @property
    def numa_node(self) -> int | None: ...  # as the kernel says it: -1 = unknown
    @property
    def physfn(self) -> str | None: ...  # the PF's address, on a VF
    @property
    def virtfns(self) -> Sequence[str]: ...  # a PF's VF addresses, by virtfn index
    @property
    def sriov_totalvfs(self) -> int | None: ...
    @property
    def sriov_numvfs(self) -> int | None: ...
    @property
    def netdevs(self) -> Sequence[str]: ...  # sorted, as ``os.ReadDir`` lists ``net/``


F = TypeVar("F", bound=PCIFunction)


def _hex(value: str | None) -> str:
    """Sysfs ``0x8086`` and configured ``0x8086``/``8086`` alike as ``8086`` (ghw's ``Vendor.ID`` form)."""
    text = (value or "").strip().lower()
    return text[2:] if text.startswith("0x") else text


@dataclass(frozen=True)
class PFRef:
    """A ``pfNames`` or ``rootDevices`` entry: a PF (netdev name or PCI address) and, after ``#``, the VF
    indexes kept (``None``: all its VFs)."""

    pf: str
    vf_indexes: frozenset[int] | None = None

    def selects(self, vf_index: int | None) -> bool:
        """``isSelected``: without ``#`` every VF; with it, those whose ``virtfnN`` index is listed."""
        return self.vf_indexes is None or (vf_index is not None and vf_index in self.vf_indexes)


def _first_entry(entries: Sequence[PFRef], pf: str) -> PFRef | None:
    """``getItem``: the first entry naming ``pf`` (``strings.EqualFold``); later ones are never read."""
    folded = pf.casefold()
    return next((entry for entry in entries if entry.pf.casefold() == folded), None)


@dataclass(frozen=True)
class PCISelector:
    """The ``pciSelector`` of an EmulatorConfiguration device resource (parsed by ``kubeletemu.config``).

    ``classes`` are prefixes of the 6-digit class code (``"02"`` any network controller, ``"0200"``
    Ethernet, ``"0302"`` 3D controller); ``is_vf`` keeps only VFs (true) or only other functions (false).
    Hex ids and addresses are normalised on construction (lower case, no ``0x``).
    """

    vendors: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    drivers: tuple[str, ...] = ()
    pci_addresses: tuple[str, ...] = ()
    pf_names: tuple[PFRef, ...] = ()
    root_devices: tuple[PFRef, ...] = ()
    is_vf: bool | None = None

    def __post_init__(self) -> None:
        for name in ("vendors", "devices", "classes"):
            object.__setattr__(self, name, tuple(_hex(v) for v in getattr(self, name)))
        object.__setattr__(self, "pci_addresses", tuple(a.lower() for a in self.pci_addresses))

    @property
    def is_empty(self) -> bool:
        """Selects by nothing but ``isVF`` (every function of a kind would be offered)."""
        return self == PCISelector(is_vf=self.is_vf)

    def select(self, functions: Iterable[F]) -> list[F]:
        """The functions offered under this selector, in the order given. PFs are looked up among the same
        functions: a VF whose PF is missing has no PF name, and no VF index for ``#`` entries."""
        candidates = list(functions)
        by_address: Mapping[str, PCIFunction] = {fn.address: fn for fn in candidates}
        return [fn for fn in candidates if _offered(fn) and self._matches(fn, by_address)]

    def _matches(self, fn: PCIFunction, by_address: Mapping[str, PCIFunction]) -> bool:
        if self.is_vf is not None and self.is_vf != (fn.physfn is not None):
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
        if not (self.pf_names or self.root_devices):
            return True
        if fn.physfn is None:
            return False  # neither a PF name nor a root device (both selectors skip non-VFs)
        pf = by_address.get(fn.physfn)
        vf_index = pf.virtfns.index(fn.address) if pf is not None and fn.address in pf.virtfns else None
        if self.pf_names:
            entry = _first_entry(self.pf_names, pf.netdevs[0]) if pf is not None and pf.netdevs else None
            if entry is None or not entry.selects(vf_index):
                return False
        if self.root_devices:
            entry = _first_entry(self.root_devices, fn.physfn)
            if entry is None or not entry.selects(vf_index):
                return False
        return True


def _offered(fn: PCIFunction) -> bool:
    """``netDeviceProvider.AddTargetDevices``: a network PF with VFs enabled is left out."""
    sriov_configured = fn.sriov_totalvfs is not None and (fn.sriov_numvfs or 0) > 0
    return not (sriov_configured and _hex(fn.class_code).startswith(_NETWORK_CLASS))


def devices_from_pci(functions: Iterable[PCIFunction], selector: PCISelector) -> list[Device]:
    """Device-plugin devices of the selected functions, as the plugin's ``NewAPIDeviceImpl`` builds them:
    id = PCI address; ``Topology`` = the function's ``numa_node``, none when it is -1 or absent."""
    return [
        Device(fn.address, None if fn.numa_node is None or fn.numa_node < 0 else (fn.numa_node,))
        for fn in selector.select(functions)
    ]
