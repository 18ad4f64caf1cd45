"""An emulated node as the scheduler sees it: the NodeResourceTopology its exporter would publish
(:func:`kubeletemu.podresources.nrt.node_resource_topology`), a Node object with its allocatable, and its
admitted pods bound to it. The daemon's ``Schedule`` puts it first among the nodes it is asked about."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from kubeletemu.emulator import NodeEmulator
from kubeletemu.podresources import nrt, view
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.objects import Cluster, Node, NodeResourceTopology, from_node_side
from kubeletemu.scheduler.profile import node_infos

# Which exporter publishes the node's NRT: resource-topology-exporter (and nfd-topology-updater, the same
# zones), which NodeResourceTopologyMatch reads; or koordlet, which Koordinator's NodeNUMAResource reads.
FLAVOUR_RTE = "rte"
FLAVOUR_KOORDLET = "koordlet"
FLAVOURS = (FLAVOUR_RTE, FLAVOUR_KOORDLET)


def node_info(emulator: NodeEmulator, flavour: str = FLAVOUR_RTE) -> NodeInfo:
    """The node with its NRT in the exporter ``flavour`` (RTE's by default)."""
    name = view.node_name(emulator.config)
    node = Node(name=name, allocatable=MappingProxyType(dict(emulator.allocatable.allocatable)))
    pods = tuple(dataclasses.replace(pod, node_name=name) for pod, _ in emulator.pods())
    if flavour == FLAVOUR_KOORDLET:
        from kubeletemu.scheduler.koordinator.koordlet import koordlet_node_resource_topology

        return NodeInfo(name, node, koordlet_node_resource_topology(emulator), pods)
    if flavour != FLAVOUR_RTE:
        raise ValueError(f"exporter flavour {flavour!r}: expected one of {', '.join(FLAVOURS)}")
    return NodeInfo(name, node, from_node_side(nrt.node_resource_topology(emulator)), pods)


def with_node(emulator: NodeEmulator, cluster: Cluster) -> list[NodeInfo]:
    """This node first, then the cluster's nodes; the cluster may not name this node."""
    own = node_info(emulator)
    if own.name in cluster.node_names:
        raise ValueError(f"the objects name node {own.name!r}, which is this daemon's own node")
    return [own, *node_infos(cluster)]


def published(emulator: NodeEmulator, flavour: str, method: str, update: str) -> nrt.NodeResourceTopology:
    """The NRT the node's exporter publishes, as ``kubeletemu nrt`` prints it: RTE's (with ``method`` and
    ``update``), or koordlet's (which has neither; its amounts are whole numbers)."""
    if flavour in ("", FLAVOUR_RTE):
        return nrt.node_resource_topology(emulator, method, update)
    if flavour != FLAVOUR_KOORDLET:
        raise ValueError(f"exporter flavour {flavour!r}: expected one of {', '.join(FLAVOURS)}")
    from kubeletemu.scheduler.koordinator.koordlet import koordlet_node_resource_topology

    return to_node_side(koordlet_node_resource_topology(emulator))


def to_node_side(topology: NodeResourceTopology) -> nrt.NodeResourceTopology:
    """The inverse of :func:`~kubeletemu.scheduler.objects.from_node_side`, for whole-number amounts."""
    return nrt.NodeResourceTopology(
        name=topology.name,
        zones=tuple(
            nrt.Zone(
                name=z.name,
                type=z.type,
                costs=tuple(nrt.CostInfo(c.name, c.value) for c in z.costs),
                attributes=tuple(nrt.AttributeInfo(a.name, a.value) for a in z.attributes),
                resources=tuple(
                    nrt.ResourceInfo(r.name, r.capacity.value(), r.allocatable.value(), r.available.value())
                    for r in z.resources
                ),
            )
            for z in topology.zones
        ),
        attributes=tuple(nrt.AttributeInfo(a.name, a.value) for a in topology.attributes),
        annotations=dict(topology.annotations),
        topology_policies=topology.topology_policies,
    )
