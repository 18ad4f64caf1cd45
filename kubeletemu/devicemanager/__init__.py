"""The kubelet's Device Manager (``pkg/kubelet/cm/devicemanager``) with emulated device plugins."""

from kubeletemu.devicemanager.allocation import (
    PreferredAllocationCall,
    devices_to_allocate,
    filter_by_affinity,
)
from kubeletemu.devicemanager.checkpoint import (
    KUBELET_DEVICE_MANAGER_CHECKPOINT,
    DeviceCheckpointError,
    DeviceManagerCheckpoint,
)
from kubeletemu.devicemanager.devices import (
    NODE_WITHOUT_TOPOLOGY,
    Device,
    PreferredAllocationFunc,
    make_device,
)
from kubeletemu.devicemanager.errors import DeviceAllocationError, DeviceManagerError
from kubeletemu.devicemanager.manager import DeviceManager
from kubeletemu.devicemanager.pci_selector import PCIFunction, PCISelector, PFRef, devices_from_pci
from kubeletemu.devicemanager.topology_hints import (
    generate_device_topology_hints,
    get_container_device_request,
    get_pod_device_request,
)

__all__ = [
    "KUBELET_DEVICE_MANAGER_CHECKPOINT",
    "NODE_WITHOUT_TOPOLOGY",
    "Device",
    "DeviceAllocationError",
    "DeviceCheckpointError",
    "DeviceManager",
    "DeviceManagerCheckpoint",
    "DeviceManagerError",
    "PCIFunction",
    "PCISelector",
    "PFRef",
    "PreferredAllocationCall",
    "PreferredAllocationFunc",
    "devices_from_pci",
    "devices_to_allocate",
    "filter_by_affinity",
    "generate_device_topology_hints",
    "get_container_device_request",
    "get_pod_device_request",
    "make_device",
]
