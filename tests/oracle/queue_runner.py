"""Replays scheduling-queue traces (:mod:`tests.oracle.queue_traces`) through kube-scheduler's own
``PriorityQueue`` (the Go oracle, ``tests/oracle/scheduler/queue``) and through ``kubeletemu.fleet.queue``,
and compares them step by step: the pod each ``Pop`` returns (with its attempts, failure counts and
timestamps), the moves ``scheduler_queue_incoming_pods_total`` counts (queue and event), where every pod
is (activeQ, backoffQ, unschedulablePods, in flight) and the error a failed call returns.

``python -m tests.oracle.queue_runner --release 1.37 --count 100000 --out diffs.jsonl`` runs many traces on
demand and writes each trace that differs, with its first difference, one JSON line each; it prints the
figures. Upstream panics are written too (``panic``), with their trace.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.fleet.queue import (
    QUEUE,
    QUEUE_SKIP,
    AlreadyQueuedError,
    PriorityQueue,
    QueuedPodInfo,
    QueueingHintError,
    QueueingHintFunction,
    SchedulingGatesPlugin,
)
from kubeletemu.fleet.queue.hints import QueueingHintMap, queue_always
from kubeletemu.fleet.queue.pods import DEFAULT_SCHEDULER_NAME
from kubeletemu.pod import Pod
from tests.fleet.queue.rows import make_pod, parse_event
from tests.oracle.queue_traces import HINT_ANNOTATION, generate
from tests.oracle.scheduler import build

POP_FROM_BACKOFF_Q = "SchedulerPopFromBackoffQ"


@dataclass(frozen=True)
class Release:
    """An upstream release the oracle is built at, and the version of our queue compared with it.

    ``renames``: resource names the release spells differently from the model's version, replaced in the
    traces the model reads and in the event labels upstream answers; ``subset``: the traces leave out what
    the model's version does not emulate (:func:`tests.oracle.queue_traces.generate`)."""

    release: str  # the oracle's build (tests/oracle/scheduler/build.py)
    model: str  # kubeletemu.fleet.queue's schedulerVersion
    renames: tuple[tuple[str, str], ...] = ()
    subset: bool = False


# kube-scheduler 1.37 is not emulated (kubeletemu.fleet.queue.versions.SUPPORTED ends at 1.36): 1.37.2 is
# compared with the 1.36 queue on traces without gated pods (what 1.37 changed in the queue), its new
# resource names mapped to the old ones (docs/conformance.md lists what 1.37 changed).
RELEASES: Mapping[str, Release] = {
    "1.37": Release(
        "1.37", "1.36", (("UnscheduledPod", "UnschedulablePod"), ("TargetPod", "UnschedulablePod")), True
    ),
    "1.34": Release("1.34", "1.34"),
}


def _renamed(value: Any, renames: Sequence[tuple[str, str]]) -> Any:
    if not renames:
        return value
    text = json.dumps(value)
    for old, new in renames:
        text = text.replace(old, new)
    return json.loads(text)


@dataclass(frozen=True)
class EventObject:
    """A trace event's new object: the hint functions answer by its id."""

    id: int


