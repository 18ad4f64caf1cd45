"""NodeResourceTopologyMatch's Filter.

scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``, ``filter.go`` (``Filter``,
``singleNUMAContainerLevelHandler``, ``singleNUMAPodLevelHandler``, ``resourcesAvailableInAnyNUMANodes``)
and ``numaresources.go`` (``subtractResourcesFromNUMANodeList``):

- a BestEffort pod passes at once unless it asks for a non-native resource; a node without an NRT, and any
  policy but single-numa-node, lets every pod through;
- per request (a container, or the pod's effective request in pod scope), each non-zero resource must be
  in the node's allocatable, then narrows a 64-bit mask to the zones that fit it (a non-Guaranteed pod's
  cpu, memory and hugepages fit any zone listing them); a resource no zone lists is skipped when
  host-level (storage, non-native), else the mask empties; the lowest remaining id is "the" zone;
- container scope: init containers (sidecars too) checked one by one, never subtracted; app containers
  subtracted from their zone (a non-Guaranteed pod: only the non-affine resources) for the next ones;
- every failure is ``Unschedulable`` with a fixed reason; the failing resource is only logged.

The node's allocatable comes from its Node object; without one, from the zones' allocatable (the
names are what matters: cpu, memory, pods, ephemeral-storage and the scalar resources the scheduler
keeps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubeletemu.pod import Pod, QOSClass
from kubeletemu.scheduler.framework import ERROR, Status, memo
from kubeletemu.scheduler.nrtmatch import nodeconfig
from kubeletemu.scheduler.nrtmatch.numanodes import NUMAZones, numa_zones
from kubeletemu.scheduler.nrtmatch.resources import (
    Amount,
    PodRequests,
    Request,
    node_resource_names,
    pod_requests,
)
from kubeletemu.scheduler.objects import Node, NodeResourceTopology

CANNOT_ALIGN_POD = "cannot align pod"
CANNOT_ALIGN_CONTAINER = "cannot align container"
CANNOT_ALIGN_INIT_CONTAINER = "cannot align init container"
CANNOT_ALIGN_SIDECAR_CONTAINER = "cannot align sidecar container"
INCONSISTENT_ACCOUNTING = "inconsistent resource accounting"
INVALID_TOPOLOGY_DATA = "invalid node topology data"
_ALL_BITS = (1 << 64) - 1  # a 64-bit NUMA mask with every bit set
OK = Status()


def allocatable_names(node: Node | None, topology: NodeResourceTopology) -> frozenset[str]:
    """The resource names of the node's allocatable, computed once per Node (or, without one, per NRT)."""
    if node is not None:
        return memo(node, "_nrtmatch_allocatable_names", lambda: node_resource_names(node.allocatable))
    return memo(
        topology,
        "_nrtmatch_allocatable_names",
        lambda: node_resource_names(r.name for zone in topology.zones for r in zone.resources),
    )


def fitting_numa(
    request: Request, resources: Sequence[Mapping[str, Amount]], bits: Sequence[int], on_node: frozenset[str]
) -> int | None:
    """``resourcesAvailableInAnyNUMANodes``: the NUMA id the kubelet would pick, None when none fits.

    ``resources[i]`` is what zone ``i`` has available now, ``bits[i]`` its NUMA id as a mask bit."""
    mask = _ALL_BITS
    pairs = tuple(zip(resources, bits, strict=True))  # once per call, not once per resource
    for item in request.nonzero:
        name = item.name
        if name not in on_node:
            return None
        amount = item.amount
        numa_free = item.numa_free
        listed = False
        fits = 0
        for available, bit in pairs:
            have = available.get(name)
            if have is None:
                continue
            listed = True
            if numa_free or have >= amount:
                fits |= bit
        if not listed and item.host_level:
            continue
        mask &= fits
        if not mask:
            return None
    return (mask & -mask).bit_length() - 1  # the lowest id left


def subtract(
    resources: list[dict[str, Amount]], ids: Sequence[int], shared: list[bool], numa: int, request: Request
) -> str | None:
    """``subtractResourcesFromNUMANodeList``: every zone with that id (repeated zone names included); the
    error text when one would go negative. ``resources[i]`` is copied before its first change while
    ``shared[i]`` says it is still the cached NRT's."""
    for index, ident in enumerate(ids):
        if ident != numa:
            continue
        for item in request.nonzero:
            if item.numa_free:
                continue
            name, amount = item.name, item.amount
            available = resources[index].get(name)
            if available is None:
                continue
            if available - amount < 0:
                return (
                    f'resource "{name}" request {_text(amount)} exceeds NUMA {numa} availability '
                    f"{_text(available)}"
                )
            if shared[index]:
                resources[index] = dict(resources[index])
                shared[index] = False
            resources[index][name] = available - amount
    return None


def _text(amount: Amount) -> str:
    if amount.denominator == 1:
        return str(amount.numerator)
    return f"{amount * 1000}m" if (amount * 1000).denominator == 1 else str(float(amount))


def _container_scope(requests: PodRequests, zones: NUMAZones, on_node: frozenset[str]) -> Status:
    bits = zones.bits
    for init, request in requests.init:
        if fitting_numa(request, zones.available, bits, on_node) is None:
            reason = (
                CANNOT_ALIGN_SIDECAR_CONTAINER if init.is_restartable_init else CANNOT_ALIGN_INIT_CONTAINER
            )
            return Status.unschedulable(reason)
    resources = list(zones.available)
    shared = [True] * len(resources)
    for _, request in requests.app:
        numa = fitting_numa(request, resources, bits, on_node)
        if numa is None:
            return Status.unschedulable(CANNOT_ALIGN_CONTAINER)
        problem = subtract(resources, zones.ids, shared, numa, request)
        if problem is not None:
            return Status(ERROR, (INCONSISTENT_ACCOUNTING, problem))
    return OK


def _pod_scope(requests: PodRequests, zones: NUMAZones, on_node: frozenset[str]) -> Status:
    if fitting_numa(requests.effective, zones.available, zones.bits, on_node) is None:
        return Status.unschedulable(CANNOT_ALIGN_POD)
    return OK


def filter_pod(pod: Pod, node: Node | None, topology: NodeResourceTopology | None) -> Status:
    """``Filter`` for one node, given the NRT the cache returned (None: no NRT for the node).

    Raises :class:`~kubeletemu.scheduler.framework.PluginPanic` where the shipped code panics."""
    requests = pod_requests(pod)
    if requests.qos is QOSClass.BEST_EFFORT and not requests.include_non_native:
        return OK
    if topology is None:
        return OK
    conf = nodeconfig.topology_manager_config(topology)
    if conf.policy != nodeconfig.POLICY_SINGLE_NUMA_NODE:
        return OK
    zones = numa_zones(topology)
    on_node = allocatable_names(node, topology)
    if conf.scope == nodeconfig.SCOPE_POD:
        return _pod_scope(requests, zones, on_node)
    return _container_scope(requests, zones, on_node)
