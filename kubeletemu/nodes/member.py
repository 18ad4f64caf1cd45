"""One emulated node as a member of a real cluster: the kubelet's side of the API server, over the node's
exact admission (:class:`~kubeletemu.emulator.NodeEmulator` with its state directory).

What it does, as the kubelet does it (``pkg/kubelet``, read at v1.37):

- **registers** its Node with its status (``registerWithAPIServer``); a Node that exists already (a restart)
  is taken over: its labels and status are patched;
- **renews its Lease** in ``kube-node-lease`` every quarter of ``nodeLeaseDurationSeconds``, creating it
  owned by the Node when it is missing; failures are retried with the lease controller's backoff (200 ms
  doubling to 7 s);
- **posts its status** every ``nodeStatusUpdateFrequency`` when the Node's conditions (as the shared Node
  watch shows them, :class:`~kubeletemu.nodes.informer.NodeInformer`) differ from its own
  (the node lifecycle controller marked it Unknown while the API server was away, someone edited it), else
  every ``nodeStatusReportFrequency``;
- **paces both as the kubelet does**: each wait is its interval plus up to 4 % jitter, measured from the end
  of the previous write (``wait.JitterUntil(..., 0.04, sliding=true)``: the kubelet's ``syncNodeStatus`` in
  ``pkg/kubelet/kubelet.go`` and the lease controller's ``Run`` in component-helpers
  ``apimachinery/lease/controller.go``, both at v1.37.2). Kubelets start at different moments, so their
  heartbeats are spread over the interval; nodes started together in one process would beat together, so
  each node's first wait is shortened to its own ``phase`` of the interval (never lengthened: no gap is
  longer than the kubelet's);
- **sees its pods** as its own watch (``fieldSelector spec.nodeName=<node>``) would show them, through the
  process's one shared watch (:mod:`.informer`), and handles them in creation order
  (``HandlePodAdditions``): a new pod is admitted by the node's emulator; refused, it is Failed with the
  handler's reason and ``Pod was rejected: <message>`` and a Warning Event (``rejectPod``); admitted, it is
  Pending with its containers being created, then Running after the group's start-up latency;
- **deletion**: a pod given a deletion timestamp has its containers stopped at once (the emulator releases
  what it held), its final status written, and its object deleted with grace period 0 and a UID precondition
  (the status manager's ``syncPod`` once ``canBeDeleted``), so ``kubectl delete pod`` completes; a pod deleted
  outright (``--force``) is released when the watch says so;
- **after any gap** (start-up, a restart, the API server away) its pods are listed again: an admitted pod the
  API server no longer has is released, one still Pending goes on to Running, a pod not yet seen is admitted.
  The admitted pods and their allocations come from the state directory, so a restart loses nothing.
"""

from __future__ import annotations

import asyncio
import datetime
import random
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from kubeletemu.checkpointmanager import CheckpointWriter, PendingWrites, deferred_writes
from kubeletemu.emulator import AdmissionReport, EmulatorError, NodeEmulator, PodNotFoundError
from kubeletemu.fleet.workload import stable_seed
from kubeletemu.lifecycle.preemption import PREEMPTED_MESSAGE, PREEMPTED_REASON
from kubeletemu.manifest import ManifestError, pod_from_manifest
from kubeletemu.nodes import objects
from kubeletemu.nodes.api import MERGE, ApiError, ApiServer, Unreachable
from kubeletemu.nodes.informer import Backoff, NodeInformer, PodInformer
from kubeletemu.nodes.spec import MemberGroup
from kubeletemu.pod import compute_qos
from kubeletemu.versions.gates import binary_version, effective_gates

JSON = dict[str, Any]
log = structlog.get_logger("kubeletemu.nodes")

NODES = "/api/v1/nodes"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{objects.LEASE_NAMESPACE}/leases"
TERMINAL = frozenset({"Failed", "Succeeded"})
# wait.JitterUntil's jitter factor in both of the kubelet's heartbeat loops (see the module's docstring).
JITTER = 0.04
_RETRIED_CODES = frozenset({429, 500, 502, 503, 504})


def jittered(interval: float) -> float:
    """``wait.Jitter(interval, 0.04)``: the interval plus a random 0 to 4 % of it."""
    return interval * (1 + random.random() * JITTER)


def retriable(err: Exception) -> bool:
    return isinstance(err, Unreachable) or (isinstance(err, ApiError) and err.code in _RETRIED_CODES)


