"""Seeded event traces for kube-scheduler's scheduling queue, replayed by ``tests/oracle/queue_runner.py``
through upstream's ``PriorityQueue`` and ``kubeletemu.fleet.queue``.

A trace is JSON: the fake clock's start, the backoff options, the QueueingHint registrations of a few
made-up plugins (``{"plugin", "event", "hint"}``; ``hint`` false: registered without a function, which
always queues), in some traces the SchedulingGates PreEnqueue plugin (``pre_enqueue``: it gates a pod while
the pod has scheduling gates), and ``steps``, each one call the scheduler makes on its queue:

* ``tick`` (``ns``): the fake clock steps.
* ``add`` (``pod``): ``Add``, a new pending pod.
* ``pop``: ``Pop``, when it would not block.
* ``fail`` (``pick``, ``unschedulable``, ``pending``): ``handleSchedulingFailure``'s queue part for the
  in-flight pod ``pick`` (modulo their number, in pop order): the rejecting plugins set, then
  ``AddUnschedulable(Pod)IfNotPresent`` at the current cycle (no plugin: an error); only ``Done`` if the
  pod was deleted during its cycle.
* ``done`` (``pick``): ``Done``, the in-flight pod was bound.
* ``event`` (``event``, ``id``, ``answers``): ``MoveAllToActiveOrBackoffQueue``; the plugins' hints answer
  per pod from ``answers`` (``Queue``, ``QueueSkip``, ``Error``; absent: ``QueueSkip``).
* ``update`` (``pod``): ``Update`` of a pending pod (labels, gates removed, or the ``oracle.hint/<plugin>``
  annotations by which its own update events are answered).
* ``delete`` / ``activate`` (``pod``): ``Delete`` / ``Activate``.
* ``flush_backoff`` / ``flush_unschedulable``: ``flushBackoffQCompleted`` / the flush of pods unschedulable
  for over 5 minutes.

A pod is named once added; a step naming a pod that is bound or deleted is not made (upstream would never
see it), and ``fail``/``done`` with nothing in flight do nothing. Every step but ``tick`` follows a tick of
at least a millisecond, so no two pods share a timestamp: upstream orders equal pods by Go map iteration and
heap internals, which a trace cannot pin.
"""

from __future__ import annotations

import random
from typing import Any

PLUGINS = ("PluginA", "PluginB", "PluginC", "PluginD")
GATES = "SchedulingGates"  # the PreEnqueue plugin a trace may have: it gates pods with scheduling gates
HINT_ANNOTATION = "oracle.hint/"
ANSWERS = ("Queue", "QueueSkip", "Error")
CLOCK_NS = 1_000_250_000_000  # an instant off the whole second, as time.Now() is

# What plugins register (EventsToRegister's resources) and the actions they combine.
REGISTERED_RESOURCES = ("Node", "Pod", "PersistentVolume", "storage.k8s.io/CSINode")
COMMON_ACTIONS = ("Add", "Delete", "Update")
NODE_ACTIONS = ("UpdateNodeAllocatable", "UpdateNodeLabel", "UpdateNodeTaint")
POD_ACTIONS = ("UpdatePodLabel", "UpdatePodScaleDown", "UpdatePodToleration")


def incoming_resources(release: str) -> tuple[str, ...]:
    """The resources the scheduler's event handlers send: pods as the internal assigned/unscheduled
    resources, whose names differ between releases (1.37 exports ``UnscheduledPod``)."""
    unscheduled = "UnscheduledPod" if release >= "1.37" else "UnschedulablePod"
    return ("Node", "AssignedPod", unscheduled, "PersistentVolume", "storage.k8s.io/CSINode")


def _actions(rng: random.Random, resource: str) -> str:
    """One or two actions that resource's events carry (mostly; a stray one now and then)."""
    own = NODE_ACTIONS if resource == "Node" else POD_ACTIONS if "Pod" in resource else ()
    menu = COMMON_ACTIONS + own if rng.random() < 0.9 else COMMON_ACTIONS + NODE_ACTIONS + POD_ACTIONS
    return "|".join(sorted(set(rng.sample(menu, rng.choice((1, 1, 2))))))


