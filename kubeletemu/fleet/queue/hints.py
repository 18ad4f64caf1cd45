"""QueueingHints and the events each plugin the fleet models registers (``EventsToRegister``), and the
scheduler's ``buildQueueingHintMap`` over them.

A hint function answers, for a pod a plugin rejected, whether an event may make it schedulable:
:data:`QUEUE` or :data:`QUEUE_SKIP`; raising :class:`QueueingHintError` is the Go function's error (the
queue then treats the event as ``Queue``). An event registered without a function always queues, and so
does every function while ``SchedulerQueueingHints`` is off.

Registrations, as shipped:

* ``NodeResourcesFit`` (kube-scheduler ``noderesources/fit.go`` at each version): ``Pod/Delete`` (with
  ``UpdatePodScaleDown`` when ``InPlacePodVerticalScaling`` is on: 1.33+) with
  ``isSchedulableAfterPodEvent``, ``Node/Add|UpdateNodeAllocatable`` (with ``UpdateNodeTaint|
  UpdateNodeLabel`` while QueueingHints are off) with ``isSchedulableAfterNodeChange``.
* ``NodeResourceTopologyMatch`` (scheduler-plugins 903da7df82cb8794dda8f2d510ba1156111662dd,
  ``pkg/noderesourcetopology/plugin.go``): ``Pod/Delete``, ``Node/Add|UpdateNodeAllocatable``,
  ``noderesourcetopologies.v1alpha2.topology.node.k8s.io/Add|Update``; no hint functions.
* ``NodeNUMAResource`` and ``DeviceShare`` (koordinator a7a1b76bbf81abd26f9c377de1f31a60dd965f6e,
  ``pkg/scheduler/plugins/{nodenumaresource,deviceshare}/plugin.go``): ``Pod/Delete`` and their custom
  resource (``noderesourcetopologies.v1alpha1.topology.node.k8s.io``, ``devices.v1alpha1.scheduling.
  koordinator.sh``) ``Add|Update|Delete``; no hint functions.
* ``Extender`` (kube-scheduler's fake plugin name for its extenders, ``framework.ExtenderName``): a
  framework with extenders registers ``defaultEnqueueExtension{"Extender"}`` for every resource of
  ``UnrollWildCardResource`` with ``All`` actions and no hint function (``framework/runtime/framework.go``,
  v1.33.3 – v1.37.2); the fleet's events are pods' and nodes'.
* ``WouldAdmit`` (the fleet's ``exact`` predictor; no upstream plugin): the node's own admission changes
  when a pod leaves it or the node changes, so ``Pod/Delete`` and ``Node/Add|UpdateNodeAllocatable``, no
  hint function (a project choice, not a shipped registration).

The default profile's other filter plugins (NodeUnschedulable, TaintToleration, NodeAffinity, …) are not
modelled (``kubeletemu.scheduler.profile.NOT_MODELLED``) and never reject a fleet pod, so their
registrations cannot move one; they are left out (see INTEGRATION.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubeletemu.fleet.queue import events as ev
from kubeletemu.fleet.queue import pods
from kubeletemu.fleet.queue.events import ClusterEvent
from kubeletemu.fleet.queue.versions import (
    IN_PLACE_POD_VERTICAL_SCALING,
    SCHEDULER_QUEUEING_HINTS,
    feature_gates,
    in_effect,
)
from kubeletemu.lifecycle.resources import CPU, MEMORY, Resource, is_scalar_resource_name, pod_request_list
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.noderesourcesfit import NAME as NODE_RESOURCES_FIT
from kubeletemu.scheduler.noderesourcesfit import NodeResourcesFit
from kubeletemu.scheduler.objects import Node

QUEUE = "Queue"
QUEUE_SKIP = "QueueSkip"

NODE_RESOURCE_TOPOLOGY_MATCH = "NodeResourceTopologyMatch"
NODE_NUMA_RESOURCE = "NodeNUMAResource"
DEVICE_SHARE = "DeviceShare"
WOULD_ADMIT = "WouldAdmit"
EXTENDER = "Extender"  # framework.ExtenderName
EPHEMERAL_STORAGE = "ephemeral-storage"


class QueueingHintError(Exception):
    """A hint function's error: the queue logs it and queues the pod."""


QueueingHintFn = Callable[[Pod, object, object], str]


def queue_always(pod: Pod, old: object, new: object) -> str:
    """``defaultQueueingHintFn``."""
    return QUEUE


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None


@dataclass(frozen=True)
class QueueingHintFunction:
    plugin_name: str
    fn: QueueingHintFn


QueueingHintMap = dict[ClusterEvent, list[QueueingHintFunction]]


@dataclass(frozen=True)
class EnqueueExtension:
    """A plugin's ``EventsToRegister``."""

    name: str
    events: tuple[ClusterEventWithHint, ...]


