"""What scheduler-side models read, as ``kubectl get noderesourcetopologies,nodes,pods -A -o yaml`` prints
it: NodeResourceTopology (``topology.node.k8s.io/v1alpha2``), Node and Pod objects, and Koordinator's
``Device`` (``scheduling.koordinator.sh/v1alpha1``, named after its node), in files and directories,
``kind: List`` unpacked.

Amounts stay :class:`~kubeletemu.quantity.Quantity` values, as the plugins compare ``resource.Quantity``
values (a zone's ``cpu`` may be ``7`` while a request is ``500m``). Input order is kept: a directory's
files in name order (as kubectl reads them), objects in file order. Every error names the file, the object
and the field, e.g. ``nrt.yaml: NodeResourceTopology "node-a" (document 2): zones[0].resources[1].available:
quantities must match the regular expression ...``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kubeletemu.config import fields
from kubeletemu.manifest import ManifestError, expand_paths, pod_from_manifest
from kubeletemu.manifest.documents import YAMLSyntaxError, yaml_documents
from kubeletemu.pod import Pod
from kubeletemu.podresources import nrt as node_side
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.object_fields import ObjectError as ObjectError  # its callers find it here
from kubeletemu.scheduler.object_fields import Where, header, metadata, quantity
from kubeletemu.scheduler.reservation_object import RESERVATION_KIND, Reservation, parse_reservation

NRT_API_VERSION = "topology.node.k8s.io/v1alpha2"
NRT_KIND = "NodeResourceTopology"
DEVICE_API_VERSION = "scheduling.koordinator.sh/v1alpha1"
DEVICE_KIND = "Device"
LIST_KINDS = ("List", "NodeResourceTopologyList", "NodeList", "PodList", "DeviceList", "ReservationList")
_NO_STRINGS: Mapping[str, str] = MappingProxyType({})
_NO_QUANTITIES: Mapping[str, Quantity] = MappingProxyType({})


@dataclass(frozen=True)
class ResourceInfo:
    name: str
    capacity: Quantity
    allocatable: Quantity
    available: Quantity


@dataclass(frozen=True)
class CostInfo:
    name: str
    value: int


@dataclass(frozen=True)
class AttributeInfo:
    name: str
    value: str


@dataclass(frozen=True)
class Zone:
    name: str
    type: str
    parent: str = ""
    costs: tuple[CostInfo, ...] = ()
    attributes: tuple[AttributeInfo, ...] = ()
    resources: tuple[ResourceInfo, ...] = ()

    def resource(self, name: str) -> ResourceInfo | None:
        return next((r for r in self.resources if r.name == name), None)


@dataclass(frozen=True)
class NodeResourceTopology:
    """``v1alpha2.NodeResourceTopology``; ``topology_policies`` is the deprecated list the plugins still
    read first."""

    name: str
    zones: tuple[Zone, ...] = ()
    attributes: tuple[AttributeInfo, ...] = ()
    topology_policies: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)

    def attribute(self, name: str) -> str | None:
        """The first attribute of that name (``attribute.Get``)."""
        return next((a.value for a in self.attributes if a.name == name), None)


@dataclass(frozen=True)
class Node:
    """The slice of ``v1.Node`` schedulers read."""

    name: str
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    allocatable: Mapping[str, Quantity] = field(default_factory=lambda: _NO_QUANTITIES)
    capacity: Mapping[str, Quantity] = field(default_factory=lambda: _NO_QUANTITIES)


@dataclass(frozen=True)
class DeviceTopology:
    """``v1alpha1.DeviceTopology``: where a device sits (``nodeID`` -1: no NUMA node)."""

    socket_id: int
    node_id: int
    pcie_id: str
    bus_id: str = ""


@dataclass(frozen=True)
class VirtualFunction:
    minor: int
    bus_id: str = ""


@dataclass(frozen=True)
class VirtualFunctionGroup:
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    vfs: tuple[VirtualFunction, ...] = ()


@dataclass(frozen=True)
class DeviceInfo:
    """``v1alpha1.DeviceInfo`` (conditions and moduleID are not read)."""

    type: str
    minor: int
    health: bool = False
    uuid: str = ""
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    resources: Mapping[str, Quantity] = field(default_factory=lambda: _NO_QUANTITIES)
    topology: DeviceTopology | None = None
    vf_groups: tuple[VirtualFunctionGroup, ...] = ()


@dataclass(frozen=True)
class Device:
    """Koordinator's ``Device`` (``scheduling.koordinator.sh/v1alpha1``): a node's devices, as koordlet's
    device reporter publishes them; ``name`` is the node's."""

    name: str
    devices: tuple[DeviceInfo, ...] = ()
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)

    def to_manifest(self) -> dict[str, Any]:
        """The object as ``kubectl get device -o yaml`` prints it (the fields this model carries)."""
        metadata: dict[str, Any] = {"name": self.name}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        devices = []
        for info in self.devices:
            item: dict[str, Any] = {"type": info.type}
            if info.labels:
                item["labels"] = dict(info.labels)
            if info.uuid:
                item["id"] = info.uuid
            item["minor"] = info.minor
            item["health"] = info.health
            if info.resources:
                item["resources"] = {k: str(q) for k, q in info.resources.items()}
            if info.topology is not None:
                t = info.topology
                item["topology"] = {"socketID": t.socket_id, "nodeID": t.node_id, "pcieID": t.pcie_id}
                if t.bus_id:
                    item["topology"]["busID"] = t.bus_id
            if info.vf_groups:
                item["vfGroups"] = [
                    {
                        **({"labels": dict(g.labels)} if g.labels else {}),
                        "vfs": [
                            {"minor": v.minor, **({"busID": v.bus_id} if v.bus_id else {})} for v in g.vfs
                        ],
                    }
                    for g in info.vf_groups
                ]
            devices.append(item)
        return {
            "apiVersion": DEVICE_API_VERSION,
            "kind": DEVICE_KIND,
            "metadata": metadata,
            "spec": {"devices": devices} if devices else {},
        }


