"""What kube-scheduler's informer event handlers do with the queue (``pkg/scheduler/eventhandlers.go``),
for the objects a fleet changes: pods, nodes, and the custom resources the NUMA-aware plugins watch.

The scheduler's pod informer lists only pods that are neither ``Succeeded`` nor ``Failed``
(``status.phase!=Succeeded,status.phase!=Failed``): a pod reaching a terminal phase reaches the
scheduler as a delete. :meth:`SchedulerEvents.pod_updated` applies that filter, so the engine reports
every pod change as the API server would and the handlers see what the scheduler's informer sees.

A bound pod's delete (or its turning terminal) is ``AssignedPod/Delete``, the event that frees
resources; a bind is ``AssignedPod/Add`` (with QueueingHints; without, ``AssignedPodAdded``). Node changes
are split into their sub-updates; a custom resource (NodeResourceTopology, Koordinator's Device) is
``<plural>.<version>.<group>/Add|Update|Delete`` for each registered form of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kubeletemu.fleet.queue import events as ev
from kubeletemu.fleet.queue.events import ClusterEvent
from kubeletemu.fleet.queue.pods import nominated_node_name, priority
from kubeletemu.fleet.queue.scheduling_queue import PreEnqueueCheck, PriorityQueue
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.noderesourcesfit import NodeResourcesFit
from kubeletemu.scheduler.objects import Node, NodeResourceTopology

TERMINAL_PHASES = ("Succeeded", "Failed")
NRT_RESOURCES = (ev.NRT_V1ALPHA2, ev.NRT_V1ALPHA1)


def _in_informer(pod: Pod | None) -> bool:
    return pod is not None and pod.phase not in TERMINAL_PHASES


class SchedulerEvents:
    """The event handlers of one scheduler over its queue. ``responsible(pod)``: whether the pod is this
    scheduler's (``spec.schedulerName`` among its profiles; default: every pod)."""

    def __init__(self, queue: PriorityQueue, responsible: Callable[[Pod], bool] | None = None) -> None:
        self.queue = queue
        self.responsible = responsible or (lambda pod: True)

    # ---- pods ----

    def pod_added(self, pod: Pod) -> None:
        """A pod created (or first seen): pending ones enter the queue, bound ones the cache."""
        if not _in_informer(pod):
            return
        if pod.node_name:
            self._assigned_pod_added(pod)
        elif self.responsible(pod):
            self.queue.add(pod)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        """A pod changed, as the API server reports it; entering a terminal phase is a delete here."""
        seen_old, seen_new = _in_informer(old), _in_informer(new)
        if seen_old and not seen_new:
            self.pod_deleted(old)
            return
        if not seen_old:
            if seen_new:
                self.pod_added(new)
            return
        if old.node_name:
            self._assigned_pod_updated(old, new)
        elif new.node_name:
            # A bind: the pod joins the cache and leaves the queue (it is in flight, not queued).
            self._assigned_pod_added(new)
            if self.responsible(old):
                self.queue.delete(old)
        elif self.responsible(old):
            self.queue.update(old, new)
            if nominated_node_name(old) and nominated_node_name(old) != nominated_node_name(new):
                self.queue.move_all_to_active_or_backoff_queue(
                    ev.EVENT_ASSIGNED_POD_DELETE, old, None, _lower_or_equal_priority(priority(old))
                )

    def pod_deleted(self, pod: Pod) -> None:
        """A pod deleted (or turned terminal): a bound one frees its node (``AssignedPod/Delete``)."""
        if pod.node_name:
            self.queue.move_all_to_active_or_backoff_queue(ev.EVENT_ASSIGNED_POD_DELETE, pod, None)
        elif self.responsible(pod):
            self.queue.delete(pod)
            if nominated_node_name(pod):
                self.queue.move_all_to_active_or_backoff_queue(
                    ev.EVENT_ASSIGNED_POD_DELETE, pod, None, _lower_or_equal_priority(priority(pod))
                )

    def _assigned_pod_added(self, pod: Pod) -> None:
        if self.queue.queueing_hints_enabled:
            self.queue.move_all_to_active_or_backoff_queue(ev.EVENT_ASSIGNED_POD_ADD, None, pod)
        else:
            self.queue.assigned_pod_added(pod)

    def _assigned_pod_updated(self, old: Pod, new: Pod) -> None:
        for event in ev.pod_scheduling_properties_change(new, old, self.queue.version):
            if self.queue.queueing_hints_enabled:
                self.queue.move_all_to_active_or_backoff_queue(event, old, new)
            else:
                self.queue.assigned_pod_updated(old, new, event)

    # ---- nodes ----

    def node_added(self, node: Node, node_info: NodeInfo | None = None) -> None:
        self.queue.move_all_to_active_or_backoff_queue(
            ev.EVENT_NODE_ADD, None, node, self._pre_check(node_info)
        )

    def node_updated(self, old: Node, new: Node, node_info: NodeInfo | None = None) -> None:
        """Each sub-update the change carries (allocatable, labels, annotations) is one event."""
        for event in ev.node_scheduling_properties_change(new, old):
            self.queue.move_all_to_active_or_backoff_queue(event, old, new, self._pre_check(node_info))

    def node_deleted(self, node: Node) -> None:
        self.queue.move_all_to_active_or_backoff_queue(ev.EVENT_NODE_DELETE, node, None)

    def _pre_check(self, node_info: NodeInfo | None) -> PreEnqueueCheck | None:
        """``preCheckForNode``: none with QueueingHints; without, the pod must fit the node's free
        resources (the admission check's NodeResourcesFit part; the node's taints are not modelled)."""
        if self.queue.queueing_hints_enabled or node_info is None:
            return None
        fit = NodeResourcesFit()
        return lambda pod: fit.filter(pod, node_info).ok

    # ---- custom resources ----

    def custom_resource_event(self, resource: str, action: str, old: object, new: object) -> None:
        """``buildEvtResHandler``: an Add, Update or Delete of a custom resource, when a plugin registers
        it (kube-scheduler only watches registered resources)."""
        event = ClusterEvent(resource, action)
        if self._watched(resource):
            self.queue.move_all_to_active_or_backoff_queue(event, old, new)

    def nrt_added(self, nrt: NodeResourceTopology) -> None:
        self._nrt(ev.ADD, None, nrt)

    def nrt_updated(self, old: NodeResourceTopology, new: NodeResourceTopology) -> None:
        self._nrt(ev.UPDATE, old, new)

    def nrt_deleted(self, nrt: NodeResourceTopology) -> None:
        self._nrt(ev.DELETE, nrt, None)

    def _nrt(self, action: str, old: object, new: object) -> None:
        for resource in NRT_RESOURCES:
            self.custom_resource_event(resource, action, old, new)

    def _watched(self, resource: str) -> bool:
        return any(
            event.resource == resource
            for hint_map in self.queue.queueing_hint_map.values()
            for event in hint_map
        )

    def watched_resources(self) -> Sequence[str]:
        """The custom resources some plugin registers (what kube-scheduler starts informers for)."""
        found: list[str] = []
        for hint_map in self.queue.queueing_hint_map.values():
            for event in hint_map:
                if "." in event.resource and event.resource not in found:
                    found.append(event.resource)
        return found


def _lower_or_equal_priority(limit: int) -> PreEnqueueCheck:
    """``getLEPriorityPreCheck``."""
    return lambda pod: priority(pod) <= limit