def build_queueing_hint_map(
    extensions: Iterable[EnqueueExtension], version: str, gates: Mapping[str, bool] | None = None
) -> QueueingHintMap:
    """``buildQueueingHintMap``: every registration under its event, in plugin order; a missing function,
    or every function while QueueingHints are off, becomes :func:`queue_always`; a plugin registering
    ``Node/Add`` without ``Node/UpdateNodeTaint`` also gets ``Node/UpdateNodeTaint`` (kubernetes#109437's
    mitigation for preCheck)."""
    enabled = feature_gates(version, gates)[SCHEDULER_QUEUEING_HINTS]
    out: QueueingHintMap = {}
    for extension in extensions:
        node_added = node_taint = False
        for registration in extension.events:
            fn = registration.hint if registration.hint is not None and enabled else queue_always
            event = registration.event
            if event.resource == ev.NODE:
                value = event.value(version)
                bits = ev.action_bits(version)
                node_added = node_added or bool(value & bits[ev.ADD])
                node_taint = node_taint or bool(value & bits[ev.UPDATE_NODE_TAINT])
            out.setdefault(event, []).append(QueueingHintFunction(extension.name, fn))
        if node_added and not node_taint:
            taint = ClusterEvent(ev.NODE, ev.UPDATE_NODE_TAINT)
            out.setdefault(taint, []).append(QueueingHintFunction(extension.name, queue_always))
    return out


# ---- NodeResourcesFit


def node_resources_fit(version: str, gates: Mapping[str, bool] | None = None) -> EnqueueExtension:
    """``Fit.EventsToRegister`` at ``version`` (no DRA: the DeviceClass event is not registered)."""
    enabled = feature_gates(version, gates)
    scale_down = enabled[IN_PLACE_POD_VERTICAL_SCALING]
    pod_action = ev.DELETE + (f"|{ev.UPDATE_POD_SCALE_DOWN}" if scale_down else "")
    node_action = (
        f"{ev.ADD}|{ev.UPDATE_NODE_ALLOCATABLE}"
        if enabled[SCHEDULER_QUEUEING_HINTS]
        else f"{ev.ADD}|{ev.UPDATE_NODE_ALLOCATABLE}|{ev.UPDATE_NODE_TAINT}|{ev.UPDATE_NODE_LABEL}"
    )

    def after_pod_event(pod: Pod, old: object, new: object) -> str:
        return fit_after_pod_event(pod, old, new, version=version, scale_down_enabled=scale_down)

    return EnqueueExtension(
        NODE_RESOURCES_FIT,
        (
            ClusterEventWithHint(ClusterEvent(ev.POD, pod_action), after_pod_event),
            ClusterEventWithHint(ClusterEvent(ev.NODE, node_action), fit_after_node_change),
        ),
    )


def _as_pods(old: object, new: object) -> tuple[Pod | None, Pod | None]:
    for obj in (old, new):
        if obj is not None and not isinstance(obj, Pod):
            raise QueueingHintError(f"expected a Pod, got {type(obj).__name__}")
    return old if isinstance(old, Pod) else None, new if isinstance(new, Pod) else None


def fit_after_pod_event(pod: Pod, old: object, new: object, *, version: str, scale_down_enabled: bool) -> str:
    """``isSchedulableAfterPodEvent``: a deleted pod that was bound (1.33+: or nominated) may free room;
    a scale-down of the pod itself, or of a bound pod in a resource this pod requests, may too."""
    original, modified = _as_pods(old, new)
    if modified is None:
        if original is None:
            raise QueueingHintError("no pod in the event")
        nominated = (
            pods.nominated_node_name(original) if in_effect("fit-deleted-nominated-pod", version) else ""
        )
        if not original.node_name and not nominated:
            return QUEUE_SKIP
        return QUEUE
    if not scale_down_enabled:
        return QUEUE_SKIP
    if original is None:
        raise QueueingHintError("no old pod in an update event")
    return QUEUE if _schedulable_after_scale_down(pod, original, modified) else QUEUE_SKIP


def _schedulable_after_scale_down(target: Pod, original: Pod, modified: Pod) -> bool:
    if modified.uid == target.uid:
        return True
    if not modified.node_name:
        return False
    before = Resource.from_list(pod_request_list(original))
    after = Resource.from_list(pod_request_list(modified))
    for name, amount in pod_request_list(target).items():
        if amount == 0:
            continue
        if name == CPU:
            if before.milli_cpu > after.milli_cpu:
                return True
        elif name == MEMORY:
            if before.memory > after.memory:
                return True
        elif name == EPHEMERAL_STORAGE:
            if before.ephemeral_storage > after.ephemeral_storage:
                return True
        elif is_scalar_resource_name(name) and before.scalar_resources.get(
            name, 0
        ) > after.scalar_resources.get(name, 0):
            return True
    return False


def _is_fit(pod: Pod, node: Node) -> bool:
    """``isFit``: the pod fits the node with nothing on it."""
    return NodeResourcesFit().filter(pod, NodeInfo(node.name, node)).ok


def _allocatable(node: Node) -> Resource:
    return Resource.from_list({name: q.amount for name, q in node.allocatable.items()})