@dataclass
class _Replay:
    trace: Mapping[str, Any]
    version: str
    gates: Mapping[str, bool]
    clock_ns: int = 0
    pods: dict[str, Pod] = field(default_factory=dict)
    infos: dict[str, QueuedPodInfo] = field(default_factory=dict)
    flight: list[str] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)
    answers: dict[int, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)
    moves: collections.Counter[str] = field(default_factory=collections.Counter)

    def __post_init__(self) -> None:
        self.clock_ns = int(self.trace["clock_ns"])
        hint_map: QueueingHintMap = {}
        for reg in self.trace["registrations"]:
            fn = self._hint(reg["plugin"]) if reg["hint"] else queue_always
            hint_map.setdefault(parse_event(reg["event"]), []).append(QueueingHintFunction(reg["plugin"], fn))
        self.queue = PriorityQueue(
            lambda: self.clock_ns / 1e9,
            version=self.version,
            hints=hint_map,
            feature_gates=dict(self.gates),
            pod_initial_backoff_s=float(self.trace.get("initial_backoff_s") or 1),
            pod_max_backoff_s=float(self.trace.get("max_backoff_s") or 10),
            pod_max_in_unschedulable_pods_s=float(self.trace.get("max_in_unschedulable_s") or 300),
            on_move=self._moved,
            pre_enqueue={DEFAULT_SCHEDULER_NAME: [SchedulingGatesPlugin()]}
            if self.trace.get("pre_enqueue")
            else None,
        )

    def _moved(self, queue: str, event: str, pod: Pod) -> None:
        self.moves[f"{queue}/{event}"] += 1

    def _hint(self, plugin: str) -> Any:
        def hint(pod: Pod, old: object, new: object) -> str:
            said = ""
            if isinstance(new, EventObject):
                said = self.answers.get(new.id, {}).get(plugin, {}).get(pod.name, "")
            elif isinstance(new, Pod):
                said = new.annotations.get(HINT_ANNOTATION + plugin, "")
            if said == "Queue":
                return QUEUE
            if said == "Error":
                raise QueueingHintError(f"oracle: {plugin}'s hint fails")
            return QUEUE_SKIP

        return hint

    def _pod(self, spec: Mapping[str, Any]) -> Pod:
        return make_pod({**spec, "namespace": "default", "scheduler": DEFAULT_SCHEDULER_NAME})

    def _named(self, name: str) -> Pod | None:
        return None if name in self.gone else self.pods[name]

    def _picked(self, pick: int) -> QueuedPodInfo | None:
        if not self.flight:
            return None
        name = self.flight.pop(pick % len(self.flight))
        return self.infos.pop(name)

    def run(self) -> dict[str, Any]:
        steps = []
        for step in self.trace["steps"]:
            out: dict[str, Any] = {}
            self._apply(step, out)
            out["moves"] = dict(self.moves)
            self.moves.clear()
            q = self.queue
            out["where"] = {
                "active": sorted(p.name for p in q.pods_in_active_q()),
                "backoff": sorted(p.name for p in q.pods_in_backoff_q()),
                "unschedulable": sorted(p.name for p in q.unschedulable()),
                "in_flight": sorted(p.name for p in q.in_flight_pods()),
            }
            steps.append(out)
        return {"id": self.trace["id"], "steps": steps}

    def _apply(self, step: Mapping[str, Any], out: dict[str, Any]) -> None:
        op, q = step["op"], self.queue
        if op == "tick":
            self.clock_ns += int(step["ns"])
        elif op == "add":
            pod = self._pod(step["pod"])
            self.pods[pod.name] = pod
            q.add(pod)
        elif op == "update":
            new = self._pod(step["pod"])
            if new.name in self.gone:
                return
            old, self.pods[new.name] = self.pods[new.name], new
            q.update(old, new)
        elif op == "delete":
            found = self._named(step["pod"])
            if found is not None:
                self.gone.add(found.name)
                q.delete(found)
        elif op == "activate":
            found = self._named(step["pod"])
            if found is not None:
                q.activate([found])
        elif op == "pop":
            info = q.pop()
            if info is not None:
                self.infos[info.pod.name] = info
                self.flight.append(info.pod.name)
                out["pop"] = {
                    "name": info.pod.name,
                    "attempts": info.attempts,
                    "unschedulable_count": info.unschedulable_count,
                    "consecutive_errors": info.consecutive_errors_count,
                    "timestamp_ns": info.timestamp,
                    "initial_attempt_ns": info.initial_attempt_timestamp or 0,
                }
        elif op == "fail":
            picked = self._picked(int(step.get("pick", 0)))
            if picked is None:
                return
            if picked.pod.name in self.gone:
                q.done(picked.pod.uid)
                return
            try:
                q.handle_scheduling_failure(picked, step.get("unschedulable", ()), step.get("pending", ()))
            except AlreadyQueuedError as error:
                out["error"] = str(error)
        elif op == "done":
            picked = self._picked(int(step.get("pick", 0)))
            if picked is not None:
                self.gone.add(picked.pod.name)
                q.done(picked.pod.uid)
        elif op == "event":
            self.answers[int(step["id"])] = step.get("answers", {})
            q.move_all_to_active_or_backoff_queue(
                parse_event(step["event"]), None, EventObject(int(step["id"]))
            )
        elif op == "flush_backoff":
            q.flush_backoff_q_completed()
        elif op == "flush_unschedulable":
            q.flush_unschedulable_pods_leftover()
        else:
            raise ValueError(f"unknown op {op!r}")


def replay_model(trace: Mapping[str, Any], version: str, gates: Mapping[str, bool]) -> dict[str, Any]:
    """What ``kubeletemu.fleet.queue`` at ``version`` does with ``trace``."""
    return _Replay(trace, version, gates).run()


def _gate_flag(gates: Mapping[str, bool]) -> list[str]:
    return ["-gates", ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()))] if gates else []


