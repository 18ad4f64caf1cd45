"""One fleet configuration run on a live cluster and measured as ``kubeletemu fleet`` measures it.

The run creates each slot's ReplicaSet at its arrival time (:mod:`.workload`), watches the namespace's pods
through the API server, deletes a slot's ReplicaSet its lifetime after the slot first ran, and stops when
every arrival has come and every slot has run (or ``drain`` after the last arrival), as
:class:`kubeletemu.fleet.engine.FleetRun` stops. Times are this process's monotonic clock when the API server
told it (a watch event, a create's answer), not the objects' timestamps, which are whole seconds.

The figures, as the fleet counts them (``kubeletemu/fleet/engine.py``):

- ``topology_affinity_errors``: pods the nodes failed with reason ``TopologyAffinityError``;
- ``pending_p50_s``/``pending_p99_s``: per pod object, from its creation seen to its bind seen (a pod never
  bound: until the end);
- ``time_to_running_p50_s``/``p99``: per slot, from its first pod's creation seen (the fleet's slot starts
  with its first pod, created at the arrival) through every replacement to Running (a slot never Running:
  until the end); the ReplicaSet controller's first create, which the fleet does not have, is given apart
  (``first_create_p50_s``/``p99``);
- ``scheduling_attempts``: the scheduler's own count (``scheduler_schedule_attempts_total``, every result),
  read from its metrics when the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.fleet.engine import _percentile as percentile
from kubeletemu.fleet.spec import ConfigurationSpec
from kubeletemu.nodes.api import ApiError, ApiServer, Unreachable
from kubeletemu.topologymanager.errors import ERROR_TOPOLOGY_AFFINITY
from tests.realfleet.workload import SLOT_LABEL, PlannedSlot, plan

JSON = dict[str, Any]
BACKGROUND = {"propagationPolicy": "Background"}
AT_ONCE = {"gracePeriodSeconds": 0}


@dataclass(eq=False)
class _Slot:
    planned: PlannedSlot
    created_at: float | None = None
    running_at: float | None = None
    running_pod: str = ""  # the name of its pod that ran
    ended_at: float | None = None  # its lifetime over: ReplicaSet and pod deleted
    pods: int = 0


@dataclass(eq=False)
class _Pod:
    slot: _Slot
    added_at: float
    bound_at: float | None = None
    failed: str | None = None  # the admission's reason, once Failed
    started_at: float | None = None  # Running seen
    failed_at: float | None = None


@dataclass
class _Counts:
    topology_affinity_errors: int = 0
    other_admission_errors: int = 0
    create_errors: list[str] = field(default_factory=list)


class RealRun:
    """One run of ``config`` (its seed's arrivals) in ``namespace`` of a cluster whose nodes are the
    configuration's; ``attempts`` reads the scheduler's attempts counter at the end."""

    def __init__(
        self,
        api: ApiServer,
        config: ConfigurationSpec,
        namespace: str,
        attempts: Callable[[], Awaitable[int]],
        scheduler_name: str | None = None,
    ) -> None:
        self.api, self.config, self.namespace, self.attempts = api, config, namespace, attempts
        self.planned = plan(config, namespace, scheduler_name)
        self.slots = {p.name: _Slot(p) for p in self.planned}
        self.pods: dict[str, _Pod] = {}  # by uid
        self.counts = _Counts()
        self.loop = asyncio.get_running_loop()
        self.start = 0.0
        self.arrived = 0
        self.waiting = len(self.slots)
        self.done = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()
        # What happened when, for reading a run afterwards: (seconds, slot, what).
        self.trace: list[tuple[float, str, str]] = []

    def now(self) -> float:
        return self.loop.time() - self.start

    async def run(self) -> JSON:
        pods_path = f"/api/v1/namespaces/{self.namespace}/pods"
        items, version = await self.api.list(pods_path, {})
        if items:
            raise RuntimeError(f"namespace {self.namespace} is not empty: {len(items)} pods")
        self.start = self.loop.time()
        watcher = asyncio.create_task(self._watch(pods_path, version))
        arriving = asyncio.create_task(self._arrivals())
        last = self.planned[-1].at if self.planned else 0.0
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.done.wait(), last + self.config.workload.drain_s)
        end = self.now()
        attempts = await self.attempts()
        for task in (watcher, arriving, *self.tasks):
            task.cancel()
        await asyncio.gather(watcher, arriving, *self.tasks, return_exceptions=True)
        if self.counts.create_errors:
            raise RuntimeError(f"creates refused: {self.counts.create_errors[:3]}")
        return self.result(end, attempts)

    # ---- the workload ---------------------------------------------------------------------------------

    async def _arrivals(self) -> None:
        path = f"/apis/apps/v1/namespaces/{self.namespace}/replicasets"
        for planned in self.planned:
            await asyncio.sleep(max(0.0, planned.at - self.now()))
            slot = self.slots[planned.name]
            slot.created_at = self.now()
            self.trace.append((slot.created_at, planned.name, "created"))
            self._spawn(self._create(path, planned.replica_set))
            self.arrived += 1
        self._check_done()

    async def _create(self, path: str, body: JSON) -> None:
        try:
            await self.api.create(path, body)
        except (ApiError, Unreachable) as err:
            self.counts.create_errors.append(str(err))

    async def _end_of_life(self, slot: _Slot, lifetime: float) -> None:
        await asyncio.sleep(lifetime)
        base = f"/apis/apps/v1/namespaces/{self.namespace}/replicasets"
        slot.ended_at = self.now()
        self.trace.append((slot.ended_at, slot.planned.name, "deleted"))
        with contextlib.suppress(ApiError):
            await self.api.delete(f"{base}/{slot.planned.name}", BACKGROUND)
        # The pod too, at once, as the fleet's Succeeded frees it at once (left to the garbage collector it
        # held its resources 2-4 s longer on this machine). The ReplicaSet is gone first, so its controller,
        # whose sync starts from its lister, creates no replacement; one that slipped through is ignored.
        with contextlib.suppress(ApiError):
            await self.api.delete(f"/api/v1/namespaces/{self.namespace}/pods/{slot.running_pod}", AT_ONCE)

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # ---- what the API server tells ------------------------------------------------------------------

    async def _watch(self, path: str, version: str) -> None:
        while True:
            try:
                async for kind, obj in self.api.watch(path, {"resourceVersion": version}):
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                    if kind in ("ADDED", "MODIFIED"):
                        self.seen(obj)
                    elif kind == "DELETED":
                        self.gone(obj)
            except Unreachable:
                await asyncio.sleep(0.2)

    def seen(self, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        slot = self.slots.get((meta.get("labels") or {}).get(SLOT_LABEL, ""))
        if slot is None:
            return
        now = self.now()
        uid = str(meta.get("uid"))
        pod = self.pods.get(uid)
        if pod is None:
            if slot.ended_at is not None:
                return  # created after its ReplicaSet was deleted: not the workload's
            pod = self.pods[uid] = _Pod(slot, now)
            slot.pods += 1
            self.trace.append((now, slot.planned.name, f"added {meta.get('name')}"))
        node = (obj.get("spec") or {}).get("nodeName")
        if pod.bound_at is None and node:
            pod.bound_at = now
            self.trace.append((now, slot.planned.name, f"bound {meta.get('name')} {node}"))
        status = obj.get("status") or {}
        phase = status.get("phase")
        if phase == "Running" and pod.started_at is None:
            pod.started_at = now
        if phase == "Running" and slot.running_at is None:
            slot.running_at, slot.running_pod = now, str(meta.get("name"))
            self.trace.append((now, slot.planned.name, f"running {meta.get('name')}"))
            self.waiting -= 1
            if slot.planned.lifetime is not None:
                self._spawn(self._end_of_life(slot, slot.planned.lifetime))
            self._check_done()
        elif phase == "Failed" and pod.failed is None:
            pod.failed = str(status.get("reason") or "")
            pod.failed_at = now
            self.trace.append((now, slot.planned.name, f"failed {meta.get('name')} {pod.failed}"))
            if pod.failed == ERROR_TOPOLOGY_AFFINITY:
                self.counts.topology_affinity_errors += 1
            else:
                self.counts.other_admission_errors += 1

    def gone(self, obj: JSON) -> None:
        """A pod object deleted (what it held was freed at its deletion timestamp): traced only."""
        meta = obj.get("metadata") or {}
        pod = self.pods.get(str(meta.get("uid")))
        if pod is not None:
            self.trace.append((self.now(), pod.slot.planned.name, f"gone {meta.get('name')}"))

    def _check_done(self) -> None:
        if self.arrived == len(self.planned) and self.waiting == 0:
            self.done.set()

    # ---- the figures ------------------------------------------------------------------------------------

    def _first_pods(self) -> dict[_Slot, float]:
        """Each slot that got a pod, with when its first pod was seen: where the fleet's slot starts (its
        first pod created at the arrival), so the ReplicaSet controller's first create is not counted."""
        firsts: dict[_Slot, float] = {}
        for pod in self.pods.values():
            firsts[pod.slot] = min(firsts.get(pod.slot, pod.added_at), pod.added_at)
        return firsts

    def latencies(self) -> JSON:
        """What the fleet takes as parameters, as this cluster showed them (medians): a bound pod to
        Running (the fleet's ``workload.startupLatency``, counted there from the bind), and a Failed pod to
        its replacement created (the fleet's ``controllers.replicaSet`` informer plus sync delay)."""
        to_running = sorted(
            p.started_at - p.bound_at
            for p in self.pods.values()
            if p.started_at is not None and p.bound_at is not None
        )
        by_slot: dict[_Slot, list[_Pod]] = {}
        for pod in sorted(self.pods.values(), key=lambda p: p.added_at):
            by_slot.setdefault(pod.slot, []).append(pod)
        replacements = sorted(
            later.added_at - earlier.failed_at
            for pods in by_slot.values()
            for earlier, later in itertools.pairwise(pods)
            if earlier.failed_at is not None
        )
        return {
            "bind_to_running_p50_s": percentile(to_running, 50),
            "replacement_p50_s": percentile(replacements, 50),
        }

    def result(self, end: float, attempts: int) -> JSON:
        """The fleet's result keys that :func:`kubeletemu.fleet.stats.summaries` reads, and a few more."""
        waits = sorted(
            (p.bound_at if p.bound_at is not None else end) - p.added_at for p in self.pods.values()
        )
        firsts = self._first_pods()
        to_running = sorted(
            (s.running_at if s.running_at is not None else end) - t for s, t in firsts.items()
        )
        first_creates = sorted(t - (s.created_at or 0.0) for s, t in firsts.items())
        templates: dict[str, JSON] = {}
        for name in dict.fromkeys(p.template for p in self.planned):
            pods = [p for p in self.pods.values() if p.slot.planned.template == name]
            pending = sorted(_until(p.bound_at, end) - p.added_at for p in pods)
            slot_times = sorted(
                _until(s.running_at, end) - t for s, t in firsts.items() if s.planned.template == name
            )
            templates[name] = {
                "pods": len(pods),
                "topology_affinity_errors": sum(p.failed == ERROR_TOPOLOGY_AFFINITY for p in pods),
                "pending_p50_s": percentile(pending, 50),
                "pending_p99_s": percentile(pending, 99),
                "time_to_running_p50_s": percentile(slot_times, 50),
                "time_to_running_p99_s": percentile(slot_times, 99),
            }
        return {
            "name": self.config.name,
            "scheduler": self.config.scheduler,
            "seed": self.config.seed,
            "pods_total": len(self.planned),
            "topology_affinity_errors": self.counts.topology_affinity_errors,
            "other_admission_errors": self.counts.other_admission_errors,
            "pending_p50_s": percentile(waits, 50),
            "pending_p99_s": percentile(waits, 99),
            "time_to_running_p50_s": percentile(to_running, 50),
            "time_to_running_p99_s": percentile(to_running, 99),
            "scheduling_attempts": attempts,
            "never_running": self.waiting,
            "pods_created": len(self.pods),
            "replacements": len(self.pods) - sum(1 for s in self.slots.values() if s.pods),
            "templates": templates,
            # The ReplicaSet controller's first create: not in the fleet, whose slot starts with its pod.
            "first_create_p50_s": percentile(first_creates, 50),
            "first_create_p99_s": percentile(first_creates, 99),
            **self.latencies(),
            "elapsed_s": round(end, 6),
            "trace": [[round(t, 3), slot, what] for t, slot, what in self.trace],
        }


def _until(at: float | None, end: float) -> float:
    """When something happened, or the end of the run if it never did (a lower bound of the wait)."""
    return end if at is None else at
