"""koordlet's ``Device`` object for an emulated node (``koordinator.koordlet_device``):
which device-plugin resources become Koordinator devices and how, the ``device-allocated`` annotations of
the pods holding them, and NodeNUMAResource + DeviceShare reading both through ``live.node_info``."""

from __future__ import annotations

import json

import pytest

from hostprobe.model import PciDevice
from kubeletemu.config import ConfigError, parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.pod import Pod
from kubeletemu.scheduler import live
from kubeletemu.scheduler.koordinator.koordlet_device import device_type, koordlet_devices, root_complex
from kubeletemu.scheduler.objects import Device, parse_objects
from kubeletemu.scheduler.profile import evaluate, profiles_from_text
from tests.nodes import kubelet_config, probe_machine

ALLOCATED = "scheduling.koordinator.sh/device-allocated"
# Sample host: 2 NUMA nodes of 8 CPUs; kube-reserved takes CPU 0 (NUMA 0).
CONFIG = kubelet_config(
    "single-numa-node",
    "pod",
    emulator="""\
nodeName: gpu-node
devices:
- resourceName: nvidia.com/gpu
  devices: [{id: GPU-a, numaNodes: [1]}, {id: GPU-b, numaNodes: [1, 0]}, {id: GPU-c}]
- resourceName: example.com/dev
  devices: [{id: dev0, numaNodes: [0]}]
- resourceName: rdma/hca
  pciSelector: {vendors: ["8086"], devices: ["154c"]}
""",
)
KOORD = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins: {multiPoint: {enabled: [{name: NodeNUMAResource}]}}
"""
GPU = {
    "koordinator.sh/gpu-core": "100",
    "koordinator.sh/gpu-memory": "80Gi",
    "koordinator.sh/gpu-memory-ratio": "100",
}
RDMA = {"koordinator.sh/rdma": "100"}


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return probe_machine(tmp_path_factory.mktemp("sample"))


def node(machine: Machine, config: str = CONFIG) -> NodeEmulator:
    return NodeEmulator(parse_config(config), machine)


def pod(name: str, limits: str) -> Pod:
    [out] = parse_pods(
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns}}\n"
        f"spec:\n  containers:\n  - name: c\n    resources:\n      limits: {{{limits}}}\n"
    )
    return out


def _gpu(uuid: str, minor: int, numa: int, health: bool = True) -> dict[str, object]:
    topology = {"socketID": -1, "nodeID": numa, "pcieID": f"pcie-numa{numa}", "busID": uuid}
    return {
        "type": "gpu",
        "id": uuid,
        "minor": minor,
        "health": health,
        "resources": GPU,
        "topology": topology,
    }


def _rdma(address: str, minor: int, numa: int) -> dict[str, object]:
    topology = {"socketID": -1, "nodeID": numa, "pcieID": "pci" + address[:7], "busID": address}
    return {
        "type": "rdma",
        "id": address,
        "minor": minor,
        "health": True,
        "resources": RDMA,
        "topology": topology,
    }


def test_device_object_as_koordlet_publishes_it(machine: Machine) -> None:
    """GPUs and RDMA devices by minor per type, example.com/dev left out; a multi-node GPU on its lowest
    NUMA node, one without NUMA affinity on node 0 (koordlet's ParsePCIInfo turns -1 into 0); PCI
    functions with their address and root complex; plugin health; the NVIDIA vendor label."""
    emulator = node(machine)
    emulator.cm.devices.set_device_health("nvidia.com/gpu", "GPU-c", False)
    device = koordlet_devices(emulator).device
    assert device is not None
    assert device.to_manifest() == {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "Device",
        "metadata": {"name": "gpu-node", "labels": {"node.koordinator.sh/gpu-vendor": "nvidia"}},
        "spec": {
            "devices": [
                _gpu("GPU-a", 0, 1),
                _gpu("GPU-b", 1, 0),
                _gpu("GPU-c", 2, 0, health=False),
                _rdma("0000:3b:02.0", 0, 0),
                _rdma("0000:3b:02.1", 1, 0),
                _rdma("0000:86:02.0", 2, 1),
                _rdma("0000:86:02.1", 3, 1),
            ]
        },
    }
    # The objects reader takes back what is published, field for field.
    [parsed] = parse_objects(json.dumps(device.to_manifest()), "device.json")
    assert isinstance(parsed, Device) and parsed.to_manifest() == device.to_manifest()


def test_a_node_without_koordinator_devices_publishes_none(machine: Machine) -> None:
    config = CONFIG.split("devices:\n- resourceName: nvidia.com/gpu")[0] + (
        "devices:\n- resourceName: example.com/dev\n  devices: [{id: dev0, numaNodes: [0]}]\n"
    )
    emulator = node(machine, config)
    assert koordlet_devices(emulator).device is None
    assert live.published_device(emulator, live.FLAVOUR_KOORDLET) is None
    assert live.node_info(emulator, live.FLAVOUR_KOORDLET).device is None


@pytest.mark.parametrize(
    ("resource", "kind"),
    [
        ("nvidia.com/gpu", "gpu"),
        ("amd.com/gpu", "gpu"),
        ("dcu.com/gpu", "gpu"),
        ("koordinator.sh/rdma", "rdma"),
        ("rdma/hca_shared_devices_a", "rdma"),
        ("koordinator.sh/gpu", None),  # a scheduler-side request name, not a device plugin's
        ("intel.com/sriov_vf", None),
        ("example.com/gpu", None),
    ],
)
def test_resource_names_koordinator_knows(resource: str, kind: str | None) -> None:
    assert device_type(resource) == kind


def _fn(address: str, parent: str | None = None, physfn: str | None = None) -> PciDevice:
    return PciDevice(address, "0x030000", "0x10de", "0x2330", None, None, "nvidia", 1, None, physfn, (), None,
                     None, (), parent)  # fmt: skip


def test_root_complex_is_the_top_of_the_parent_chain() -> None:
    functions = {
        f.address: f
        for f in (
            _fn("0000:17:00.0"),  # root port on bus 0x17
            _fn("0000:18:00.0", parent="0000:17:00.0"),  # switch upstream port
            _fn("0000:1a:00.0", parent="0000:18:00.0"),  # the GPU
            _fn("0000:1a:00.4", physfn="0000:1a:00.0"),  # a VF without a known parent: beside its PF
        )
    }
    assert root_complex("0000:1a:00.0", functions) == "pci0000:17"
    assert root_complex("0000:1a:00.4", functions) == "pci0000:17"
    assert root_complex("0000:65:00.0", functions) == "pci0000:65"  # unknown function: its own bus


def test_pods_holding_devices_carry_device_allocated(machine: Machine) -> None:
    """Pod scope, single-numa-node: the holder's 2 CPUs, GPU and RDMA function come from one NUMA node;
    its annotation names the minors the kubelet gave it; a pod without such devices keeps its own."""
    emulator = node(machine)
    holder = pod("holder", 'cpu: "2", memory: 1Gi, nvidia.com/gpu: "1", rdma/hca: "1"')
    plain = pod("plain", 'cpu: "1", memory: 1Gi, example.com/dev: "1"')
    assert emulator.admit(holder).admitted and emulator.admit(plain).admitted
    info = live.node_info(emulator, live.FLAVOUR_KOORDLET)
    by_name = {p.name: p for p in info.pods}
    assert all(p.node_name == "gpu-node" for p in info.pods)
    assert ALLOCATED not in by_name["plain"].annotations
    gpus = emulator.cm.devices.pod_devices.pod_devices(holder.uid, "nvidia.com/gpu")
    nics = emulator.cm.devices.pod_devices.pod_devices(holder.uid, "rdma/hca")
    reported = koordlet_devices(emulator).by_plugin_id
    [gpu_minor] = [reported[("nvidia.com/gpu", g)].minor for g in gpus]
    [nic_minor] = [reported[("rdma/hca", n)].minor for n in nics]
    assert json.loads(by_name["holder"].annotations[ALLOCATED]) == {
        "gpu": [{"minor": gpu_minor, "resources": GPU}],
        "rdma": [{"minor": nic_minor, "resources": RDMA}],
    }
    # The RTE flavour carries no Device and leaves the pods' annotations alone.
    rte = live.node_info(emulator, live.FLAVOUR_RTE)
    assert rte.device is None and all(ALLOCATED not in p.annotations for p in rte.pods)


ONE_GPU = CONFIG.replace(
    "devices: [{id: GPU-a, numaNodes: [1]}, {id: GPU-b, numaNodes: [1, 0]}, {id: GPU-c}]",
    "devices: [{id: GPU-a, numaNodes: [1]}]",
)


def test_deviceshare_follows_the_kubelet_on_gpu_numa_and_use(machine: Machine) -> None:
    """The only GPU sits on NUMA 1. With NUMA 1's CPUs pinned, a GPU pod fits neither the kubelet nor
    Koordinator on koordlet's objects; without the Device (RTE's objects) Koordinator lets it through. Once
    a pod holds the GPU, Koordinator reports it used."""
    profile = profiles_from_text(KOORD, None)
    emulator = node(machine, ONE_GPU)
    gpu_pod = pod("gpu-pod", 'cpu: "4", memory: 1Gi, nvidia.com/gpu: "1"')
    fits = evaluate(gpu_pod, live.node_info(emulator, live.FLAVOUR_KOORDLET), profile)
    assert fits.status.ok and emulator.would_admit(gpu_pod).admitted

    assert emulator.admit(pod("hog", 'cpu: "8", memory: 1Gi')).admitted  # only NUMA 1 has 8 free CPUs
    kubelet = emulator.would_admit(gpu_pod)
    assert (kubelet.admitted, kubelet.reason) == (False, "TopologyAffinityError")
    koord = evaluate(gpu_pod, live.node_info(emulator, live.FLAVOUR_KOORDLET), profile)
    assert koord.status.message == (
        "Unaligned NUMA Hint cause cpu prefer [01] among [01],gpu prefer [10] among [10 11],"
        "memory prefer [01] among [01 11]"
    )
    assert evaluate(gpu_pod, live.node_info(emulator, live.FLAVOUR_RTE), profile).status.ok

    emulator = node(machine, ONE_GPU)
    assert emulator.admit(pod("holder", 'cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"')).admitted
    assert not emulator.would_admit(gpu_pod).admitted
    held = live.node_info(emulator, live.FLAVOUR_KOORDLET)
    # NodeResourcesFit sees the Node's one allocatable GPU taken; DeviceShare, alone, sees the device used.
    assert evaluate(gpu_pod, held, profile).status.message == "Insufficient nvidia.com/gpu"
    alone = profiles_from_text(KOORD.replace("]}}", "], disabled: [{name: '*'}]}}"), None)
    assert evaluate(gpu_pod, held, alone).status.message == "Insufficient GPU Devices"
    assert evaluate(gpu_pod, live.node_info(emulator, live.FLAVOUR_RTE), alone).status.ok  # no Device


def test_flavour_of_a_profile() -> None:
    assert live.profile_flavour(profiles_from_text(KOORD, None)) == live.FLAVOUR_KOORDLET
    design = KOORD.replace("NodeNUMAResource", "NodeNUMAResourceDesign")
    assert live.profile_flavour(profiles_from_text(design, None)) == live.FLAVOUR_KOORDLET
    match = KOORD.replace("NodeNUMAResource", "NodeResourceTopologyMatch")
    assert live.profile_flavour(profiles_from_text(match, None)) == live.FLAVOUR_RTE


def test_unknown_flavour_is_refused(machine: Machine) -> None:
    assert live.published_device(node(machine), "nfd") is None  # nfd-topology-updater publishes no Device
    with pytest.raises(ValueError, match="exporter flavour 'koordlet-v2'"):
        live.published_device(node(machine), "koordlet-v2")


def test_a_profile_naming_deviceshare_is_accepted(machine: Machine) -> None:
    """DeviceShare runs inside the NodeNUMAResource model: naming it (as Koordinator's shipped profile
    does) is accepted and gives the same verdicts; a misspelt name is still refused."""
    named = KOORD.replace(
        "multiPoint: {enabled: [{name: NodeNUMAResource}]}",
        "multiPoint: {enabled: [{name: NodeNUMAResource}, {name: DeviceShare}], disabled: [{name: '*'}]}",
    )
    profile = profiles_from_text(named, None)
    assert [m.name for m in profile.models] == ["NodeNUMAResource"]
    emulator = node(machine, ONE_GPU)
    assert emulator.admit(pod("holder", 'cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"')).admitted
    gpu_pod = pod("gpu-pod", 'cpu: "4", memory: 1Gi, nvidia.com/gpu: "1"')
    verdict = evaluate(gpu_pod, live.node_info(emulator, live.FLAVOUR_KOORDLET), profile)
    assert verdict.status.message == "Insufficient GPU Devices"
    with pytest.raises(ConfigError, match='unknown plugin "DeviceShares"'):
        profiles_from_text(named.replace("DeviceShare", "DeviceShares"), None)
