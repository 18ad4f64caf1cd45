"""The kube-scheduler versions the scheduling queue is exact to, and every queue behaviour that differs
between them, one place per difference.

Each version was read from kube-scheduler's shipped code as openshift/kubernetes vendors it in
openshift/microshift's release branches (``deps/github.com/openshift/kubernetes/pkg/scheduler``); none of
the files read there carries an OpenShift patch (no ``openshift`` or carry marker in ``backend/queue``,
``backend/heap``, ``framework/events.go``, ``framework/types.go``, ``noderesources/fit.go``,
``eventhandlers.go``). :data:`SOURCES` records the tag and commit of each.

A behaviour is keyed like the kubelet's (``kubeletemu.versions.behaviours``): what 1.32 does, then each
change with the first version that carries it and the upstream PR or KEP behind it. The code asks
:func:`in_effect` at the emulated version; nothing else in the package compares version strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

SUPPORTED: tuple[str, ...] = ("1.32", "1.33", "1.34", "1.35", "1.36")
DEFAULT_VERSION = "1.36"

# Feature gates the queue reads.
SCHEDULER_QUEUEING_HINTS = "SchedulerQueueingHints"
SCHEDULER_POP_FROM_BACKOFF_Q = "SchedulerPopFromBackoffQ"
IN_PLACE_POD_VERTICAL_SCALING = "InPlacePodVerticalScaling"


@dataclass(frozen=True)
class Source:
    version: str
    tag: str
    read: str


SOURCES: tuple[Source, ...] = (
    Source("1.32", "v1.32.13", "openshift/microshift release-4.19 @ d4b43f374a"),
    Source("1.33", "v1.33.13", "openshift/microshift release-4.20 @ 78a3953430"),
    Source("1.34", "v1.34.9", "openshift/microshift release-4.21 @ 473c3de15d"),
    Source("1.35", "v1.35.6", "openshift/microshift release-4.22 @ 5019821e0e"),
    Source("1.36", "v1.36.3", "openshift/microshift release-4.23 @ ab25d11482"),
)


@dataclass(frozen=True)
class GateSpec:
    """A feature gate's default at a version; ``locked`` gates cannot be set to another value; a gate
    ``None`` at a version does not exist there (setting it is an error, as kube-scheduler's flag parsing
    refuses an unknown gate)."""

    default: bool
    locked: bool = False


# pkg/features/kube_features.go (1.32: versioned_kube_features.go) at each tag.
GATES: Mapping[str, Mapping[str, GateSpec | None]] = MappingProxyType(
    {
        SCHEDULER_QUEUEING_HINTS: MappingProxyType(
            {
                "1.32": GateSpec(True),  # beta, on by default since 1.32 (KEP-4247)
                "1.33": GateSpec(True),
                "1.34": GateSpec(True, locked=True),  # GA, kubernetes#131973
                "1.35": GateSpec(True, locked=True),
                "1.36": GateSpec(True, locked=True),
            }
        ),
        SCHEDULER_POP_FROM_BACKOFF_Q: MappingProxyType(
            {
                "1.32": None,
                "1.33": GateSpec(True),  # beta, on by default (KEP-5142, kubernetes#130772)
                "1.34": GateSpec(True),
                "1.35": GateSpec(True),
                "1.36": GateSpec(True),
            }
        ),
        IN_PLACE_POD_VERTICAL_SCALING: MappingProxyType(
            {
                "1.32": GateSpec(False),  # alpha
                "1.33": GateSpec(True),  # beta (KEP-1287)
                "1.34": GateSpec(True),
                "1.35": GateSpec(True, locked=True),  # GA
                "1.36": GateSpec(True, locked=True),
            }
        ),
    }
)


@dataclass(frozen=True)
class Change:
    since: str
    summary: str
    ref: str


@dataclass(frozen=True)
class Behaviour:
    key: str
    title: str
    before: str
    changes: tuple[Change, ...]


BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour(
        "backoff-queue-split",
        "backoffQ holds two heaps",
        "one backoffQ heap ordered by backoff expiry",
        (
            Change(
                "1.33",
                "pods that failed without a rejecting plugin (an error) go to a separate podErrorBackoffQ; "
                "the backoff expiry is cached on the pod until its next scheduling attempt",
                "kubernetes#130214",
            ),
        ),
    ),
    Behaviour(
        "pop-from-backoffq",
        "SchedulerPopFromBackoffQ",
        "the gate does not exist: Pop waits for activeQ",
        (
            Change(
                "1.33",
                "with the gate on (default), Pop takes podBackoffQ's head when activeQ is empty; backoff "
                "expiries are truncated to whole-second windows ordered by priority inside a window; the "
                "backoffQ flush runs on whole seconds; PreEnqueue runs when a pod enters backoffQ",
                "KEP-5142, kubernetes#130772",
            ),
        ),
    ),
    Behaviour(
        "backoff-counts",
        "what the backoff doubles on",
        "every scheduling attempt (Attempts)",
        (
            Change(
                "1.34",
                "unschedulable attempts (UnschedulableCount), or consecutive errors when the last attempt "
                "was an error; podMaxBackoffSeconds 0 disables backoff",
                "kubernetes#128748, kubernetes#131965",
            ),
        ),
    ),
    Behaviour(
        "gating-plugin",
        "which gated pods an event may move",
        "a pod gated by SchedulingGates is skipped by every event (Gated is a flag)",
        (
            Change(
                "1.34",
                "the gating PreEnqueue plugin is remembered (GatingPlugin) with the events it registers; a "
                "gated pod is skipped by any event its gating plugin does not register; the gating plugin "
                "runs first next time",
                "kubernetes#127180",
            ),
        ),
    ),
    Behaviour(
        "event-match",
        "how a registered event matches an incoming one",
        "same resource and any ActionType bit in common (an unmatched pod update is updatePodOther)",
        (
            Change(
                "1.34",
                "also the incoming ActionType must not exceed the registered one (a general Update no longer "
                "matches a plugin that registered one sub-update); updatePodOther is gone",
                "kubernetes#131693 (updatePodOther); the <= rule read in v1.34.9 framework/types.go",
            ),
            Change(
                "1.35",
                "Node/UpdateNodeDeclaredFeature joins the ActionType bits (shifting the Pod bits)",
                "the NodeDeclaredFeatures work, read in v1.35.6 kube-scheduler/framework/types.go",
            ),
        ),
    ),
    Behaviour(
        "preenqueue-from-backoffq",
        "when PreEnqueue is skipped on the way to activeQ",
        "never",
        (
            Change("1.33", "for pods the backoffQ flush moves (event BackoffComplete)", "kubernetes#130772"),
            Change(
                "1.35",
                "for every pod moved straight out of backoffQ (the flush, and Activate of a backing-off pod)",
                "kubernetes#133518",
            ),
        ),
    ),
    Behaviour(
        "gated-requeue-entry",
        "a gated pod re-entering unschedulablePods",
        "its entry is replaced",
        (
            Change(
                "1.33",
                "an entry already in unschedulablePods is kept (moveToActiveQ and moveToBackoffQ only add a "
                "missing one)",
                "read in v1.33.13 scheduling_queue.go (with the backoffQ refactor, kubernetes#130214)",
            ),
            Change("1.36", "its entry is replaced again", "kubernetes#135981"),
        ),
    ),
    Behaviour(
        "rejector-plugins-cleared",
        "when a pod's rejecting plugins are forgotten",
        "when the pod is popped",
        (
            Change(
                "1.36",
                "when its scheduling attempt fails (handleSchedulingFailure), so an in-flight pod keeps them",
                "kubernetes#135126",
            ),
        ),
    ),
    Behaviour(
        "fit-deleted-nominated-pod",
        "NodeResourcesFit's hint for a deleted pod",
        "Queue when the deleted pod was bound, else QueueSkip",
        (
            Change(
                "1.33",
                "Queue also when the deleted pod was only nominated to a node (as of v1.33.13)",
                "kubernetes#135392 (backported)",
            ),
        ),
    ),
    Behaviour(
        "fit-scale-down",
        "NodeResourcesFit's Pod events",
        "Pod/Delete (InPlacePodVerticalScaling alpha, off)",
        (Change("1.33", "Pod/Delete|UpdatePodScaleDown (InPlacePodVerticalScaling beta, on)", "KEP-1287"),),
    ),
)

_BY_KEY: Mapping[str, Behaviour] = MappingProxyType({b.key: b for b in BEHAVIOURS})


def check_version(version: str) -> str:
    """``version`` if supported, else a ``ValueError`` naming the supported ones."""
    if version not in SUPPORTED:
        raise ValueError(f"schedulerVersion {version!r}: supported: {', '.join(SUPPORTED)}")
    return version


def step_at(key: str, version: str) -> int:
    """How many of ``key``'s changes kube-scheduler ``version`` carries (0: the 1.32 behaviour)."""
    check_version(version)
    index = SUPPORTED.index(version)
    return sum(1 for change in _BY_KEY[key].changes if SUPPORTED.index(change.since) <= index)


