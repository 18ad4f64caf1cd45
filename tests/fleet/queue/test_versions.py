"""Each queue behaviour of ``kubeletemu.fleet.queue.versions`` differs where the registry says it changes:
the same scenario, run at the version before and at the version that carries the change."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from kubeletemu.fleet.queue import (
    BEHAVIOURS,
    SUPPORTED,
    ClusterEvent,
    PriorityQueue,
    QueuedPodInfo,
    SchedulingPod,
    backoff_flush_times,
    feature_gates,
    match,
)
from kubeletemu.fleet.queue import events as ev
from kubeletemu.fleet.queue.hints import (
    QUEUE,
    QUEUE_SKIP,
    QueueingHintFunction,
    fit_after_pod_event,
    node_resources_fit,
    queue_always,
)
from kubeletemu.fleet.queue.versions import check_version, in_effect, step_at
from kubeletemu.pod import Pod
from kubeletemu.scheduler.pod_shape import pod_shape


def pod(name: str, priority: int = 0, nominated_node_name: str = "") -> SchedulingPod:
    return SchedulingPod(
        name=name,
        namespace="ns",
        uid=f"uid-{name}",
        containers=(),
        priority=priority,
        nominated_node_name=nominated_node_name,
    )


class Clock:
    def __init__(self, start: float = 100.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t


def fail(queue: PriorityQueue, info: QueuedPodInfo, *plugins: str) -> None:
    queue.handle_scheduling_failure(info, set(plugins))


NODE_ADD_HINTS = {ev.EVENT_NODE_ADD: [QueueingHintFunction("p", queue_always)]}


def reject_with_event(queue: PriorityQueue, info: QueuedPodInfo) -> None:
    """Rejected by plugin p while a Node/Add p registers arrived: the pod goes back through backoffQ."""
    queue.move_all_to_active_or_backoff_queue(ev.EVENT_NODE_ADD)
    fail(queue, info, "p")


def test_every_behaviour_changes_at_a_supported_version_in_order() -> None:
    for behaviour in BEHAVIOURS:
        indices = [SUPPORTED.index(c.since) for c in behaviour.changes]
        assert indices == sorted(indices) and indices[0] > 0, behaviour.key
        assert step_at(behaviour.key, "1.32") == 0
        assert step_at(behaviour.key, behaviour.changes[-1].since) == len(behaviour.changes)


def test_pop_from_backoffq_1_33() -> None:
    """KEP-5142: with activeQ empty, 1.33 pops the backing-off pod at once; 1.32 (and 1.33 with the gate
    off) waits for the backoff flush."""
    results = {}
    for version, gates in (("1.32", None), ("1.33", None), ("1.33", {"SchedulerPopFromBackoffQ": False})):
        clock = Clock()
        queue = PriorityQueue(clock, version=version, feature_gates=gates, hints=NODE_ADD_HINTS)
        queue.add(pod("a"))
        info = queue.pop()
        assert info is not None
        reject_with_event(queue, info)
        assert [p.name for p in queue.pods_in_backoff_q()] == ["a"]
        popped = queue.pop()
        results[(version, bool(gates))] = popped.pod.name if popped else None
    assert results == {("1.32", False): None, ("1.33", False): "a", ("1.33", True): None}


def test_error_backoffq_is_not_popped_1_33() -> None:
    """kubernetes#130214: a pod that failed with an error sits in podErrorBackoffQ, which Pop never takes
    from; a rejected one is popped from backoffQ."""
    queue = PriorityQueue(
        Clock(), version="1.33", hints={ev.EVENT_NODE_ADD: [QueueingHintFunction("p", queue_always)]}
    )
    queue.add(pod("err"))
    queue.add(pod("rej"))
    err, rej = queue.pop(), queue.pop()
    assert err is not None and rej is not None
    fail(queue, err)
    fail(queue, rej, "p")
    queue.move_all_to_active_or_backoff_queue(ev.EVENT_NODE_ADD)  # rej: unschedulable -> backoffQ
    assert sorted(p.name for p in queue.pods_in_backoff_q()) == ["err", "rej"]
    popped = queue.pop()
    assert popped is not None and popped.pod.name == "rej"
    assert queue.pop() is None


def test_backoff_counts_1_34() -> None:
    """kubernetes#128748: from 1.34 the backoff doubles on unschedulable attempts (an error does not
    count toward it); before, on every attempt."""
    durations = {}
    for version in ("1.33", "1.34"):
        clock = Clock(1000.0)
        queue = PriorityQueue(clock, version=version, feature_gates={"SchedulerPopFromBackoffQ": False})
        queue.add(pod("a"))
        info = queue.pop()
        assert info is not None
        fail(queue, info)  # error
        clock.t += 20
        queue.flush_backoff_q_completed()
        info = queue.pop()
        assert info is not None
        fail(queue, info)  # error again (the event-less path: backoffQ)
        durations[version] = queue.backoff_q.backoff_time(info) - info.timestamp
    assert durations == {"1.33": 2_000_000_000, "1.34": 2_000_000_000}
    # An unschedulable attempt after errors: 1.33 counts 3 attempts (4 s), 1.34 one rejection (1 s).
    for version, want in (("1.33", 4_000_000_000), ("1.34", 1_000_000_000)):
        clock = Clock(1000.0)
        queue = PriorityQueue(clock, version=version, feature_gates={"SchedulerPopFromBackoffQ": False})
        queue.add(pod("a"))
        for _ in range(2):
            info = queue.pop()
            assert info is not None
            fail(queue, info)
            clock.t += 20
            queue.flush_backoff_q_completed()
        info = queue.pop()
        assert info is not None
        fail(queue, info, "p")
        assert queue.backoff_q.backoff_time(info) - info.timestamp == want, version


def test_zero_max_backoff_disables_backoff_1_34() -> None:
    """kubernetes#131965: podMaxBackoffSeconds 0 means no backoff from 1.34; in 1.33 the pod still backs
    off until the window after its (zero-length) backoff."""
    backing_off = {}
    for version in ("1.33", "1.34"):
        queue = PriorityQueue(Clock(100.0), version=version, pod_initial_backoff_s=0.0, pod_max_backoff_s=0.0)
        info = QueuedPodInfo(pod("a"), timestamp=100_000_000_000, attempts=1, unschedulable_count=1)
        backing_off[version] = queue.backoff_q.is_pod_backing_off(info)
    assert backing_off == {"1.33": True, "1.34": False}


def test_gating_plugin_1_34() -> None:
    """kubernetes#127180: a pod gated by a plugin that does not register the event is skipped from 1.34;
    1.33 only skips pods gated by SchedulingGates."""
    calls = {}
    for version in ("1.33", "1.34"):
        seen: list[str] = []

        def hint(p: Pod, old: object, new: object, seen: list[str] = seen) -> str:
            seen.append(p.name)
            return QUEUE_SKIP

        queue = PriorityQueue(
            Clock(),
            version=version,
            hints={
                ev.EVENT_NODE_ADD: [QueueingHintFunction("other", hint)],
                ClusterEvent(ev.UNSCHEDULABLE_POD, ev.UPDATE): [QueueingHintFunction("gate", queue_always)],
            },
        )
        info = QueuedPodInfo(pod("a"), unschedulable_plugins={"gate", "other"})
        if in_effect("gating-plugin", version):
            info.gating_plugin = "gate"
            info.gating_plugin_events = (ClusterEvent(ev.UNSCHEDULABLE_POD, ev.UPDATE),)
        else:
            info.gated_flag = True
        queue.unschedulable_pods.add_or_update(info)
        queue.move_all_to_active_or_backoff_queue(ev.EVENT_NODE_ADD)
        calls[version] = seen
    assert calls == {"1.33": ["a"], "1.34": []}


@pytest.mark.parametrize(
    ("version", "matches"),
    [("1.32", True), ("1.33", True), ("1.34", False), ("1.35", False), ("1.36", False)],
)
def test_event_match_1_34(version: str, matches: bool) -> None:
    """From 1.34 a general Update does not match a plugin registering one sub-update."""
    registered = ClusterEvent(ev.NODE, ev.UPDATE_NODE_ALLOCATABLE)
    assert match(registered, ClusterEvent(ev.NODE, ev.UPDATE), version) is matches
    assert match(registered, ClusterEvent(ev.NODE, ev.UPDATE_NODE_ALLOCATABLE), version)
    assert not match(registered, ClusterEvent(ev.NODE, ev.UPDATE_NODE_LABEL), version)


def test_action_bits_follow_each_version() -> None:
    assert ev.action_bits("1.33")[ev.UPDATE_POD_OTHER] == 1 << 12
    assert ev.UPDATE_POD_OTHER not in ev.action_bits("1.34")
    assert ev.action_bits("1.34")[ev.UPDATE_POD_LABEL] == 1 << 7
    assert ev.action_bits("1.35")[ev.UPDATE_POD_LABEL] == 1 << 8  # after UpdateNodeDeclaredFeature
    with pytest.raises(ValueError, match=r"does not exist in kube-scheduler 1\.34"):
        ClusterEvent(ev.NODE, ev.UPDATE_NODE_DECLARED_FEATURE).value("1.34")


def test_preenqueue_skipped_on_activate_from_backoffq_1_35() -> None:
    """kubernetes#133518: activating a backing-off pod skips PreEnqueue from 1.35 (it ran when the pod
    entered backoffQ); 1.34 runs it again and the now-refusing plugin gates the pod."""

    class Gate:
        name = "gate"
        allow = True

        def pre_enqueue(self, p: Pod) -> bool:
            return self.allow

    where = {}
    for version in ("1.34", "1.35"):
        gate = Gate()
        queue = PriorityQueue(Clock(), version=version, pre_enqueue={"default-scheduler": [gate]})
        queue.add(pod("a"))
        info = queue.pop()
        assert info is not None
        fail(queue, info)  # error -> backoffQ (PreEnqueue passes)
        gate.allow = False
        queue.activate([pod("a")])
        where[version] = ([p.name for p in queue.pods_in_active_q()], [p.name for p in queue.unschedulable()])
    assert where == {"1.34": ([], ["a"]), "1.35": (["a"], [])}


def test_rejector_plugins_kept_at_pop_1_36() -> None:
    """kubernetes#135126: 1.36 keeps a popped pod's rejecting plugins until its next failure."""
    kept = {}
    for version in ("1.35", "1.36"):
        queue = PriorityQueue(Clock(), version=version)
        queue.unschedulable_pods.add_or_update(QueuedPodInfo(pod("a"), unschedulable_plugins={"p"}))
        queue.move_all_to_active_or_backoff_queue(ev.EVENT_UNSCHEDULABLE_TIMEOUT)
        info = queue.pop()
        assert info is not None
        kept[version] = sorted(info.unschedulable_plugins)
        queue.handle_scheduling_failure(info, {"q"})
        assert info.unschedulable_plugins == {"q"}
    assert kept == {"1.35": [], "1.36": ["p"]}