def generate(seed: int, release: str, steps: int = 80, *, subset: bool = False) -> dict[str, Any]:
    """One trace, the same for the same ``seed`` and ``release``. ``subset``: leave out what kube-scheduler
    1.37 changed in the queue (gated pods: its wildcard events re-evaluate them), so that 1.37.2 can be
    compared with the queue as 1.36 emulates it."""
    rng = random.Random(f"{seed}/{release}")
    plugins = PLUGINS[: rng.randint(1, len(PLUGINS))]
    registrations = [
        {
            "plugin": plugin,
            "event": f"{resource}/{_actions(rng, resource)}",
            "hint": rng.random() < 0.6,
        }
        for plugin in plugins
        for resource in rng.sample(REGISTERED_RESOURCES, rng.randint(1, 3))
    ]
    if rng.random() < 0.1:
        registrations.append({"plugin": rng.choice(plugins), "event": "*/All", "hint": rng.random() < 0.5})
    gating = rng.random() < 0.35 and not subset
    if gating:
        registrations.append(
            {"plugin": GATES, "event": "Pod/UpdatePodSchedulingGatesEliminated", "hint": rng.random() < 0.5}
        )
    names = [f"p{i}" for i in range(rng.randint(2, 10))]
    gates = {name: ["example.com/wait"] if gating and rng.random() < 0.3 else [] for name in names}
    priorities = {name: rng.choice((0, 0, 10, 100)) for name in names}
    labels: dict[str, dict[str, str]] = {name: {} for name in names}
    annotations: dict[str, dict[str, str]] = {name: {} for name in names}
    unborn = list(names)
    born: list[str] = []
    out: list[dict[str, Any]] = []

    def spec(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "uid": f"uid-{name}",
            "priority": priorities[name],
            "labels": dict(labels[name]),
            "annotations": dict(annotations[name]),
            "gates": list(gates[name]),
        }

    event_id = 0
    while len(out) < steps:
        jump = rng.random()
        if jump < 0.04:
            ns = rng.randint(30, 400) * 1_000_000_000  # past the 5-minute leftover, sometimes
        elif jump < 0.4:
            ns = rng.randint(1_000, 12_000) * 1_000_000  # across backoffs (1-10 s)
        else:
            ns = rng.randint(1, 900) * 1_000_000
        out.append({"op": "tick", "ns": ns})
        choices = ["pop"] * 4 + ["fail"] * 3 + ["done", "event", "event", "flush_backoff", "flush_backoff"]
        choices.append("flush_unschedulable")
        if unborn:
            choices += ["add"] * 3
        if born:
            choices += ["update", "delete", "activate"]
        op = "add" if not born else rng.choice(choices)
        if op == "add":
            name = unborn.pop(0)
            born.append(name)
            out.append({"op": "add", "pod": spec(name)})
        elif op == "fail":
            kind = rng.random()
            unschedulable: list[str] = []
            pending: list[str] = []
            if kind < 0.15:
                pass  # an error: no plugin rejected the pod
            elif kind < 0.35:
                pending = sorted(rng.sample(plugins, 1))
                if rng.random() < 0.5:
                    unschedulable = sorted(rng.sample(plugins, 1))
            else:
                unschedulable = sorted(rng.sample(plugins, rng.randint(1, len(plugins))))
            if rng.random() < 0.05:
                unschedulable.append("Unregistered")  # a plugin that registered no event
            out.append(
                {"op": "fail", "pick": rng.randint(0, 9), "unschedulable": unschedulable, "pending": pending}
            )
        elif op == "done":
            out.append({"op": "done", "pick": rng.randint(0, 9)})
        elif op == "event":
            event_id += 1
            resource = rng.choice(incoming_resources(release))
            answers = {
                plugin: {name: rng.choice(ANSWERS) for name in born if rng.random() < 0.7}
                for plugin in plugins
            }
            out.append(
                {
                    "op": "event",
                    "event": f"{resource}/{_actions(rng, resource)}",
                    "id": event_id,
                    "answers": answers,
                }
            )
        elif op == "update":
            name = rng.choice(born)
            if rng.random() < 0.5:
                labels[name][f"l{rng.randint(0, 2)}"] = str(rng.randint(0, 3))
            if gates[name] and rng.random() < 0.5:
                gates[name] = []
            for plugin in (*plugins, GATES) if gating else plugins:
                if rng.random() < 0.5:
                    annotations[name][HINT_ANNOTATION + plugin] = rng.choice(ANSWERS)
            out.append({"op": "update", "pod": spec(name)})
        elif op in ("delete", "activate"):
            out.append({"op": op, "pod": rng.choice(born)})
        else:
            out.append({"op": op})
    return {
        "id": f"{release}/{seed}",
        "clock_ns": CLOCK_NS + rng.randint(0, 999) * 1_000_000,
        "initial_backoff_s": rng.choice((1, 1, 2)),
        "max_backoff_s": rng.choice((10, 10, 5)),
        "max_in_unschedulable_s": 300,
        "registrations": registrations,
        "pre_enqueue": gating,
        "steps": out,
    }
