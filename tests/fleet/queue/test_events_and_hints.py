"""The plugins' registrations and QueueingHints, and the scheduler's event handlers over the queue, with
the project's own Pod, Node and NodeResourceTopology objects."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from kubeletemu.fleet.queue import (
    DEVICE_SHARE,
    NODE_NUMA_RESOURCE,
    NODE_RESOURCE_TOPOLOGY_MATCH,
    WOULD_ADMIT,
    ClusterEvent,
    PriorityQueue,
    SchedulerEvents,
    build_queueing_hint_map,
    extension_for,
    hint_map_for_plugins,
)
from kubeletemu.fleet.queue import events as ev
from kubeletemu.fleet.queue.hints import (
    QUEUE,
    QUEUE_SKIP,
    QueueingHintError,
    fit_after_node_change,
    fit_after_pod_event,
)
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.objects import Node, NodeResourceTopology

FIT = "NodeResourcesFit"


class Clock:
    def __init__(self) -> None:
        self.t = 50.0

    def __call__(self) -> float:
        return self.t


def pod(name: str, cpu: str = "2", node: str | None = None, phase: str = "Pending") -> Pod:
    requests = MappingProxyType({"cpu": Quantity.parse(cpu), "memory": Quantity.parse("1Gi")})
    return Pod(
        name=name,
        namespace="ns",
        uid=f"uid-{name}",
        containers=(Container("c", requests=requests),),
        node_name=node,
        phase=phase,
    )


def node(name: str, cpu: str, pods: str = "110") -> Node:
    allocatable = {"cpu": Quantity.parse(cpu), "memory": Quantity.parse("8Gi"), "pods": Quantity.parse(pods)}
    return Node(name=name, allocatable=MappingProxyType(allocatable))


def rejected(queue: PriorityQueue, p: Pod, *plugins: str) -> None:
    """Add ``p``, pop it and fail it with ``plugins``: no event during its attempt, so unschedulablePods."""
    queue.add(p)
    info = queue.pop()
    assert info is not None and info.pod.name == p.name
    queue.handle_scheduling_failure(info, set(plugins))
    queue.done(p.uid)


def where(queue: PriorityQueue) -> dict[str, list[str]]:
    return {
        "active": sorted(p.name for p in queue.pods_in_active_q()),
        "backoff": sorted(p.name for p in queue.pods_in_backoff_q()),
        "unschedulable": sorted(p.name for p in queue.unschedulable()),
    }


def test_registrations_of_the_modelled_plugins() -> None:
    nrt = extension_for(NODE_RESOURCE_TOPOLOGY_MATCH, "1.36")
    assert [str(e.event) for e in nrt.events] == [
        "Pod/Delete",
        "Node/Add|UpdateNodeAllocatable",
        f"{ev.NRT_V1ALPHA2}/Add|Update",
    ]
    assert all(e.hint is None for e in nrt.events)
    assert [str(e.event) for e in extension_for(NODE_NUMA_RESOURCE, "1.36").events] == [
        "Pod/Delete",
        f"{ev.NRT_V1ALPHA1}/Add|Update|Delete",
    ]
    assert [str(e.event) for e in extension_for(DEVICE_SHARE, "1.36").events][
        1
    ] == f"{ev.KOORD_DEVICE}/Add|Update|Delete"
    assert extension_for(WOULD_ADMIT, "1.36").name == WOULD_ADMIT
    with pytest.raises(ValueError, match="plugin 'TaintToleration': no registered events modelled"):
        extension_for("TaintToleration", "1.36")


def test_hint_map_adds_node_taint_for_node_add() -> None:
    """A plugin registering Node/Add without Node/UpdateNodeTaint also gets the taint update
    (kubernetes#109437's mitigation), with the always-Queue hint."""
    hints = hint_map_for_plugins([NODE_RESOURCE_TOPOLOGY_MATCH, FIT, FIT], "1.36")
    taint = hints[ClusterEvent(ev.NODE, ev.UPDATE_NODE_TAINT)]
    assert [f.plugin_name for f in taint] == [NODE_RESOURCE_TOPOLOGY_MATCH, FIT]
    fit_node = hints[ClusterEvent(ev.NODE, f"{ev.ADD}|{ev.UPDATE_NODE_ALLOCATABLE}")]
    assert [f.plugin_name for f in fit_node] == [NODE_RESOURCE_TOPOLOGY_MATCH, FIT]


def test_hints_off_replace_every_function_with_queue() -> None:
    off = {"SchedulerQueueingHints": False}
    hints = build_queueing_hint_map([extension_for(FIT, "1.33", off)], "1.33", off)
    node_event = ClusterEvent(
        ev.NODE, f"{ev.ADD}|{ev.UPDATE_NODE_ALLOCATABLE}|{ev.UPDATE_NODE_TAINT}|{ev.UPDATE_NODE_LABEL}"
    )
    (function,) = hints[node_event]
    assert function.fn(pod("a", cpu="64"), None, node("n", "4")) == QUEUE


def test_fit_node_hints() -> None:
    small, big = node("n", "1"), node("n", "8")
    assert fit_after_node_change(pod("a"), None, small) == QUEUE_SKIP
    assert fit_after_node_change(pod("a"), None, big) == QUEUE
    assert fit_after_node_change(pod("a"), node("n", "4"), big) == QUEUE
    assert fit_after_node_change(pod("a"), big, big) == QUEUE_SKIP
    assert fit_after_node_change(pod("a"), node("n", "8", pods="1"), node("n", "8", pods="2")) == QUEUE
    with pytest.raises(QueueingHintError, match="expected a Node"):
        fit_after_node_change(pod("a"), None, pod("b"))


def test_fit_pod_hints() -> None:
    bound, pending = pod("b", node="n"), pod("p")
    assert fit_after_pod_event(pod("a"), bound, None, version="1.36", scale_down_enabled=True) == QUEUE
    assert fit_after_pod_event(pod("a"), pending, None, version="1.36", scale_down_enabled=True) == QUEUE_SKIP
    smaller = dataclasses.replace(
        bound, containers=(Container("c", requests=MappingProxyType({"cpu": Quantity.parse("1")})),)
    )
    assert fit_after_pod_event(pod("a"), bound, smaller, version="1.36", scale_down_enabled=True) == QUEUE
    assert (
        fit_after_pod_event(pod("a"), bound, smaller, version="1.32", scale_down_enabled=False) == QUEUE_SKIP
    )
    assert fit_after_pod_event(pod("a"), bound, bound, version="1.36", scale_down_enabled=True) == QUEUE_SKIP


def test_nrt_update_moves_only_pods_its_plugins_rejected() -> None:
    queue = PriorityQueue(
        Clock(), hints=hint_map_for_plugins([FIT, NODE_RESOURCE_TOPOLOGY_MATCH, NODE_NUMA_RESOURCE], "1.36")
    )
    events = SchedulerEvents(queue)
    rejected(queue, pod("by-nrt"), NODE_RESOURCE_TOPOLOGY_MATCH)
    rejected(queue, pod("by-koord"), NODE_NUMA_RESOURCE)
    rejected(queue, pod("by-fit"), FIT)
    assert where(queue)["unschedulable"] == ["by-fit", "by-koord", "by-nrt"]
    events.nrt_updated(NodeResourceTopology("n"), NodeResourceTopology("n"))
    # Both NRT forms are watched: v1alpha2 by scheduler-plugins, v1alpha1 by Koordinator; the pods back
    # off for 1 s from their failure, so they wait in backoffQ.
    assert where(queue) == {"active": [], "backoff": ["by-koord", "by-nrt"], "unschedulable": ["by-fit"]}
    assert set(events.watched_resources()) == {ev.NRT_V1ALPHA2, ev.NRT_V1ALPHA1}


def test_a_failed_pod_frees_its_node_for_fit_rejected_pods() -> None:
    """The scheduler's informer drops terminal pods: a bound pod turning Failed is AssignedPod/Delete,
    which NodeResourcesFit's hint answers Queue for."""
    clock = Clock()
    queue = PriorityQueue(clock, hints=hint_map_for_plugins([FIT], "1.36"))
    events = SchedulerEvents(queue)
    rejected(queue, pod("waiting"), FIT)
    running = pod("running", node="n", phase="Running")
    events.pod_updated(running, dataclasses.replace(running, phase="Running"))  # no change: nothing moves
    assert where(queue)["unschedulable"] == ["waiting"]
    clock.t += 5
    events.pod_updated(running, dataclasses.replace(running, phase="Failed"))
    assert where(queue) == {"active": ["waiting"], "backoff": [], "unschedulable": []}


def test_bind_leaves_the_queue_and_an_unassigned_delete_does_not_requeue() -> None:
    queue = PriorityQueue(Clock(), hints=hint_map_for_plugins([FIT, NODE_RESOURCE_TOPOLOGY_MATCH], "1.36"))
    events = SchedulerEvents(queue)
    rejected(queue, pod("waiting"), FIT)
    bound = pod("a", node="n")
    events.pod_added(pod("a"))
    info = queue.pop()
    assert info is not None
    events.pod_updated(pod("a"), bound)  # the bind, as the informer reports it
    queue.done(info.pod.uid)
    events.pod_added(pod("gone"))
    events.pod_deleted(pod("gone"))
    assert where(queue) == {"active": [], "backoff": [], "unschedulable": ["waiting"]}


def test_node_allocatable_update_asks_fit() -> None:
    clock = Clock()
    queue = PriorityQueue(clock, hints=hint_map_for_plugins([FIT], "1.36"))
    events = SchedulerEvents(queue)
    rejected(queue, pod("big", cpu="6"), FIT)
    events.node_updated(node("n", "4"), node("n", "5"))
    assert where(queue)["unschedulable"] == ["big"]
    clock.t += 5
    events.node_updated(node("n", "5"), node("n", "8"))
    assert where(queue)["active"] == ["big"]


def test_event_during_the_attempt_sends_the_pod_to_backoff() -> None:
    """An NRT update while the pod is being scheduled is kept in flight and, when NodeResourceTopologyMatch
    rejects the pod, requeues it (after backoff) instead of parking it."""
    queue = PriorityQueue(Clock(), hints=hint_map_for_plugins([NODE_RESOURCE_TOPOLOGY_MATCH], "1.36"))
    events = SchedulerEvents(queue)
    events.pod_added(pod("a"))
    info = queue.pop()
    assert info is not None
    events.nrt_updated(NodeResourceTopology("n"), NodeResourceTopology("n"))
    assert len(queue.in_flight_events()) == 2  # the pod, then the event
    queue.handle_scheduling_failure(info, {NODE_RESOURCE_TOPOLOGY_MATCH})
    assert where(queue) == {"active": [], "backoff": ["a"], "unschedulable": []}
    assert queue.in_flight_events() == []


def test_wakeups_and_the_next_backoff_expiry() -> None:
    clock = Clock()
    wakes: list[float] = []
    queue = PriorityQueue(clock, version="1.32", on_activated=lambda: wakes.append(clock.t))
    queue.add(pod("a"))
    assert wakes == [50.0]
    info = queue.pop()
    assert info is not None
    queue.handle_scheduling_failure(info)  # an error: backoffQ for 1 s
    assert wakes == [50.0] and queue.next_backoff_expiry() == pytest.approx(51.0)
    clock.t = 51.0
    queue.flush_backoff_q_completed()
    assert wakes == [50.0, 51.0] and queue.next_backoff_expiry() is None
    moves: list[tuple[str, str]] = []
    logged = PriorityQueue(clock, on_move=lambda q, event, p: moves.append((q, event)))
    logged.add(pod("b"))
    assert moves == [("active", "UnschedulablePodAdd")]


def test_unschedulable_pods_leftover_flush() -> None:
    clock = Clock()
    queue = PriorityQueue(clock, hints=hint_map_for_plugins([FIT], "1.36"))
    rejected(queue, pod("a"), FIT)
    clock.t += 300
    queue.flush_unschedulable_pods_leftover()
    assert where(queue)["unschedulable"] == ["a"]  # not longer than 5 minutes yet
    clock.t += 0.001
    queue.flush_unschedulable_pods_leftover()
    assert where(queue)["active"] == ["a"]
