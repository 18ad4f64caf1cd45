"""PCI functions matched by selectors, SR-IOV device plugin style."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kubeletemu.devicemanager import (
    Device,
    DeviceManagerError,
    PCISelector,
    devices_from_pci,
    select_pci_functions,
)


@dataclass
class Fn:
    """Shaped like a hostprobe PCI device object."""

    address: str
    vendor: str
    device: str
    class_: str
    driver: str | None
    numa_node: int | None
    physfn: str | None = None


PF0 = Fn("0000:3b:00.0", "8086", "1593", "0x020000", "ice", 0)
VF0 = Fn("0000:3b:01.0", "8086", "1889", "0x020000", "iavf", 0, physfn="0000:3b:00.0")
VF1 = Fn("0000:3b:01.1", "8086", "1889", "0x020000", "vfio-pci", 0, physfn="0000:3b:00.0")
PF1 = Fn("0000:af:00.0", "8086", "1593", "0x020000", "ice", 1)  # no VFs
GPU = Fn("0000:d8:00.0", "10de", "20b5", "0x030200", "nvidia", -1)
ALL = [GPU, PF1, VF1, PF0, VF0]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"vendors": ["8086"], "devices": ["1889"]}, ["0000:3b:01.0", "0000:3b:01.1"]),
        ({"vendors": ["0x8086"], "drivers": ["vfio-pci"]}, ["0000:3b:01.1"]),
        # The PF with VFs is never offered; the one without VFs is.
        ({"vendors": ["8086"], "devices": ["1593"]}, ["0000:af:00.0"]),
        ({"rootDevices": ["3b:00.0"]}, ["0000:3b:01.0", "0000:3b:01.1"]),
        ({"classes": ["03"]}, ["0000:d8:00.0"]),
        ({"classes": ["0200"], "isVF": False}, ["0000:af:00.0"]),
        ({"pciAddresses": ["0000:d8:00.0", "0000:af:00.0"]}, ["0000:af:00.0", "0000:d8:00.0"]),
        ({}, ["0000:3b:01.0", "0000:3b:01.1", "0000:af:00.0", "0000:d8:00.0"]),
    ],
)
def test_selection(selector: dict[str, object], expected: list[str]) -> None:
    got = [f.address for f in select_pci_functions(ALL, PCISelector.from_config(selector))]
    assert got == expected


def test_devices_carry_numa_or_no_topology() -> None:
    devices = devices_from_pci(
        [
            *ALL,
            {
                "address": "0000:00:1f.6",
                "vendor": "8086",
                "device": "15bb",
                "class": "0x020000",
                "numa_node": None,
            },
        ],
        PCISelector.from_config({"classes": ["0200", "0302"], "isVF": False}),
    )
    assert devices == [
        Device("0000:00:1f.6", None),
        Device("0000:af:00.0", (1,)),
        Device("0000:d8:00.0", None),
    ]


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({"vendor": ["8086"]}, "unknown field"),
        ({"vendors": "8086"}, "must be a list of strings"),
        ({"devices": ["zz"]}, "not a hexadecimal id"),
        ({"pciAddresses": ["3b:00"]}, "invalid PCI address"),
        ({"isVF": "yes"}, "must be a boolean"),
    ],
)
def test_bad_selectors(selector: dict[str, object], message: str) -> None:
    with pytest.raises(DeviceManagerError, match=message):
        PCISelector.from_config(selector)
