"""The ReplicaSet controller and the pod garbage collector on a test clock: when a replacement is created,
what expectations hold back, and which terminated pods are collected."""

from __future__ import annotations

from dataclasses import dataclass

from kubeletemu.fleet.controllers import PodGC, ReplicaSetController, Slot, pod_failure_backoff
from kubeletemu.fleet.spec import ReplicaSetSpec
from tests.fleet.conftest import FakeClock


class Cluster:
    """The API server's side: creates land, and the controller's informer sees each change later."""

    def __init__(self, burst: int = 500) -> None:
        self.clock = FakeClock()
        self.spec = ReplicaSetSpec(informer_delay_s=1.0, sync_delay_s=0.5)
        self.created: list[tuple[float, int]] = []
        self.rs = ReplicaSetController("rs", self.clock, self.spec, self.create, burst)
        self.pods = 0

    def create(self, slot: Slot) -> None:
        self.created.append((self.clock.now(), slot.id))
        self.pods += 1
        self.observe(f"p{self.pods}", slot, "Pending", ours=True)

    def observe(self, key: str, slot: Slot, phase: str | None, *, ours: bool = False) -> None:
        self.clock.after(self.spec.informer_delay_s, lambda: self.rs.observe(key, slot, phase, ours=ours))


def test_replicas_are_created_by_the_first_sync_and_a_failed_pod_is_replaced_once_seen() -> None:
    cluster = Cluster()
    slots = [Slot(i, 0, f"s{i}", 0.0, None) for i in range(3)]
    cluster.rs.open_replicas(slots)
    cluster.clock.run_until(0.4)
    assert cluster.created == []  # the sync takes syncDelay
    cluster.clock.run_until(10.0)
    assert cluster.created == [(0.5, 0), (0.5, 1), (0.5, 2)]
    assert cluster.rs.expected == 0
    # p2 fails at 20 s: seen at 21 s, replaced when that sync ends.
    cluster.clock.run_until(20.0)
    cluster.observe("p2", slots[1], "Failed")
    cluster.clock.run_until(21.4)
    assert len(cluster.created) == 3
    cluster.clock.run_until(30.0)
    assert cluster.created[3:] == [(21.5, 1)]
    # The Failed pod stays in the informer; nothing more is created.
    assert cluster.rs.seen["p2"].phase == "Failed" and len(cluster.created) == 4


def test_expectations_hold_a_second_failure_until_the_first_creation_is_seen() -> None:
    cluster = Cluster()
    slots = [Slot(i, 0, f"s{i}", 0.0, None) for i in range(2)]
    cluster.rs.open_replicas(slots)
    cluster.clock.run_until(10.0)
    cluster.observe("p1", slots[0], "Failed")  # seen at 11 s: replaced at 11.5 s, seen at 12.5 s
    cluster.clock.run_until(11.8)
    cluster.rs.observe("p2", slots[1], "Failed")  # seen at 11.8 s: the replacement of p1 is not seen yet
    cluster.clock.run_until(12.4)
    assert cluster.rs.expected == 1 and [s for _, s in cluster.created[2:]] == [0]
    cluster.clock.run_until(30.0)
    # Seen at 12.5 s: expectations met, that add enqueues a sync, which replaces p2 at 13 s.
    assert cluster.created[2:] == [(11.5, 0), (13.0, 1)]


def test_a_burst_is_at_most_burst_replicas_per_sync() -> None:
    cluster = Cluster(burst=2)
    cluster.rs.open_replicas([Slot(i, 0, f"s{i}", 0.0, None) for i in range(5)])
    cluster.clock.run_until(30.0)
    # 2 at 0.5 s, seen at 1.5 s: the first add's sync (one creation still expected) manages nothing, the
    # second add marks the key dirty, synced again at 2 s: 2 more at 2.5 s, seen at 3.5 s, the last at 4.5 s.
    assert [t for t, _ in cluster.created] == [0.5, 0.5, 2.5, 2.5, 4.5]
    assert cluster.rs.syncs == 6


def test_a_succeeded_one_shot_pod_closes_its_slot() -> None:
    cluster = Cluster()
    slot = Slot(0, 0, "job", 0.0, 5.0)
    cluster.observe("job", slot, "Pending")
    cluster.clock.run_until(3.0)
    slot.done = True
    cluster.observe("job", slot, "Succeeded")
    cluster.clock.run_until(30.0)
    assert cluster.created == [] and not cluster.rs.lacking


@dataclass
class Ended:
    name: str
    creation_second: int


def test_the_garbage_collector_deletes_the_oldest_terminated_pods_over_the_threshold() -> None:
    clock = FakeClock()
    deleted: list[str] = []
    gc: PodGC[Ended] = PodGC(clock, 2, lambda pod: deleted.append(pod.name))
    gc.start(5.0)
    for name, second in (("c", 3), ("b", 1), ("a", 3), ("d", 9)):
        gc.pod_terminated(name, Ended(name, second))
    clock.run_until(4.0)
    assert deleted == []
    clock.run_until(5.0)
    # Oldest first; a tie on the creation second goes by name.
    assert deleted == ["b", "a"] and set(gc.terminated) == {"c", "d"}
    gc.pod_terminated("e", Ended("e", 10))
    clock.run_until(24.0)
    assert deleted == ["b", "a"]
    clock.run_until(25.0)
    assert deleted == ["b", "a", "c"]
    off: PodGC[Ended] = PodGC(clock, 0, lambda pod: deleted.append(pod.name))
    off.start(0.0)
    off.pod_terminated("x", Ended("x", 0))
    clock.run_until(100.0)
    assert "x" not in deleted


def test_a_jobs_pod_failure_backoff_doubles_to_its_cap() -> None:
    """``getRemainingTimeForFailuresCount`` (kubernetes v1.36.3): 10 s, doubled a failure, 10 min at most."""
    assert [pod_failure_backoff(n) for n in range(8)] == [0, 10, 20, 40, 80, 160, 320, 600]
    assert pod_failure_backoff(30) == 600
