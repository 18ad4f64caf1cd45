"""What an exporter reads from its node's podresources ``List`` and the NRT it builds from it.

``List`` is the emulated kubelet's own (:func:`kubeletemu.podresources.view.list_pods`: admitted pods, and
from kubelet 1.34 active ones only, gate ``KubeletPodResourcesListUseActivePods``). A 1.33 kubelet lists
every pod its pod manager holds until the API server deletes the pod object: a pod whose containers have
exited (Succeeded, the emulator's ``ended``), with the CPUs and memory its managers have not swept yet
(:mod:`kubeletemu.fleet.kubelet`), and a pod it rejected at admission (Failed; ``HandlePodAdditions`` adds
the pod to the pod manager before ``canAdmitPod``), which the fleet's
:class:`~kubeletemu.fleet.kubelet.KubeletNode` keeps and which joins the listing here with no resources.

* RTE (resource-topology-exporter ef567ef3f9fb8059ea474ef91fbff37674c44a68, ``pkg/resourcemonitor``'s
  ``Scan``): as :func:`kubeletemu.podresources.nrt.node_resource_topology` builds it (zones, attributes,
  the legacy annotation, ``rte-update``), the fingerprint over this listing with
  ``--pods-fingerprint-method``.
* nfd-topology-updater (node-feature-discovery 76e6cc8cc0d54b8bce037098b72611ffdf66ef5a,
  ``pkg/resourcemonitor/podresourcesscanner.go``, ``nfd-topology-updater.go``): the fingerprint signs every
  listed pod and is present only when ``List`` returned at least one; attributes ``topologyManagerPolicy``,
  ``topologyManagerScope`` then the fingerprint (no method attribute, so the scheduler's ``Autodetect``
  counts every pod); ``topologyPolicies`` from ``DetectTopologyPolicy(policy, scope)``; no annotations. Its
  zones are RTE's: nfd's aggregator charges the same exclusive CPUs, memory blocks and devices to the same
  NUMA nodes (only Guaranteed pods and pods with devices hold any), so ``available`` — what the plugin
  filters on — is the same; its capacities (allocatable plus reserved CPUs, sysfs memory) may differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from kubeletemu.emulator import NodeEmulator
from kubeletemu.podresources import nrt as node_side
from kubeletemu.podresources import view
from kubeletemu.podresources.fingerprint import (
    ANNOTATION,
    ATTRIBUTE,
    METHOD_ALL,
    PodInfo,
    compute,
    select_pods,
)
from kubeletemu.podresources.nrt import detect_topology_policy
from kubeletemu.scheduler.objects import AttributeInfo, NodeResourceTopology, from_node_side


def lists_every_known_pod(emulator: NodeEmulator) -> bool:
    """Whether this kubelet's ``List`` returns every pod it knows (1.33) rather than active ones."""
    return not view.gate(emulator.config, view.GATE_LIST_USE_ACTIVE_PODS)


class NodeConstants:
    """What a scan reads that a fleet run never changes: the node's capacities, its allocatable counters
    (``GetAllocatableResources``: no device changes health in a fleet run) and its CPUs' NUMA nodes."""

    def __init__(self, emulator: NodeEmulator) -> None:
        self.cpu_numa = node_side.cpu_to_numa(emulator)
        self.capacities = node_side.node_capacities(emulator)
        self.allocatable = node_side.allocatable_counters(view.allocatable_resources(emulator), self.cpu_numa)


def _zones_and_infos(
    emulator: NodeEmulator, terminal: Sequence[PodInfo], constants: NodeConstants | None
) -> tuple[tuple[node_side.Zone, ...], list[PodInfo]]:
    constants = constants or NodeConstants(emulator)
    listing = view.list_pods(emulator)
    infos = [p.info for p in listing.pods]
    if terminal and lists_every_known_pod(emulator):
        infos.extend(terminal)
    zones = node_side.zones(
        constants.capacities,
        constants.allocatable,
        node_side.allocated_counters(listing.response.pod_resources, constants.cpu_numa),
    )
    return zones, infos


def rte_topology(
    emulator: NodeEmulator,
    terminal: Sequence[PodInfo],
    method: str,
    update: str,
    constants: NodeConstants | None = None,
) -> NodeResourceTopology:
    """The object RTE writes after a scan of this node (``update``: ``periodic`` or ``reactive``)."""
    zones, infos = _zones_and_infos(emulator, terminal, constants)
    sign = compute(select_pods(infos, method))
    cm = emulator.cm
    topology = node_side.NodeResourceTopology(
        name=view.node_name(emulator.config),
        zones=zones,
        attributes=node_side.attributes(sign, method, cm.topology_manager_policy, cm.topology_manager_scope),
        annotations={ANNOTATION: sign, node_side.ANNOTATION_RTE_UPDATE: update},
    )
    return from_node_side(topology)


def nfd_topology(
    emulator: NodeEmulator, terminal: Sequence[PodInfo], constants: NodeConstants | None = None
) -> NodeResourceTopology:
    """The object nfd-topology-updater applies after a scan of this node."""
    zones, infos = _zones_and_infos(emulator, terminal, constants)
    cm = emulator.cm
    policy, scope = cm.topology_manager_policy, cm.topology_manager_scope
    attributes = [
        AttributeInfo(node_side.ATTRIBUTE_POLICY, policy),
        AttributeInfo(node_side.ATTRIBUTE_SCOPE, scope),
    ]
    if infos:
        attributes.append(AttributeInfo(ATTRIBUTE, compute(select_pods(infos, METHOD_ALL))))
    base = from_node_side(node_side.NodeResourceTopology(name=view.node_name(emulator.config), zones=zones))
    return NodeResourceTopology(
        name=base.name,
        zones=base.zones,
        attributes=tuple(attributes),
        topology_policies=(detect_topology_policy(policy, scope),),
        annotations=MappingProxyType({}),
    )
