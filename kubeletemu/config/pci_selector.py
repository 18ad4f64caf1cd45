"""The ``pciSelector`` of an EmulatorConfiguration device resource, read into
:class:`kubeletemu.devicemanager.pci_selector.PCISelector` (which documents what each field selects).

```yaml
pciSelector:
  vendors: ["8086"]             # 4 hex digits, 0x optional
  devices: ["154c"]
  classes: ["0200"]             # class-code prefix of 2, 4 or 6 hex digits
  drivers: [iavf, vfio-pci]
  pciAddresses: ["0000:3b:02.0"]
  pfNames: ["ens785f0#0-3,8"]   # VFs of that PF; "#..." keeps those virtfn indexes
  rootDevices: ["0000:3b:00.0#0-1"]  # the same, by the PF's PCI address
  isVF: true
```

Only the syntax is checked here, each problem naming its field (``devices[1].pciSelector.pfNames[0]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hostprobe.parse import is_pci_address
from kubeletemu.config import fields
from kubeletemu.config.fields import Where
from kubeletemu.devicemanager.pci_selector import PCISelector, PFRef

_HEX_ID = re.compile(r"^(0x)?[0-9a-fA-F]{4}$")
_CLASS = re.compile(r"^(0x)?([0-9a-fA-F]{2}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6})$")
_NETDEV = re.compile(r"^[^#\s/]+$")
_VF_RANGES = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")
_MAX_VF_INDEX = 0xFFFF
_KEYS = ("vendors", "devices", "classes", "drivers", "pciAddresses", "pfNames", "rootDevices", "isVF")


def parse_pci_selector(where: Where, path: str, value: Any) -> PCISelector:
    doc = fields.mapping(where, path, value)
    fields.known_fields(where, path, doc, _KEYS)

    def items(key: str) -> list[tuple[str, Any]]:
        return [
            (f"{path}.{key}[{i}]", raw)
            for i, raw in enumerate(fields.sequence(where, f"{path}.{key}", doc.get(key)))
        ]

    def matching(key: str, valid: Callable[[str], object], what: str) -> tuple[str, ...]:
        result = []
        for entry_path, raw in items(key):
            text = fields.scalar_text(where, entry_path, raw)  # an unquoted 8086 is YAML's integer
            if not valid(text):
                # YAML 1.1 reads an unquoted 0200 as the octal 128: say so rather than leave a puzzle.
                hint = " (YAML read an unquoted number; quote the value)" if isinstance(raw, int) else ""
                raise where.error(entry_path, f"{text!r} is not {what}{hint}")
            result.append(text)
        return tuple(result)

    selector = PCISelector(
        vendors=matching("vendors", _HEX_ID.match, "a 4-digit hex vendor id such as 8086"),
        devices=matching("devices", _HEX_ID.match, "a 4-digit hex device id such as 154c"),
        classes=matching("classes", _CLASS.match, "a PCI class prefix of 2, 4 or 6 hex digits such as 0200"),
        drivers=tuple(fields.string(where, p, raw) for p, raw in items("drivers")),
        pci_addresses=matching("pciAddresses", is_pci_address, "a PCI address such as 0000:3b:02.0"),
        pf_names=tuple(
            _pf_ref(
                where, p, raw, _NETDEV.match, "a netdev name, optionally with VF indexes (ens785f0#0-3,8)"
            )
            for p, raw in items("pfNames")
        ),
        root_devices=tuple(
            _pf_ref(
                where,
                p,
                raw,
                is_pci_address,
                "a PF's PCI address, optionally with VF indexes (0000:3b:00.0#0-3)",
            )
            for p, raw in items("rootDevices")
        ),
        is_vf=None if doc.get("isVF") is None else fields.boolean(where, f"{path}.isVF", doc["isVF"]),
    )
    if selector.is_empty:
        raise where.error(path, f"select by at least one of {', '.join(_KEYS[:-1])}")
    return selector


def _pf_ref(where: Where, path: str, raw: Any, valid_pf: Callable[[str], object], what: str) -> PFRef:
    """``<pf>`` or ``<pf>#<i>[-<j>][,...]``, the plugin's ``isSelected`` syntax."""
    text = fields.string(where, path, raw)
    pf, hash_sign, ranges = text.partition("#")
    if not valid_pf(pf) or (hash_sign and not _VF_RANGES.match(ranges)):
        raise where.error(path, f"{text!r} is not {what}")
    if not hash_sign:
        return PFRef(pf)
    indexes: set[int] = set()
    for part in ranges.split(","):
        first, _, last = part.partition("-")
        low, high = int(first), int(last or first)
        if low > high:
            raise where.error(path, f"VF index range {part!r} runs backwards")
        if high > _MAX_VF_INDEX:
            raise where.error(path, f"VF index {high} is beyond any PF (sriov_totalvfs is 16-bit)")
        indexes.update(range(low, high + 1))
    return PFRef(pf, frozenset(indexes))
