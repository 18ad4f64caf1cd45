"""The Memory Manager's pod-level allocation (``PodLevelResourceManagers``, KEP-5526; from 1.36).

Mirrors the pod-level parts of ``memorymanager/policy_static.go`` after kubernetes#134768 / #137751, as the
code index stores its merged revision (``AllocatePod``, ``validatePodScopeResources``,
``getPodRequestedResources`` / ``getContainerRequestedResources`` under the gate; the index names no commit
for that file, its text is the one with ``podSharedPoolBlocks``):

* a pod with ``spec.resources`` asks for its own requests of ``memory`` and ``hugepages-*`` (quantities
  <= 0 are left out), not for the sum of its containers;
* a container of such a pod asks for exclusive memory only if it is "equivalent Guaranteed" (CPU and
  memory requests non-zero and equal to their limits); every other container asks for nothing;
* the pod gets one block per resource over the merged hint's NUMA nodes, charged to the node once (the
  pod's entry in ``podEntries``); its containers' blocks are slices of it, recorded but not charged:
  exclusive containers get their own requests, a regular init container without requests gets the pod's
  total minus the sidecars' exclusive memory started before it, every other container (app or sidecar
  without requests) gets the pod's shared pool (total minus the sidecars' and exclusive app containers'
  memory; only resources left above zero).

Go iterates the request maps in random order, so the kubelet writes a pod's or container's blocks of
several resources in any order; we keep the order of the pod's (or container's) ``requests``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubeletemu.cpumanager.errors import EmptyPodSharedPoolError
from kubeletemu.cpumanager.pod_requests import RequestCalculator, is_container_equivalent_qos_guaranteed
from kubeletemu.memorymanager.errors import MemoryAllocationError
from kubeletemu.memorymanager.quantity_format import is_hugepage_resource_name
from kubeletemu.memorymanager.requests import (
    RESOURCE_MEMORY,
    get_pod_requested_resources,
    get_requested_resources,
)
from kubeletemu.memorymanager.state.state import Block
from kubeletemu.pod import Container, Pod

# admission.EmptyPodSharedPoolError, shared with the CPU Manager.
__all__ = [
    "EmptyPodSharedPoolError",
    "PodPartition",
    "container_requested_resources",
    "partition_pod",
    "pod_level_requested_resources",
    "pod_requested_resources",
    "validate_pod_scope_resources",
]


def pod_level_requested_resources(pod: Pod) -> dict[str, int]:
    """The pod's own ``spec.resources.requests`` of memory and hugepages, in bytes; zero or negative
    quantities are dropped. Raises ``MemoryAllocationError`` when a quantity is not an int64."""
    requested: dict[str, int] = {}
    assert pod.resources is not None
    for name, quantity in pod.resources.requests.items():
        if name != RESOURCE_MEMORY and not is_hugepage_resource_name(name):
            continue
        amount = quantity.amount
        if amount.denominator != 1 or not -(2**63) <= amount < 2**63:
            raise MemoryAllocationError("[memorymanager] failed to represent quantity as int64")
        if amount <= 0:
            continue
        requested[name] = int(amount)
    return requested


def container_requested_resources(calc: RequestCalculator, pod: Pod, container: Container) -> dict[str, int]:
    """``getContainerRequestedResources``: nothing for a container of a pod-level managed pod that is not
    equivalent Guaranteed, else its memory and hugepages requests."""
    if calc.pod_level_managed(pod) and not is_container_equivalent_qos_guaranteed(container):
        return {}
    return get_requested_resources(container)


def pod_requested_resources(calc: RequestCalculator, pod: Pod) -> dict[str, int]:
    """``getPodRequestedResources``: the pod's own requests when pod-level managed, else the container
    arithmetic (largest init container against app containers plus sidecars)."""
    if calc.pod_level_managed(pod):
        return pod_level_requested_resources(pod)
    return get_pod_requested_resources(pod)


def validate_pod_scope_resources(calc: RequestCalculator, pod: Pod) -> str | None:
    """``validatePodScopeResources``: why the pod's budget leaves a pool some container needs empty
    (the kubelet's message), None when it does not. Resources are checked in the pod's request order.

    A regular init container with exclusive memory is checked against the budget minus the sidecars
    started before it only after v1.36.3 (``cpumemorymanager.pod-level-init-pool-check``); v1.36.3
    (openshift/microshift release-4.23 @ ab25d11482) does not check it, and :func:`partition_pod` then
    gives it its own request.

    A request that cannot be read (not an int64) is the kubelet's error too: its text is the reason (empty
    hints, then ``EmptyPodSharedPoolError`` wrapping it), not an exception out of admission.
    """
    try:
        return _pod_scope_problem(calc, pod)
    except MemoryAllocationError as err:
        return str(err)


def _pod_scope_problem(calc: RequestCalculator, pod: Pod) -> str | None:
    total = pod_requested_resources(calc, pod)
    has_shared_long_running = False
    long_running_exclusive: dict[str, int] = {}
    for container in pod.init_containers:
        requests = container_requested_resources(calc, pod, container)
        if not container.is_restartable_init:
            if requests:
                if not calc.init_pool_check:
                    continue
                for name, amount in total.items():
                    pool = (amount - long_running_exclusive.get(name, 0)) % 2**64
                    need = requests.get(name, 0)
                    if need > pool:
                        return (
                            f"pod rejected, largest exclusive init container requests {need} of {name}, "
                            f"but only {pool} available"
                        )
            else:
                for name, amount in total.items():
                    if long_running_exclusive.get(name, 0) >= amount:
                        return (
                            f"pod rejected, pod has shared init containers but no {name} available for them"
                        )
            continue
        if not requests:
            has_shared_long_running = True
            continue
        for name, amount in requests.items():
            long_running_exclusive[name] = long_running_exclusive.get(name, 0) + amount
    for container in pod.containers:
        requests = container_requested_resources(calc, pod, container)
        if not requests:
            has_shared_long_running = True
            continue
        for name, amount in requests.items():
            long_running_exclusive[name] = long_running_exclusive.get(name, 0) + amount
    if has_shared_long_running:
        for name, amount in total.items():
            if long_running_exclusive.get(name, 0) >= amount:
                return (
                    f"pod rejected, sum of exclusive container {name} requests equals pod budget, "
                    "leaving no memory for shared containers"
                )
    return None


@dataclass(frozen=True)
class PodPartition:
    """What ``AllocatePod`` writes: the pod's blocks, each container's blocks, and how many pinning
    requests it counted while partitioning (every init container, every app container with requests)."""

    pod_blocks: list[Block]
    container_blocks: dict[str, list[Block]]
    pinning_requests: int


def partition_pod(
    calc: RequestCalculator, pod: Pod, total: Mapping[str, int], bits: tuple[int, ...]
) -> PodPartition:
    """Step 4 and 6 of ``AllocatePod``: carve the pod's memory over ``bits`` into container slices."""
    exclusive: dict[str, list[Block]] = {}
    sidecars: dict[str, int] = {}
    pinning = 0
    for init in pod.init_containers:
        requests = container_requested_resources(calc, pod, init)
        pinning += 1
        if not requests:
            if init.is_restartable_init:
                continue  # a sidecar without requests runs in the pod's shared pool
            runnable = {name: (amount - sidecars.get(name, 0)) % 2**64 for name, amount in total.items()}
            exclusive[init.name] = [Block(bits, n, size) for n, size in runnable.items() if size > 0]
            continue
        exclusive[init.name] = [Block(bits, n, size) for n, size in requests.items() if size > 0]
        if init.is_restartable_init:
            for name, amount in requests.items():
                sidecars[name] = sidecars.get(name, 0) + amount
    app_pool = {name: (amount - sidecars.get(name, 0)) % 2**64 for name, amount in total.items()}
    for app in pod.containers:
        requests = container_requested_resources(calc, pod, app)
        if not requests:
            continue
        pinning += 1
        blocks = []
        for name, size in requests.items():
            if size > 0:
                blocks.append(Block(bits, name, size))
                # uint64 arithmetic: a resource the pod does not budget wraps below zero.
                app_pool[name] = (app_pool.get(name, 0) - size) % 2**64
        exclusive[app.name] = blocks
    shared = [Block(bits, name, size) for name, size in app_pool.items() if size > 0]
    per_container = {c.name: exclusive.get(c.name, shared) for c in [*pod.init_containers, *pod.containers]}
    pod_blocks = [Block(bits, name, size) for name, size in total.items()]
    return PodPartition(pod_blocks, per_container, pinning)
