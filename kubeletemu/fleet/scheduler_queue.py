"""The run's scheduler queue: kube-scheduler's ``PriorityQueue`` (:mod:`kubeletemu.fleet.queue`, exact per
``schedulerVersion``) fed as kube-scheduler's informers and ``ScheduleOne`` feed it, for the fleet's pods.

* A created pod is an informer add (``SchedulerEvents.pod_added``: activeQ); every change the API server
  stores afterwards is an update as the informer sees it — a bind is ``AssignedPod/Add``, a pod turning
  Succeeded or Failed leaves the informer (``AssignedPod/Delete``, the event that frees resources); a
  deletion of a pod the informer still holds is a delete. An NRT write is an Add (first) or Update of the
  ``noderesourcetopologies`` resource the NUMA-aware plugins register.
* ``ScheduleOne``: :meth:`SchedulerQueue.pop`; a cycle that found no node (or a Reserve that refused) is
  ``handleSchedulingFailure`` with the plugins that rejected the pod (the cycle's Diagnosis); a pod to
  bind is ``Done`` after its Permit, before the bind (``bindingCycle``).
* The flushes run on their periods: backoffQ every second from the first window
  (:func:`~kubeletemu.fleet.queue.backoff_flush_times`), unschedulablePods every 30 s.
* ``on_activated`` wakes the scheduler's process where upstream's ``Pop`` would stop blocking.

The hint map holds the profile's Filter and Reserve plugins that register events
(:func:`~kubeletemu.fleet.queue.hint_map_for_plugins`; the other plugins of the default profile are not
modelled and reject nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubeletemu.fleet.clock import Clock
from kubeletemu.fleet.queue import (
    EVENT_ASSIGNED_POD_DELETE,
    UNSCHEDULABLE_FLUSH_PERIOD_S,
    PriorityQueue,
    QueuedPodInfo,
    SchedulerEvents,
    backoff_flush_times,
    extension_for,
    hint_map_for_plugins,
)
from kubeletemu.fleet.workload import PodRecord
from kubeletemu.pod import Pod
from kubeletemu.scheduler.objects import NodeResourceTopology

# The plugins that rejected the attempt of a pod, given with its shape number (unschedulable, pending), None
# when it needs a cycle.
KeptFailures = Callable[[Pod, int], tuple[frozenset[str], frozenset[str]] | None]


def registering_plugins(names: Iterable[str], version: str) -> list[str]:
    """The plugins among ``names`` whose registered events the queue knows."""
    out = []
    for name in names:
        try:
            extension_for(name, version)
        except ValueError:
            continue
        if name not in out:
            out.append(name)
    return out


class SchedulerQueue:
    def __init__(self, clock: Clock, version: str, plugins: Iterable[str], wake: Callable[[], None]) -> None:
        self.version = version
        self.queue = PriorityQueue(
            clock.now,
            version=version,
            hints=hint_map_for_plugins(registering_plugins(plugins, version), version),
            on_activated=wake,
        )
        self.events = SchedulerEvents(self.queue)
        self.records: dict[str, PodRecord] = {}  # by pod UID, while pending
        self.infos: dict[str, QueuedPodInfo] = {}  # popped, in flight
        first, period = backoff_flush_times(clock.now(), version)
        clock.every(first - clock.now(), period, self.queue.flush_backoff_q_completed)
        # wait.Until: at once, then every 30 s.
        clock.every(0.0, UNSCHEDULABLE_FLUSH_PERIOD_S, self.queue.flush_unschedulable_pods_leftover)

    # ---- the informers ----------------------------------------------------------------------------------

    def pod_created(self, record: PodRecord) -> None:
        self.records[record.pod.uid] = record
        self.events.pod_added(record.pod)

    def pod_changed(self, old: Pod, new: Pod) -> None:
        if new.node_name and not old.node_name:
            self.records.pop(new.uid, None)
        self.events.pod_updated(old, new)

    def pod_deleted(self, pod: Pod) -> None:
        """The API server deleted the pod; a terminated pod had left the informer already."""
        if pod.phase not in ("Succeeded", "Failed"):
            self.events.pod_deleted(pod)

    def nrt_written(self, old: NodeResourceTopology | None, new: NodeResourceTopology) -> None:
        if old is None:
            self.events.nrt_added(new)
        else:
            self.events.nrt_updated(old, new)

    # ---- ScheduleOne ----------------------------------------------------------------------------------

    def pop(self, kept: KeptFailures | None = None) -> PodRecord | None:
        """``kept``: answers a pod's attempt as a failure without a cycle (the engine's kept cycles), so
        the queue fails it at once and pops the next (:meth:`PriorityQueue.pop`)."""
        info = self.queue.pop(kept)
        if info is None:
            return None
        self.infos[info.pod.uid] = info
        return self.records[info.pod.uid]

    def failed(self, record: PodRecord, unschedulable: Iterable[str], pending: Iterable[str] = ()) -> None:
        info = self.infos.pop(record.pod.uid)
        self.queue.handle_scheduling_failure(info, unschedulable, pending)

    def bind_failed(self, record: PodRecord, assumed: Pod) -> None:
        """``handleBindingCycleError`` (kube-scheduler v1.36.3): the forgotten pod is an AssignedPodDelete
        for every pod (the bind's error is not a rejection), then the pod fails its attempt."""
        self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, assumed, None)
        self.failed(record, ())

    def binding(self, record: PodRecord) -> None:
        """The pod passed Permit: ``Done`` before its bind."""
        self.infos.pop(record.pod.uid, None)
        self.queue.done(record.pod.uid)
