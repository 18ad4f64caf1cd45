"""kube-scheduler's scheduling queue, exact per version (1.32 … 1.36), on a simulated clock.

Layout as upstream's ``pkg/scheduler/backend/queue``: :mod:`.active_queue` (activeQ and the in-flight
pods and events), :mod:`.backoff_queue`, :mod:`.unschedulable_pods`, :mod:`.nominator`, and
:mod:`.scheduling_queue` (``PriorityQueue`` over them); :mod:`.heap` is ``backend/heap``;
:mod:`.events` the cluster events and their matching; :mod:`.hints` the QueueingHints and the events each
modelled plugin registers; :mod:`.handlers` what the scheduler's informer handlers do with the queue;
:mod:`.versions` every behaviour that differs between versions, with the upstream change behind it.

How the fleet engine drives it: ``INTEGRATION.md`` next to this file. In short::

    hints = hint_map_for_plugins(["NodeResourcesFit", "NodeResourceTopologyMatch"], "1.36")
    queue = PriorityQueue(lambda: env.now, version="1.36", hints=hints, on_activated=wake_scheduler)
    events = SchedulerEvents(queue)
    events.pod_added(pod)                      # a pod created
    info = queue.pop()                         # None: nothing poppable now
    queue.handle_scheduling_failure(info, {"NodeResourcesFit"})   # rejected (plugins that rejected it)
    queue.done(info.pod.uid)                   # bound (after the binding cycle)
    events.pod_updated(old, bound)             # the bind, as the informer sees it
    queue.flush_backoff_q_completed()          # every second (backoff_flush_times)
    queue.flush_unschedulable_pods_leftover()  # every 30 s
"""

from kubeletemu.fleet.queue.events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_FORCE_ACTIVATE,
    EVENT_NODE_ADD,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    ClusterEvent,
    match,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from kubeletemu.fleet.queue.handlers import SchedulerEvents
from kubeletemu.fleet.queue.hints import (
    DEVICE_SHARE,
    NODE_NUMA_RESOURCE,
    NODE_RESOURCE_TOPOLOGY_MATCH,
    QUEUE,
    QUEUE_SKIP,
    WOULD_ADMIT,
    ClusterEventWithHint,
    EnqueueExtension,
    QueueingHintError,
    QueueingHintFunction,
    QueueingHintMap,
    build_queueing_hint_map,
    extension_for,
    hint_map_for_plugins,
)
from kubeletemu.fleet.queue.podinfo import QueuedPodInfo, to_ns, to_s
from kubeletemu.fleet.queue.pods import SchedulingPod
from kubeletemu.fleet.queue.scheduling_queue import (
    ACTIVE_Q,
    BACKOFF_FLUSH_PERIOD_S,
    BACKOFF_Q,
    DEFAULT_POD_INITIAL_BACKOFF_S,
    DEFAULT_POD_MAX_BACKOFF_S,
    DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_S,
    UNSCHEDULABLE_FLUSH_PERIOD_S,
    UNSCHEDULABLE_Q,
    AlreadyQueuedError,
    PreEnqueuePlugin,
    PriorityQueue,
    SchedulingGatesPlugin,
    backoff_flush_times,
    priority_sort,
)
from kubeletemu.fleet.queue.versions import BEHAVIOURS, DEFAULT_VERSION, SOURCES, SUPPORTED, feature_gates

__all__ = [
    "ACTIVE_Q",
    "BACKOFF_FLUSH_PERIOD_S",
    "BACKOFF_Q",
    "BEHAVIOURS",
    "DEFAULT_POD_INITIAL_BACKOFF_S",
    "DEFAULT_POD_MAX_BACKOFF_S",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_S",
    "DEFAULT_VERSION",
    "DEVICE_SHARE",
    "EVENT_ASSIGNED_POD_ADD",
    "EVENT_ASSIGNED_POD_DELETE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_NODE_ADD",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "NODE_NUMA_RESOURCE",
    "NODE_RESOURCE_TOPOLOGY_MATCH",
    "QUEUE",
    "QUEUE_SKIP",
    "SOURCES",
    "SUPPORTED",
    "UNSCHEDULABLE_FLUSH_PERIOD_S",
    "UNSCHEDULABLE_Q",
    "WOULD_ADMIT",
    "AlreadyQueuedError",
    "ClusterEvent",
    "ClusterEventWithHint",
    "EnqueueExtension",
    "PreEnqueuePlugin",
    "PriorityQueue",
    "QueuedPodInfo",
    "QueueingHintError",
    "QueueingHintFunction",
    "QueueingHintMap",
    "SchedulerEvents",
    "SchedulingGatesPlugin",
    "SchedulingPod",
    "backoff_flush_times",
    "build_queueing_hint_map",
    "extension_for",
    "feature_gates",
    "hint_map_for_plugins",
    "match",
    "node_scheduling_properties_change",
    "pod_scheduling_properties_change",
    "priority_sort",
    "to_ns",
    "to_s",
]
