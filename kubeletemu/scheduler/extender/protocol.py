"""The scheduler extender's wire: the types of ``k8s.io/kube-scheduler/extender/v1`` (``types.go``, the same
at v0.34.7 and v0.37.2), read and written as kube-scheduler's ``HTTPExtender`` does
(``pkg/scheduler/extender.go``, kubernetes v1.34.7 and v1.37.2).

The v1 types carry no JSON tags, so every key is the Go field name (``Pod``, ``NodeNames``, ``FailedNodes``,
``Host``, ``Score``, ``NodeNameToMetaVictims``, ...). Go's nil and empty are different values on this wire:
``"NodeNames": null`` in a Filter reply means no node fits, ``[]`` the same for a node-cache extender;
here ``None`` is Go's nil and an empty list or dict is an empty, non-nil slice or map, and each encoder
writes exactly what Go's ``json.Marshal`` writes for the same value (:mod:`.gojson`).

Requests are read within bounds (:data:`LIMITS`: size, values, nesting, via
:func:`kubeletemu.manifest.documents.decode_json`), and the pod as the daemon reads a pod manifest
(:func:`kubeletemu.manifest.pod_from_manifest`). Anything else is a :class:`ProtocolError` naming the field:
the server answers it with HTTP 400, never with a reply the scheduler would read as "no node fits".

In node-cache mode (``nodeCacheCapable: true``) the scheduler sends ``NodeNames`` and, to Preempt,
``NodeNameToMetaVictims``; otherwise ``Nodes`` (a NodeList) and ``NodeNameToVictims`` (whole pods). Both are
read: from a NodeList the node names, from whole victim pods their UIDs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.golang import json_kind
from kubeletemu.manifest import ManifestError, pod_from_manifest
from kubeletemu.manifest.documents import decode_json
from kubeletemu.manifest.limits import REQUEST, Limits, clip
from kubeletemu.pod import Pod
from kubeletemu.scheduler.extender.gojson import INT64_MAX, INT64_MIN, Struct, marshal, struct_fields

# extender/v1: the range of an extender's scores.
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10

# A request: the API server's request body limit (a pod is at most that), and the value bound of the
# daemon's requests, which a 5,000-node NodeNames list (5,000 values) and a large pod stay well within.
LIMITS = REQUEST


class ProtocolError(ValueError):
    """A request body that is not the message its verb takes: the field (Go's name, a path such as
    ``NodeNames[3]``; empty for the body itself) and why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


# ---- the messages ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtenderArgs:
    """``ExtenderArgs``: Filter's and Prioritize's request. ``node_names`` is ``NodeNames`` (None when nil);
    ``nodes`` the names of ``Nodes.Items`` (None when ``Nodes`` is nil)."""

    pod: Pod
    node_names: tuple[str, ...] | None = None
    nodes: tuple[str, ...] | None = None

    def candidate_names(self) -> tuple[str, ...] | None:
        """The nodes asked about: ``NodeNames`` in node-cache mode, else the NodeList's; None when neither
        was sent."""
        return self.node_names if self.node_names is not None else self.nodes


@dataclass
class ExtenderFilterResult:
    """``ExtenderFilterResult``. ``Nodes`` (a NodeList) is always nil: this extender is node-cache capable."""

    node_names: list[str] | None = None
    failed_nodes: dict[str, str] | None = None
    failed_and_unresolvable_nodes: dict[str, str] | None = None
    error: str = ""


@dataclass(frozen=True)
class HostPriority:
    """``HostPriority``: a node and its score, ``MIN_EXTENDER_PRIORITY`` to ``MAX_EXTENDER_PRIORITY``."""

    host: str
    score: int


# ``HostPriorityList``: a slice, None being Go's nil.
HostPriorityList = list[HostPriority] | None


@dataclass(frozen=True)
class ExtenderBindingArgs:
    """``ExtenderBindingArgs``: Bind's request."""

    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


@dataclass
class ExtenderBindingResult:
    """``ExtenderBindingResult``: ``Error`` empty when the pod was bound."""

    error: str = ""


@dataclass(frozen=True)
class MetaPod:
    """``MetaPod``: a victim by UID."""

    uid: str


