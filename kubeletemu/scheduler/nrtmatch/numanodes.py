"""A NodeResourceTopology's zones as the plugin's ``NUMANodeList``.

scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``, ``pluginhelpers.go``
(``createNUMANodeList``, ``extractResources``, ``extractCosts``, ``onlyNonNUMAResources``) and the
NRT API's ``numanode.NameToID`` (noderesourcetopology-api v0.1.2):

- only zones of type ``Node`` named ``node-<id>`` (``strconv.Atoi``, not negative) count, in list order;
  ids above 64 are skipped, but id 64 itself passes that check and then indexes a 64-entry lookup array:
  the shipped code panics there;
- a zone's resources are its *available* amounts (a repeated name: the last one);
- costs come from the *last* zone with that id, keyed by the cost's NUMA id (same name rules).

The list depends on the NRT alone, so it is parsed once per NRT object (:func:`numa_zones`, kept on the
NRT as the plugin's cache keeps its parsed copy) with integer amounts where whole; the in-place
subtractions of one Filter / Score call work on copies (:func:`copy_nodes`), never on the cached list.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kubeletemu.golang import GoSyntaxError, go_atoi
from kubeletemu.scheduler.framework import Crash, PluginPanic, memo
from kubeletemu.scheduler.nrtmatch.resources import Amount, exact
from kubeletemu.scheduler.objects import CostInfo, NodeResourceTopology, Zone

ZONE_TYPE_NODE = "Node"
NUMA_NAME_PREFIX = "node-"
MAX_NUMA_ID = 64
WHERE_CREATE = "noderesourcetopology.createNUMANodeList"


@dataclass
class NUMANode:
    """``NUMANode``: a NUMA id, what its zone has available (changed in place by subtractions) and its
    costs to other NUMA ids."""

    numa_id: int
    resources: dict[str, Amount]
    costs: dict[int, int] = field(default_factory=dict)


def index_out_of_range(index: int, length: int) -> str:
    """Go's runtime message for a slice index out of range."""
    return f"index out of range [{index}] with length {length}"


@functools.lru_cache(maxsize=4096)
def numa_id(name: str) -> int | None:
    """``numanode.NameToID``: ``node-<id>``, else None (the plugin logs and skips). The same few names
    recur in every NRT's zones and costs, so answers are kept."""
    if not name.startswith(NUMA_NAME_PREFIX):
        return None
    try:
        value = go_atoi(name[len(NUMA_NAME_PREFIX) :])
    except GoSyntaxError:
        return None
    return value if value >= 0 else None


def _costs(costs: Iterable[CostInfo]) -> dict[int, int]:
    out: dict[int, int] = {}
    for cost in costs:
        target = numa_id(cost.name)
        if target is not None and target <= MAX_NUMA_ID:
            out[target] = cost.value
    return out


def numa_node_list(zones: Sequence[Zone]) -> list[NUMANode]:
    """``createNUMANodeList``; raises :class:`PluginPanic` for a zone ``node-64``."""
    last_zone: dict[int, int] = {}
    nodes: list[NUMANode] = []
    for index, zone in enumerate(zones):
        if zone.type != ZONE_TYPE_NODE:
            continue
        ident = numa_id(zone.name)
        if ident is None or ident > MAX_NUMA_ID:
            continue
        if ident == MAX_NUMA_ID:
            raise PluginPanic(index_out_of_range(ident, MAX_NUMA_ID), WHERE_CREATE)
        last_zone[ident] = index
        nodes.append(NUMANode(ident, {r.name: exact(r.available.amount) for r in zone.resources}))
    for node in nodes:
        node.costs = _costs(zones[last_zone[node.numa_id]].costs)
    return nodes


def copy_nodes(nodes: Sequence[NUMANode]) -> list[NUMANode]:
    return [NUMANode(n.numa_id, dict(n.resources), dict(n.costs)) for n in nodes]


def only_non_numa_resources(nodes: Sequence[NUMANode], requests: Iterable[str]) -> bool:
    """``onlyNonNUMAResources``: no zone lists any of the requested names."""
    return not any(name in node.resources for name in requests for node in nodes)


@dataclass(frozen=True)
class NUMAZones:
    """An NRT's ``NUMANodeList``, built once and shared by every Filter / Score on that NRT. Nothing in
    it may be changed in place (copy a zone's resources before changing them). Derived from ``nodes``,
    in list order: ``ids`` (NUMA ids), ``bits`` (each id as a mask bit), ``available`` (each zone's
    resources, the nodes' own dicts) and ``listed`` (every resource name a zone lists); ``misplaced`` is
    the index of the first zone whose id is not below the list's length (where
    ``scoreForEachNUMANode`` panics), None when there is none."""

    nodes: tuple[NUMANode, ...]
    ids: tuple[int, ...]
    bits: tuple[int, ...]
    available: tuple[dict[str, Amount], ...]
    listed: frozenset[str]
    misplaced: int | None

    @classmethod
    def of(cls, nodes: Sequence[NUMANode]) -> NUMAZones:
        count = len(nodes)
        return cls(
            nodes=tuple(nodes),
            ids=tuple(node.numa_id for node in nodes),
            bits=tuple(1 << node.numa_id for node in nodes),
            available=tuple(node.resources for node in nodes),
            listed=frozenset(name for node in nodes for name in node.resources),
            misplaced=next((i for i, node in enumerate(nodes) if node.numa_id >= count), None),
        )

    def only_non_numa_resources(self, requests: Iterable[str]) -> bool:
        """``onlyNonNUMAResources`` (names only, so subtractions do not change it)."""
        listed = self.listed
        return not any(name in listed for name in requests)


def _parse_zones(topology: NodeResourceTopology) -> NUMAZones | Crash:
    try:
        return NUMAZones.of(numa_node_list(topology.zones))
    except PluginPanic as panic:
        return panic.crash


def numa_zones(topology: NodeResourceTopology) -> NUMAZones:
    """:func:`numa_node_list` of the NRT's zones, computed once per NRT object (a panic is kept too and
    raised afresh on every call, as the plugin would panic on every call)."""
    zones = memo(topology, "_nrtmatch_numa_zones", lambda: _parse_zones(topology))
    if isinstance(zones, Crash):
        raise PluginPanic(zones.what, zones.where)
    return zones