def replay_upstream(
    traces: Sequence[Mapping[str, Any]], release: str, gates: Mapping[str, bool]
) -> list[dict[str, Any]]:
    """What upstream's queue at ``release`` does with each trace (one process for the batch)."""
    binary = build.ensure(release)
    payload = "".join(json.dumps(t, separators=(",", ":")) + "\n" for t in traces)
    done = subprocess.run(
        [str(binary), *_gate_flag(gates)], input=payload, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"queue oracle {release} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    if len(answers) != len(traces):
        raise RuntimeError(f"queue oracle {release}: {len(answers)} answers for {len(traces)} traces")
    return answers


@dataclass(frozen=True)
class Difference:
    trace: Mapping[str, Any]
    step: int
    what: str
    upstream: Any
    model: Any

    def as_json(self) -> dict[str, Any]:
        op = self.trace["steps"][self.step] if 0 <= self.step < len(self.trace["steps"]) else None
        return {
            "id": self.trace["id"],
            "step": self.step,
            "op": op,
            "what": self.what,
            "upstream": self.upstream,
            "model": self.model,
            "trace": self.trace,
        }

    def __str__(self) -> str:
        op = self.trace["steps"][self.step] if 0 <= self.step < len(self.trace["steps"]) else None
        return (
            f"{self.trace['id']} step {self.step} {json.dumps(op)}: {self.what}: "
            f"upstream {json.dumps(self.upstream)} / model {json.dumps(self.model)}"
        )


def first_difference(
    trace: Mapping[str, Any], upstream: Mapping[str, Any], model: Mapping[str, Any]
) -> Difference | None:
    """The first step at which the two answers differ (pop, error, moves, then where), or an upstream
    panic or refusal."""
    if upstream.get("panic") or upstream.get("problems"):
        at = int(upstream.get("panic_at", -1)) if upstream.get("panic") else -1
        said = {k: upstream.get(k) for k in ("panic", "problems", "stack") if upstream.get(k)}
        return Difference(
            trace, at, "upstream panic" if upstream.get("panic") else "upstream refused", said, None
        )
    for index, (theirs, ours) in enumerate(zip(upstream["steps"], model["steps"], strict=True)):
        for key in ("pop", "error", "moves", "where"):
            if theirs.get(key) != ours.get(key):
                return Difference(trace, index, key, theirs.get(key), ours.get(key))
    return None


def traces_for(release: str, seeds: Iterable[int], steps: int = 80) -> Iterator[dict[str, Any]]:
    for seed in seeds:
        yield generate(seed, release, steps, subset=RELEASES[release].subset)


def compare_trace(
    release: str, trace: Mapping[str, Any], upstream: Mapping[str, Any], gates: Mapping[str, bool]
) -> Difference | None:
    """The first difference between upstream's answer and the model's for ``trace``."""
    spec = RELEASES[release]
    model = replay_model(_renamed(trace, spec.renames), spec.model, gates)
    return first_difference(trace, _renamed(upstream, spec.renames), model)


def compare(
    release: str, gates: Mapping[str, bool], seeds: Sequence[int], steps: int = 80, chunk: int = 2000
) -> tuple[int, list[Difference]]:
    """Runs ``seeds``' traces on both sides; the number compared and the differences."""
    found: list[Difference] = []
    for start in range(0, len(seeds), chunk):
        traces = list(traces_for(release, seeds[start : start + chunk], steps))
        for trace, upstream in zip(
            traces, replay_upstream(traces, RELEASES[release].release, gates), strict=True
        ):
            difference = compare_trace(release, trace, upstream, gates)
            if difference is not None:
                found.append(difference)
    return len(seeds), found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.oracle.queue_runner", description=__doc__)
    parser.add_argument("--release", choices=sorted(RELEASES), action="append")
    parser.add_argument("--count", type=int, default=1000, help="traces per release and gate setting")
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--out", help="write each differing trace here (JSON lines)")
    args = parser.parse_args(argv)
    total = 0
    differences: list[Difference] = []
    for release in args.release or sorted(RELEASES):
        for pop_from_backoff in (True, False):
            gates = {POP_FROM_BACKOFF_Q: pop_from_backoff}
            started = time.monotonic()
            seeds = list(range(args.seed, args.seed + args.count))
            count, found = compare(release, gates, seeds, args.steps)
            total += count
            differences += found
            print(
                f"{release} {POP_FROM_BACKOFF_Q}={pop_from_backoff}: {count} traces x {args.steps} steps, "
                f"{count - len(found)} agree, {len(found)} differ ({time.monotonic() - started:.0f} s)",
                flush=True,
            )
            for difference in found[:3]:
                print("  " + str(difference)[:600])
    if args.out:
        with open(args.out, "w") as out:
            for difference in differences:
                out.write(json.dumps(difference.as_json()) + "\n")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
