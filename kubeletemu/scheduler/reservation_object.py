"""Koordinator ``Reservation`` objects (``scheduling.koordinator.sh/v1alpha1``) as
:mod:`kubeletemu.scheduler.objects` reads them, with the fields koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` consults when a pod may reuse reserved CPUs and NUMA resources
(``apis/scheduling/v1alpha1/reservation_types.go``, ``pkg/util/reservation/reservation.go``).

A scheduled reservation holds its CPU set and NUMA resources through the same
``scheduling.koordinator.sh/resource-status`` annotation a pod carries (PreBindReservation writes it); the
scheduler turns the reservation into a reserve pod on ``status.nodeName`` (``NewReservePod``), so that
annotation is kept as is and decoded where the NUMA plugin's accounting is built.

Owners are read as the scheduler matches them (``MatchReservationOwners``): ``object`` (uid, name, namespace,
apiVersion) and ``labelSelector``. A ``controller`` owner is refused: the pods read here carry no
``ownerReferences``, so it could never be decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kubeletemu.config import fields
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.object_fields import Where, header, quantity

RESERVATION_API_VERSION = "scheduling.koordinator.sh/v1alpha1"
RESERVATION_KIND = "Reservation"
ALLOCATE_POLICY_DEFAULT = ""
ALLOCATE_POLICY_ALIGNED = "Aligned"
ALLOCATE_POLICY_RESTRICTED = "Restricted"
ALLOCATE_POLICIES = (ALLOCATE_POLICY_DEFAULT, ALLOCATE_POLICY_ALIGNED, ALLOCATE_POLICY_RESTRICTED)
PHASES = ("", "Pending", "Available", "Succeeded", "Waiting", "Failed")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_NO_STRINGS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class LabelRequirement:
    """One ``matchExpressions`` entry of a ``metav1.LabelSelector``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels


@dataclass(frozen=True)
class LabelSelector:
    """``metav1.LabelSelector``: every matchLabels pair and every expression must hold."""

    match_labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    match_expressions: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            r.matches(labels) for r in self.match_expressions
        )


@dataclass(frozen=True)
class ObjectReference:
    """The fields of ``corev1.ObjectReference`` ``MatchObjectRef`` compares (empty = any)."""

    uid: str = ""
    name: str = ""
    namespace: str = ""
    api_version: str = ""


@dataclass(frozen=True)
class ReservationOwner:
    """``ReservationOwner``: its set parts are ANDed."""

    object: ObjectReference | None = None
    label_selector: LabelSelector | None = None


@dataclass(frozen=True)
class Reservation:
    """The slice of ``v1alpha1.Reservation`` the NUMA plugin's reservation paths read. ``allocate_once``
    is ``spec.allocateOnce`` (default true); ``owners`` None is an absent list (it matches no pod)."""

    name: str
    uid: str
    labels: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    annotations: Mapping[str, str] = field(default_factory=lambda: _NO_STRINGS)
    owners: tuple[ReservationOwner, ...] = ()
    allocate_policy: str = ALLOCATE_POLICY_DEFAULT
    allocate_once: bool = True
    unschedulable: bool = False
    phase: str = ""
    node_name: str = ""
    allocatable: Mapping[str, Quantity] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def available(self) -> bool:
        """``IsReservationAvailable``: scheduled on a node and Available."""
        return bool(self.node_name) and self.phase == "Available"

    @property
    def active(self) -> bool:
        """``IsReservationActive``: scheduled on a node and Available or Waiting."""
        return bool(self.node_name) and self.phase in ("Available", "Waiting")


