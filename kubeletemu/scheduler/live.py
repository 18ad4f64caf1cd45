"""An emulated node as the scheduler sees it: the NodeResourceTopology its exporter would publish
(:func:`kubeletemu.podresources.nrt.node_resource_topology`), a Node object with its allocatable, and its
admitted pods bound to it. In koordlet's flavour also the ``Device`` object koordlet publishes, and the
pods holding those devices carry Koordinator's ``device-allocated`` annotation
(:mod:`kubeletemu.scheduler.koordinator.koordlet_device`). The daemon's ``Schedule`` puts it first among the
nodes it is asked about, in the flavour asked for or, by default, the one its profile's models read."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from kubeletemu.emulator import NodeEmulator
from kubeletemu.podresources import nrt, nrt_nfd, view
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.koordinator.koordlet import koordlet_node_resource_topology
from kubeletemu.scheduler.koordinator.koordlet_device import annotated_pods, koordlet_devices
from kubeletemu.scheduler.objects import Cluster, Device, Node, NodeResourceTopology, from_node_side
from kubeletemu.scheduler.profile import Profile, node_infos

# Which exporter publishes the node's NRT: resource-topology-exporter or nfd-topology-updater, which
# NodeResourceTopologyMatch reads; or koordlet, which Koordinator's NodeNUMAResource reads.
FLAVOUR_RTE = "rte"
FLAVOUR_KOORDLET = "koordlet"
FLAVOUR_NFD = "nfd"
FLAVOURS = (FLAVOUR_RTE, FLAVOUR_KOORDLET, FLAVOUR_NFD)


def node_info(emulator: NodeEmulator, flavour: str = FLAVOUR_RTE) -> NodeInfo:
    """The node with its NRT in the exporter ``flavour`` (RTE's by default)."""
    name = view.node_name(emulator.config)
    node = Node(name=name, allocatable=MappingProxyType(dict(emulator.allocatable.allocatable)))
    pods = tuple(dataclasses.replace(pod, node_name=name) for pod, _ in emulator.pods())
    if flavour == FLAVOUR_KOORDLET:
        reported = koordlet_devices(emulator)
        topology = koordlet_node_resource_topology(emulator)
        return NodeInfo(name, node, topology, annotated_pods(emulator, name, reported), reported.device)
    if flavour == FLAVOUR_NFD:
        return NodeInfo(name, node, from_node_side(nrt_nfd.nfd_node_resource_topology(emulator)), pods)
    if flavour != FLAVOUR_RTE:
        raise ValueError(f"exporter flavour {flavour!r}: expected one of {', '.join(FLAVOURS)}")
    return NodeInfo(name, node, from_node_side(nrt.node_resource_topology(emulator)), pods)


# The models that read koordlet's objects (Koordinator's NodeNUMAResource, shipped and designed).
KOORDLET_MODELS = frozenset({"NodeNUMAResource", "NodeNUMAResourceDesign"})


def profile_flavour(profile: Profile) -> str:
    """The flavour a profile reads: koordlet's when it runs a Koordinator model, else RTE's."""
    return FLAVOUR_KOORDLET if any(m.name in KOORDLET_MODELS for m in profile.models) else FLAVOUR_RTE


def with_node(emulator: NodeEmulator, cluster: Cluster, flavour: str = FLAVOUR_RTE) -> list[NodeInfo]:
    """This node first (its objects in ``flavour``), then the cluster's nodes; the cluster may not name
    this node, by a NodeResourceTopology, Node or Device."""
    own = node_info(emulator, flavour)
    if own.name in cluster.node_names or own.name in cluster.devices:
        raise ValueError(f"the objects name node {own.name!r}, which is this daemon's own node")
    return [own, *node_infos(cluster)]


def published(emulator: NodeEmulator, flavour: str, method: str, update: str) -> nrt.NodeResourceTopology:
    """The NRT the node's exporter publishes, as ``kubeletemu nrt`` prints it: RTE's (with ``method`` and
    ``update``), nfd-topology-updater's or koordlet's (which have neither; koordlet's amounts are whole
    numbers)."""
    if flavour in ("", FLAVOUR_RTE):
        return nrt.node_resource_topology(emulator, method, update)
    if flavour == FLAVOUR_NFD:
        return nrt_nfd.nfd_node_resource_topology(emulator)
    if flavour != FLAVOUR_KOORDLET:
        raise ValueError(f"exporter flavour {flavour!r}: expected one of {', '.join(FLAVOURS)}")
    return to_node_side(koordlet_node_resource_topology(emulator))


def published_device(emulator: NodeEmulator, flavour: str) -> Device | None:
    """The ``Device`` object published next to the NRT: koordlet's, when the node has devices Koordinator
    knows; None otherwise and for RTE and nfd-topology-updater, which publish none."""
    if flavour in ("", FLAVOUR_RTE, FLAVOUR_NFD):
        return None
    if flavour != FLAVOUR_KOORDLET:
        raise ValueError(f"exporter flavour {flavour!r}: expected one of {', '.join(FLAVOURS)}")
    return koordlet_devices(emulator).device


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