@dataclass
class MetaVictims:
    """``MetaVictims``: a node's victims (``pods`` None when nil; an item None when a nil pointer) and the
    PodDisruptionBudgets their eviction would violate."""

    pods: list[MetaPod | None] | None = field(default_factory=list)
    num_pdb_violations: int = 0

    def uids(self) -> list[str]:
        return [p.uid for p in self.pods or () if p is not None]


@dataclass(frozen=True)
class ExtenderPreemptionArgs:
    """``ExtenderPreemptionArgs``: Preempt's request. ``node_name_to_meta_victims`` is the node-cache form;
    ``node_name_to_victims`` the other (whole pods, kept here as their UIDs). Either may be None (nil)."""

    pod: Pod
    node_name_to_meta_victims: dict[str, MetaVictims | None] | None = None
    node_name_to_victims: dict[str, MetaVictims | None] | None = None

    def victims(self) -> dict[str, MetaVictims | None]:
        """The candidates: the node-cache form when sent, else the other."""
        if self.node_name_to_meta_victims is not None:
            return self.node_name_to_meta_victims
        return self.node_name_to_victims or {}


@dataclass
class ExtenderPreemptionResult:
    """``ExtenderPreemptionResult``: the nodes where preemption would let the pod fit, with their victims."""

    node_name_to_meta_victims: dict[str, MetaVictims | None] | None = None


# ---- reading ---------------------------------------------------------------------------------------------


def parse_args(body: bytes, limits: Limits = LIMITS) -> ExtenderArgs:
    """Filter's or Prioritize's request body."""
    fields = _struct(_decode(body, limits), "", ("Pod", "Nodes", "NodeNames"))
    pod = _pod(fields.get("Pod"), "Pod")
    return ExtenderArgs(pod, _names(fields.get("NodeNames"), "NodeNames"), _node_list(fields.get("Nodes")))


def parse_preemption_args(body: bytes, limits: Limits = LIMITS) -> ExtenderPreemptionArgs:
    """Preempt's request body."""
    names = ("Pod", "NodeNameToVictims", "NodeNameToMetaVictims")
    fields = _struct(_decode(body, limits), "", names)
    pod = _pod(fields.get("Pod"), "Pod")
    meta = _victims_map(fields.get("NodeNameToMetaVictims"), "NodeNameToMetaVictims", _meta_pod)
    whole = _victims_map(fields.get("NodeNameToVictims"), "NodeNameToVictims", _whole_pod)
    return ExtenderPreemptionArgs(pod, meta, whole)


def parse_binding_args(body: bytes, limits: Limits = LIMITS) -> ExtenderBindingArgs:
    """Bind's request body."""
    names = ("PodName", "PodNamespace", "PodUID", "Node")
    fields = _struct(_decode(body, limits), "", names)
    name, namespace, uid, node = (_string(fields.get(n), n) for n in names)
    for key, value in (("PodName", name), ("PodUID", uid), ("Node", node)):
        if not value:
            raise ProtocolError(key, "Required value")
    return ExtenderBindingArgs(name, namespace, uid, node)


