"""Devices allocated per pod, container and resource (``pod_devices.go``)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from kubeletemu.devicemanager.devices import NODE_WITHOUT_TOPOLOGY

# NUMA node id (-1 = no topology) -> device ids, in allocation order.
DevicesPerNUMA = dict[int, list[str]]


def devices_of(per_numa: DevicesPerNUMA) -> set[str]:
    return {d for ids in per_numa.values() for d in ids}


@dataclass
class DeviceAllocateInfo:
    device_ids: DevicesPerNUMA
    # The plugin's serialised ContainerAllocateResponse; the emulator's plugins answer empty.
    alloc_resp: bytes = b""


@dataclass
class PodDevicesEntry:
    """One checkpoint entry (``checkpoint.PodDevicesEntry``)."""

    pod_uid: str
    container_name: str
    resource_name: str
    device_ids: DevicesPerNUMA
    alloc_resp: bytes | None = b""


@dataclass
class PodDevices:
    # pod UID -> container -> resource -> info
    devs: dict[str, dict[str, dict[str, DeviceAllocateInfo]]] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def pods(self) -> set[str]:
        with self._lock:
            return set(self.devs)

    def has_pod(self, pod_uid: str) -> bool:
        with self._lock:
            return pod_uid in self.devs

    def insert(
        self, pod_uid: str, container: str, resource: str, device_ids: DevicesPerNUMA, alloc_resp: bytes = b""
    ) -> None:
        with self._lock:
            self.devs.setdefault(pod_uid, {}).setdefault(container, {})[resource] = DeviceAllocateInfo(
                {n: list(ids) for n, ids in device_ids.items()}, alloc_resp
            )

    def delete(self, pod_uids: Iterable[str]) -> None:
        with self._lock:
            for uid in pod_uids:
                self.devs.pop(uid, None)

    def container_devices(self, pod_uid: str, container: str, resource: str) -> set[str] | None:
        """``containerDevices``: None when nothing is recorded (Go's nil set)."""
        with self._lock:
            info = self.devs.get(pod_uid, {}).get(container, {}).get(resource)
            return None if info is None else devices_of(info.device_ids)

    def pod_devices(self, pod_uid: str, resource: str) -> set[str]:
        """``podDevices``: the union over the pod's containers."""
        with self._lock:
            out: set[str] = set()
            for resources in self.devs.get(pod_uid, {}).values():
                info = resources.get(resource)
                if info is not None:
                    out |= devices_of(info.device_ids)
            return out

    def devices(self) -> dict[str, set[str]]:
        """``devices``: every allocated device per resource (the allocatedDevices it is rebuilt from)."""
        with self._lock:
            out: dict[str, set[str]] = {}
            for containers in self.devs.values():
                for resources in containers.values():
                    for resource, info in resources.items():
                        out.setdefault(resource, set()).update(devices_of(info.device_ids))
            return out

    def add_container_allocated_resources(
        self, pod_uid: str, container: str, allocated: dict[str, set[str]]
    ) -> None:
        """``addContainerAllocatedResources``: the container's devices become reusable."""
        with self._lock:
            for resource, info in self.devs.get(pod_uid, {}).get(container, {}).items():
                allocated[resource] = allocated.get(resource, set()) | devices_of(info.device_ids)

    def remove_container_allocated_resources(
        self, pod_uid: str, container: str, allocated: dict[str, set[str]]
    ) -> None:
        """``removeContainerAllocatedResources``: the container's devices are no longer reusable."""
        with self._lock:
            for resource, info in self.devs.get(pod_uid, {}).get(container, {}).items():
                allocated[resource] = allocated.get(resource, set()) - devices_of(info.device_ids)

    def get_container_devices(self, pod_uid: str, container: str) -> dict[str, dict[str, tuple[int, ...]]]:
        """``getContainerDevices``: resource -> device id -> its NUMA nodes (empty: no topology)."""
        with self._lock:
            out: dict[str, dict[str, tuple[int, ...]]] = {}
            for resource, info in self.devs.get(pod_uid, {}).get(container, {}).items():
                per_device: dict[str, list[int]] = {}
                for node in sorted(info.device_ids):
                    for dev in info.device_ids[node]:
                        nodes = per_device.setdefault(dev, [])
                        if node != NODE_WITHOUT_TOPOLOGY:
                            nodes.append(node)
                out[resource] = {dev: tuple(nodes) for dev, nodes in per_device.items()}
            return out

    def to_checkpoint_data(self) -> list[PodDevicesEntry]:
        with self._lock:
            return [
                PodDevicesEntry(
                    pod, ctr, res, {n: list(ids) for n, ids in info.device_ids.items()}, info.alloc_resp
                )
                for pod, containers in sorted(self.devs.items())
                for ctr, resources in sorted(containers.items())
                for res, info in sorted(resources.items())
            ]

    def from_checkpoint_data(self, entries: Iterable[PodDevicesEntry]) -> None:
        with self._lock:
            for e in entries:
                self.insert(e.pod_uid, e.container_name, e.resource_name, e.device_ids, e.alloc_resp or b"")