@dataclass
class Cluster:
    """Everything read, in input order. ``node_names`` is the order nodes were first seen (NRT or Node)."""

    topologies: dict[str, NodeResourceTopology] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    pods: list[Pod] = field(default_factory=list)
    node_names: list[str] = field(default_factory=list)
    # Koordinator Device objects by node name; a Device alone does not make a node.
    devices: dict[str, Device] = field(default_factory=dict)
    # Koordinator Reservations in input order; each names its node in status.nodeName.
    reservations: list[Reservation] = field(default_factory=list)

    def add(self, obj: NodeResourceTopology | Node | Pod | Device | Reservation) -> None:
        if isinstance(obj, Pod):
            self.pods.append(obj)
            return
        if isinstance(obj, Reservation):
            self.reservations.append(obj)
            return
        if isinstance(obj, Device):
            self.devices[obj.name] = obj
            return
        if obj.name not in self.topologies and obj.name not in self.nodes:
            self.node_names.append(obj.name)
        if isinstance(obj, NodeResourceTopology):
            self.topologies[obj.name] = obj
        else:
            self.nodes[obj.name] = obj

    def pods_on(self, node: str) -> list[Pod]:
        """Pods bound to ``node`` (``spec.nodeName``), terminated ones included (``NodeInfo`` drops them,
        as the scheduler's cache does)."""
        return [p for p in self.pods if p.node_name == node]

    def reservations_on(self, node: str) -> list[Reservation]:
        """Reservations scheduled on ``node`` (``status.nodeName``), whatever their phase."""
        return [r for r in self.reservations if r.node_name == node]


# ---- reading -----------------------------------------------------------------------------------------


def read_objects(paths: Sequence[str]) -> Cluster:
    """Files and directories (their ``.yaml``, ``.yml`` and ``.json`` files in name order)."""
    cluster = Cluster()
    for file in object_files(paths):
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as err:
            raise ObjectError(f"{file}: cannot read: {err.strerror or err}") from None
        except UnicodeDecodeError as err:
            raise ObjectError(f"{file}: not UTF-8 text: {err.reason} at byte {err.start}") from None
        for obj in parse_objects(text, str(file)):
            cluster.add(obj)
    return cluster


def object_files(paths: Sequence[str]) -> list[Path]:
    """The files of ``paths``, a directory standing for its manifest files (as ``-f`` reads them)."""
    try:
        return [Path(p) for p in expand_paths(paths)]
    except ManifestError as err:
        raise ObjectError(str(err)) from None


def parse_objects(text: str, source: str) -> list[NodeResourceTopology | Node | Pod | Device | Reservation]:
    """Every NodeResourceTopology, Node, Pod and Device in ``text`` (YAML or JSON documents), in order."""
    try:
        documents = yaml_documents(text)
    except YAMLSyntaxError as err:
        raise ObjectError(f"{source}: invalid YAML: {err}") from None
    out: list[NodeResourceTopology | Node | Pod | Device | Reservation] = []
    for index, doc in enumerate(documents, start=1):
        if doc is None:
            continue
        where = Where(source, index)
        obj = fields.mapping(where, "", doc)
        kind = obj.get("kind")
        if kind in LIST_KINDS:
            for item_index, item in enumerate(fields.sequence(where, "items", obj.get("items"))):
                item_where = Where(source, index, item=item_index)
                item_obj = fields.mapping(item_where, "", item)
                item_kind = item_obj.get("kind") or {
                    "NodeList": "Node",
                    "PodList": "Pod",
                    "DeviceList": DEVICE_KIND,
                    "ReservationList": RESERVATION_KIND,
                }.get(str(kind))
                if item_kind is None and kind == "NodeResourceTopologyList":
                    item_kind = NRT_KIND
                out.append(_one(item_where, item_obj, item_kind))
        else:
            out.append(_one(where, obj, kind))
    return out


