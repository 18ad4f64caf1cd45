"""The configuration a mirror runs with: the real kubelet's ``KubeletConfiguration`` (its own file, read
unchanged), our ``EmulatorConfiguration``, and the device-plugin devices the kubelet reports.

Devices come from the kubelet's ``GetAllocatableResources``: every healthy device with its NUMA nodes (a
device reported without topology has none). The EmulatorConfiguration therefore must not list devices, and
a KubeletConfiguration in our own files must be empty (``apiVersion`` and ``kind`` only): either would be
silently overridden otherwise.
"""

from __future__ import annotations

from dataclasses import replace

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.config import Config, DeviceResource, KubeletConfiguration, StaticDevice
from kubeletemu.config.kubelet_config import KIND as KUBELET_KIND
from kubeletemu.shadow.errors import ShadowError

# Parsed with the snapshot (its feature gates pick the checkpoint formats); kept importable from here.
from kubeletemu.shadow.sources import KubeletPaths, parse_kubelet_config

__all__ = ["check_own_config", "devices_from_allocatable", "mirror_config", "parse_kubelet_config"]


def check_own_config(own: Config, paths: KubeletPaths) -> None:
    """Refuse settings of ours that shadow mode would ignore."""
    if own.kubelet != KubeletConfiguration():
        origin = own.origins.get(KUBELET_KIND, "the configuration")
        raise ShadowError(
            f"{origin}: shadow mode reads the kubelet's own configuration from {paths.config}; leave this "
            "KubeletConfiguration empty (apiVersion and kind only) or remove it"
        )
    if own.emulator.devices:
        origin = own.origins.get("EmulatorConfiguration", "the configuration")
        raise ShadowError(
            f"{origin}: devices: shadow mode takes the devices from the kubelet's GetAllocatableResources; "
            "remove this list"
        )


def devices_from_allocatable(allocatable: v1.AllocatableResourcesResponse) -> tuple[DeviceResource, ...]:
    """``GetAllocatableResources`` lists one entry per device and NUMA node; fold them back per device,
    keeping the kubelet's order of resources and devices (our own answer then lists them alike)."""
    nodes: dict[str, dict[str, set[int]]] = {}
    for entry in allocatable.devices:
        per_device = nodes.setdefault(entry.resource_name, {})
        for device_id in entry.device_ids:
            per_device.setdefault(device_id, set()).update(n.ID for n in entry.topology.nodes)
    return tuple(
        DeviceResource(
            resource,
            devices=tuple(StaticDevice(device_id, tuple(sorted(ns))) for device_id, ns in ids.items()),
        )
        for resource, ids in nodes.items()
    )


def mirror_config(
    own: Config,
    paths: KubeletPaths,
    kubelet: KubeletConfiguration,
    allocatable: v1.AllocatableResourcesResponse,
) -> Config:
    origins = dict(own.origins)
    origins[KUBELET_KIND] = str(paths.config)
    emulator = replace(own.emulator, devices=devices_from_allocatable(allocatable))
    return Config(kubelet=kubelet, emulator=emulator, origins=origins)
