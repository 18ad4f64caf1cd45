"""The device manager (``devicemanager/manager.go``) as a Topology Manager hint provider.

Plugins are emulated: a resource is registered with its device list (static configuration or PCI
functions matched by selectors) and, optionally, a ``GetPreferredAllocation`` function. Allocation always
succeeds at the plugin (an empty ``ContainerAllocateResponse``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from kubeletemu.checkpointmanager import write_file_atomic
from kubeletemu.devicemanager.allocation import PreferredAllocationCall, devices_to_allocate
from kubeletemu.devicemanager.checkpoint import (
    KUBELET_DEVICE_MANAGER_CHECKPOINT,
    DeviceCheckpointError,
    DeviceManagerCheckpoint,
    marshal,
    unmarshal,
)
from kubeletemu.devicemanager.devices import (
    NODE_WITHOUT_TOPOLOGY,
    Device,
    PreferredAllocationFunc,
    make_devices,
)
from kubeletemu.devicemanager.errors import DeviceAllocationError
from kubeletemu.devicemanager.pod_devices import PodDevices
from kubeletemu.devicemanager.topology_hints import (
    generate_device_topology_hints,
    get_container_device_request,
    get_pod_device_request,
)
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager.hint import ProviderHints, TopologyHint
from kubeletemu.topologymanager.provider import Store
from kubeletemu.versions.behaviours import in_effect
from kubeletemu.versions.version import MASTER

HINTS_OVER_DEVICE_NODES = "devicemanager.hints-over-device-numa-nodes"

ActivePodsFunc = Callable[[], Iterable[Pod | str]]


class DeviceManager:
    """``ManagerImpl``: implements ``HintProvider``.

    ``numa_nodes`` are the machine's NUMA ids (the masks hints are built from). ``active_pods``, when
    given, drives ``UpdateAllocatedDevices`` (devices of other pods are freed before hints and
    allocation); without it nothing is garbage-collected and callers use :meth:`remove_pod`.
    ``checkpoint_dir`` keeps ``kubelet_internal_checkpoint`` there (restored at construction).
    ``kubelet_version`` picks the hint generation of that kubelet (see ``generate_device_topology_hints``).
    """

    def __init__(
        self,
        numa_nodes: Sequence[int],
        affinity: Store,
        *,
        active_pods: ActivePodsFunc | None = None,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        kubelet_version: str = MASTER,
    ) -> None:
        self.numa_nodes = sorted(numa_nodes)
        # kubernetes#138244 (from 1.36): hints over the NUMA nodes of the resource's devices.
        self.hints_over_device_nodes = in_effect(HINTS_OVER_DEVICE_NODES, kubelet_version)
        self.affinity = affinity
        self.active_pods = active_pods
        self._lock = threading.RLock()
        self.all_devices: dict[str, dict[str, Device]] = {}
        self.healthy_devices: dict[str, set[str]] = {}
        self.unhealthy_devices: dict[str, set[str]] = {}
        self.allocated_devices: dict[str, set[str]] = {}
        self.preferred_allocation: dict[str, PreferredAllocationFunc] = {}
        self.pod_devices = PodDevices()
        self.devices_to_reuse: dict[str, dict[str, set[str]]] = {}
        self.pending_admission_pod: str | None = None
        # The last GetPreferredAllocation arguments per resource, for inspection and tests.
        self.preferred_allocation_calls: list[tuple[str, PreferredAllocationCall]] = []
        self.checkpoint_path = (
            None if checkpoint_dir is None else Path(checkpoint_dir) / KUBELET_DEVICE_MANAGER_CHECKPOINT
        )
        if self.checkpoint_path is not None and self.checkpoint_path.exists():
            self.read_checkpoint()

    # ---- plugins ----------------------------------------------------------------------------------

    def register_resource(
        self,
        resource: str,
        devices: Iterable[Device | Mapping[str, object]],
        get_preferred_allocation: PreferredAllocationFunc | None = None,
    ) -> None:
        """A plugin registers and lists its devices (replacing any earlier list for the resource)."""
        listed = make_devices(devices, resource)
        with self._lock:
            self.all_devices[resource] = {d.id: d for d in listed}
            self.healthy_devices[resource] = {d.id for d in listed if d.healthy}
            self.unhealthy_devices[resource] = {d.id for d in listed if not d.healthy}
            if get_preferred_allocation is None:
                self.preferred_allocation.pop(resource, None)
            else:
                self.preferred_allocation[resource] = get_preferred_allocation
        self._write_checkpoint()

    def set_device_health(self, resource: str, device_id: str, healthy: bool) -> None:
        with self._lock:
            if device_id not in self.all_devices.get(resource, {}):
                raise KeyError(f"unknown device {device_id!r} of resource {resource!r}")
            device = self.all_devices[resource][device_id]
            self.all_devices[resource][device_id] = Device(device.id, device.numa_nodes, healthy)
            (self.healthy_devices if healthy else self.unhealthy_devices)[resource].add(device_id)
            (self.unhealthy_devices if healthy else self.healthy_devices)[resource].discard(device_id)
        self._write_checkpoint()

    def is_device_plugin_resource(self, resource: str) -> bool:
        with self._lock:
            return resource in self.healthy_devices or resource in self.allocated_devices

    def device_has_topology_alignment(self, resource: str) -> bool:
        return any(d.has_topology for d in self.all_devices.get(resource, {}).values())

    def get_available_devices(self, resource: str) -> set[str]:
        return self.healthy_devices.get(resource, set()) - self.allocated_devices.get(resource, set())

    # ---- garbage collection -----------------------------------------------------------------------

    def update_allocated_devices(self) -> None:
        """``UpdateAllocatedDevices``: free the devices of pods neither active nor being admitted."""
        if self.active_pods is None:
            return
        active = {p if isinstance(p, str) else p.uid for p in self.active_pods()}
        if self.pending_admission_pod is not None:
            active.add(self.pending_admission_pod)
        with self._lock:
            to_remove = self.pod_devices.pods() - active
            if not to_remove:
                return
            self.pod_devices.delete(to_remove)
            self.allocated_devices = self.pod_devices.devices()

    def remove_pod(self, pod_uid: str) -> None:
        """Free a pod's devices now (pod deletion, or the emulator's clean-up after a rejection). The
        checkpoint is rewritten only when the pod held devices, as the kubelet writes it on changes."""
        with self._lock:
            held = pod_uid in self.pod_devices.pods()
            self.pod_devices.delete([pod_uid])
            self.allocated_devices = self.pod_devices.devices()
            self.devices_to_reuse.pop(pod_uid, None)
            if self.pending_admission_pod == pod_uid:
                self.pending_admission_pod = None
        if held:
            self._write_checkpoint()

    # ---- HintProvider -----------------------------------------------------------------------------

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints:
        self.pending_admission_pod = pod.uid
        self.update_allocated_devices()
        requests = get_container_device_request(container, self.is_device_plugin_resource)
        hints: dict[str, list[TopologyHint] | None] = {}
        with self._lock:
            for resource, requested in requests.items():
                if not self.device_has_topology_alignment(resource):
                    hints[resource] = None
                    continue
                allocated = self.pod_devices.container_devices(pod.uid, container.name, resource)
                if allocated:
                    if len(allocated) != requested:
                        hints[resource] = []
                        continue
                    hints[resource] = self._generate(resource, allocated, (), requested)
                    continue
                available = self.get_available_devices(resource)
                reusable = self.devices_to_reuse.get(pod.uid, {}).get(resource, set())
                if len(available | reusable) < requested:
                    hints[resource] = []
                    continue
                hints[resource] = self._generate(resource, available, reusable, requested)
        return hints

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints:
        self.pending_admission_pod = pod.uid
        self.update_allocated_devices()
        requests = get_pod_device_request(pod, self.is_device_plugin_resource)
        hints: dict[str, list[TopologyHint] | None] = {}
        with self._lock:
            for resource, requested in requests.items():
                if not self.device_has_topology_alignment(resource):
                    hints[resource] = None
                    continue
                allocated = self.pod_devices.pod_devices(pod.uid, resource)
                if allocated:
                    if len(allocated) != requested:
                        hints[resource] = []
                        continue
                    hints[resource] = self._generate(resource, allocated, (), requested)
                    continue
                available = self.get_available_devices(resource)
                if len(available) < requested:
                    hints[resource] = []
                    continue
                hints[resource] = self._generate(resource, available, (), requested)
        return hints

    def _generate(
        self, resource: str, available: Iterable[str], reusable: Iterable[str], request: int
    ) -> list[TopologyHint]:
        return generate_device_topology_hints(
            self.numa_nodes,
            self.all_devices.get(resource, {}),
            available,
            reusable,
            request,
            device_nodes_only=self.hints_over_device_nodes,
        )

    def allocate(self, pod: Pod, container: Container) -> None:
        """``Allocate``: init containers first hand their devices on to later containers (sidecars and
        app containers keep theirs). Raises ``DeviceAllocationError`` with the kubelet's text."""
        self.pending_admission_pod = pod.uid
        with self._lock:
            reuse = self.devices_to_reuse.setdefault(pod.uid, {})
            for uid in [u for u in self.devices_to_reuse if u != pod.uid]:
                del self.devices_to_reuse[uid]
        for init in pod.init_containers:
            if init.name == container.name:
                self._allocate_container_resources(pod, container, reuse)
                if init.is_restartable_init:
                    self.pod_devices.remove_container_allocated_resources(pod.uid, container.name, reuse)
                else:
                    self.pod_devices.add_container_allocated_resources(pod.uid, container.name, reuse)
                return
        self._allocate_container_resources(pod, container, reuse)
        self.pod_devices.remove_container_allocated_resources(pod.uid, container.name, reuse)

    def _allocate_container_resources(
        self, pod: Pod, container: Container, reuse: dict[str, set[str]]
    ) -> None:
        """``allocateContainerResources``: resource by resource, in the container's limits order."""
        updated = False
        needs_checkpoint = False
        for resource, quantity in container.limits.items():
            needed = quantity.value()
            if not self.is_device_plugin_resource(resource):
                continue
            if not updated:
                self.update_allocated_devices()
                updated = True
            with self._lock:
                devices = self.devices_to_allocate(
                    pod.uid, container.name, resource, needed, reuse.get(resource, set())
                )
                if not devices:
                    continue
                needs_checkpoint = True
                if resource not in self.healthy_devices:
                    self.allocated_devices = self.pod_devices.devices()
                    raise DeviceAllocationError(f"unknown Device Plugin {resource}")
                per_numa: dict[int, list[str]] = {}
                for dev_id in devices:
                    device = self.all_devices.get(resource, {}).get(dev_id)
                    if device is None or not device.has_topology:
                        per_numa.setdefault(NODE_WITHOUT_TOPOLOGY, []).append(dev_id)
                        continue
                    for node in device.numa_node_ids():
                        per_numa.setdefault(node, []).append(dev_id)
                self.pod_devices.insert(pod.uid, container.name, resource, per_numa)
        if needs_checkpoint:
            self._write_checkpoint()

    def devices_to_allocate(
        self, pod_uid: str, container: str, resource: str, required: int, reusable: Iterable[str]
    ) -> list[str]:
        """``devicesToAllocate`` against this manager's state and the stored topology hint."""
        with self._lock:
            in_use = self.allocated_devices.setdefault(resource, set())
            return devices_to_allocate(
                pod_uid=pod_uid,
                container=container,
                resource=resource,
                required=required,
                reusable=reusable,
                existing=self.pod_devices.container_devices(pod_uid, container, resource),
                healthy=self.healthy_devices.get(resource),
                in_use=in_use,
                all_devices=self.all_devices.get(resource, {}),
                hint=self.affinity.get_affinity(pod_uid, container),
                get_preferred_allocation=self.preferred_allocation.get(resource),
                on_preferred_call=lambda call: self.preferred_allocation_calls.append((resource, call)),
            )

    # ---- queries ----------------------------------------------------------------------------------

    def get_devices(self, pod_uid: str, container_name: str) -> dict[str, dict[str, tuple[int, ...]]]:
        """``GetDevices``: resource -> device id -> NUMA nodes, for the podresources API."""
        return self.pod_devices.get_container_devices(pod_uid, container_name)

    def get_allocatable_devices(self) -> dict[str, dict[str, tuple[int, ...] | None]]:
        """``GetAllocatableDevices``: every healthy device with its NUMA nodes (None: no topology)."""
        with self._lock:
            return {
                resource: {
                    d.id: d.numa_nodes for d in devices.values() if d.id in self.healthy_devices[resource]
                }
                for resource, devices in self.all_devices.items()
                if resource in self.healthy_devices
            }

    def allocated_per_numa(self, resource: str) -> dict[int, int]:
        """Allocated devices of a resource per NUMA node (a multi-node device counts on each)."""
        with self._lock:
            counts: dict[int, int] = {}
            for dev_id in self.allocated_devices.get(resource, set()):
                device = self.all_devices.get(resource, {}).get(dev_id)
                for node in device.numa_node_ids() if device else ():
                    counts[node] = counts.get(node, 0) + 1
            return counts

    def allocatable_per_numa(self, resource: str) -> dict[int, int]:
        with self._lock:
            counts: dict[int, int] = {}
            for dev_id in self.healthy_devices.get(resource, set()):
                device = self.all_devices[resource].get(dev_id)
                for node in device.numa_node_ids() if device else ():
                    counts[node] = counts.get(node, 0) + 1
            return counts

    # ---- checkpoint -------------------------------------------------------------------------------

    def checkpoint(self) -> DeviceManagerCheckpoint:
        with self._lock:
            return DeviceManagerCheckpoint(
                entries=self.pod_devices.to_checkpoint_data(),
                registered_devices={
                    r: [d for d in self.all_devices.get(r, {}) if d in ids] or sorted(ids)
                    for r, ids in sorted(self.healthy_devices.items())
                },
            )

    def _write_checkpoint(self) -> None:
        if self.checkpoint_path is None:
            return
        write_file_atomic(self.checkpoint_path, lambda: marshal(self.checkpoint()))

    def read_checkpoint(self, path: str | os.PathLike[str] | None = None) -> None:
        """``readCheckpoint``: restore allocations; registered resources start with no healthy devices
        until their plugin registers again. Raises ``DeviceCheckpointError`` on a corrupt file."""
        source = Path(path) if path is not None else self.checkpoint_path
        if source is None:
            return
        try:
            cp = unmarshal(source.read_bytes())
        except OSError as err:
            raise DeviceCheckpointError(f"cannot read device manager checkpoint {source}: {err}") from None
        except DeviceCheckpointError as err:
            # Named like the CPU and Memory Managers' refusals: which file, then why.
            raise DeviceCheckpointError(f"{source}: {err}") from None
        self.restore_checkpoint(cp)

    def restore_allocations(self, blob: bytes | None, admitted: Iterable[str]) -> None:
        """Go back to a checkpoint's allocations (None: no checkpoint, nothing allocated), writing nothing:
        the daemon's undo of calls whose files could not be written. Registered devices stay as they are."""
        keep = set(admitted)
        with self._lock:
            self.pod_devices = PodDevices()
            self.allocated_devices = {}
            for uid in [uid for uid in self.devices_to_reuse if uid not in keep]:
                del self.devices_to_reuse[uid]
            if blob is not None:
                self.restore_checkpoint(unmarshal(blob))

    def restore_checkpoint(self, cp: DeviceManagerCheckpoint) -> None:
        """Take allocations from checkpoint data (a file read, or a live manager's ``checkpoint()``)."""
        with self._lock:
            self.pod_devices.from_checkpoint_data(cp.entries or [])
            self.allocated_devices = self.pod_devices.devices()
            for resource in cp.registered_devices or {}:
                self.healthy_devices.setdefault(resource, set())
                self.unhealthy_devices.setdefault(resource, set())
            # Devices known only from allocations keep the NUMA nodes the checkpoint recorded.
            for entry in cp.entries or []:
                known = self.all_devices.setdefault(entry.resource_name, {})
                nodes: dict[str, list[int]] = {}
                for node, ids in entry.device_ids.items():
                    for dev_id in ids:
                        nodes.setdefault(dev_id, [])
                        if node != NODE_WITHOUT_TOPOLOGY:
                            nodes[dev_id].append(node)
                for dev_id, ns in nodes.items():
                    known.setdefault(dev_id, Device(dev_id, tuple(sorted(ns)) or None, False))