def _one(
    where: Where, obj: Mapping[str, Any], kind: Any
) -> NodeResourceTopology | Node | Pod | Device | Reservation:
    if kind == NRT_KIND:
        return _topology(where, obj)
    if kind == RESERVATION_KIND:
        return parse_reservation(where, obj)
    if kind == DEVICE_KIND:
        return _device(where, obj)
    if kind == "Node":
        return _node(where, obj)
    if kind == "Pod":
        try:
            return pod_from_manifest(obj, source=where.source)
        except ManifestError as err:
            raise ObjectError(str(err)) from None
    expected = "expected NodeResourceTopology, Node, Pod, Device, Reservation or List"
    if kind is None:
        raise where.error("kind", f"Required value: {expected}")
    raise where.error("kind", f"{kind!r} is not supported: {expected}")


def _topology(where: Where, obj: Mapping[str, Any]) -> NodeResourceTopology:
    name, labels, annotations = header(where, obj, NRT_KIND, NRT_API_VERSION)
    zones = []
    for z, raw in enumerate(fields.sequence(where, "zones", obj.get("zones"))):
        path = f"zones[{z}]"
        zone = fields.mapping(where, path, raw)
        resources = []
        for r, raw_resource in enumerate(fields.sequence(where, f"{path}.resources", zone.get("resources"))):
            rpath = f"{path}.resources[{r}]"
            res = fields.mapping(where, rpath, raw_resource)
            resources.append(
                ResourceInfo(
                    name=fields.string(where, f"{rpath}.name", res.get("name")),
                    capacity=quantity(where, f"{rpath}.capacity", res.get("capacity")),
                    allocatable=quantity(where, f"{rpath}.allocatable", res.get("allocatable")),
                    available=quantity(where, f"{rpath}.available", res.get("available")),
                )
            )
        costs = tuple(
            CostInfo(
                fields.string(where, f"{path}.costs[{c}].name", cost.get("name")),
                fields.integer(where, f"{path}.costs[{c}].value", cost.get("value")),
            )
            for c, cost in (
                (c, fields.mapping(where, f"{path}.costs[{c}]", item))
                for c, item in enumerate(fields.sequence(where, f"{path}.costs", zone.get("costs")))
            )
        )
        zones.append(
            Zone(
                name=fields.string(where, f"{path}.name", zone.get("name")),
                type=fields.string(where, f"{path}.type", zone.get("type", "")),
                parent=fields.string(where, f"{path}.parent", zone.get("parent", "")),
                costs=costs,
                attributes=_attributes(where, f"{path}.attributes", zone.get("attributes")),
                resources=tuple(resources),
            )
        )
    policies = tuple(
        fields.string(where, f"topologyPolicies[{i}]", p)
        for i, p in enumerate(fields.sequence(where, "topologyPolicies", obj.get("topologyPolicies")))
    )
    return NodeResourceTopology(
        name=name,
        zones=tuple(zones),
        attributes=_attributes(where, "attributes", obj.get("attributes")),
        topology_policies=policies,
        labels=MappingProxyType(labels),
        annotations=MappingProxyType(annotations),
    )


def _attributes(where: Where, path: str, raw: Any) -> tuple[AttributeInfo, ...]:
    out = []
    for i, item in enumerate(fields.sequence(where, path, raw)):
        attribute = fields.mapping(where, f"{path}[{i}]", item)
        out.append(
            AttributeInfo(
                fields.string(where, f"{path}[{i}].name", attribute.get("name")),
                fields.scalar_text(where, f"{path}[{i}].value", attribute.get("value", "")),
            )
        )
    return tuple(out)


def _node(where: Where, obj: Mapping[str, Any]) -> Node:
    name, labels, annotations = metadata(where, obj, "Node")
    status = fields.mapping(where, "status", obj.get("status"))

    def resource_list(key: str) -> Mapping[str, Quantity]:
        raw = fields.mapping(where, f"status.{key}", status.get(key))
        return MappingProxyType({k: quantity(where, f"status.{key}[{k}]", v) for k, v in raw.items()})

    return Node(
        name=name,
        labels=MappingProxyType(labels),
        annotations=MappingProxyType(annotations),
        allocatable=resource_list("allocatable"),
        capacity=resource_list("capacity"),
    )


