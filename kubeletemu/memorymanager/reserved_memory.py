"""``reservedMemory`` validation and conversion (``memory_manager.go``), and the node-allocatable
reservation it is checked against (``GetNodeAllocatableReservation`` / ``hardEvictionReservation``).

The configuration parser is elsewhere: these functions take plain values (``Quantity``, strings or
integers for quantities).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from kubeletemu.golang import go_quote
from kubeletemu.memorymanager.errors import MemoryManagerError
from kubeletemu.memorymanager.machine import MachineInfo
from kubeletemu.memorymanager.quantity_format import (
    GoQuantity,
    QuantityFormat,
    hugepage_resource_name,
    is_hugepage_resource_name,
)
from kubeletemu.quantity import Quantity, QuantityError

RESOURCE_MEMORY = "memory"

QuantityLike = Quantity | str | int

# node id -> resource -> bytes (the policy's ``systemReservedMemory``).
SystemReservedMemory = dict[int, dict[str, int]]


def to_quantity(value: QuantityLike, what: str) -> Quantity:
    if isinstance(value, Quantity):
        return value
    try:
        return Quantity.parse(value)
    except QuantityError as err:
        raise MemoryManagerError(f"{what}: {err}") from None


@dataclass(frozen=True)
class MemoryReservation:
    """One ``reservedMemory`` entry: ``{numaNode: 0, limits: {memory: 1Gi, hugepages-2Mi: 10Mi}}``."""

    numa_node: int
    limits: Mapping[str, Quantity]

    @classmethod
    def of(cls, numa_node: int, limits: Mapping[str, QuantityLike]) -> MemoryReservation:
        if isinstance(numa_node, bool) or not isinstance(numa_node, int) or numa_node < 0:
            raise MemoryManagerError(f"reservedMemory: invalid numaNode {numa_node!r}")
        parsed = {
            str(name): to_quantity(value, f"reservedMemory[numaNode={numa_node}].limits[{name}]")
            for name, value in limits.items()
        }
        return cls(numa_node, parsed)


def _float32(value: float) -> float:
    result: float = struct.unpack("f", struct.pack("f", value))[0]
    return result


def eviction_memory_reservation(threshold: str | Quantity, capacity_memory: int) -> GoQuantity:
    """``GetThresholdQuantity`` for ``memory.available``: a quantity, or a percentage of capacity.

    The percentage is parsed as float32 (``parsePercentage``), so ``10%`` is 0.10000000149...
    """
    if isinstance(threshold, str) and threshold.strip().endswith("%"):
        text = threshold.strip()[:-1]
        try:
            number = float(text)
        except ValueError:
            raise MemoryManagerError(
                f"evictionHard memory.available: invalid percentage {threshold!r}"
            ) from None
        percentage = _float32(_float32(number) / 100)
        return GoQuantity(Fraction(int(float(capacity_memory) * percentage)), QuantityFormat.BINARY_SI)
    return GoQuantity.of(to_quantity(threshold, "evictionHard memory.available"))


def get_node_allocatable_reservation(
    machine: MachineInfo,
    system_reserved: Mapping[str, QuantityLike] | None = None,
    kube_reserved: Mapping[str, QuantityLike] | None = None,
    eviction_hard_memory_available: str | Quantity | None = None,
) -> dict[str, GoQuantity]:
    """``GetNodeAllocatableReservation`` restricted to memory and hugepages capacity entries.

    Per resource: systemReserved + kubeReserved + hard eviction (memory only), kept only when non-zero;
    the sum keeps the format of its first non-zero term (``Quantity.Add``).
    """
    capacity = [RESOURCE_MEMORY] + [hugepage_resource_name(s) for s in machine.hugepage_sizes()]
    eviction: dict[str, GoQuantity] = {}
    if eviction_hard_memory_available is not None:
        eviction[RESOURCE_MEMORY] = eviction_memory_reservation(
            eviction_hard_memory_available, machine.capacity_memory
        )
    result: dict[str, GoQuantity] = {}
    for name in capacity:
        value = GoQuantity(Fraction(0), QuantityFormat.DECIMAL_SI)
        for source, label in ((system_reserved, "systemReserved"), (kube_reserved, "kubeReserved")):
            if source is not None and name in source:
                value = value.add(GoQuantity.of(to_quantity(source[name], f"{label}[{name}]")))
        if name in eviction:
            value = value.add(eviction[name])
        if value.amount != 0:
            result[name] = value
    return result


def validate_reserved_memory(
    machine: MachineInfo,
    node_allocatable_reservation: Mapping[str, GoQuantity | Quantity],
    reserved_memory: Iterable[MemoryReservation],
) -> None:
    """``validateReservedMemory``: per memory type, Σ reservedMemory == the node-allocatable reservation.

    The kubelet walks its maps in random order; with several mismatches we report the first by name.
    """
    node_ids = set(machine.node_ids)
    totals: dict[str, GoQuantity] = {}
    for reservation in reserved_memory:
        if reservation.numa_node not in node_ids:
            raise MemoryManagerError(
                f"the reserved memory configuration references a NUMA node {reservation.numa_node} "
                "that does not exist on this machine"
            )
        for name, quantity in reservation.limits.items():
            # ``q.Add(total)``: this entry's quantity is the receiver.
            current = GoQuantity.of(quantity)
            totals[name] = current.add(totals[name]) if name in totals else current
    allocatable = {
        name: value if isinstance(value, GoQuantity) else GoQuantity.of(value)
        for name, value in node_allocatable_reservation.items()
    }
    types = set(totals) | {n for n in allocatable if n == RESOURCE_MEMORY or is_hugepage_resource_name(n)}
    zero = GoQuantity(Fraction(0), QuantityFormat.DECIMAL_SI)
    for name in sorted(types):
        node_value = zero.add(allocatable[name]) if name in allocatable else zero
        reserved_value = zero.add(totals[name]) if name in totals else zero
        if node_value.amount != reserved_value.amount:
            raise MemoryManagerError(
                f"the total amount {go_quote(str(reserved_value))} of type {go_quote(name)} is not equal "
                f"to the value {go_quote(str(node_value))} determined by Node Allocatable feature"
            )


def convert_reserved(
    machine: MachineInfo, reserved_memory: Iterable[MemoryReservation]
) -> SystemReservedMemory:
    """``convertReserved``: bytes per node and resource (every machine node present, maybe empty)."""
    converted: SystemReservedMemory = {node_id: {} for node_id in machine.node_ids}
    for reservation in reserved_memory:
        for name, quantity in reservation.limits.items():
            amount = quantity.amount
            if amount.denominator != 1 or not -(2**63) <= amount < 2**63:
                raise MemoryManagerError("could not covert a variable of type Quantity to int64")
            # uint64(int64): a negative reservation wraps like Go's conversion.
            converted.setdefault(reservation.numa_node, {})[name] = int(amount) % 2**64
    return converted


def get_system_reserved_memory(
    machine: MachineInfo,
    node_allocatable_reservation: Mapping[str, GoQuantity | Quantity],
    reserved_memory: Iterable[MemoryReservation],
) -> SystemReservedMemory:
    """``getSystemReservedMemory``: validate, then convert."""
    reservations = list(reserved_memory)
    validate_reserved_memory(machine, node_allocatable_reservation, reservations)
    return convert_reserved(machine, reservations)