def _requested_resources_increased(pod: Pod, original: Node, modified: Node) -> bool:
    """``haveAnyRequestedResourcesIncreased`` (no DRA delegation)."""
    request = Resource.from_list(pod_request_list(pod))
    before, after = _allocatable(original), _allocatable(modified)
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if (
        request.milli_cpu == 0
        and request.memory == 0
        and request.ephemeral_storage == 0
        and not request.scalar_resources
    ):
        return False
    if (
        (request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (request.memory > 0 and after.memory > before.memory)
        or (request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    for name, amount in request.scalar_resources.items():
        if amount == 0:
            continue
        if after.scalar_resources.get(name, 0) > before.scalar_resources.get(name, 0):
            return True
    return False


def fit_after_node_change(pod: Pod, old: object, new: object) -> str:
    """``isSchedulableAfterNodeChange``: skip a node the pod would not fit even empty, queue for a new
    node, and for an updated one only when an allocatable the pod requests (or the pod count) grew."""
    for obj in (old, new):
        if obj is not None and not isinstance(obj, Node):
            raise QueueingHintError(f"expected a Node, got {type(obj).__name__}")
    original = old if isinstance(old, Node) else None
    modified = new if isinstance(new, Node) else None
    if modified is None or not _is_fit(pod, modified):
        return QUEUE_SKIP
    if original is None:
        return QUEUE
    return QUEUE if _requested_resources_increased(pod, original, modified) else QUEUE_SKIP


# ---- the NUMA-aware plugins


def node_resource_topology_match() -> EnqueueExtension:
    """scheduler-plugins 903da7d ``TopologyMatch.EventsToRegister``."""
    return EnqueueExtension(
        NODE_RESOURCE_TOPOLOGY_MATCH,
        (
            ClusterEventWithHint(ClusterEvent(ev.POD, ev.DELETE)),
            ClusterEventWithHint(ClusterEvent(ev.NODE, f"{ev.ADD}|{ev.UPDATE_NODE_ALLOCATABLE}")),
            ClusterEventWithHint(ClusterEvent(ev.NRT_V1ALPHA2, f"{ev.ADD}|{ev.UPDATE}")),
        ),
    )


def node_numa_resource() -> EnqueueExtension:
    """koordinator a7a1b76 ``nodenumaresource.Plugin.EventsToRegister``."""
    return EnqueueExtension(
        NODE_NUMA_RESOURCE,
        (
            ClusterEventWithHint(ClusterEvent(ev.POD, ev.DELETE)),
            ClusterEventWithHint(ClusterEvent(ev.NRT_V1ALPHA1, f"{ev.ADD}|{ev.UPDATE}|{ev.DELETE}")),
        ),
    )


def device_share() -> EnqueueExtension:
    """koordinator a7a1b76 ``deviceshare.Plugin.EventsToRegister``."""
    return EnqueueExtension(
        DEVICE_SHARE,
        (
            ClusterEventWithHint(ClusterEvent(ev.POD, ev.DELETE)),
            ClusterEventWithHint(ClusterEvent(ev.KOORD_DEVICE, f"{ev.ADD}|{ev.UPDATE}|{ev.DELETE}")),
        ),
    )


def would_admit() -> EnqueueExtension:
    """The ``exact`` predictor's registration (a project choice; see the module docstring)."""
    return EnqueueExtension(
        WOULD_ADMIT,
        (
            ClusterEventWithHint(ClusterEvent(ev.POD, ev.DELETE)),
            ClusterEventWithHint(ClusterEvent(ev.NODE, f"{ev.ADD}|{ev.UPDATE_NODE_ALLOCATABLE}")),
        ),
    )


def extender() -> EnqueueExtension:
    """``defaultEnqueueExtension{ExtenderName}``: every resource, every action, no hint function (the pods
    and nodes of ``UnrollWildCardResource`` are what the fleet's events touch)."""
    return EnqueueExtension(
        EXTENDER,
        (
            ClusterEventWithHint(ClusterEvent(ev.POD, ev.ALL)),
            ClusterEventWithHint(ClusterEvent(ev.NODE, ev.ALL)),
        ),
    )


def extension_for(plugin: str, version: str, gates: Mapping[str, bool] | None = None) -> EnqueueExtension:
    """The registration of a plugin the fleet models, by its name; a ``ValueError`` for another name."""
    builders: Mapping[str, Callable[[], EnqueueExtension]] = {
        NODE_RESOURCES_FIT: lambda: node_resources_fit(version, gates),
        NODE_RESOURCE_TOPOLOGY_MATCH: node_resource_topology_match,
        NODE_NUMA_RESOURCE: node_numa_resource,
        DEVICE_SHARE: device_share,
        WOULD_ADMIT: would_admit,
        EXTENDER: extender,
    }
    if plugin not in builders:
        raise ValueError(f"plugin {plugin!r}: no registered events modelled ({', '.join(builders)})")
    return builders[plugin]()


def hint_map_for_plugins(
    plugins: Sequence[str], version: str, gates: Mapping[str, bool] | None = None
) -> QueueingHintMap:
    """The hint map of a profile whose rejecting plugins are ``plugins`` (names, each once)."""
    seen: list[str] = []
    for name in plugins:
        if name not in seen:
            seen.append(name)
    return build_queueing_hint_map((extension_for(name, version, gates) for name in seen), version, gates)
