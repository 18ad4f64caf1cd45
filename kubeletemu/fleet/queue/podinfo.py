"""``QueuedPodInfo``: a pod in the scheduling queue and what the queue keeps about it
(``pkg/scheduler/framework/types.go``).

Times are integer nanoseconds of the simulated clock (:func:`to_ns`), so backoff windows, expiries and
the 5-minute leftover check compare exactly; :data:`ZERO_TIME` is Go's zero ``time.Time`` (before every
other time).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from kubeletemu.fleet.queue.events import ClusterEvent
from kubeletemu.fleet.queue.pods import pod_key, priority, scheduler_name
from kubeletemu.pod import Pod
from kubeletemu.scheduler.pod_shape import pod_shape

NS_PER_S = 1_000_000_000
# time.Time{}: before any clock reading, on a whole second (as Go's zero time is) so that windows
# truncate the same relative to it.
ZERO_TIME = -9_223_372_036 * NS_PER_S


def to_ns(seconds: float) -> int:
    """A clock reading in seconds to nanoseconds (rounded to the nearest, so 0.1 + 0.2 is 300 ms)."""
    return round(seconds * NS_PER_S)


def to_s(ns: int) -> float:
    return ns / NS_PER_S


@dataclass(eq=False, slots=True)
class QueuedPodInfo:
    """A queued pod. ``timestamp``: when it was added or last re-added after a failed attempt (the
    activeQ's tie-breaker and the base of its backoff); ``attempts``: scheduling attempts (pops);
    ``unschedulable_count`` / ``consecutive_errors_count`` (1.34+): failed attempts by rejection and the
    run of failures without a rejecting plugin; ``unschedulable_plugins`` / ``pending_plugins``: the
    plugins that rejected the last attempt (set by the scheduling cycle before
    ``add_unschedulable_if_not_present``); ``gating_plugin``: the PreEnqueue plugin that gates it (up to
    1.33 only whether one does: ``gated``).

    ``key``, ``shape``, ``profile`` and ``priority`` are the pod's queue key, shape number, scheduler
    name and priority (0 when unset), kept beside it: a burst of thousands of pods reads them without
    touching the pod objects, which at full scale cost more in memory traffic than the work on them. A
    pod is replaced through :meth:`set_pod`, which keeps them."""

    pod: Pod
    timestamp: int = ZERO_TIME
    attempts: int = 0
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    backoff_expiration: int = ZERO_TIME
    initial_attempt_timestamp: int | None = None
    # Never changed in place, only replaced: a burst of pods failing at once shares one set per rejection.
    unschedulable_plugins: AbstractSet[str] = frozenset()
    pending_plugins: AbstractSet[str] = frozenset()
    gating_plugin: str = ""
    gating_plugin_events: tuple[ClusterEvent, ...] = ()
    # Up to 1.33 a flag; from 1.34 derived from gating_plugin (see gated()).
    gated_flag: bool = False
    was_flushed_from_unschedulable: bool = False
    key: str = field(init=False, default="")
    shape: int = field(init=False, default=-1)
    profile: str = field(init=False, default="")
    priority: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.set_pod(self.pod)

    def set_pod(self, pod: Pod) -> None:
        """The pod's newer version (an update while queued)."""
        self.pod = pod
        self.key = pod_key(pod)
        self.shape = pod_shape(pod)
        self.profile = scheduler_name(pod)
        self.priority = priority(pod)

    @property
    def gated(self) -> bool:
        """Whether a PreEnqueue plugin gates the pod (``Gated()``; up to 1.33 the ``Gated`` field)."""
        return self.gating_plugin != "" or self.gated_flag

    def rejector_plugins(self) -> set[str]:
        return set(self.unschedulable_plugins) | self.pending_plugins

    def clear_rejector_plugins(self) -> None:
        """``ClearRejectorPlugins`` (1.36; before, what Pop cleared)."""
        self.unschedulable_plugins = self.pending_plugins = frozenset()
        self.gating_plugin = ""
        self.gating_plugin_events = ()