def test_fit_deleted_nominated_pod_1_33() -> None:
    deleted = pod("victim", nominated_node_name="n1")
    target = pod("t")
    answers = {
        v: fit_after_pod_event(target, deleted, None, version=v, scale_down_enabled=False)
        for v in ("1.32", "1.33")
    }
    assert answers == {"1.32": QUEUE_SKIP, "1.33": QUEUE}


def test_fit_registers_scale_down_from_1_33() -> None:
    pod_events = {v: node_resources_fit(v).events[0].event.action for v in SUPPORTED}
    assert pod_events["1.32"] == ev.DELETE
    assert all(pod_events[v] == f"{ev.DELETE}|{ev.UPDATE_POD_SCALE_DOWN}" for v in SUPPORTED[1:])


def test_queueing_hints_locked_from_1_34() -> None:
    assert feature_gates("1.33", {"SchedulerQueueingHints": False})["SchedulerQueueingHints"] is False
    with pytest.raises(ValueError, match=r"locked to true in 1\.34"):
        feature_gates("1.34", {"SchedulerQueueingHints": False})
    assert (
        feature_gates("1.36", {"SchedulerQueueingHints": False}, emulated_version="1.33")[
            "SchedulerQueueingHints"
        ]
        is False
    )
    with pytest.raises(ValueError, match=r"does not exist in kube-scheduler 1\.32"):
        feature_gates("1.32", {"SchedulerPopFromBackoffQ": True})
    with pytest.raises(ValueError, match="not a gate the scheduling queue reads"):
        feature_gates("1.36", {"Nope": True})
    with pytest.raises(
        ValueError, match=r"schedulerVersion '1\.31': supported: 1\.32, 1\.33, 1\.34, 1\.35, 1\.36"
    ):
        check_version("1.31")


