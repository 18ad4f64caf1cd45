"""What a container or pod asks of the memory manager (``getRequestedResources`` /
``getPodRequestedResources`` in ``policy_static.go``)."""

from __future__ import annotations

from kubeletemu.memorymanager.errors import MemoryAllocationError
from kubeletemu.memorymanager.quantity_format import is_hugepage_resource_name
from kubeletemu.pod import Container, Pod

RESOURCE_MEMORY = "memory"


def get_requested_resources(container: Container) -> dict[str, int]:
    """Requests of ``memory`` and every ``hugepages-*``, in bytes (``Quantity.AsInt64``)."""
    requested: dict[str, int] = {}
    for name, quantity in container.requests.items():
        if name != RESOURCE_MEMORY and not is_hugepage_resource_name(name):
            continue
        amount = quantity.amount
        if amount.denominator != 1 or not -(2**63) <= amount < 2**63:
            raise MemoryAllocationError("[memorymanager] failed to represent quantity as int64")
        requested[name] = int(amount) % 2**64
    return requested


def get_pod_requested_resources(pod: Pod) -> dict[str, int]:
    """Per resource: max(largest regular init container + the sidecars started before it,
    sum of app containers + all sidecars). Resources only init containers ask for are dropped."""
    by_init: dict[str, int] = {}
    by_sidecars: dict[str, int] = {}
    for ctr in pod.init_containers:
        for name, qty in get_requested_resources(ctr).items():
            by_init.setdefault(name, 0)
            if ctr.is_restartable_init:
                by_sidecars[name] = by_sidecars.get(name, 0) + qty
            elif by_sidecars.get(name, 0) + qty > by_init[name]:
                by_init[name] = by_sidecars.get(name, 0) + qty
    by_app: dict[str, int] = {}
    for ctr in pod.containers:
        for name, qty in get_requested_resources(ctr).items():
            by_app[name] = by_app.get(name, 0) + qty
    result: dict[str, int] = {}
    for name, total in by_app.items():
        long_running = total + by_sidecars.get(name, 0)
        result[name] = max(long_running, by_init.get(name, 0))
    return result
