"""PCI selectors applied to a small SR-IOV host: two PFs with VFs, a GPU, a bridge."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kubeletemu.config import PCISelector, PFName, parse_config


@dataclass(frozen=True)
class Function:
    """The attributes a selector reads (hostprobe's PciDevice has the same names)."""

    address: str
    class_code: str | None
    vendor: str | None
    device: str | None
    driver: str | None = None
    physfn: str | None = None
    virtfns: tuple[str, ...] = ()
    netdevs: tuple[str, ...] = ()


PF0 = Function(
    "0000:3b:00.0", "0x020000", "0x8086", "0x1593", "ice",
    virtfns=("0000:3b:01.0", "0000:3b:01.1", "0000:3b:01.2"), netdevs=("ens785f0",),
)  # fmt: skip
PF1 = Function(
    "0000:5e:00.0", "0x020000", "0x8086", "0x1593", "ice", virtfns=("0000:5e:01.0",), netdevs=("ens786f0",)
)
VFS = [
    Function(
        "0000:3b:01.0", "0x020000", "0x8086", "0x1889", "iavf", physfn=PF0.address, netdevs=("ens785f0v0",)
    ),
    Function("0000:3b:01.1", "0x020000", "0x8086", "0x1889", "vfio-pci", physfn=PF0.address),
    Function("0000:3b:01.2", "0x020000", "0x8086", "0x1889", "iavf", physfn=PF0.address),
    Function("0000:5e:01.0", "0x020000", "0x8086", "0x1889", "iavf", physfn=PF1.address),
]
GPU = Function("0000:af:00.0", "0x030200", "0x10de", "0x20b5", "nvidia")
BRIDGE = Function("0000:00:01.0", "0x060400", "0x8086", "0x2030", "pcieport")
TRIMMED = Function("0000:00:1f.0", None, None, None)  # a capture without attributes
HOST = [BRIDGE, PF0, *VFS, PF1, GPU, TRIMMED]


def selected(selector: PCISelector) -> list[str]:
    return [fn.address for fn in selector.select(HOST)]


@pytest.mark.parametrize(
    ("selector", "addresses"),
    [
        pytest.param(
            PCISelector(vendors=("8086",), devices=("1889",)), [v.address for v in VFS], id="vendor_device"
        ),
        pytest.param(
            PCISelector(vendors=("8086",)),
            [BRIDGE.address, PF0.address, *[v.address for v in VFS], PF1.address],
            id="vendor_only",
        ),
        pytest.param(PCISelector(classes=("03",)), [GPU.address], id="class_prefix_2"),
        pytest.param(PCISelector(classes=("0200",), is_vf=False), [PF0.address, PF1.address], id="pfs_only"),
        pytest.param(
            PCISelector(classes=("020000", "0302")),
            [PF0.address, *[v.address for v in VFS], PF1.address, GPU.address],
            id="classes_or",
        ),
        pytest.param(PCISelector(devices=("1889",), drivers=("vfio-pci",)), ["0000:3b:01.1"], id="driver"),
        pytest.param(
            PCISelector(drivers=("iavf",), is_vf=True),
            ["0000:3b:01.0", "0000:3b:01.2", "0000:5e:01.0"],
            id="is_vf",
        ),
        pytest.param(
            PCISelector(pci_addresses=("0000:af:00.0", "0000:5e:01.0")),
            ["0000:5e:01.0", GPU.address],
            id="addresses_keep_host_order",
        ),
        pytest.param(
            PCISelector(pf_names=(PFName("ens785f0"),)),
            [PF0.address, "0000:3b:01.0", "0000:3b:01.1", "0000:3b:01.2"],
            id="pf_name",
        ),
        pytest.param(
            PCISelector(pf_names=(PFName("ens785f0", frozenset({0, 2})),)),
            ["0000:3b:01.0", "0000:3b:01.2"],
            id="pf_name_vf_range",
        ),
        pytest.param(
            PCISelector(pf_names=(PFName("ens786f0"),), is_vf=True), ["0000:5e:01.0"], id="pf_name_vfs"
        ),
        pytest.param(PCISelector(pf_names=(PFName("ens785f0v0"),)), [], id="vf_netdev_is_not_a_pf_name"),
        pytest.param(PCISelector(vendors=("15b3",)), [], id="nothing"),
    ],
)
def test_select(selector: PCISelector, addresses: list[str]) -> None:
    assert selected(selector) == addresses


def test_selector_from_config_selects_like_the_sriov_plugin() -> None:
    config = parse_config(
        "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\n"
        "devices:\n- resourceName: intel.com/sriov_netdevice\n"
        "  pciSelector: {vendors: ['8086'], devices: ['1889'], drivers: [iavf], pfNames: ['ens785f0#0-1']}\n"
    ).emulator
    selector = config.devices[0].pci_selector
    assert selector is not None
    assert selected(selector) == ["0000:3b:01.0"]


def test_vf_whose_pf_is_not_among_the_functions() -> None:
    orphan = Function("0000:d8:02.0", "0x020000", "0x8086", "0x154c", "iavf", physfn="0000:d8:00.0")
    assert PCISelector(pf_names=(PFName("ens9"),)).select([orphan]) == []
    assert PCISelector(devices=("154c",)).select([orphan]) == [orphan]
