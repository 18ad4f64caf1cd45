"""How many CPUs the static policy reserves, from the kubelet configuration.

Mirrors the kubelet's start-up path: ``getReservedCPUs`` (``--reserved-cpus`` / ``reservedSystemCPUs``),
``GetKubeletReservedOptions`` (that list overrides the cpu of system-reserved and drops kube-reserved's),
``GetNodeAllocatableReservation`` (a zero sum leaves cpu out of the map) and ``NewManager``'s
``numReservedCPUs = ceil(milliCPU / 1000)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CPUManagerError, CPUSetError
from kubeletemu.cpumanager.topology import CPUTopology
from kubeletemu.golang import go_quote
from kubeletemu.quantity import Quantity, QuantityError

_RESERVABLE = ("cpu", "memory", "ephemeral-storage", "pid")


def parse_reserved_system_cpus(topology: CPUTopology, cpus: str) -> CPUSet:
    """``getReservedCPUs``: the ``reservedSystemCPUs`` list, which must name online CPUs."""
    if cpus == "":
        return CPUSet()
    try:
        reserved = CPUSet.parse(cpus)
    except CPUSetError as err:
        raise CPUManagerError(f"unable to parse reserved-cpus list: {err}") from None
    online = topology.cpu_details.cpus()
    if not reserved.is_subset_of(online):
        raise CPUManagerError(f"reserved-cpus: {cpus} is not a subset of online-cpus: {online}")
    return reserved


def _parse_reserved(values: Mapping[str, str | Quantity] | None) -> dict[str, Quantity]:
    """``parseResourceList`` for kubeReserved / systemReserved."""
    out: dict[str, Quantity] = {}
    for name, raw in (values or {}).items():
        if name not in _RESERVABLE:
            raise CPUManagerError(f"cannot reserve {go_quote(name)} resource")
        try:
            quantity = raw if isinstance(raw, Quantity) else Quantity.parse(raw)
        except QuantityError as err:
            raise CPUManagerError(str(err)) from None
        if quantity.amount < 0:
            raise CPUManagerError(f"resource quantity for {go_quote(name)} cannot be negative: {raw}")
        out[name] = quantity
    return out


def node_allocatable_cpu_reservation(
    kube_reserved: Mapping[str, str | Quantity] | None,
    system_reserved: Mapping[str, str | Quantity] | None,
    reserved_system_cpus: CPUSet | None = None,
) -> Quantity | None:
    """The ``cpu`` entry of the node-allocatable reservation, or None when the kubelet leaves it out.

    With ``reservedSystemCPUs`` set, system-reserved cpu becomes its size and kube-reserved cpu is dropped.
    Hard-eviction thresholds never reserve CPU.
    """
    kube = _parse_reserved(kube_reserved)
    system = _parse_reserved(system_reserved)
    if reserved_system_cpus is not None and reserved_system_cpus.size() > 0:
        kube.pop("cpu", None)
        system["cpu"] = Quantity(reserved_system_cpus.size())
    total = Quantity(0)
    for source in (system, kube):
        if "cpu" in source:
            total = total + source["cpu"]
    return None if total.is_zero() else total


def num_reserved_cpus(reservation: Quantity | None) -> int:
    """``NewManager`` (static): the reservation is required and non-zero; whole CPUs, rounded up."""
    if reservation is None:
        raise CPUManagerError("[cpumanager] unable to determine reserved CPU resources for static policy")
    if reservation.is_zero():
        raise CPUManagerError(
            "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu "
            "to be greater than zero"
        )
    return math.ceil(reservation.milli_value() / 1000)