@pytest.mark.parametrize(
    ("version", "gate", "first"),
    [("1.32", None, 10.3), ("1.33", None, 11.0), ("1.33", False, 11.3), ("1.36", None, 11.0)],
)
def test_backoff_flush_schedule(version: str, gate: bool | None, first: float) -> None:
    """wait.Until runs at once (1.32); the aligned ticker waits for the next window (1.33+)."""
    start, period = backoff_flush_times(10.3, version, gate)
    assert start == pytest.approx(first) and period == 1.0


def test_pop_from_backoff_changes_attempts_between_1_32_and_1_33() -> None:
    """A pod rejected over and over (each attempt taking 250 ms): with activeQ otherwise empty, 1.33
    retries it at once from backoffQ while 1.32 waits out each backoff — more attempts in the same time."""
    attempts = {}
    for version in ("1.32", "1.33"):
        clock = Clock(0.0)
        queue = PriorityQueue(clock, version=version, hints=NODE_ADD_HINTS)
        queue.add(pod("a"))
        tries = 0
        while clock.t < 30.0:
            info = queue.pop()
            if info is not None:
                tries += 1
                clock.t += 0.25  # a scheduling attempt takes time
                reject_with_event(queue, info)
                continue
            clock.t += 1.0
            queue.flush_backoff_q_completed()
        attempts[version] = tries
    assert attempts["1.33"] > attempts["1.32"] > 1


