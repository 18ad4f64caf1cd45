"""The ReplicaSet controller as far as a fleet run needs it (kubernetes v1.36, ``pkg/controller/replicaset/
replica_set.go`` and ``pkg/controller/controller_utils.go`` as openshift/microshift release-4.23 vendors
them):

* its pod informer sees a pod change ``informerDelay`` after the API server has it; every add, update and
  delete of one of its pods enqueues the ReplicaSet (``addPod``/``updatePod``/``deletePod``), and an add of
  a pod it created is a creation observed (``CreationObserved``);
* the work queue holds a key once: an enqueue while the key waits is absorbed, one while it is being
  synced marks it dirty and it is synced again afterwards;
* a sync (``syncReplicaSet``) manages replicas only when its expectations are satisfied (every creation it
  sent observed); it counts the active pods (``FilterActivePods``: not Succeeded, not Failed, not being
  deleted) and creates the missing ones, at most ``BurstReplicas`` (500) per sync, expecting each
  (``ExpectCreations``); the creates (``slowStartBatch`` of 1, 2, 4, … — no API latency here) reach the API
  server ``syncDelay`` after the sync began;
* it never deletes a Failed pod: the Failed pod stays (kubernetes#84869) until the pod garbage collector
  removes it, and a new pod replaces it.

The desired count is the open slots the controller knows: a ReplicaSet template's ``replicas`` from the
start; for the one-shot pods of the arrival process, each arrival opens a slot (its pod created by the
workload, as a user or a Job would) and the slot closes when its pod is seen Succeeded. Pods are fungible
to a ReplicaSet; a replacement is given to the oldest slot without an active pod, so each slot's time to
Running runs from its first creation through every bounce. Expectations never expire here (their 5-minute
timeout needs a lost watch event, which a simulated informer never loses).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kubeletemu.fleet.clock import Clock
from kubeletemu.fleet.kubelet import TERMINAL_PHASES
from kubeletemu.fleet.spec import ReplicaSetSpec

BURST_REPLICAS = 500


@dataclass(eq=False)
class Slot:
    """A pod a controller owes: one replica, or one arrival, from its first creation on."""

    id: int
    template: int
    name: str
    first_created: float
    lifetime: float | None
    running_at: float | None = None
    done: bool = False
    pods: int = 0  # pod objects created for it
    failed_at: float | None = None  # when its last pod was rejected
    failed_created: int | None = None  # that pod's creation timestamp (the API's, to the second)


@dataclass
class _Seen:
    slot: Slot
    phase: str
    ours: bool  # created by the controller (a creation it expects)


@dataclass
class ReplicaSetController:
    name: str
    clock: Clock
    spec: ReplicaSetSpec
    # Sends one create to the API server for the slot (the engine makes the pod object).
    create: Callable[[Slot], None]
    burst: int = BURST_REPLICAS
    seen: dict[str, _Seen] = field(default_factory=dict)  # the informer's pods by namespace/name
    active: dict[int, int] = field(default_factory=dict)  # slot id -> active pods seen
    lacking: dict[int, Slot] = field(default_factory=dict)  # open known slots without an active pod
    expected: int = 0  # creations sent and not yet observed
    syncing: bool = False
    dirty: bool = False
    syncs: int = 0
    created: int = 0

    def open_replicas(self, slots: list[Slot]) -> None:
        """A ReplicaSet's replicas, known from the start: its first sync creates them."""
        for slot in slots:
            self.active.setdefault(slot.id, 0)
            self.lacking[slot.id] = slot
        self.enqueue()

    # ---- the informer -----------------------------------------------------------------------------

    def observe(self, key: str, slot: Slot, phase: str | None, *, ours: bool = False) -> None:
        """The informer delivers a pod event: ``phase`` None is a delete."""
        old = self.seen.get(key)
        was_active = old is not None and old.phase not in TERMINAL_PHASES
        if phase is None:
            self.seen.pop(key, None)
            now_active = False
        else:
            if old is None:
                self.seen[key] = _Seen(slot, phase, ours)
                if ours:
                    self.expected -= 1
            else:
                old.phase = phase
            now_active = phase not in TERMINAL_PHASES
        count = self.active.get(slot.id, 0) + (now_active - was_active)
        self.active[slot.id] = count
        if phase == "Succeeded":
            # A one-shot slot is done: no longer desired.
            self.active.pop(slot.id, None)
            self.lacking.pop(slot.id, None)
        elif count > 0:
            self.lacking.pop(slot.id, None)
        elif not slot.done:
            self.lacking.setdefault(slot.id, slot)
        self.enqueue()

    # ---- the work queue and the sync --------------------------------------------------------------

    def enqueue(self) -> None:
        if self.syncing:
            self.dirty = True
            return
        self.syncing = True
        self.syncs += 1
        creates = self._manage() if self.expected == 0 else []
        self.expected += len(creates)
        self.clock.after(self.spec.sync_delay_s, lambda: self._synced(creates))

    def _manage(self) -> list[Slot]:
        """``manageReplicas``: a create per desired slot without an active pod, oldest first."""
        return [slot for _, slot in zip(range(self.burst), self.lacking.values(), strict=False)]

    def _synced(self, creates: list[Slot]) -> None:
        for slot in creates:
            self.created += 1
            self.create(slot)
        self.syncing = False
        if self.dirty:
            self.dirty = False
            self.enqueue()