def _decode(body: bytes, limits: Limits) -> Any:
    if limits.max_chars is not None and len(body) > limits.max_chars:
        raise ProtocolError(
            "", f"the body is {len(body):,} bytes, more than the {limits.max_chars:,} allowed"
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ProtocolError("", f"not UTF-8: {err.reason} at byte {err.start}") from None
    try:
        return decode_json(text, None, limits)
    except ManifestError as err:
        raise ProtocolError("", str(err)) from None


def _struct(value: Any, path: str, names: Sequence[str]) -> dict[str, Any]:
    """A JSON object (or null: every field nil) read as a struct of the fields ``names``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProtocolError(path, f"expected an object, got {json_kind(value)}")
    fields, twice = struct_fields(value, names)
    if twice is not None:
        where = f"{path}.{twice}" if path else twice
        raise ProtocolError(where, "given twice (by keys that differ in case)")
    return fields


def _string(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ProtocolError(path, f"expected a string, got {json_kind(value)}")
    return value


def _int64(value: Any, path: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(path, f"expected an integer, got {json_kind(value)}")
    if not INT64_MIN <= value <= INT64_MAX:
        raise ProtocolError(path, f"{clip(str(value))} overflows int64")
    return value


def _pod(value: Any, path: str) -> Pod:
    if value is None:
        raise ProtocolError(path, "Required value")
    if not isinstance(value, dict):
        raise ProtocolError(path, f"expected an object, got {json_kind(value)}")
    try:
        return pod_from_manifest(value)
    except ManifestError as err:
        raise ProtocolError(path, str(err)) from None


def _names(value: Any, path: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ProtocolError(path, f"expected an array, got {json_kind(value)}")
    return tuple(_string(item, f"{path}[{index}]") for index, item in enumerate(value))


def _node_list(value: Any) -> tuple[str, ...] | None:
    """``Nodes`` (a ``*v1.NodeList``): the names of its items."""
    if value is None:
        return None
    items = _struct(value, "Nodes", ("Items",)).get("Items")
    if items is None:
        return ()
    if not isinstance(items, list):
        raise ProtocolError("Nodes.items", f"expected an array, got {json_kind(items)}")
    names: list[str] = []
    for index, item in enumerate(items):
        path = f"Nodes.items[{index}]"
        metadata = _struct(item, path, ("Metadata",)).get("Metadata")
        names.append(_string(_struct(metadata, f"{path}.metadata", ("Name",)).get("Name"), f"{path}.name"))
    return tuple(names)


def _meta_pod(value: Any, path: str) -> MetaPod | None:
    if value is None:
        return None
    return MetaPod(_string(_struct(value, path, ("UID",)).get("UID"), f"{path}.UID"))


def _whole_pod(value: Any, path: str) -> MetaPod | None:
    """A victim given whole (``*v1.Pod``): its ``metadata.uid``."""
    if value is None:
        return None
    metadata = _struct(value, path, ("Metadata",)).get("Metadata")
    return MetaPod(
        _string(_struct(metadata, f"{path}.metadata", ("UID",)).get("UID"), f"{path}.metadata.uid")
    )


def _victims_map(value: Any, path: str, read_pod: Any) -> dict[str, MetaVictims | None] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ProtocolError(path, f"expected an object, got {json_kind(value)}")
    result: dict[str, MetaVictims | None] = {}
    for node, raw in value.items():
        where = f"{path}[{clip(node)}]"
        if raw is None:
            result[node] = None
            continue
        fields = _struct(raw, where, ("Pods", "NumPDBViolations"))
        pods_raw = fields.get("Pods")
        pods: list[MetaPod | None] | None = None
        if pods_raw is not None:
            if not isinstance(pods_raw, list):
                raise ProtocolError(f"{where}.Pods", f"expected an array, got {json_kind(pods_raw)}")
            pods = [read_pod(p, f"{where}.Pods[{i}]") for i, p in enumerate(pods_raw)]
        result[node] = MetaVictims(pods, _int64(fields.get("NumPDBViolations"), f"{where}.NumPDBViolations"))
    return result


# ---- writing ---------------------------------------------------------------------------------------------


def encode_filter_result(result: ExtenderFilterResult) -> bytes:
    return marshal(
        Struct(
            ("Nodes", None),
            ("NodeNames", result.node_names),
            ("FailedNodes", result.failed_nodes),
            ("FailedAndUnresolvableNodes", result.failed_and_unresolvable_nodes),
            ("Error", result.error),
        )
    )


def encode_priority_list(priorities: HostPriorityList) -> bytes:
    if priorities is None:
        return marshal(None)
    return marshal([Struct(("Host", p.host), ("Score", p.score)) for p in priorities])


def encode_binding_result(result: ExtenderBindingResult) -> bytes:
    return marshal(Struct(("Error", result.error)))


def _meta_victims(victims: MetaVictims | None) -> Struct | None:
    if victims is None:
        return None
    pods = (
        None
        if victims.pods is None
        else [None if p is None else Struct(("UID", p.uid)) for p in victims.pods]
    )
    return Struct(("Pods", pods), ("NumPDBViolations", victims.num_pdb_violations))


def encode_preemption_result(result: ExtenderPreemptionResult) -> bytes:
    victims: Mapping[str, Struct | None] | None = None
    if result.node_name_to_meta_victims is not None:
        victims = {node: _meta_victims(v) for node, v in result.node_name_to_meta_victims.items()}
    return marshal(Struct(("NodeNameToMetaVictims", victims)))
