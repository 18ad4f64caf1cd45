"""Runs a row of ``tests/conformance/kube_scheduler_queue.json`` against the queue at one version.

A row is one upstream test case as a script: the pods it uses, the queue it builds (feature gates,
backoff options, QueueingHint map and PreEnqueue plugins per profile, the informer's pods for the
nominator, the fake clock's start), then ``ops`` — the calls the Go test makes, in order, with the checks
it makes where it makes them (``expect`` ops, and ``want`` on calls that return something). The format
is described in the JSON's ``encoding``; :func:`run_row` is its interpreter and fails with the op's index
and what differed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from kubeletemu.fleet.queue import events as ev
from kubeletemu.fleet.queue.active_queue import InFlightEvent
from kubeletemu.fleet.queue.backoff_queue import BackoffQueue
from kubeletemu.fleet.queue.events import ClusterEvent
from kubeletemu.fleet.queue.hints import (
    QUEUE,
    QUEUE_SKIP,
    QueueingHintError,
    QueueingHintFunction,
    QueueingHintMap,
)
from kubeletemu.fleet.queue.nominator import NominatingInfo
from kubeletemu.fleet.queue.podinfo import ZERO_TIME, QueuedPodInfo
from kubeletemu.fleet.queue.pods import AffinityTerm, SchedulingPod, scheduling_gates
from kubeletemu.fleet.queue.scheduling_queue import AlreadyQueuedError, PriorityQueue, priority_sort
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.objects import Node

# The fake clock's default start: an arbitrary instant off the whole second, as time.Now() is.
DEFAULT_CLOCK_NS = 1_000_250_000_000


class RowFailure(AssertionError):
    pass


class FakeClock:
    def __init__(self, start_ns: int) -> None:
        self.ns = start_ns

    def seconds(self) -> float:
        return self.ns / 1e9


def make_pod(spec: Mapping[str, Any]) -> SchedulingPod:
    requests = {k: Quantity.parse(str(v)) for k, v in spec.get("requests", {}).items()}
    terms = tuple(
        AffinityTerm(
            tuple(t.get("namespaces") or [spec.get("namespace", "")]),
            MappingProxyType(dict(t.get("match_labels", {}))),
            tuple(t.get("exists", ())),
        )
        for t in spec.get("affinity", ())
    )
    return SchedulingPod(
        name=spec["name"],
        namespace=spec.get("namespace", ""),
        uid=spec.get("uid", ""),
        containers=(Container("c", requests=MappingProxyType(requests)),) if requests else (),
        priority=spec.get("priority"),
        node_name=spec.get("node") or None,
        labels=MappingProxyType(dict(spec.get("labels", {}))),
        annotations=MappingProxyType(dict(spec.get("annotations", {}))),
        nominated_node_name=spec.get("nominated", ""),
        scheduling_gates=tuple(spec.get("gates", ())),
        tolerations=tuple(spec.get("tolerations", ())),
        scheduler_name=spec.get("scheduler", ""),
        resource_version=spec.get("rv", ""),
        required_affinity_terms=terms,
    )


def make_node(spec: Mapping[str, Any]) -> Node:
    return Node(
        name=spec["name"],
        labels=MappingProxyType(dict(spec.get("labels", {}))),
        allocatable=MappingProxyType(
            {k: Quantity.parse(str(v)) for k, v in spec.get("allocatable", {}).items()}
        ),
    )


def parse_event(text: str) -> ClusterEvent:
    """``Node/Add``, ``storage.k8s.io/CSINode/Update``, ``Pod/Delete|UpdatePodScaleDown``, or one of
    the wildcard events ``UnschedulableTimeout`` / ``ForceActivate`` / ``*/All``."""
    if text == ev.UNSCHEDULABLE_TIMEOUT:
        return ev.EVENT_UNSCHEDULABLE_TIMEOUT
    if text == ev.FORCE_ACTIVATE:
        return ev.EVENT_FORCE_ACTIVATE
    resource, _, action = text.rpartition("/")
    return ClusterEvent(resource, action)


def _hint_fn(name: str, calls: list[int]) -> Callable[[Pod, object, object], str]:
    def queue(pod: Pod, old: object, new: object) -> str:
        calls[0] += 1
        return QUEUE

    def skip(pod: Pod, old: object, new: object) -> str:
        calls[0] += 1
        return QUEUE_SKIP

    def error(pod: Pod, old: object, new: object) -> str:
        calls[0] += 1
        raise QueueingHintError("hint error")

    fns = {"queue": queue, "skip": skip, "error": error}
    if name not in fns:
        raise KeyError(f"unknown hint function {name!r}")
    return fns[name]


@dataclasses.dataclass
class AllowList:
    """The tests' ``preEnqueuePlugin``: admits a pod carrying one of the allowed label keys."""

    allow: list[str]
    name: str = "preEnqueuePlugin"

    def pre_enqueue(self, pod: Pod) -> bool:
        return any(label in self.allow for label in pod.labels)


