"""Cluster events as kube-scheduler's queue sees them (``ClusterEvent``, ``ActionType``, ``EventResource``;
``framework/events.go`` and ``types.go``, in 1.34+ ``k8s.io/kube-scheduler/framework/types.go``).

An event is a resource and a set of action names; the bit values behind the names differ between versions
(:func:`action_bits`), and so does matching (:func:`match`): up to 1.33 a registered event matches an
incoming one of the same resource sharing any action bit; from 1.34 the incoming bits must also not exceed
the registered ones (behaviour ``event-match``). Pod update events are split into the sub-updates a change
carries (:func:`pod_scheduling_properties_change`), node updates likewise
(:func:`node_scheduling_properties_change`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from kubeletemu.fleet.queue import pods
from kubeletemu.fleet.queue.versions import in_effect, step_at
from kubeletemu.lifecycle.resources import milli_value, pod_request_list
from kubeletemu.pod import Pod
from kubeletemu.scheduler.objects import Node

# ActionType names (the upstream constants).
ADD = "Add"
DELETE = "Delete"
UPDATE_NODE_ALLOCATABLE = "UpdateNodeAllocatable"
UPDATE_NODE_LABEL = "UpdateNodeLabel"
UPDATE_NODE_TAINT = "UpdateNodeTaint"
UPDATE_NODE_CONDITION = "UpdateNodeCondition"
UPDATE_NODE_ANNOTATION = "UpdateNodeAnnotation"
UPDATE_NODE_DECLARED_FEATURE = "UpdateNodeDeclaredFeature"  # 1.35+
UPDATE_POD_LABEL = "UpdatePodLabel"
UPDATE_POD_SCALE_DOWN = "UpdatePodScaleDown"
UPDATE_POD_TOLERATION = "UpdatePodToleration"
UPDATE_POD_SCHEDULING_GATES_ELIMINATED = "UpdatePodSchedulingGatesEliminated"
UPDATE_POD_GENERATED_RESOURCE_CLAIM = "UpdatePodGeneratedResourceClaim"
UPDATE_POD_OTHER = "updatePodOther"  # up to 1.33
# Composite names: every update bit of the version, every bit of the version.
UPDATE = "Update"
ALL = "All"

# Resources.
POD = "Pod"
ASSIGNED_POD = "AssignedPod"  # internal: only incoming events carry it
UNSCHEDULABLE_POD = "UnschedulablePod"  # internal: only incoming events carry it
NODE = "Node"
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
CSI_NODE = "storage.k8s.io/CSINode"
STORAGE_CLASS = "storage.k8s.io/StorageClass"
WILDCARD = "*"
# The custom-resource events the NUMA-aware plugins register ("<plural>.<version>.<group>", the naming
# kube-scheduler's dynamic informers use).
NRT_V1ALPHA2 = "noderesourcetopologies.v1alpha2.topology.node.k8s.io"
NRT_V1ALPHA1 = "noderesourcetopologies.v1alpha1.topology.node.k8s.io"
KOORD_DEVICE = "devices.v1alpha1.scheduling.koordinator.sh"

# Custom labels of the wildcard events.
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
FORCE_ACTIVATE = "ForceActivate"
# Event labels of queue moves that are not cluster events.
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"

_NODE_UPDATES = (
    UPDATE_NODE_ALLOCATABLE,
    UPDATE_NODE_LABEL,
    UPDATE_NODE_TAINT,
    UPDATE_NODE_CONDITION,
    UPDATE_NODE_ANNOTATION,
)
_POD_UPDATES = (
    UPDATE_POD_LABEL,
    UPDATE_POD_SCALE_DOWN,
    UPDATE_POD_TOLERATION,
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    UPDATE_POD_GENERATED_RESOURCE_CLAIM,
)


@cache
def action_order(version: str) -> tuple[str, ...]:
    """The single-bit ActionTypes in bit order (``Add`` is bit 0) at ``version``."""
    node_updates = _NODE_UPDATES + (
        (UPDATE_NODE_DECLARED_FEATURE,) if step_at("event-match", version) >= 2 else ()
    )
    other = () if in_effect("event-match", version) else (UPDATE_POD_OTHER,)
    return (ADD, DELETE, *node_updates, *_POD_UPDATES, *other)


@cache
def action_bits(version: str) -> Mapping[str, int]:
    """Every ActionType name to its value at ``version``, composites included."""
    order = action_order(version)
    bits = {name: 1 << index for index, name in enumerate(order)}
    bits[UPDATE] = sum(bits[name] for name in order if name not in (ADD, DELETE))
    bits[ALL] = (1 << len(order)) - 1
    return bits


@dataclass(frozen=True)
class ClusterEvent:
    """``ClusterEvent``: a resource and an action (a name, or names joined by ``|``), with an optional
    custom label (the wildcard events ``UnschedulableTimeout`` and ``ForceActivate``)."""

    resource: str
    action: str
    custom_label: str = ""

    @property
    def actions(self) -> tuple[str, ...]:
        return tuple(self.action.split("|"))

    def value(self, version: str) -> int:
        bits = action_bits(version)
        total = 0
        for name in self.actions:
            if name not in bits:
                raise ValueError(f"ActionType {name!r} does not exist in kube-scheduler {version}")
            total |= bits[name]
        return total

    @property
    def is_wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ALL

    def label(self, version: str) -> str:
        """``Label()``: the custom label, else resource and action (``NodeAdd``); a composite action that
        is not ``Update`` or ``All`` has no name (``ActionType.String`` returns "")."""
        if self.custom_label:
            return self.custom_label
        name = self.action
        if "|" in name:
            value = self.value(version)
            name = next((n for n, v in action_bits(version).items() if v == value), "")
        elif name == UPDATE_POD_OTHER:
            name = UPDATE
        return f"{self.resource}{name}"

    def __str__(self) -> str:
        return self.custom_label or f"{self.resource}/{self.action}"


EVENT_ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ADD)
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(ASSIGNED_POD, UPDATE)
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, DELETE)
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULABLE_POD, ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(UNSCHEDULABLE_POD, UPDATE)
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(UNSCHEDULABLE_POD, DELETE)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ALL, UNSCHEDULABLE_TIMEOUT)
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ALL, FORCE_ACTIVATE)
EVENT_NODE_ADD = ClusterEvent(NODE, ADD)
EVENT_NODE_DELETE = ClusterEvent(NODE, DELETE)


def _resource_matches(registered: str, incoming: str) -> bool:
    if registered in (WILDCARD, incoming):
        return True
    # Pod matches both internal pod resources (only incoming events carry those).
    return registered == POD and incoming in (ASSIGNED_POD, UNSCHEDULABLE_POD)


def match(registered: ClusterEvent, incoming: ClusterEvent, version: str) -> bool:
    """``registered.Match(incoming)`` (1.34+: ``MatchClusterEvents``)."""
    if registered.is_wildcard:
        return True
    if not _resource_matches(registered.resource, incoming.resource):
        return False
    mine, theirs = registered.value(version), incoming.value(version)
    if mine & theirs == 0:
        return False
    return theirs <= mine if in_effect("event-match", version) else True


def match_any(incoming: ClusterEvent, registered: Iterable[ClusterEvent], version: str) -> bool:
    """``MatchAnyClusterEvent``: ``incoming`` matches one of ``registered``."""
    return any(match(event, incoming, version) for event in registered)


def _requests(pod: Pod) -> Mapping[str, Fraction]:
    return pod_request_list(pod)


def pod_scheduling_properties_change(new: Pod, old: Pod, version: str) -> list[ClusterEvent]:
    """``PodSchedulingPropertiesChange``: the update events a pod change carries (labels, scale-down,
    scheduling gates removed, tolerations added), on ``AssignedPod`` for a bound pod, else
    ``UnschedulablePod``; a general update when none applies (``updatePodOther`` up to 1.33). Resource
    claims are not modelled (no DRA)."""
    resource = UNSCHEDULABLE_POD if not new.node_name else ASSIGNED_POD
    found: list[str] = []
    if dict(new.labels) != dict(old.labels):
        found.append(UPDATE_POD_LABEL)
    if _scaled_down(new, old):
        found.append(UPDATE_POD_SCALE_DOWN)
    if not pods.scheduling_gates(new) and pods.scheduling_gates(old):
        found.append(UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(pods.tolerations(new)) != len(pods.tolerations(old)):
        found.append(UPDATE_POD_TOLERATION)
    if not found:
        found.append(UPDATE if in_effect("event-match", version) else UPDATE_POD_OTHER)
    return [ClusterEvent(resource, action) for action in found]


def _scaled_down(new: Pod, old: Pod) -> bool:
    """``extractPodScaleDown``: a request removed or lowered (compared in milli-units)."""
    new_requests = _requests(new)
    for name, amount in _requests(old).items():
        if name not in new_requests:
            return True
        if milli_value(amount) > milli_value(new_requests[name]):
            return True
    return False


def node_scheduling_properties_change(new: Node, old: Node) -> list[ClusterEvent]:
    """``NodeSchedulingPropertiesChange`` for what a :class:`~kubeletemu.scheduler.objects.Node` carries:
    allocatable, labels, annotations (the project's Node has no taints, conditions or
    ``spec.unschedulable``)."""
    found: list[str] = []
    if {k: q.amount for k, q in new.allocatable.items()} != {k: q.amount for k, q in old.allocatable.items()}:
        found.append(UPDATE_NODE_ALLOCATABLE)
    if dict(new.labels) != dict(old.labels):
        found.append(UPDATE_NODE_LABEL)
    if dict(new.annotations) != dict(old.annotations):
        found.append(UPDATE_NODE_ANNOTATION)
    return [ClusterEvent(NODE, action) for action in found]