def parse_reservation(where: Where, obj: Mapping[str, Any]) -> Reservation:
    """A ``Reservation`` document; every error names the file, the object and the field."""
    name, labels, annotations = header(where, obj, RESERVATION_KIND, RESERVATION_API_VERSION, quote=repr)
    metadata = fields.mapping(where, "metadata", obj.get("metadata"))
    uid_raw = metadata.get("uid")
    # The reserve pod's UID is the reservation's; a hand-written object without one gets a stable stand-in.
    uid = (
        f"reservation-{name}" if uid_raw in (None, "") else fields.scalar_text(where, "metadata.uid", uid_raw)
    )
    spec = fields.mapping(where, "spec", obj.get("spec"))
    status = fields.mapping(where, "status", obj.get("status"))
    owners = tuple(
        _owner(where, f"spec.owners[{i}]", raw)
        for i, raw in enumerate(fields.sequence(where, "spec.owners", spec.get("owners")))
    )
    policy = fields.string(where, "spec.allocatePolicy", spec.get("allocatePolicy", ""))
    if policy not in ALLOCATE_POLICIES:
        raise where.error(
            "spec.allocatePolicy",
            f"Unsupported value: {policy!r}: supported values: '', 'Aligned', 'Restricted'",
        )
    once = spec.get("allocateOnce")
    phase = fields.string(where, "status.phase", status.get("phase", ""))
    if phase not in PHASES:
        raise where.error(
            "status.phase", f"Unsupported value: {phase!r}: supported values: {', '.join(PHASES[1:])}"
        )
    allocatable = fields.mapping(where, "status.allocatable", status.get("allocatable"))
    return Reservation(
        name=name,
        uid=uid,
        labels=MappingProxyType(labels),
        annotations=MappingProxyType(annotations),
        owners=owners,
        allocate_policy=policy,
        allocate_once=True if once is None else fields.boolean(where, "spec.allocateOnce", once),
        unschedulable=fields.boolean(where, "spec.unschedulable", spec.get("unschedulable", False)),
        phase=phase,
        node_name=fields.string(where, "status.nodeName", status.get("nodeName", "")),
        allocatable=MappingProxyType(
            {k: quantity(where, f"status.allocatable[{k}]", v) for k, v in allocatable.items()}
        ),
    )


def _owner(where: Where, path: str, raw: Any) -> ReservationOwner:
    owner = fields.mapping(where, path, raw)
    if owner.get("controller") is not None:
        raise where.error(
            f"{path}.controller",
            "not supported: the pods read here carry no ownerReferences to match it against",
        )
    ref = None
    if owner.get("object") is not None:
        obj = fields.mapping(where, f"{path}.object", owner["object"])
        ref = ObjectReference(
            uid=fields.scalar_text(where, f"{path}.object.uid", obj.get("uid", "")),
            name=fields.string(where, f"{path}.object.name", obj.get("name", "")),
            namespace=fields.string(where, f"{path}.object.namespace", obj.get("namespace", "")),
            api_version=fields.string(where, f"{path}.object.apiVersion", obj.get("apiVersion", "")),
        )
    selector = None
    if owner.get("labelSelector") is not None:
        selector = _selector(where, f"{path}.labelSelector", owner["labelSelector"])
    return ReservationOwner(ref, selector)


def _selector(where: Where, path: str, raw: Any) -> LabelSelector:
    sel = fields.mapping(where, path, raw)
    requirements = []
    for i, item in enumerate(fields.sequence(where, f"{path}.matchExpressions", sel.get("matchExpressions"))):
        epath = f"{path}.matchExpressions[{i}]"
        expr = fields.mapping(where, epath, item)
        operator = fields.string(where, f"{epath}.operator", expr.get("operator"))
        if operator not in SELECTOR_OPERATORS:
            raise where.error(
                f"{epath}.operator", f"Unsupported value: {operator!r}: not a valid label selector operator"
            )
        values = tuple(
            fields.scalar_text(where, f"{epath}.values[{j}]", v)
            for j, v in enumerate(fields.sequence(where, f"{epath}.values", expr.get("values")))
        )
        if operator in ("In", "NotIn") and not values:
            raise where.error(
                f"{epath}.values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"
            )
        if operator in ("Exists", "DoesNotExist") and values:
            raise where.error(
                f"{epath}.values",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )
        requirements.append(
            LabelRequirement(fields.string(where, f"{epath}.key", expr.get("key")), operator, values)
        )
    return LabelSelector(
        MappingProxyType(fields.string_map(where, f"{path}.matchLabels", sel.get("matchLabels"))),
        tuple(requirements),
    )
