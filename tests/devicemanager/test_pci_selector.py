"""PCI selectors over hostprobe ``PciDevice``s probed from a synthetic sysfs tree, SR-IOV device plugin
style: two NIC PFs with VFs, an SR-IOV-capable PF without VFs, an accelerator PF with a VF, a GPU, a
bridge and a function without ``numa_node``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hostprobe import PciDevice, probe
from kubeletemu.config import parse_config
from kubeletemu.devicemanager import Device, PCISelector, PFRef, devices_from_pci
from tests.synthetic_sysfs import SyntheticHost, SyntheticPciFunction, write_tree

PF0_VFS = ["0000:3b:01.0", "0000:3b:01.1", "0000:3b:01.2"]
PF1_VF = "0000:5e:01.0"
PF_WITHOUT_VFS = "0000:af:00.0"
GPU = "0000:d8:00.0"
ACCEL_PF, ACCEL_VF = "0000:e0:00.0", "0000:e0:00.1"
BRIDGE, ISA = "0000:00:01.0", "0000:00:1f.0"


def _host() -> SyntheticHost:
    nic = SyntheticPciFunction  # defaults: Intel (0x8086) Ethernet controller (0x020000) on node 0
    pf0_vfs = (
        nic(PF0_VFS[0], device="0x1889", driver="iavf", netdevs=("ens785f0v0",)),
        nic(PF0_VFS[1], device="0x1889", driver="vfio-pci"),
        nic(PF0_VFS[2], device="0x1889", driver="iavf"),
    )
    return SyntheticHost(
        sockets=2,
        cores_per_socket=2,
        threads_per_core=1,
        pci_functions=(
            nic(BRIDGE, class_code="0x060400", device="0x2030", driver="pcieport"),
            nic(ISA, class_code="0x060100", device="0xa1c3", driver=None, numa_node=None),
            nic("0000:3b:00.0", device="0x1593", driver="ice", netdevs=("ens785f0",), vfs=pf0_vfs),
            nic(
                "0000:5e:00.0",
                device="0x1593",
                driver="ice",
                numa_node=1,
                netdevs=("ens786f0", "ens786f1"),
                vfs=(nic(PF1_VF, device="0x1889", driver="iavf", numa_node=-1),),
            ),
            nic(
                PF_WITHOUT_VFS,
                device="0x1593",
                driver="ice",
                numa_node=1,
                netdevs=("ens801f0",),
                sriov_totalvfs=64,
            ),
            nic(GPU, class_code="0x030200", vendor="0x10de", device="0x20b5", driver="nvidia", numa_node=1),
            nic(
                ACCEL_PF,
                class_code="0x120000",
                device="0x4940",
                driver="4xxx",
                numa_node=1,
                vfs=(nic(ACCEL_VF, class_code="0x120000", device="0x4941", driver="vfio-pci", numa_node=1),),
            ),
        ),
    )


@pytest.fixture(scope="module")
def functions(tmp_path_factory: pytest.TempPathFactory) -> tuple[PciDevice, ...]:
    sys_root, proc_root = write_tree(tmp_path_factory.mktemp("pci"), _host())
    return probe(sys_root, proc_root, netlink=False).pci_devices


def addresses(selector: PCISelector, functions: tuple[PciDevice, ...] | list[PciDevice]) -> list[str]:
    return [fn.address for fn in selector.select(functions)]


def test_the_synthetic_host_has_the_sriov_links(functions: tuple[PciDevice, ...]) -> None:
    by_address = {fn.address: fn for fn in functions}
    assert by_address["0000:3b:00.0"].virtfns == tuple(PF0_VFS)
    assert by_address["0000:3b:00.0"].sriov_numvfs == 3
    assert by_address[PF_WITHOUT_VFS].sriov_totalvfs == 64 and by_address[PF_WITHOUT_VFS].sriov_numvfs == 0
    assert by_address[PF1_VF].physfn == "0000:5e:00.0"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param(
            PCISelector(vendors=("8086",), devices=("1889",)), [*PF0_VFS, PF1_VF], id="vendor_device"
        ),
        # Network PFs with VFs enabled are never offered; the rest of Intel's functions are.
        pytest.param(
            PCISelector(vendors=("8086",)),
            [BRIDGE, ISA, *PF0_VFS, PF1_VF, PF_WITHOUT_VFS, ACCEL_PF, ACCEL_VF],
            id="vendor_only",
        ),
        pytest.param(
            PCISelector(),
            [BRIDGE, ISA, *PF0_VFS, PF1_VF, PF_WITHOUT_VFS, GPU, ACCEL_PF, ACCEL_VF],
            id="empty",
        ),
        pytest.param(PCISelector(vendors=("0x10DE",), devices=("20B5",)), [GPU], id="ids_normalised"),
        pytest.param(PCISelector(classes=("03",)), [GPU], id="class_prefix_2"),
        pytest.param(
            PCISelector(classes=("020000", "0302")), [*PF0_VFS, PF1_VF, PF_WITHOUT_VFS, GPU], id="classes_or"
        ),
        pytest.param(
            PCISelector(classes=("0200",), is_vf=False), [PF_WITHOUT_VFS], id="pf_without_vfs_offered"
        ),
        pytest.param(
            PCISelector(pci_addresses=("0000:3b:00.0", "0000:AF:00.0")),
            [PF_WITHOUT_VFS],
            id="pf_with_vfs_not_offered",
        ),
        # The exclusion is netDeviceProvider's: an accelerator PF keeps its place beside its VFs.
        pytest.param(PCISelector(classes=("12",)), [ACCEL_PF, ACCEL_VF], id="accelerator_pf_offered"),
        pytest.param(PCISelector(devices=("1889",), drivers=("vfio-pci",)), [PF0_VFS[1]], id="driver"),
        pytest.param(
            PCISelector(drivers=("iavf",), is_vf=True), [PF0_VFS[0], PF0_VFS[2], PF1_VF], id="is_vf"
        ),
        pytest.param(
            PCISelector(pci_addresses=(GPU, PF1_VF)), [PF1_VF, GPU], id="addresses_keep_the_given_order"
        ),
        pytest.param(PCISelector(pf_names=(PFRef("ens785f0"),)), PF0_VFS, id="pf_name_selects_vfs_only"),
        pytest.param(
            PCISelector(pf_names=(PFRef("ENS785F0", frozenset({0, 2})),)),
            [PF0_VFS[0], PF0_VFS[2]],
            id="pf_name_vf_indexes_case_insensitive",
        ),
        pytest.param(
            PCISelector(pf_names=(PFRef("ens785f0", frozenset({0})), PFRef("ens785f0", frozenset({1})))),
            [PF0_VFS[0]],
            id="pf_name_first_entry_wins",
        ),
        pytest.param(PCISelector(pf_names=(PFRef("ens786f0"),)), [PF1_VF], id="pf_name_first_netdev"),
        pytest.param(PCISelector(pf_names=(PFRef("ens786f1"),)), [], id="pf_name_other_netdev"),
        pytest.param(PCISelector(pf_names=(PFRef("ens801f0"),)), [], id="pf_name_of_pf_without_vfs"),
        pytest.param(PCISelector(pf_names=(PFRef("ens785f0v0"),)), [], id="vf_netdev_is_not_a_pf_name"),
        pytest.param(PCISelector(root_devices=(PFRef("0000:3b:00.0"),)), PF0_VFS, id="root_device"),
        pytest.param(
            PCISelector(root_devices=(PFRef("0000:3B:00.0", frozenset({1, 2, 7})),)),
            PF0_VFS[1:],
            id="root_device_vf_indexes",
        ),
        pytest.param(
            PCISelector(root_devices=(PFRef(PF_WITHOUT_VFS),)), [], id="root_device_is_not_its_own_root"
        ),
        pytest.param(
            PCISelector(pf_names=(PFRef("ens785f0"),), root_devices=(PFRef("0000:5e:00.0"),)),
            [],
            id="pf_name_and_root_device_and",
        ),
        pytest.param(PCISelector(vendors=("15b3",)), [], id="nothing"),
    ],
)
def test_select(selector: PCISelector, expected: list[str], functions: tuple[PciDevice, ...]) -> None:
    assert addresses(selector, functions) == expected


def test_vf_whose_pf_is_not_among_the_functions(functions: tuple[PciDevice, ...]) -> None:
    [orphan] = [fn for fn in functions if fn.address == PF0_VFS[1]]
    assert addresses(PCISelector(devices=("1889",)), [orphan]) == [orphan.address]
    assert addresses(PCISelector(root_devices=(PFRef("0000:3b:00.0"),)), [orphan]) == [orphan.address]
    # No PF: no PF name, and no virtfn index to compare.
    assert addresses(PCISelector(pf_names=(PFRef("ens785f0"),)), [orphan]) == []
    assert addresses(PCISelector(root_devices=(PFRef("0000:3b:00.0", frozenset({1})),)), [orphan]) == []


def test_function_without_ids(functions: tuple[PciDevice, ...]) -> None:
    trimmed = [
        replace(fn, vendor=None, device=None, class_code=None) if fn.address == ISA else fn
        for fn in functions
    ]
    assert ISA not in addresses(PCISelector(vendors=("8086",)), trimmed)
    assert addresses(PCISelector(pci_addresses=(ISA,)), trimmed) == [ISA]


def test_selector_normalises_ids_and_addresses() -> None:
    selector = PCISelector(
        vendors=("0x8086",), devices=("154C",), classes=("0x0200",), pci_addresses=("0000:3B:02.0",)
    )
    assert selector == PCISelector(
        vendors=("8086",), devices=("154c",), classes=("0200",), pci_addresses=("0000:3b:02.0",)
    )
    assert PCISelector(is_vf=True).is_empty and not selector.is_empty


def test_devices_carry_the_numa_node_or_no_topology(functions: tuple[PciDevice, ...]) -> None:
    devices = devices_from_pci(functions, PCISelector(classes=("0200", "0601")))
    assert devices == [
        Device(ISA, None),  # no numa_node file
        *(Device(vf, (0,)) for vf in PF0_VFS),
        Device(PF1_VF, None),  # numa_node -1
        Device(PF_WITHOUT_VFS, (1,)),
    ]


def test_selector_from_config_selects_like_the_sriov_plugin(functions: tuple[PciDevice, ...]) -> None:
    config = parse_config(
        "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\n"
        "devices:\n- resourceName: intel.com/sriov_netdevice\n"
        "  pciSelector: {vendors: ['8086'], devices: ['1889'], drivers: [iavf], pfNames: ['ens785f0#0-1']}\n"
    ).emulator
    selector = config.devices[0].pci_selector
    assert selector is not None
    assert addresses(selector, functions) == [PF0_VFS[0]]