def test_quantity_free_pod_helpers_stay_defaults() -> None:
    plain = Pod(name="p", namespace="", uid="u", containers=(), labels=MappingProxyType({}))
    queue = PriorityQueue(Clock())
    queue.add(plain)
    info = queue.pop()
    assert info is not None and info.pod is plain
    assert queue.get_pod("p", "") is None


@pytest.mark.parametrize("where", ["activeQ", "backoffQ", "unschedulablePods"])
def test_an_updated_pod_keeps_its_key_shape_profile_and_priority_beside_it(where: str) -> None:
    """The queue reads a pod's key, shape, scheduler name and priority from its QueuedPodInfo (bursts of
    thousands of pods never touch the pod objects): an update in any of the three queues replaces them
    with the new pod's."""
    queue = PriorityQueue(Clock(), version="1.36", hints=NODE_ADD_HINTS)
    old = pod("a")
    queue.add(old)
    if where != "activeQ":
        info = queue.pop()
        assert info is not None
        if where == "backoffQ":
            reject_with_event(queue, info)
        else:
            fail(queue, info, "p")
    new = dataclasses.replace(old, priority=7, scheduler_name="second")
    queue.update(old, new)
    found = queue.active_q.get(new) or queue.backoff_q.get(new) or queue.unschedulable_pods.get(new)
    assert found is not None and found.pod is new
    assert (found.key, found.shape, found.profile, found.priority) == ("ns/a", pod_shape(new), "second", 7)
    assert found.shape != pod_shape(old)