def in_effect(key: str, version: str) -> bool:
    """Whether the first change of ``key`` applies at ``version``."""
    return step_at(key, version) > 0


def feature_gates(
    version: str, overrides: Mapping[str, bool] | None = None, emulated_version: str | None = None
) -> dict[str, bool]:
    """The gates the queue reads at ``version`` with ``overrides`` applied; an unknown gate, one that does
    not exist at the version, or a locked one set to another value is a ``ValueError`` naming it.

    ``emulated_version`` (kube-scheduler's ``--emulated-version``, not newer than ``version``) takes the
    gates' defaults and locks from that older version, as upstream's tests do to turn QueueingHints off
    on 1.34+ (the gate is locked on there)."""
    check_version(version)
    emulated = check_version(emulated_version) if emulated_version is not None else version
    if SUPPORTED.index(emulated) > SUPPORTED.index(version):
        raise ValueError(f"emulated version {emulated} is newer than kube-scheduler {version}")
    out: dict[str, bool] = {}
    for name, per_version in GATES.items():
        spec = per_version[emulated] if per_version[version] is not None else None
        out[name] = spec.default if spec is not None else False
    for name, value in (overrides or {}).items():
        if name not in GATES:
            raise ValueError(
                f"feature gate {name!r}: not a gate the scheduling queue reads ({', '.join(GATES)})"
            )
        if GATES[name][version] is None:
            raise ValueError(f"feature gate {name!r}: does not exist in kube-scheduler {version}")
        spec = GATES[name][emulated] or GATES[name][version]
        assert spec is not None
        if not isinstance(value, bool):
            raise ValueError(f"feature gate {name!r}: want true or false, got {value!r}")
        if spec.locked and value != spec.default:
            raise ValueError(f"feature gate {name!r}: locked to {str(spec.default).lower()} in {emulated}")
        out[name] = value
    return out