def _device(where: Where, obj: Mapping[str, Any]) -> Device:
    """A ``Device``; fields are checked against the Go types (a wrong type is what the API server or the
    scheduler's informer would refuse to decode)."""
    name, labels, annotations = header(where, obj, DEVICE_KIND, DEVICE_API_VERSION)
    spec = fields.mapping(where, "spec", obj.get("spec"))
    infos = []
    for i, raw in enumerate(fields.sequence(where, "spec.devices", spec.get("devices"))):
        path = f"spec.devices[{i}]"
        item = fields.mapping(where, path, raw)
        # buildDeviceResources dereferences minor: a device without one would crash the scheduler.
        if item.get("minor") is None:
            raise where.error(f"{path}.minor", "Required value")
        minor = fields.integer(where, f"{path}.minor", item.get("minor"))
        resources = fields.mapping(where, f"{path}.resources", item.get("resources"))
        topology = None
        if item.get("topology") is not None:
            raw_topology = fields.mapping(where, f"{path}.topology", item.get("topology"))
            topology = DeviceTopology(
                socket_id=fields.integer(where, f"{path}.topology.socketID", raw_topology.get("socketID", 0)),
                node_id=fields.integer(where, f"{path}.topology.nodeID", raw_topology.get("nodeID", 0)),
                pcie_id=fields.string(where, f"{path}.topology.pcieID", raw_topology.get("pcieID", "")),
                bus_id=fields.string(where, f"{path}.topology.busID", raw_topology.get("busID", "")),
            )
        groups = []
        for g, raw_group in enumerate(fields.sequence(where, f"{path}.vfGroups", item.get("vfGroups"))):
            gpath = f"{path}.vfGroups[{g}]"
            group = fields.mapping(where, gpath, raw_group)
            vfs = []
            for v, raw_vf in enumerate(fields.sequence(where, f"{gpath}.vfs", group.get("vfs"))):
                vf = fields.mapping(where, f"{gpath}.vfs[{v}]", raw_vf)
                vfs.append(
                    VirtualFunction(
                        fields.integer(where, f"{gpath}.vfs[{v}].minor", vf.get("minor", 0)),
                        fields.string(where, f"{gpath}.vfs[{v}].busID", vf.get("busID", "")),
                    )
                )
            groups.append(
                VirtualFunctionGroup(
                    MappingProxyType(fields.string_map(where, f"{gpath}.labels", group.get("labels"))),
                    tuple(vfs),
                )
            )
        infos.append(
            DeviceInfo(
                type=fields.string(where, f"{path}.type", item.get("type", "")),
                minor=minor,
                health=fields.boolean(where, f"{path}.health", item.get("health", False)),
                uuid=fields.string(where, f"{path}.id", item.get("id", "")),
                labels=MappingProxyType(fields.string_map(where, f"{path}.labels", item.get("labels"))),
                resources=MappingProxyType(
                    {k: quantity(where, f"{path}.resources[{k}]", v) for k, v in resources.items()}
                ),
                topology=topology,
                vf_groups=tuple(groups),
            )
        )
    return Device(
        name=name,
        devices=tuple(infos),
        labels=MappingProxyType(labels),
        annotations=MappingProxyType(annotations),
    )


# Published amounts take few distinct values; a Quantity is never changed once made, so one per value serves.
_QUANTITIES: dict[int, Quantity] = {}


def _publishedquantity(amount: int) -> Quantity:
    quantity = _QUANTITIES.get(amount)
    if quantity is None:
        if len(_QUANTITIES) >= 65536:
            _QUANTITIES.clear()
        quantity = _QUANTITIES[amount] = Quantity(amount)
    return quantity


def from_node_side(topology: node_side.NodeResourceTopology) -> NodeResourceTopology:
    """The object an emulated node publishes (``kubeletemu nrt``), as a scheduler reads it."""
    return NodeResourceTopology(
        name=topology.name,
        zones=tuple(
            Zone(
                name=z.name,
                type=z.type,
                costs=tuple(CostInfo(c.name, c.value) for c in z.costs),
                attributes=tuple(AttributeInfo(a.name, a.value) for a in z.attributes),
                resources=tuple(
                    ResourceInfo(
                        r.name,
                        _publishedquantity(r.capacity),
                        _publishedquantity(r.allocatable),
                        _publishedquantity(r.available),
                    )
                    for r in z.resources
                ),
            )
            for z in topology.zones
        ),
        attributes=tuple(AttributeInfo(a.name, a.value) for a in topology.attributes),
        annotations=MappingProxyType(dict(topology.annotations)),
    )
