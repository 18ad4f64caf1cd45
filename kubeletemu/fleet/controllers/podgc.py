"""The pod garbage collector's terminated-pod sweep (kubernetes v1.36, ``pkg/controller/podgc/
gc_controller.go`` as openshift/microshift release-4.23 vendors it): every 20 s (``gcCheckPeriod``,
``wait.UntilWithContext``), when more pods are terminated (phase neither Pending, Running nor Unknown) than
``--terminated-pod-gc-threshold`` (12,500 by default; 0 turns the sweep off), the excess is deleted, oldest
first (``byEvictionAndCreationTimestamp``: creation timestamps, which the API keeps to the second, then
names; no fleet pod is evicted). Its other sweeps (orphaned, unscheduled terminating pods) have nothing
to do in a fleet run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from kubeletemu.fleet.clock import Clock

GC_CHECK_PERIOD_S = 20.0


class Terminated(Protocol):
    @property
    def creation_second(self) -> int: ...

    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Terminated)


class PodGC(Generic[T]):
    def __init__(self, clock: Clock, threshold: int, delete: Callable[[T], None]) -> None:
        self.clock = clock
        self.threshold = threshold
        self.delete = delete
        self.terminated: dict[str, T] = {}
        self.deleted = 0

    def start(self, phase: float) -> None:
        """The controller manager started ``phase`` seconds (in [0, 20)) before a sweep falls due."""
        if self.threshold > 0:
            self.clock.every(phase, GC_CHECK_PERIOD_S, self.sweep)

    def pod_terminated(self, key: str, pod: T) -> None:
        self.terminated[key] = pod

    def sweep(self) -> None:
        excess = len(self.terminated) - self.threshold
        if excess <= 0:
            return
        oldest = sorted(self.terminated.items(), key=lambda kv: (kv[1].creation_second, kv[1].name))
        for key, pod in oldest[:excess]:
            del self.terminated[key]
            self.deleted += 1
            self.delete(pod)
