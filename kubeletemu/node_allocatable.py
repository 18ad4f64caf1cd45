"""Node capacity and allocatable, as the kubelet reports them in ``node.status`` and its admission reads.

Mirrors:

- capacity: ``cadvisor.CapacityFromMachineInfo`` (cpu = logical CPUs, memory = ``MemTotal``, one
  ``hugepages-<size>`` per page size = pre-allocated pages × page size), the root filesystem's size as
  ``ephemeral-storage``, ``pods`` = ``maxPods``, and each device-plugin resource = its devices, healthy or
  not (``nodestatus.MachineInfo``);
- the reservation: ``GetNodeAllocatableReservation`` — per capacity entry, systemReserved + kubeReserved +
  the hard-eviction reservation (``hardEvictionReservation``: ``memory.available`` for memory,
  ``nodefs.available`` for ephemeral-storage, a percentage taken of the capacity as
  ``evictionapi.GetThresholdQuantity`` does, in float32/float64 arithmetic). ``reservedSystemCPUs`` replaces
  the cpu of systemReserved with the number of reserved CPUs and drops kubeReserved's cpu
  (``cmd/kubelet/app/server.go``);
- allocatable: capacity − reservation (negative → 0); device-plugin resources = their healthy devices;
  memory additionally minus every hugepages capacity (the pre-allocated pages are not free memory).

There is no disk probe: the ephemeral-storage capacity is given (``NodeCapacity.ephemeral_storage_bytes``,
default :data:`DEFAULT_EPHEMERAL_STORAGE_BYTES`), or measured with :func:`filesystem_capacity_bytes` on a
live host. ``None`` leaves it out, as the kubelet does when cadvisor has no root filesystem info.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING

from kubeletemu.config.kubelet_config import KubeletConfiguration
from kubeletemu.config.validation import is_extended_resource_name
from kubeletemu.devicemanager.devices import Device
from kubeletemu.memorymanager.quantity_format import hugepage_resource_name
from kubeletemu.quantity import Quantity, QuantityError

if TYPE_CHECKING:
    from hostprobe import HostTopology

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

SIGNAL_MEMORY_AVAILABLE = "memory.available"
SIGNAL_NODEFS_AVAILABLE = "nodefs.available"
# hardEvictionReservation: the signals that reserve node resources, and which capacity they come from.
EVICTION_RESERVATIONS: Mapping[str, str] = MappingProxyType(
    {SIGNAL_MEMORY_AVAILABLE: MEMORY, SIGNAL_NODEFS_AVAILABLE: EPHEMERAL_STORAGE}
)

# The emulator's assumed root filesystem (kubelet root dir) size when nothing says otherwise: 100 GiB, a
# common cloud node boot disk. Pods requesting more ephemeral storage than that are refused.
DEFAULT_EPHEMERAL_STORAGE_BYTES = 100 * 2**30

_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_FLOAT32_MAX = (2 - Fraction(1, 2**23)) * Fraction(2) ** 127


class NodeAllocatableError(ValueError):
    """A node capacity, reservation or eviction threshold that cannot be turned into allocatable."""


def _frozen(items: Mapping[str, Quantity]) -> Mapping[str, Quantity]:
    return MappingProxyType(dict(items))


def _count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise NodeAllocatableError(f"{what}: must be a non-negative integer, got {value!r}")
    return value


@dataclass(frozen=True)
class NodeCapacity:
    """What the machine offers, independent of how it was found.

    ``hugepages`` maps a page size in bytes to the number of pre-allocated pages of that size.
    ``extended_resources`` counts the healthy devices per device-plugin resource, ``unhealthy_devices``
    the others (they count in capacity, not in allocatable).
    """

    cpus: int
    memory_bytes: int
    hugepages: Mapping[int, int] = field(default_factory=dict)
    ephemeral_storage_bytes: int | None = DEFAULT_EPHEMERAL_STORAGE_BYTES
    extended_resources: Mapping[str, int] = field(default_factory=dict)
    unhealthy_devices: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _count(self.cpus, "cpus")
        _count(self.memory_bytes, "memory_bytes")
        if self.ephemeral_storage_bytes is not None:
            _count(self.ephemeral_storage_bytes, "ephemeral_storage_bytes")
        for size, pages in self.hugepages.items():
            _count(pages, f"hugepages[{size}]")
            if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or size % 1024:
                raise NodeAllocatableError(
                    f"hugepages: a page size must be a positive multiple of 1024 bytes, got {size!r}"
                )
        for label, counts in (
            ("extended_resources", self.extended_resources),
            ("unhealthy_devices", self.unhealthy_devices),
        ):
            for name, number in counts.items():
                if not is_extended_resource_name(name):
                    raise NodeAllocatableError(
                        f"{label}: {name!r} is not an extended resource name (a domain outside "
                        "kubernetes.io, then '/', then a name)"
                    )
                _count(number, f"{label}[{name}]")

    def resource_list(self, max_pods: int) -> dict[str, Quantity]:
        """``node.status.capacity``."""
        capacity = self.machine_capacity()
        capacity[PODS] = Quantity(max_pods)
        for name in sorted({*self.extended_resources, *self.unhealthy_devices}):
            capacity[name] = Quantity(
                self.extended_resources.get(name, 0) + self.unhealthy_devices.get(name, 0)
            )
        return capacity

    def machine_capacity(self) -> dict[str, Quantity]:
        """The container manager's ``capacity``: cpu, memory, hugepages-*, ephemeral-storage — the entries
        the node-allocatable reservation is computed for."""
        capacity = {CPU: Quantity(self.cpus), MEMORY: Quantity(self.memory_bytes)}
        for size in sorted(self.hugepages):
            capacity[hugepage_resource_name(size // 1024)] = Quantity(size * self.hugepages[size])
        if self.ephemeral_storage_bytes is not None:
            capacity[EPHEMERAL_STORAGE] = Quantity(self.ephemeral_storage_bytes)
        return capacity


@dataclass(frozen=True)
class NodeAllocatable:
    """``node.status.capacity``, the node-allocatable reservation and ``node.status.allocatable``."""

    capacity: Mapping[str, Quantity]
    reservation: Mapping[str, Quantity]
    allocatable: Mapping[str, Quantity]

    @property
    def max_pods(self) -> int:
        return self.allocatable[PODS].value()


def round_float32(value: Fraction) -> float:
    """The float32 nearest to ``value`` (ties to even), as ``strconv.ParseFloat(s, 32)`` and float32
    arithmetic round; returned as the (exactly equal) Python float."""
    if value == 0:
        return 0.0
    if abs(value) > _FLOAT32_MAX:
        raise NodeAllocatableError(f"value out of range: {float(value)!r}")
    sign = -1 if value < 0 else 1
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, -126) - 23)  # 24-bit significand; subnormals below 2^-126
    scaled = magnitude / quantum
    units = math.floor(scaled)
    rest = scaled - units
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and units % 2):
        units += 1
    return sign * float(units * quantum)


def parse_percentage(text: str, what: str) -> float:
    """``parsePercentage``: ``float32(ParseFloat(v without '%', 32)) / 100`` in float32."""
    number = text.strip()[:-1]
    if not _FLOAT.match(number):
        raise NodeAllocatableError(f'{what}: strconv.ParseFloat: parsing "{number}": invalid syntax')
    return round_float32(Fraction(round_float32(Fraction(number))) / 100)


def threshold_quantity(threshold: str, capacity: int, what: str) -> Fraction | None:
    """``GetThresholdQuantity`` for one ``evictionHard`` value: a quantity as written, or a percentage of
    ``capacity`` (``int64(float64(capacity) * float64(percentage))``). ``None`` for ``0%`` and ``100%``,
    which the kubelet ignores (no threshold at all)."""
    text = threshold.strip()
    if text.endswith("%"):
        if text in ("0%", "100%"):
            return None
        percentage = parse_percentage(text, what)
        if not 0 <= percentage <= 1:
            raise NodeAllocatableError(
                f"{what}: eviction percentage threshold must be within 0%..100%: {text}"
            )
        return Fraction(int(float(capacity) * percentage))
    try:
        quantity = Quantity.parse(text)
    except QuantityError as err:
        raise NodeAllocatableError(f"{what}: {err}") from None
    if quantity.amount <= 0:
        raise NodeAllocatableError(f"{what}: eviction threshold must be positive: {text}")
    return quantity.amount


def hard_eviction_reservation(
    eviction_hard: Mapping[str, str], capacity: Mapping[str, Quantity]
) -> dict[str, Fraction]:
    """``hardEvictionReservation``: memory for ``memory.available``, ephemeral-storage for
    ``nodefs.available``; other signals reserve nothing."""
    reservation: dict[str, Fraction] = {}
    for signal, resource in EVICTION_RESERVATIONS.items():
        if signal not in eviction_hard:
            continue
        base = capacity.get(resource)
        amount = threshold_quantity(
            eviction_hard[signal], 0 if base is None else base.value(), f"evictionHard[{signal}]"
        )
        if amount is not None:
            reservation[resource] = amount
    return reservation


def _reserved(reserved: Mapping[str, Quantity], label: str) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for name, quantity in reserved.items():
        if not isinstance(quantity, Quantity):
            raise NodeAllocatableError(f"{label}[{name}]: expected a Quantity, got {quantity!r}")
        if quantity.amount < 0:
            raise NodeAllocatableError(f"{label}[{name}]: must not be negative, got {quantity}")
        out[name] = quantity.amount
    return out


def node_allocatable_reservation(
    machine_capacity: Mapping[str, Quantity],
    system_reserved: Mapping[str, Quantity],
    kube_reserved: Mapping[str, Quantity],
    eviction_hard: Mapping[str, str],
) -> dict[str, Quantity]:
    """``GetNodeAllocatableReservation``: per capacity entry, the three sources summed, kept if non-zero."""
    system = _reserved(system_reserved, "systemReserved")
    kube = _reserved(kube_reserved, "kubeReserved")
    eviction = hard_eviction_reservation(eviction_hard, machine_capacity)
    result: dict[str, Quantity] = {}
    for name in machine_capacity:
        total = system.get(name, Fraction(0)) + kube.get(name, Fraction(0)) + eviction.get(name, Fraction(0))
        if total != 0:
            result[name] = Quantity(total)
    return result


def compute_node_allocatable(
    capacity: NodeCapacity, config: KubeletConfiguration | None = None
) -> NodeAllocatable:
    """``node.status`` capacity and allocatable for ``capacity`` under ``config`` (defaults: the
    kubelet's — no reservations, ``evictionHard`` memory.available<100Mi and nodefs.available<10%,
    ``maxPods`` 110)."""
    config = config if config is not None else KubeletConfiguration()
    max_pods = _count(config.max_pods, "maxPods")
    machine = capacity.machine_capacity()
    reservation = node_allocatable_reservation(
        machine, config.effective_system_reserved, config.effective_kube_reserved, config.eviction_hard
    )
    status_capacity = capacity.resource_list(max_pods)
    allocatable: dict[str, Quantity] = {}
    for name, quantity in status_capacity.items():
        amount = quantity.amount
        if name in reservation:
            amount -= reservation[name].amount
        allocatable[name] = Quantity(max(amount, Fraction(0)))
    for name in {*capacity.extended_resources, *capacity.unhealthy_devices}:
        allocatable[name] = Quantity(capacity.extended_resources.get(name, 0))
    memory = allocatable[MEMORY].amount
    for name, quantity in status_capacity.items():
        if name.startswith(HUGEPAGES_PREFIX):
            memory = max(memory - quantity.amount, Fraction(0))
    allocatable[MEMORY] = Quantity(memory)
    return NodeAllocatable(_frozen(status_capacity), _frozen(reservation), _frozen(allocatable))


def _device_counts(
    devices: Mapping[str, Iterable[Device] | Mapping[str, Device]],
) -> tuple[dict[str, int], dict[str, int]]:
    healthy: dict[str, int] = {}
    unhealthy: dict[str, int] = {}
    for resource, listed in devices.items():
        items = listed.values() if isinstance(listed, Mapping) else listed
        good = bad = 0
        for device in items:
            if not isinstance(device, Device):
                raise NodeAllocatableError(f"devices[{resource}]: expected Device entries, got {device!r}")
            if device.healthy:
                good += 1
            else:
                bad += 1
        healthy[resource] = good
        if bad:
            unhealthy[resource] = bad
    return healthy, unhealthy


def capacity_from_host(
    host: HostTopology,
    devices: Mapping[str, Iterable[Device] | Mapping[str, Device]] | None = None,
    *,
    ephemeral_storage_bytes: int | None = DEFAULT_EPHEMERAL_STORAGE_BYTES,
) -> NodeCapacity:
    """The :class:`NodeCapacity` a kubelet would see on a probed host.

    cpu is cadvisor's ``NumCores`` (logical CPUs the kubelet sees), memory ``MemTotal``, hugepages the
    machine-wide pools (``/sys/kernel/mm/hugepages``; when a captured tree lacks them, the per-node pools
    summed). ``devices`` are the device plugins' lists per resource (``DeviceManager.all_devices`` fits).
    """
    view = host.kubelet_view
    memory = view.memory_capacity_bytes
    if memory is None:
        memory = host.memory.mem_total_bytes
    if memory is None:
        raise NodeAllocatableError(
            f"{host.procfs_root}: no MemTotal in meminfo: the kubelet cannot report memory capacity"
        )
    hugepages: dict[int, int] = {
        size_kib * 1024: pool.total for size_kib, pool in host.memory.hugepages.items()
    }
    if not hugepages:
        for node in view.nodes:
            for size_kib, pages in node.hugepages:
                hugepages[size_kib * 1024] = hugepages.get(size_kib * 1024, 0) + pages
    healthy, unhealthy = _device_counts(devices or {})
    return NodeCapacity(
        cpus=view.num_cpus,
        memory_bytes=memory,
        hugepages=hugepages,
        ephemeral_storage_bytes=ephemeral_storage_bytes,
        extended_resources=healthy,
        unhealthy_devices=unhealthy,
    )


def filesystem_capacity_bytes(path: str | os.PathLike[str] = "/var/lib/kubelet") -> int:
    """The size of the filesystem holding ``path`` (or its nearest existing parent), as cadvisor's
    ``GetDirFsInfo`` reports it: ``f_frsize × f_blocks``."""
    current = os.path.abspath(os.fspath(path))
    while not os.path.exists(current) and os.path.dirname(current) != current:
        current = os.path.dirname(current)
    try:
        stats = os.statvfs(current)
    except OSError as err:
        raise NodeAllocatableError(f"{current}: cannot read filesystem size: {err.strerror or err}") from None
    return stats.f_frsize * stats.f_blocks
