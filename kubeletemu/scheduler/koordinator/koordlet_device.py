"""The ``Device`` object (``scheduling.koordinator.sh/v1alpha1``) koordlet publishes for an emulated node,
and the ``device-allocated`` annotations of the pods that hold its devices, as koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` builds them (``pkg/koordlet/statesinformer/impl/
states_device_linux.go``: ``reportDevice``, ``buildGPUDevice``, ``buildRDMADevice``, ``fillGPUDevice``,
``updateDevice``'s sort; ``pkg/koordlet/metricsadvisor/devices/helper/topology.go``: ``ParsePCIInfo``).

koordlet finds GPUs through NVML and RDMA NICs through sysfs; the emulated node has neither, only the
device-plugin devices the kubelet sees. They are reported as follows.

Which devices (the kubelet resource name decides the Koordinator device type; Koordinator's own names,
``apis/extension/device_share.go``):

- ``nvidia.com/gpu``, ``amd.com/gpu``, ``dcu.com/gpu`` → ``gpu``;
- ``koordinator.sh/rdma`` and every ``rdma/…`` resource (the RDMA shared device plugin's prefix) → ``rdma``;
- every other resource is left out (koordlet reports no device it cannot classify; FPGAs and XPUs, which
  koordlet reads from device-info files, are not emulated).

Each device:

- ``minor``: 0, 1, … per device type, resources in configuration order, devices in the order their plugin
  lists them (koordlet uses NVML's minor / the ``mlx5_N`` index, which the emulated node does not have);
- ``id`` (``UUID``): the device-plugin device id; ``health``: the device plugin's health;
- ``resources``: gpu: ``gpu-core`` 100, ``gpu-memory`` :data:`GPU_MEMORY` (NVML's total memory; the emulated
  node does not know it, so a documented placeholder), ``gpu-memory-ratio`` 100; rdma: ``koordinator.sh/rdma``
  100;
- ``topology``: ``socketID`` -1 (koordlet never fills it), ``nodeID`` the device's NUMA node — the lowest
  when the plugin gives several, and 0 when it gives none, as ``ParsePCIInfo`` turns sysfs' ``-1`` into 0 —
  ``pcieID`` and ``busID``: for a device whose id is a PCI function the node has (``pciSelector``
  resources), its address and its root complex ``pciDDDD:BB`` (the top of its ``parent`` chain, as the
  sysfs path koordlet resolves starts with it), with that function's ``numa_node``; for a static device,
  busID is its id and pcieID ``pcie-numa<N>`` (one placeholder root complex per NUMA node, so PCIe scope is
  NUMA-node scope for static devices). koordlet drops a GPU's topology when busID or pcieID is empty; here
  they never are. RDMA virtual functions (``vfGroups``) are not reported.

The object: named after the node, devices sorted by type then minor (``updateDevice``), the label
``node.koordinator.sh/gpu-vendor: nvidia`` when an ``nvidia.com/gpu`` device is reported (``fillGPUDevice``
sets it for NVML's GPUs; the model and driver labels need NVML and are left out), no annotations.

Pods holding those devices carry ``scheduling.koordinator.sh/device-allocated`` as Koordinator's scheduler
would have written it for them: per type, each held device's minor and its full resources (the kubelet
gives a device to one pod). The kubelet's assignment replaces an annotation the pod brought with it; a pod
holding none of these devices keeps its annotations as they are.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from kubeletemu.pod import Pod
from kubeletemu.podresources import view
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.koordinator.deviceshare import api
from kubeletemu.scheduler.objects import Device, DeviceInfo, DeviceTopology

if TYPE_CHECKING:
    from hostprobe.model import PciDevice
    from kubeletemu.emulator import NodeEmulator

GPU_RESOURCES = (api.RESOURCE_NVIDIA_GPU, api.RESOURCE_AMD_GPU, api.RESOURCE_HYGON_DCU)
RDMA_RESOURCE_PREFIX = "rdma/"
# NVML's memory.Total of an 80 GB data-centre GPU (A100/H100 80GB): the emulated node has no NVML.
GPU_MEMORY = Quantity.parse("80Gi")
_HUNDRED = Quantity.parse("100")
_GPU_RESOURCES = MappingProxyType(
    {
        api.RESOURCE_GPU_CORE: _HUNDRED,
        api.RESOURCE_GPU_MEMORY: GPU_MEMORY,
        api.RESOURCE_GPU_MEMORY_RATIO: _HUNDRED,
    }
)
_RDMA_RESOURCES = MappingProxyType({api.RESOURCE_RDMA: _HUNDRED})
SOCKET_UNKNOWN = -1


def device_type(resource: str) -> str | None:
    """The Koordinator device type of a kubelet device-plugin resource; None: not reported."""
    if resource in GPU_RESOURCES:
        return api.GPU
    if resource == api.RESOURCE_RDMA or resource.startswith(RDMA_RESOURCE_PREFIX):
        return api.RDMA
    return None


@dataclass(frozen=True)
class ReportedDevices:
    """The Device object (None: no device to report) and, per (kubelet resource, device id), the
    device as reported."""

    device: Device | None
    by_plugin_id: Mapping[tuple[str, str], DeviceInfo]


def root_complex(address: str, functions: Mapping[str, PciDevice]) -> str:
    """``getPCIERootComplexID``: ``pciDDDD:BB`` of the root bus the function hangs from (up its
    ``parent`` chain; a VF sits beside its PF, so on from the PF when the VF's own parent is unknown)."""
    top, seen = address, {address}
    while (fn := functions.get(top)) is not None and (up := fn.parent or fn.physfn) and up not in seen:
        top = up
        seen.add(top)
    return "pci" + top.rsplit(":", 1)[0]


def _topology(
    plugin_id: str, numa_nodes: Sequence[int] | None, functions: Mapping[str, PciDevice]
) -> DeviceTopology:
    fn = functions.get(plugin_id)
    if fn is not None:
        node = fn.numa_node if fn.numa_node is not None and fn.numa_node >= 0 else 0
        return DeviceTopology(SOCKET_UNKNOWN, node, root_complex(plugin_id, functions), plugin_id)
    node = min(numa_nodes) if numa_nodes else 0
    return DeviceTopology(SOCKET_UNKNOWN, node, f"pcie-numa{node}", plugin_id)


def koordlet_devices(emulator: NodeEmulator) -> ReportedDevices:
    """The node's ``Device`` object as koordlet's device reporter publishes it now."""
    manager = emulator.cm.devices
    functions = {fn.address: fn for fn in emulator.machine.pci_devices}
    minors: dict[str, int] = {}
    by_id: dict[tuple[str, str], DeviceInfo] = {}
    vendor_nvidia = False
    for resource in emulator.config.emulator.devices:
        name = resource.resource_name
        kind = device_type(name)
        if kind is None:
            continue
        for plugin_device in manager.all_devices.get(name, {}).values():
            minor = minors.get(kind, 0)
            minors[kind] = minor + 1
            by_id[(name, plugin_device.id)] = DeviceInfo(
                type=kind,
                minor=minor,
                health=plugin_device.healthy,
                uuid=plugin_device.id,
                resources=_GPU_RESOURCES if kind == api.GPU else _RDMA_RESOURCES,
                topology=_topology(plugin_device.id, plugin_device.numa_nodes, functions),
            )
            vendor_nvidia = vendor_nvidia or name == api.RESOURCE_NVIDIA_GPU
    if not by_id:
        return ReportedDevices(None, MappingProxyType(by_id))
    labels = {api.LABEL_GPU_VENDOR: api.GPU_VENDOR_NVIDIA} if vendor_nvidia else {}
    device = Device(
        name=view.node_name(emulator.config),
        devices=tuple(sorted(by_id.values(), key=lambda d: (d.type, d.minor))),
        labels=MappingProxyType(labels),
    )
    return ReportedDevices(device, MappingProxyType(by_id))


def device_allocated(emulator: NodeEmulator, pod: Pod, reported: ReportedDevices) -> str | None:
    """The pod's ``device-allocated`` annotation from the devices the kubelet gave it; None: it holds
    none of the reported devices."""
    held: dict[str, list[DeviceInfo]] = {}
    pod_devices = emulator.cm.devices.pod_devices
    by_resource: dict[str, set[str]] = {}
    for (resource, plugin_id), info in reported.by_plugin_id.items():
        if resource not in by_resource:
            by_resource[resource] = pod_devices.pod_devices(pod.uid, resource)
        if plugin_id in by_resource[resource]:
            held.setdefault(info.type, []).append(info)
    if not held:
        return None
    # Quantities in their canonical text ("80Gi"), as the scheduler's json.Marshal writes them.
    doc = {
        kind: [
            {"minor": i.minor, "resources": {k: str(q) for k, q in sorted(i.resources.items())}}
            for i in sorted(infos, key=lambda i: i.minor)
        ]
        for kind, infos in sorted(held.items())
    }
    return json.dumps(doc, separators=(",", ":"))


def annotated_pods(emulator: NodeEmulator, node_name: str, reported: ReportedDevices) -> tuple[Pod, ...]:
    """The admitted pods bound to ``node_name``, those holding reported devices with their annotation."""
    out = []
    for pod, _ in emulator.pods():
        annotation = device_allocated(emulator, pod, reported)
        if annotation is not None:
            annotations = {**pod.annotations, api.ANNOTATION_DEVICE_ALLOCATED: annotation}
            pod = dataclasses.replace(pod, annotations=MappingProxyType(annotations))
        out.append(dataclasses.replace(pod, node_name=node_name))
    return tuple(out)