async def with_retries(call: Callable[[], Awaitable[JSON | None]]) -> JSON | None:
    """``call`` until it succeeds or fails with an answer that retrying cannot change (raised)."""
    backoff = Backoff()
    while True:
        try:
            return await call()
        except (Unreachable, ApiError) as err:
            if not retriable(err):
                raise
            await asyncio.sleep(backoff.next())


def _meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = raw.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _phase(raw: Mapping[str, Any]) -> str:
    return str((raw.get("status") or {}).get("phase") or "")


def _pod_path(raw: Mapping[str, Any]) -> str:
    meta = _meta(raw)
    return f"/api/v1/namespaces/{meta.get('namespace', 'default')}/pods/{meta.get('name')}"


def _key(raw: Mapping[str, Any]) -> str:
    meta = _meta(raw)
    return f"{meta.get('namespace')}/{meta.get('name')}"


@dataclass
class MemberStats:
    """What a node did since it started (``kubeletemu nodes`` logs them; tests read them)."""

    admitted: int = 0
    rejected: int = 0
    released: int = 0
    preempted: int = 0
    status_writes: int = 0
    lease_renewals: int = 0
    reconnects: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


class NodeMember:
    def __init__(
        self,
        name: str,
        group: MemberGroup,
        emulator: NodeEmulator,
        api: ApiServer,
        address: str,
        pods: PodInformer,
        seed: int = 1,
        clock: Callable[[], datetime.datetime] = objects.utc_now,
        writer: CheckpointWriter | None = None,
        phase: float = 1.0,
        nodes: NodeInformer | None = None,
    ) -> None:
        self.name = name
        self.pods = pods
        self.nodes = nodes  # the Node as last seen (else read with a GET, as the kubelet's retries do)
        self.phase = min(max(phase, 0.0), 1.0)  # the share of each interval its first wait lasts
        self.group = group
        self.emulator = emulator
        self.api = api
        self.address = address
        self.seed = seed
        self.clock = clock
        self.disk = writer if writer is not None else CheckpointWriter(f"nodes-writer-{name}")
        self.uid = ""
        self.registered = asyncio.Event()
        self.synced = asyncio.Event()  # its pods as first listed handled
        self.stats = MemberStats()
        self._rejected: set[str] = set()  # UIDs refused here (their Failed status is the API server's now)
        self._finishing: set[str] = set()  # UIDs whose deletion is being completed
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._since: dict[str, str] = {}  # condition type -> its last transition time
        self._last_report = 0.0
        self._labels = dict(group.group.labels)
        self._version = emulator.config.emulator.kubelet_version
        gates = effective_gates(self._version, emulator.config.kubelet.feature_gates)
        self.statuses = objects.PodWriter(
            address,
            observed_generation=gates.get("PodObservedGenerationTracking", False),
            ready_to_start=gates.get("PodReadyToStartContainersCondition", False),
            # The condition's reason and message, read at v1.37 (1.35's kubelet writes neither).
            sandbox_reason=tuple(map(int, binary_version(self._version).split("."))) >= (1, 37),
        )

    # ---- the whole node ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Register, then keep the Lease, the status and the pods until cancelled."""
        await self.register()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._lease_loop())
                group.create_task(self._status_loop())
                await self.pods.join(self)
                self.synced.set()
        finally:
            for task in [*self._tasks.values(), *self._background]:
                task.cancel()

    # ---- registration and status ------------------------------------------------------------------------

    async def register(self) -> None:
        body = objects.node_object(
            self.name, self._labels, self.emulator.allocatable, self._version, self.address, self.clock()
        )
        backoff = Backoff()
        while True:
            try:
                created = await self.api.create(NODES, body)
                self.uid = str(_meta(created).get("uid", ""))
                self._since = {c["type"]: c["lastTransitionTime"] for c in body["status"]["conditions"]}
                break
            except ApiError as err:
                if err.code == 409:  # registered before: take it over, as a restarted kubelet does
                    await self._take_over()
                    break
                if not retriable(err):
                    raise
            except Unreachable:
                pass
            await asyncio.sleep(backoff.next())
        self._last_report = time.monotonic()
        self.registered.set()
        log.info("node registered", node=self.name, uid=self.uid)

    async def _take_over(self) -> None:
        existing = await self.api.get(f"{NODES}/{self.name}")
        self.uid = str(_meta(existing).get("uid", ""))
        self._since = self._transitions(existing)
        await self.api.patch(
            f"{NODES}/{self.name}",
            {"metadata": {"labels": objects.node_labels(self.name, self._labels)}},
            MERGE,
        )
        await self._post_status()

    def _transitions(self, node: Mapping[str, Any]) -> dict[str, str]:
        """Each condition's transition time, kept where the Node already shows the status this node posts."""
        ours = {kind: status for kind, status, _, _ in objects.NODE_CONDITIONS}
        now = objects.rfc3339(self.clock())
        shown = {
            c.get("type"): c
            for c in (node.get("status") or {}).get("conditions") or []
            if isinstance(c, Mapping)
        }
        return {
            kind: str(shown[kind].get("lastTransitionTime", now))
            if kind in shown and shown[kind].get("status") == status
            else now
            for kind, status in ours.items()
        }

    async def _post_status(self) -> None:
        status = objects.node_status(
            self.name, self.emulator.allocatable, self._version, self.address, self.clock(), self._since
        )
        await self.api.patch(f"{NODES}/{self.name}/status", {"status": status})
        self.stats.status_writes += 1
        self._last_report = time.monotonic()

    async def _status_loop(self) -> None:
        beats = self.group.heartbeats
        wait = beats.status_update_s * self.phase
        failing = False
        while True:
            await asyncio.sleep(wait)
            wait = jittered(beats.status_update_s)
            try:
                node = self.nodes.node(self.name) if self.nodes is not None else None
                if node is None:
                    node = await self.api.get(f"{NODES}/{self.name}", {"resourceVersion": "0"})
                since = self._transitions(node)
                changed = since != self._since
                if changed or time.monotonic() - self._last_report >= beats.status_report_s:
                    self._since = since
                    await self._post_status()
                failing = False
            except (Unreachable, ApiError) as err:
                if not failing:  # once per outage: a thousand nodes would say it a thousand times
                    log.warning("node status not posted", node=self.name, error=str(err))
                failing = True

    async def _lease_loop(self) -> None:
        beats = self.group.heartbeats
        path = f"{LEASES}/{self.name}"
        backoff = Backoff()
        wait = beats.lease_renew_s * self.phase  # after the first renewal (or creation), at once
        failing = False
        while True:
            now = self.clock()
            renew = {
                "spec": {
                    "holderIdentity": self.name,
                    "leaseDurationSeconds": beats.lease_duration_s,
                    "renewTime": objects.micro_time(now),
                }
            }
            try:
                try:
                    await self.api.patch(path, renew, MERGE)
                except ApiError as err:
                    if err.code != 404:
                        raise
                    lease = objects.lease_object(self.name, self.uid, beats.lease_duration_s, now)
                    await self.api.create(LEASES, lease)
                self.stats.lease_renewals += 1
                backoff.reset()
                failing = False
                await asyncio.sleep(wait)
                wait = jittered(beats.lease_renew_s)
            except (Unreachable, ApiError) as err:
                if not failing:
                    log.warning("lease not renewed", node=self.name, error=str(err))
                failing = True
                await asyncio.sleep(backoff.next())

    # ---- pods -------------------------------------------------------------------------------------------

    def sync(self, items: list[JSON], *, after_gap: bool = False) -> None:
        """The node's pods as a fresh list shows them: what went away while unseen is released, the rest
        handled in creation order, an admitted pod not yet Running carried on to Running."""
        if after_gap:
            self.stats.reconnects += 1
        present = {str(_meta(raw).get("uid")): raw for raw in items}
        for uid in self.emulator.registry.uids():
            if uid not in present:
                self._release(uid, "deleted while unseen")
        for uid in [*self._rejected, *self._tasks]:
            if uid not in present:
                self._forget(uid)
        for raw in sorted(items, key=lambda r: (str(_meta(r).get("creationTimestamp", "")), _key(r))):
            uid = str(_meta(raw).get("uid"))
            admitted = self.emulator.registry.get(uid) is not None
            resting = _meta(raw).get("deletionTimestamp") is None and _phase(raw) != "Running"
            if admitted and resting and uid not in self._tasks:
                qos = self._qos(raw)
                self._spawn(uid, self._start(raw, qos))
            self.changed(raw)

    def changed(self, raw: JSON) -> None:
        meta = _meta(raw)
        uid = str(meta.get("uid"))
        deleting = meta.get("deletionTimestamp") is not None
        if self.emulator.registry.get(uid) is not None:
            if deleting:
                self._stop(raw)
            return
        if uid in self._finishing:
            return
        if uid in self._rejected or _phase(raw) in TERMINAL or deleting:
            if deleting:  # never started here, or ended: the object only needs deleting
                self._finishing.add(uid)
                self._spawn(uid, self._finish(raw, None))
            return
        self._admit(raw)

    def deleted(self, raw: JSON) -> None:
        """The object is gone (a forced deletion, or the end of ours): anything still held is released."""
        uid = str(_meta(raw).get("uid"))
        if self.emulator.registry.get(uid) is not None:
            self._release(uid, "deleted")
        self._forget(uid)

    def _admit(self, raw: JSON) -> None:
        uid = str(_meta(raw).get("uid"))
        try:
            pod = pod_from_manifest(raw, source=f"pod {_key(raw)}")
        except ManifestError as err:
            # The API server accepted it, so this is the emulator's gap: say so, and leave the pod alone.
            log.error("pod not understood", node=self.name, pod=_key(raw), error=str(err))
            self._rejected.add(uid)
            return
        try:
            with deferred_writes() as pending:
                report = self.emulator.admit(pod)
        except EmulatorError as err:  # a pod of the same name is still held here
            log.error("pod not admitted", node=self.name, pod=_key(raw), error=str(err))
            self._rejected.add(uid)
            return
        qos = self._qos(raw, report)
        durable = self._persist(pending)  # a refusal may have rewritten a file too: disk follows memory
        for victim in report.preempted:
            self._preempted(victim.uid, by=_key(raw))
        if report.admitted:
            self.stats.admitted += 1
            log.info("pod admitted", node=self.name, pod=_key(raw), uid=uid)
            self._spawn(uid, self._start(raw, qos, durable))
            return
        self._background_task(self._logged(durable))
        self.stats.rejected += 1
        self.stats.reasons[report.reason] = self.stats.reasons.get(report.reason, 0) + 1
        self._rejected.add(uid)
        log.info("pod rejected", node=self.name, pod=_key(raw), reason=report.reason, message=report.message)
        self._spawn(uid, self._reject(raw, qos, report))

    def _preempted(self, uid: str, *, by: str) -> None:
        """A victim of the critical pod's admission (the emulator already released it): its containers are
        killed, a ``Preempting`` Warning Event is recorded and its status written Failed; the object stays
        (the kubelet does not delete it: its controller replaces it). Never admitted here again."""
        task = self._tasks.pop(uid, None)
        if task is not None:
            task.cancel()
        self.stats.preempted += 1
        self._rejected.add(uid)
        raw = next((r for r in self.pods.pods_on(self.name) if str(_meta(r).get("uid")) == uid), None)
        log.info("pod preempted", node=self.name, uid=uid, by=by)
        if raw is not None:
            self._spawn(uid, self._write_preempted(raw, self._qos(raw)))

    async def _write_preempted(self, raw: JSON, qos: str) -> None:
        now = self.clock()
        event = objects.warning_event(raw, self.name, PREEMPTED_REASON, PREEMPTED_MESSAGE, now)
        namespace = _meta(raw).get("namespace", "default")
        self._background_task(self._post_event(f"/api/v1/namespaces/{namespace}/events", event))
        shown = (raw.get("status") or {}).get("startTime")
        started = _parse_time(shown) if shown else now
        await self._write_status(raw, self.statuses.preempted(raw, qos, started, now))

    def _qos(self, raw: Mapping[str, Any], report: AdmissionReport | None = None) -> str:
        shown = (raw.get("status") or {}).get("qosClass")
        if shown:
            return str(shown)
        pod = report.pod if report is not None else pod_from_manifest(raw)
        return str(compute_qos(pod))

    def _stop(self, raw: JSON) -> None:
        """A graceful deletion of a running pod: its containers stop at once, its resources are freed."""
        uid = str(_meta(raw).get("uid"))
        self._release(uid, "deletion requested")
        self._finishing.add(uid)
        self._spawn(uid, self._finish(raw, self._qos(raw)))

    def _persist(self, pending: PendingWrites) -> asyncio.Future[None]:
        """The state files an admission or removal changed, handed to the shared writer (one thread, in
        order, fsyncs shared): the event loop, which runs every node, never waits on the disk."""
        return asyncio.wrap_future(self.disk.submit(pending.freeze()))

    def _release(self, uid: str, why: str) -> None:
        try:
            with deferred_writes() as pending:
                pod = self.emulator.remove(uid)
        except PodNotFoundError:
            return
        self._background_task(self._logged(self._persist(pending)))
        self.stats.released += 1
        log.info("pod released", node=self.name, pod=f"{pod.namespace}/{pod.name}", uid=uid, why=why)
        task = self._tasks.pop(uid, None)
        if task is not None:
            task.cancel()

    def _forget(self, uid: str) -> None:
        self._rejected.discard(uid)
        self._finishing.discard(uid)
        task = self._tasks.pop(uid, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    def _spawn(self, uid: str, work: Coroutine[Any, Any, None]) -> None:
        previous = self._tasks.pop(uid, None)
        if previous is not None:
            previous.cancel()
        task = asyncio.create_task(self._guarded(uid, work))
        self._tasks[uid] = task

    async def _guarded(self, uid: str, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except (ApiError, Unreachable) as err:
            log.warning("pod status not written", node=self.name, uid=uid, error=str(err))
        finally:
            if self._tasks.get(uid) is asyncio.current_task():
                del self._tasks[uid]

    # ---- what the kubelet writes for a pod --------------------------------------------------------------

    async def _write_status(self, raw: JSON, status: JSON) -> None:
        """A strategic-merge patch of the status, the UID in the patch as the status manager puts it there
        (a recreated pod of the same name answers 409 instead of taking another pod's status)."""
        body = {"metadata": {"uid": _meta(raw).get("uid")}, "status": status}
        path = f"{_pod_path(raw)}/status"
        await with_retries(lambda: self.api.patch(path, body))
        self.stats.status_writes += 1

    async def _logged(self, durable: Awaitable[None]) -> None:
        try:
            await durable
        except Exception as err:  # the disk refused: the node goes on from memory, as the kubelet would
            log.error("state not written", node=self.name, error=str(err))

    async def _start(self, raw: JSON, qos: str, durable: Awaitable[None] | None = None) -> None:
        """Pending once the admission's state files are durable (the kubelet checkpoints before it starts
        anything), then Running after the group's start-up latency."""
        uid = str(_meta(raw).get("uid"))
        if durable is not None:
            await self._logged(durable)
        shown = (raw.get("status") or {}).get("startTime")
        started = _parse_time(shown) if shown else self.clock()
        await self._write_status(raw, self.statuses.pending(raw, qos, started))
        rng = random.Random(stable_seed("startup", self.seed, self.name, uid))
        await asyncio.sleep(self.group.startup_latency.draw(rng) or 0.0)
        await self._write_status(raw, self.statuses.running(raw, qos, started, self.clock()))
        log.info("pod running", node=self.name, pod=_key(raw), uid=uid)

    async def _reject(self, raw: JSON, qos: str, report: AdmissionReport) -> None:
        now = self.clock()
        event = objects.warning_event(raw, self.name, report.reason, report.message, now)
        namespace = _meta(raw).get("namespace", "default")
        self._background_task(self._post_event(f"/api/v1/namespaces/{namespace}/events", event))
        await self._write_status(raw, objects.rejected_status(qos, report.reason, report.message, now))

    def _background_task(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _post_event(self, path: str, event: JSON) -> None:
        try:
            await with_retries(lambda: self.api.create(path, event))
        except ApiError as err:
            log.warning("event not recorded", node=self.name, error=str(err))

    async def _finish(self, raw: JSON, qos: str | None) -> None:
        """The final status of a pod that ran here (``qos`` given), then the object deleted with grace 0."""
        meta = _meta(raw)
        uid = str(meta.get("uid"))
        if qos is not None:
            shown = (raw.get("status") or {}).get("startTime")
            started = _parse_time(shown) if shown else self.clock()
            try:
                await self._write_status(raw, self.statuses.terminated(raw, qos, started, self.clock()))
            except ApiError as err:
                if err.code not in (404, 409):
                    raise
                return
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": uid},
        }
        try:
            await with_retries(lambda: _none(self.api.delete(_pod_path(raw), options)))
        except ApiError as err:
            if err.code not in (404, 409):
                raise


async def _none(call: Awaitable[None]) -> JSON | None:
    await call
    return None


def _parse_time(text: str) -> datetime.datetime:
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return objects.utc_now()
