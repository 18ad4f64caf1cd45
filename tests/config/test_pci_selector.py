"""``pciSelector`` of an EmulatorConfiguration device resource: parsing and its error messages (what a
selector selects is tested in ``tests/devicemanager/test_pci_selector.py``)."""

from __future__ import annotations

import pytest

from kubeletemu.config import ConfigError, parse_config
from kubeletemu.devicemanager import PCISelector, PFRef

PREFIX = "emu.yaml: devices[0].pciSelector"


def selector(body: str) -> PCISelector:
    config = parse_config(
        "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\n"
        f"devices:\n- resourceName: intel.com/vf\n  pciSelector: {body}\n",
        "emu.yaml",
    ).emulator
    parsed = config.devices[0].pci_selector
    assert parsed is not None
    return parsed


def test_every_field_normalised() -> None:
    parsed = selector(
        "\n    vendors: ['0x8086', 8086]\n    devices: ['154C']\n    classes: ['0x0200', '03']\n"
        "    drivers: [iavf, vfio-pci]\n    pciAddresses: ['0000:3B:02.0', '10000:01:00.0']\n"
        "    pfNames: [ens785f0, 'ens785f1#0-2,5']\n    rootDevices: ['0000:5e:00.0#3', '0000:5E:01.0']\n"
        "    isVF: true"
    )
    assert parsed == PCISelector(
        vendors=("8086", "8086"),
        devices=("154c",),
        classes=("0200", "03"),
        drivers=("iavf", "vfio-pci"),
        pci_addresses=("0000:3b:02.0", "10000:01:00.0"),
        pf_names=(PFRef("ens785f0"), PFRef("ens785f1", frozenset({0, 1, 2, 5}))),
        root_devices=(PFRef("0000:5e:00.0", frozenset({3})), PFRef("0000:5E:01.0")),
        is_vf=True,
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param("{isVF: true}", ": select by at least one of vendors, devices, classes", id="empty"),
        pytest.param("[]", ": expected a mapping, got a list", id="not_a_mapping"),
        pytest.param("{vendor: ['8086']}", ".vendor: unknown field: expected one of vendors,", id="unknown"),
        pytest.param("{vendors: '8086'}", ".vendors: expected a list, got a string", id="not_a_list"),
        pytest.param(
            "{vendors: [intel]}", ".vendors[0]: 'intel' is not a 4-digit hex vendor id", id="vendor"
        ),
        pytest.param(
            "{devices: ['0x15']}", ".devices[0]: '0x15' is not a 4-digit hex device id", id="device"
        ),
        pytest.param(
            "{classes: ['020']}",
            ".classes[0]: '020' is not a PCI class prefix of 2, 4 or 6 hex digits",
            id="class",
        ),
        pytest.param(
            "{classes: [0200]}",
            ".classes[0]: '128' is not a PCI class prefix of 2, 4 or 6 hex digits such as 0200 (YAML read an "
            "unquoted number; quote the value)",
            id="class_octal",
        ),
        pytest.param("{drivers: [[iavf]]}", ".drivers[0]: expected a string, got a list", id="driver"),
        pytest.param(
            "{pciAddresses: ['3b:02.0']}",
            ".pciAddresses[0]: '3b:02.0' is not a PCI address",
            id="short_address",
        ),
        pytest.param("{pfNames: [5]}", ".pfNames[0]: expected a string, got an integer", id="pf_type"),
        pytest.param(
            "{pfNames: ['ens1#3-1']}", ".pfNames[0]: VF index range '3-1' runs backwards", id="pf_range"
        ),
        pytest.param(
            "{pfNames: ['ens1#0-99999999']}", ".pfNames[0]: VF index 99999999 is beyond any PF", id="pf_huge"
        ),
        pytest.param("{pfNames: ['ens1#x']}", ".pfNames[0]: 'ens1#x' is not a netdev name", id="pf_syntax"),
        pytest.param(
            "{pfNames: ['ens1#1,']}", ".pfNames[0]: 'ens1#1,' is not a netdev name", id="pf_trailing"
        ),
        pytest.param("{pfNames: ['#1']}", ".pfNames[0]: '#1' is not a netdev name", id="pf_missing"),
        pytest.param(
            "{rootDevices: [ens1]}",
            ".rootDevices[0]: 'ens1' is not a PF's PCI address",
            id="root_not_address",
        ),
        pytest.param(
            "{rootDevices: ['0000:3b:00.0#2-']}",
            ".rootDevices[0]: '0000:3b:00.0#2-' is not a PF's PCI address",
            id="root_range_syntax",
        ),
        pytest.param(
            "{rootDevices: ['0000:3b:00.0#4-2']}",
            ".rootDevices[0]: VF index range '4-2' runs backwards",
            id="root_range",
        ),
        pytest.param(
            "{drivers: [iavf], isVF: 'yes'}", ".isVF: expected true or false, got a string", id="is_vf"
        ),
    ],
)
def test_rejected(body: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        selector(body)
    assert str(err.value).startswith(PREFIX + message)
