"""The slice of the kube-scheduler framework the models need: a node as a plugin sees it, the statuses a
Filter returns, a Score, and a crash where the shipped plugin would panic (``scheduler-side.md`` §4).

A model is exact to its plugin's shipped code; the framework around it is the scheduler's: Filter runs on
every node, Score only on the nodes that passed, and a model that would panic on a node reports
:class:`Crash` for that node instead of inventing an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from kubeletemu.pod import Pod
from kubeletemu.scheduler.objects import Device, Node, NodeResourceTopology
from kubeletemu.scheduler.pod_phase import is_pod_terminated, scheduler_visible
from kubeletemu.scheduler.reservation_object import Reservation

T = TypeVar("T")


def memo(obj: object, key: str, compute: Callable[[], T]) -> T:
    """A value derived from a frozen object (a pod, a node), kept on it: what the scheduler's PreFilter
    state and NodeInfo caches hold, computed once per object instead of once per (pod, node) pair. Kept in
    the instance's ``__dict__``, outside its fields, so equality and ``replace`` are unaffected."""
    store = obj.__dict__
    if key not in store:
        store[key] = compute()
    value: T = store[key]
    return value


# framework.Code values the models return.
SUCCESS = "Success"
UNSCHEDULABLE = "Unschedulable"
UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
ERROR = "Error"


@dataclass(frozen=True)
class NodeInfo:
    """A node as the scheduler's cache holds it: its Node object (None when only an NRT names it), its
    latest NodeResourceTopology (None when it has none), the pods bound to it and Koordinator's ``Device``
    object of the node (None when it has none).

    Terminated pods given in ``pods`` are dropped: the scheduler's pod informer never lists them, so no
    model counts them (:mod:`kubeletemu.scheduler.pod_phase`)."""

    name: str
    node: Node | None = None
    topology: NodeResourceTopology | None = None
    pods: tuple[Pod, ...] = ()
    device: Device | None = None
    # Koordinator Reservations scheduled on the node (status.nodeName), in input order.
    reservations: tuple[Reservation, ...] = ()

    def __post_init__(self) -> None:
        if any(is_pod_terminated(pod) for pod in self.pods):
            object.__setattr__(self, "pods", scheduler_visible(self.pods))


@dataclass(frozen=True)
class Status:
    """``framework.Status``: a code and its reasons (the status message joins them with ", ")."""

    code: str = SUCCESS
    reasons: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.code == SUCCESS

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(UNSCHEDULABLE, reasons)


@dataclass(frozen=True)
class Crash:
    """Where the shipped plugin would panic: ``what`` (e.g. "index out of range [2] with length 2") and
    ``where`` (the Go function, e.g. "noderesourcetopology.(*TopologyMatch).Score")."""

    what: str
    where: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


class PluginPanic(Exception):
    """Raised inside a model where the shipped code would panic; the framework turns it into a Crash."""

    def __init__(self, what: str, where: str) -> None:
        super().__init__(f"{where}: {what}")
        self.crash = Crash(what, where)


FILTER = "filter"
SCORE = "score"


@dataclass(frozen=True)
class PluginScore:
    """One score plugin's own score of a node and its weight in the profile; the total adds up
    ``score * weight`` (``framework.PluginScore`` holds the weighted product, RunScorePlugins)."""

    plugin: str
    score: int
    weight: int


@dataclass(frozen=True)
class NodeVerdict:
    """One node's answer: the filter status, the score (None when filtered out or crashed), the policy
    the model applied to the pod on the node, and where the plugin would have panicked (``crash_at``
    "filter" or "score"): a Score panic keeps the Filter verdict and has no score, a Filter panic has
    neither.
    ``plugin_scores`` are the scores that went into ``score``, in the profile's order."""

    name: str
    status: Status
    score: int | None = None
    policy: str = ""
    crash: Crash | None = None
    crash_at: str = ""
    plugin_scores: tuple[PluginScore, ...] = ()

    @property
    def fits(self) -> bool | None:
        return None if self.crash_at == FILTER else self.status.ok

    @property
    def schedulable(self) -> bool:
        """Whether the scheduler could place the pod here (a node it crashes on is not)."""
        return self.crash is None and self.status.ok and self.score is not None


class Model(Protocol):
    """A scheduler-side predictor: Filter and Score for one pod on one node, as its plugin answers."""

    name: str

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        """May raise :class:`PluginPanic`."""
        ...

    def score(self, pod: Pod, node: NodeInfo) -> int:
        """Only called for nodes that passed ``filter``; may raise :class:`PluginPanic`."""
        ...

    def policy(self, pod: Pod, node: NodeInfo) -> str:
        """The NUMA policy the model applies to this pod on this node (for reports): the node's, or
        what the model makes of it with the pod's own (Koordinator's pod-level policy)."""
        ...


@dataclass
class Decision:
    pod: Pod
    nodes: list[NodeVerdict] = field(default_factory=list)
    chosen: str | None = None