@dataclasses.dataclass
class Gates:
    """``schedulinggates.SchedulingGates``."""

    name: str = "SchedulingGates"

    def pre_enqueue(self, pod: Pod) -> bool:
        return not scheduling_gates(pod)


class Run:
    def __init__(self, row: Mapping[str, Any], version: str) -> None:
        self.row = row
        self.version = version
        self.where = f"{row['test']} / {row['name']} @ {version}"
        self.pods = {key: make_pod(spec) for key, spec in expand_pods(row).items()}
        self.clock = FakeClock(row.get("clock_ns", DEFAULT_CLOCK_NS))
        self.handles: dict[str, QueuedPodInfo] = {}
        self.plugins: dict[str, dict[str, Any]] = {}
        self.objects = {
            self._pod(k).namespace + "/" + self._pod(k).name: self._pod(k) for k in row.get("objects", [])
        }
        self.bq: BackoffQueue | None = None
        self.hint_calls = [0]
        self.gate_overrides: dict[str, bool] = {}
        self.marks: dict[str, int] = {}
        self.moves: list[tuple[str, str]] = []
        self.queue = self._build_queue()

    # ---- setup -------------------------------------------------------------------------------

    def _pod(self, key: str) -> SchedulingPod:
        if key not in self.pods:
            raise RowFailure(f"{self.where}: unknown pod {key!r}")
        return self.pods[key]

    def _lister(self, namespace: str, name: str) -> Pod | None:
        return self.objects.get(f"{namespace}/{name}")

    def _build_queue(self) -> PriorityQueue:
        options = self.row.get("options", {})
        hints: dict[str, QueueingHintMap] = {}
        for profile, entries in self.row.get("hints", {}).items():
            hint_map: QueueingHintMap = {}
            for event_text, plugin, fn in entries:
                hint_map.setdefault(parse_event(event_text), []).append(
                    QueueingHintFunction(plugin, _hint_fn(fn, self.hint_calls))
                )
            hints[profile] = hint_map
        pre_enqueue: dict[str, list[Any]] = {}
        for profile, entries in self.row.get("pre_enqueue", {}).items():
            plugins: list[Any] = []
            for entry in entries:
                plugin = (
                    Gates()
                    if entry.get("kind") == "scheduling_gates"
                    else AllowList(list(entry.get("allow", [])))
                )
                if "name" in entry:
                    plugin.name = entry["name"]
                plugins.append(plugin)
                self.plugins.setdefault(profile, {})[plugin.name] = plugin
            pre_enqueue[profile] = plugins
        queue = PriorityQueue(
            self.clock.seconds,
            version=self.version,
            hints=hints,
            pre_enqueue=pre_enqueue,
            feature_gates=self._gates(),
            emulated_version=self._emulated(),
            pod_initial_backoff_s=options.get("initial_backoff_ns", 1_000_000_000) / 1e9,
            pod_max_backoff_s=options.get("max_backoff_ns", 10_000_000_000) / 1e9,
            pod_max_in_unschedulable_pods_s=options.get("max_in_unschedulable_ns", 300_000_000_000) / 1e9,
            less=priority_sort,
            pod_lister=self._lister,
            on_move=lambda queue, event, pod: self.moves.append((queue, event)),
        )
        if options.get("exact_ns"):
            # Durations as Go's int64 nanoseconds (floats cannot carry math.MaxInt64 exactly).
            queue.backoff_q.initial_backoff_ns = options.get("initial_backoff_ns", 1_000_000_000)
            queue.backoff_q.max_backoff_ns = options.get("max_backoff_ns", 10_000_000_000)
        return queue

    def _gates(self) -> dict[str, bool]:
        gates = {**self.row.get("gates", {}), **self.gate_overrides}
        if self.version == "1.32":
            gates.pop("SchedulerPopFromBackoffQ", None)  # no such gate before 1.33
        return gates

    def _emulated(self) -> str | None:
        """Upstream turns QueueingHints off on 1.34+ (where the gate is locked on) by emulating 1.33."""
        gates = self.row.get("gates", {})
        if gates.get("SchedulerQueueingHints") is False and self.version not in ("1.32", "1.33"):
            return "1.33"
        return None

    # ---- values ------------------------------------------------------------------------------

    def obj(self, spec: Any) -> object:
        if spec is None:
            return None
        if isinstance(spec, str):
            return self._pod(spec)
        if "pod" in spec:
            return self._pod(spec["pod"])
        if "node" in spec:
            return make_node(spec["node"])
        if "other" in spec:
            return object()
        raise RowFailure(f"{self.where}: bad object {spec!r}")

    def info(self, spec: Any) -> QueuedPodInfo:
        """A QueuedPodInfo: a handle's name, or ``{"kind": "new"|"lookup"|"literal", "pod": ..., ...}``."""
        if isinstance(spec, str):
            if spec not in self.handles:
                raise RowFailure(f"{self.where}: unknown handle {spec!r}")
            return self.handles[spec]
        pod = self._pod(spec["pod"])
        kind = spec.get("kind", "literal")
        info = self.queue.new_queued_pod_info(pod) if kind == "new" else QueuedPodInfo(pod=pod)
        self.apply(info, spec)
        if "as" in spec:
            self.handles[spec["as"]] = info
        return info

    def apply(self, info: QueuedPodInfo, fields: Mapping[str, Any]) -> None:
        if "plugins" in fields:
            info.unschedulable_plugins = set(fields["plugins"])
        if "pending" in fields:
            info.pending_plugins = set(fields["pending"])
        for key in ("attempts", "unschedulable_count", "consecutive_errors_count"):
            if key in fields:
                setattr(info, key, fields[key])
        for key in ("timestamp", "backoff_expiration"):
            if f"{key}_ns" in fields:
                setattr(info, key, fields[f"{key}_ns"])
            if f"{key}_offset_ns" in fields:
                setattr(info, key, self.row.get("clock_ns", DEFAULT_CLOCK_NS) + fields[f"{key}_offset_ns"])
            if fields.get(f"{key}_zero"):
                setattr(info, key, ZERO_TIME)
        if "gating_plugin" in fields:
            info.gating_plugin = fields["gating_plugin"]
            info.unschedulable_plugins = {fields["gating_plugin"]}
            info.gating_plugin_events = tuple(parse_event(e) for e in fields.get("gating_events", ()))
        if "add_plugins" in fields:
            info.unschedulable_plugins |= set(fields["add_plugins"])
        if "timestamp_shift_ns" in fields:
            info.timestamp += fields["timestamp_shift_ns"]
        if "gated_flag" in fields:
            info.gated_flag = fields["gated_flag"]
        if "pod" in fields and fields.get("replace_pod"):
            info.set_pod(self._pod(fields["pod"]))

    def fail(self, index: int, op: Mapping[str, Any], what: str) -> RowFailure:
        return RowFailure(f"{self.where}: op {index} {op.get('op')}: {what}")

    # ---- ops ---------------------------------------------------------------------------------

    def run(self, ops: Sequence[Mapping[str, Any]] | None = None) -> None:
        for index, op in enumerate(expand_ops(self.row["ops"] if ops is None else ops)):
            handler = getattr(self, "op_" + op["op"], None)
            if handler is None:
                raise self.fail(index, op, "unknown op")
            handler(index, op)

    def _want_pod(self, index: int, op: Mapping[str, Any], got: QueuedPodInfo | None) -> None:
        if "want_not" in op and (got is None or got.pod.name == self._pod(op["want_not"]).name):
            raise self.fail(index, op, f"want a pod other than {self._pod(op['want_not']).name}, got {got}")
        want = op.get("want", "<unset>")
        if want == "<unset>":
            return
        got_name = got.pod.name if got is not None else None
        want_name = self._pod(want).name if want is not None else None
        if got_name != want_name:
            raise self.fail(index, op, f"want {want_name}, got {got_name}")

    def op_add(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.add(self._pod(op["pod"]))

    def op_step(self, index: int, op: Mapping[str, Any]) -> None:
        self.clock.ns += op["ns"]

    def op_pop(self, index: int, op: Mapping[str, Any]) -> None:
        got = self.queue.pop()
        self._want_pod(index, op, got)
        if "as" in op and got is not None:
            self.handles[op["as"]] = got

    def op_active_pop(self, index: int, op: Mapping[str, Any]) -> None:
        got = self.queue.active_q.pop()
        self._want_pod(index, op, got)
        if "as" in op and got is not None:
            self.handles[op["as"]] = got
        if got is not None and op.get("reset_attempts"):
            got.attempts = 0

    def op_pop_specific(self, index: int, op: Mapping[str, Any]) -> None:
        got = self.queue.pop_specific_pod(self._pod(op["pod"]))
        self._want_pod(index, op, got)

    def op_info(self, index: int, op: Mapping[str, Any]) -> None:
        self.info({k: v for k, v in op.items() if k != "op"})

    def op_set(self, index: int, op: Mapping[str, Any]) -> None:
        self.apply(self.info(op["info"]), op)

    def op_add_unschedulable(self, index: int, op: Mapping[str, Any]) -> None:
        info = self.info(op["info"])
        cycle = op.get("cycle", "current")
        try:
            self.queue.add_unschedulable_if_not_present(
                info, self.queue.scheduling_cycle if cycle == "current" else int(cycle)
            )
        except AlreadyQueuedError as err:
            if "error" not in op or op["error"] not in str(err):
                raise self.fail(index, op, f"unexpected error {err}") from err
            return
        if "error" in op:
            raise self.fail(index, op, f"want error {op['error']!r}")

    def op_event(self, index: int, op: Mapping[str, Any]) -> None:
        pre_check: Callable[[Pod], bool] | None = None
        if op.get("pre_check") == "fail":

            def refuse(pod: Pod) -> bool:
                raise RowFailure(f"{self.where}: op {index}: the pre-check must not be called")

            pre_check = refuse
        if "pre_check_pods" in op:
            allowed = {(self._pod(k).namespace, self._pod(k).name) for k in op["pre_check_pods"]}

            def listed(pod: Pod) -> bool:
                return (pod.namespace, pod.name) in allowed

            pre_check = listed
        self.queue.move_all_to_active_or_backoff_queue(
            parse_event(op["event"]), self.obj(op.get("old")), self.obj(op.get("new")), pre_check
        )

    def op_flush_backoff(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.flush_backoff_q_completed()

    def op_flush_unschedulable(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.flush_unschedulable_pods_leftover()

    def op_activate(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.activate([self._pod(k) for k in op["pods"]])

    def op_update(self, index: int, op: Mapping[str, Any]) -> None:
        old = self._pod(op["old"]) if op.get("old") is not None else None
        self.queue.update(old, self._pod(op["new"]))

    def op_delete(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.delete(self._pod(op["pod"]))

    def op_done(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.done(self._pod(op["pod"]).uid)

    def op_assigned_pod_added(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.assigned_pod_added(self._pod(op["pod"]))

    def op_assigned_pod_updated(self, index: int, op: Mapping[str, Any]) -> None:
        old = self._pod(op["old"]) if op.get("old") else None
        self.queue.assigned_pod_updated(old, self._pod(op["new"]), parse_event(op["event"]))  # type: ignore[arg-type]

    def op_in_flight_event(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.active_q.add_event_if_any_in_flight(
            self.obj(op.get("old")), self.obj(op.get("new")), parse_event(op["event"])
        )

    def op_unsched_delete(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.unschedulable_pods.delete(self._pod(op["pod"]), op.get("gated", False))

    def op_unsched_clear(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.unschedulable_pods.clear()

    def op_add_unsched_helper(self, index: int, op: Mapping[str, Any]) -> None:
        """The tests' addPodUnschedulablePods: a pod not gated gets one more attempt (1.32, 1.33) or
        unschedulable count (1.34+), then goes straight into unschedulablePods."""
        info = self.info(op["info"])
        if not info.gated:
            setattr(info, op["field"], getattr(info, op["field"]) + 1)
        self.queue.unschedulable_pods.add_or_update(info, False, "UnschedulablePodAdd")

    def op_set_queue_flag(self, index: int, op: Mapping[str, Any]) -> None:
        """The test overrides the PriorityQueue's SchedulerPopFromBackoffQ flag only (not backoffQ's)."""
        self.queue.pop_from_backoff_q_enabled = op["pop_from_backoff_q"]

    def op_set_gate_and_rebuild(self, index: int, op: Mapping[str, Any]) -> None:
        """SetFeatureGateDuringTest then a new queue (TestBackOffFlow's loop)."""
        self.gate_overrides.update(op["gates"])
        self.bq = None
        self.queue = self._build_queue()

    def op_bq_pop_order(self, index: int, op: Mapping[str, Any]) -> None:
        """Pop backoffQ's heap until empty (1.32's loop over podBackoffQ.Pop), in order."""
        got = []
        while (info := self.queue.backoff_q.pod_backoff_q.pop()) is not None:
            got.append(info.pod.name)
        if got != [self._pod(k).name for k in op["want"]]:
            raise self.fail(index, op, f"want {op['want']}, got {got}")

    def op_bq_pop_set(self, index: int, op: Mapping[str, Any]) -> None:
        got = sorted(info.pod.name for info in self.queue.backoff_q.pop_all_backoff_completed())
        if got != sorted(self._pod(k).name for k in op["want"]):
            raise self.fail(index, op, f"want {sorted(op['want'])}, got {got}")

    def op_bump(self, index: int, op: Mapping[str, Any]) -> None:
        info = self.info(op["info"])
        setattr(info, op["field"], getattr(info, op["field"]) + 1)

    def op_mark(self, index: int, op: Mapping[str, Any]) -> None:
        self.marks[op["name"]] = self.clock.ns

    def op_rebuild(self, index: int, op: Mapping[str, Any]) -> None:
        """A new queue (a new subtest over the same Go objects): handles and pods are kept."""
        if "clock_ns" in op:
            self.clock.ns = op["clock_ns"]
        self.bq = None
        self.queue = self._build_queue()
        if "max_in_unschedulable_ns" in op:
            self.queue.pod_max_in_unschedulable_pods_ns = op["max_in_unschedulable_ns"]

    def op_close(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.close()

    def op_add_nominated(self, index: int, op: Mapping[str, Any]) -> None:
        node = op.get("node")
        self.queue.add_nominated_pod(self._pod(op["pod"]), NominatingInfo(node) if node is not None else None)

    def op_delete_nominated(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.nominator.delete_nominated_pod_if_exists(self._pod(op["pod"]))

    def op_lister_delete(self, index: int, op: Mapping[str, Any]) -> None:
        pod = self._pod(op["pod"])
        self.objects.pop(f"{pod.namespace}/{pod.name}", None)

    def op_set_plugin(self, index: int, op: Mapping[str, Any]) -> None:
        """Replace a PreEnqueue plugin's allowlist (the tests swap the plugin in the map)."""
        plugin = self.plugins[op.get("profile", "")][op.get("name", "preEnqueuePlugin")]
        plugin.allow = list(op["allow"])

    # internals the Go tests reach into

    def op_unsched_add(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.unschedulable_pods.add_or_update(self.info(op["info"]), op.get("gated_before", False))

    def op_backoff_add(self, index: int, op: Mapping[str, Any]) -> None:
        self._bq(index, op).add(self.info(op["info"]))

    def op_active_add(self, index: int, op: Mapping[str, Any]) -> None:
        self.queue.active_q.add(self.info(op["info"]))

    def op_move_to_active(self, index: int, op: Mapping[str, Any]) -> None:
        got = self.queue._move_to_active_q(self.info(op["info"]), op["event"], op.get("from_backoff", False))
        if "want" in op and got != op["want"]:
            raise self.fail(index, op, f"want {op['want']}, got {got}")

    def op_move_to_backoff(self, index: int, op: Mapping[str, Any]) -> None:
        info = self.info(op["info"])
        if not self.queue._split:
            raise self.fail(index, op, "moveToBackoffQ does not exist before 1.33")
        got = self.queue._move_to_backoff_q(info, op.get("event", ""))
        if "want" in op and got != op["want"]:
            raise self.fail(index, op, f"want {op['want']}, got {got}")

    def op_is_worth_requeuing(self, index: int, op: Mapping[str, Any]) -> None:
        got = self.queue._is_pod_worth_requeuing(
            self.info(op["info"]), parse_event(op["event"]), self.obj(op.get("old")), self.obj(op.get("new"))
        )
        if got != op["want"]:
            raise self.fail(index, op, f"want {op['want']}, got {got}")

    # a backoffQ alone (backoff_queue_test.go)

    def op_bq_new(self, index: int, op: Mapping[str, Any]) -> None:
        self.bq = BackoffQueue(
            lambda: self.clock.ns,
            op.get("initial_backoff_ns", 1_000_000_000),
            op.get("max_backoff_ns", 10_000_000_000),
            priority_sort,
            op.get("pop_from_backoff_q", True),
            self.version,
        )

    def _bq(self, index: int, op: Mapping[str, Any]) -> BackoffQueue:
        """The backoffQ built by ``bq_new``, else the queue's own."""
        return self.bq if self.bq is not None else self.queue.backoff_q

    def op_bq_backoff_time(self, index: int, op: Mapping[str, Any]) -> None:
        got = self._bq(index, op).backoff_time(self.info(op["info"]))
        want = ZERO_TIME if op.get("want_zero") else op["want_ns"]
        if got != want:
            raise self.fail(index, op, f"want {want}, got {got}")

    def op_bq_duration(self, index: int, op: Mapping[str, Any]) -> None:
        got = self._bq(index, op).calculate_backoff_duration(op["count"])
        if got != op["want_ns"]:
            raise self.fail(index, op, f"want {op['want_ns']}, got {got}")

    def op_bq_pop_all(self, index: int, op: Mapping[str, Any]) -> None:
        got = [info.pod.name for info in self._bq(index, op).pop_all_backoff_completed()]
        want = [self._pod(k).name for k in op["want"]]
        if got != want:
            raise self.fail(index, op, f"want {want}, got {got}")

    def op_bq_pop_all_any(self, index: int, op: Mapping[str, Any]) -> None:
        """``popAllBackoffCompleted`` with the result unused."""
        self._bq(index, op).pop_all_backoff_completed()

    def op_bq_drain(self, index: int, op: Mapping[str, Any]) -> None:
        """Pop every pod off backoffQ's heaps, backoff completed or not (1.32's test loop over Pop)."""
        bq = self._bq(index, op)
        while bq.pod_backoff_q.pop() is not None:
            pass
        while bq.pod_error_backoff_q.pop() is not None:
            pass

    def op_bq_len(self, index: int, op: Mapping[str, Any]) -> None:
        if len(self._bq(index, op)) != op["want"]:
            raise self.fail(index, op, f"want {op['want']}, got {len(self._bq(index, op))}")

    # ---- checks ------------------------------------------------------------------------------

    def op_expect(self, index: int, op: Mapping[str, Any]) -> None:
        q = self.queue
        where = {
            "active": [i.pod.name for i in q.active_q],
            "backoff": [i.pod.name for i in q.backoff_q],
            "unschedulable": [i.pod.name for i in q.unschedulable_pods],
        }
        for key, names in where.items():
            if key in op:
                want = sorted(self._pod(k).name for k in op[key])
                if sorted(names) != want:
                    raise self.fail(index, op, f"{key}: want {want}, got {sorted(names)}")
            if f"{key}_has" in op:
                for k in op[f"{key}_has"]:
                    if self._pod(k).name not in names:
                        raise self.fail(index, op, f"{key}: {self._pod(k).name} missing (has {names})")
            if f"{key}_lacks" in op:
                for k in op[f"{key}_lacks"]:
                    if self._pod(k).name in names:
                        raise self.fail(index, op, f"{key}: {self._pod(k).name} present")
            if f"{key}_len" in op and len(names) != op[f"{key}_len"]:
                raise self.fail(index, op, f"{key}: want {op[f'{key}_len']} pods, got {names}")
        if "unschedulable_gated" in op:
            got_gated = sorted(i.pod.name for i in q.unschedulable_pods if i.gated)
            want_gated = sorted(self._pod(k).name for k in op["unschedulable_gated"])
            if got_gated != want_gated:
                raise self.fail(index, op, f"gated in unschedulablePods: want {want_gated}, got {got_gated}")
        if "stored" in op:
            for key, pod_key in op["stored"].items():
                held = {
                    "active": list(q.active_q),
                    "backoff": list(q.backoff_q),
                    "unschedulable": list(q.unschedulable_pods),
                }[key]
                want_pod = self._pod(pod_key)
                stored = [i.pod for i in held if i.pod.name == want_pod.name]
                if stored != [want_pod]:
                    raise self.fail(index, op, f"{key} holds {stored}, want {want_pod}")
        if "in_flight_pods" in op:
            got_uids = sorted(p.uid for p in q.active_q.list_in_flight_pods())
            want_uids = sorted(self._pod(k).uid for k in op["in_flight_pods"])
            if got_uids != want_uids:
                raise self.fail(index, op, f"in-flight pods: want {want_uids}, got {got_uids}")
        if "in_flight_events" in op:
            got_entries = [self._entry(e) for e in q.active_q.list_in_flight_events()]
            want_entries = [self._want_entry(e) for e in op["in_flight_events"]]
            if got_entries != want_entries:
                raise self.fail(index, op, f"in-flight events: want {want_entries}, got {got_entries}")
        if (
            "in_flight_events_len" in op
            and len(q.active_q.list_in_flight_events()) != op["in_flight_events_len"]
        ):
            raise self.fail(index, op, f"in-flight events: want {op['in_flight_events_len']}")
        if "nominated" in op:
            got_nom = {n: [r.name for r in refs] for n, refs in q.nominator.nominated_pods.items()}
            want_nom = {n: [self._pod(k).name for k in keys] for n, keys in op["nominated"].items()}
            if got_nom != want_nom:
                raise self.fail(index, op, f"nominated: want {want_nom}, got {got_nom}")
        if "nominated_to_node" in op:
            got_map = {uid: n for uid, n in q.nominator.nominated_pod_to_node.items()}
            want_map = {self._pod(k).uid: n for k, n in op["nominated_to_node"].items()}
            if got_map != want_map:
                raise self.fail(index, op, f"nominatedPodToNode: want {want_map}, got {got_map}")
        if "nominated_len" in op and len(q.nominator.nominated_pods) != op["nominated_len"]:
            raise self.fail(
                index,
                op,
                f"nominatedPods: want {op['nominated_len']} nodes, got {q.nominator.nominated_pods}",
            )
        if "nominated_for_node" in op:
            for node, keys in op["nominated_for_node"].items():
                got_names = [p.name for p in q.nominated_pods_for_node(node)]
                if got_names != [self._pod(k).name for k in keys]:
                    raise self.fail(index, op, f"nominated for {node}: got {got_names}")
        if "pending_summary" in op:
            _, summary = q.pending_pods()
            if summary != op["pending_summary"]:
                raise self.fail(index, op, f"summary: want {op['pending_summary']}, got {summary}")
        if "sched_cycle" in op and q.scheduling_cycle != op["sched_cycle"]:
            raise self.fail(index, op, f"cycle: want {op['sched_cycle']}, got {q.scheduling_cycle}")
        if "get_pod" in op:
            for key, want_found in op["get_pod"].items():
                pod = self._pod(key)
                found = q.get_pod(pod.name, pod.namespace) is not None
                if found != want_found:
                    raise self.fail(index, op, f"GetPod({pod.name}): want {want_found}")
        if "hint_calls" in op and self.hint_calls[0] != op["hint_calls"]:
            raise self.fail(
                index, op, f"hint functions called {self.hint_calls[0]} times, want {op['hint_calls']}"
            )
        if "unschedulable_split" in op:
            gated = sum(1 for i in q.unschedulable_pods if i.gated)
            got_split = {"gated": gated, "unschedulable": len(q.unschedulable_pods) - gated}
            if got_split != op["unschedulable_split"]:
                raise self.fail(
                    index, op, f"unschedulablePods split: want {op['unschedulable_split']}, got {got_split}"
                )
        if "rejector_counts" in op:
            infos = [*q.active_q, *q.backoff_q, *q.unschedulable_pods]
            got_counts = {
                p: sum(1 for i in infos if p in i.rejector_plugins()) for p in op["rejector_counts"]
            }
            if got_counts != op["rejector_counts"]:
                raise self.fail(
                    index, op, f"pods per rejecting plugin: want {op['rejector_counts']}, got {got_counts}"
                )
        if "moves" in op:
            got_moves: dict[str, int] = {}
            for queue_name, event in self.moves:
                key = f"{queue_name}/{event}"
                got_moves[key] = got_moves.get(key, 0) + 1
            if got_moves != op["moves"]:
                raise self.fail(index, op, f"pods moved per queue/event: want {op['moves']}, got {got_moves}")
        if "backoff_durations" in op:
            got_d = (q.backoff_q.initial_backoff_ns, q.backoff_q.max_backoff_ns)
            if list(got_d) != op["backoff_durations"]:
                raise self.fail(index, op, f"backoff durations: want {op['backoff_durations']}, got {got_d}")
        if "pod_backoff" in op:
            spec = op["pod_backoff"]
            expiry = q.backoff_q.backoff_time(self.info(spec["info"]))
            delta = expiry - self.marks[spec["since"]]
            if spec.get("window"):
                delta = delta - delta % 1_000_000_000 + 1_000_000_000
            if delta != spec["want_ns"]:
                raise self.fail(index, op, f"backoff: want {spec['want_ns']}, got {delta}")
        for handle, fields in op.get("info", {}).items():
            self._check_info(index, op, handle, fields)

    def _check_info(self, index: int, op: Mapping[str, Any], handle: str, fields: Mapping[str, Any]) -> None:
        info = self.info(handle)
        checks: dict[str, Any] = {
            "attempts": info.attempts,
            "unschedulable_count": info.unschedulable_count,
            "consecutive_errors_count": info.consecutive_errors_count,
            "plugins": sorted(info.unschedulable_plugins),
            "pending": sorted(info.pending_plugins),
            "gated": info.gated,
            "gating_plugin": info.gating_plugin,
            "timestamp_offset_ns": info.timestamp - self.row.get("clock_ns", DEFAULT_CLOCK_NS),
            "initial_attempt_offset_ns": (
                None
                if info.initial_attempt_timestamp is None
                else info.initial_attempt_timestamp - self.row.get("clock_ns", DEFAULT_CLOCK_NS)
            ),
            "was_flushed": info.was_flushed_from_unschedulable,
        }
        for key, want in fields.items():
            got = checks[key]
            if isinstance(want, list):
                want = sorted(want)
            if got != want:
                raise self.fail(index, op, f"{handle}.{key}: want {want}, got {got}")

    def _entry(self, entry: Pod | InFlightEvent) -> tuple[Any, ...]:
        if isinstance(entry, InFlightEvent):
            return ("event", str(entry.event), _obj_name(entry.old), _obj_name(entry.new))
        return ("pod", entry.uid)

    def _want_entry(self, spec: Mapping[str, Any]) -> tuple[Any, ...]:
        if "pod" in spec:
            return ("pod", self._pod(spec["pod"]).uid)
        old, new = self.obj(spec.get("old")), self.obj(spec.get("new"))
        return ("event", str(parse_event(spec["event"])), _obj_name(old), _obj_name(new))


def _obj_name(obj: object) -> str | None:
    if obj is None:
        return None
    if isinstance(obj, (Pod, Node)):
        return obj.name
    return type(obj).__name__


def _fill(value: Any, i: int) -> Any:
    if isinstance(value, str):
        return value.replace("{i}", str(i))
    if isinstance(value, dict):
        return {_fill(k, i): _fill(v, i) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, i) for v in value]
    return value


def expand_pods(row: Mapping[str, Any]) -> dict[str, Any]:
    """``pods`` plus ``pod_series``: ``{"from": 1, "to": 50, "key": "x{i}", "pod": {...}}`` makes one pod
    per i, ``{i}`` replaced in the key and in the pod's strings."""
    pods = dict(row.get("pods", {}))
    for series in row.get("pod_series", ()):
        for i in range(series["from"], series["to"] + 1):
            pods[_fill(series["key"], i)] = _fill(series["pod"], i)
    return pods


def expand_ops(ops: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Ops with ``{"op": "each", "keys": [...], "do": {...}}`` unrolled: ``do`` once per key, ``{k}``
    replaced by it."""
    out: list[Mapping[str, Any]] = []
    for op in ops:
        if op["op"] != "each":
            out.append(op)
            continue
        for key in op["keys"]:
            out.append(json.loads(json.dumps(op["do"]).replace("{k}", key)))
    return out


SETUP_KEYS = ("pods", "pod_series", "objects", "hints", "pre_enqueue", "gates", "options", "clock_ns")


def chain(
    row: Mapping[str, Any], version: str, table: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The rows to run for ``row``: the subtests it runs after (``after``, the previous subtest of the same
    test at the same version, on the same Go objects), oldest first, then ``row``."""
    out = [row]
    while "after" in out[0]:
        current = out[0]
        found = [
            r
            for r in table
            if r["test"] == current["test"] and r["name"] == current["after"] and version in r["versions"]
        ]
        if len(found) != 1:
            where = f"{current['test']} / {current['name']} @ {version}"
            raise RowFailure(f"{where}: after {current['after']!r} matches {len(found)} rows")
        if any(found[0].get(k) != current.get(k) for k in SETUP_KEYS):
            raise RowFailure(
                f"{current['test']} / {current['name']}: after {current['after']!r} builds another queue"
            )
        out.insert(0, found[0])
    return out


def run_row(row: Mapping[str, Any], version: str, table: Sequence[Mapping[str, Any]] = ()) -> None:
    """Run ``row`` at ``version``; ``table`` holds the rows an ``after`` refers to."""
    rows = chain(row, version, table)
    run = Run(rows[0], version)
    for part in rows:
        run.row = part
        run.where = f"{part['test']} / {part['name']} @ {version}"
        run.run()
