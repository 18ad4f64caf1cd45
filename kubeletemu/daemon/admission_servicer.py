"""The ``kubeletemu.v1.Admission`` servicer: converts messages and delegates to the node emulator.

Calls are serialized, as the kubelet admits one pod at a time; what-if questions and reads take the same
lock so they see a consistent node.

Admit and RemovePod answer once the files they changed are durable (see :mod:`kubeletemu.daemon.state_disk`):
a call whose files could not be written is undone and answered ``UNAVAILABLE``, and while the state
directory cannot be written they are refused up front, ``UNAVAILABLE`` too; reads are always served.

In shadow mode the node is the real kubelet's: Admit and RemovePod are refused (``FAILED_PRECONDITION``),
everything else answers against the mirror, and ``GetShadowReport`` tells how it was built.

``Simulate`` replays a pod stream on forks of the node (see :meth:`NodeEmulator.fork`): what-if for the
node as it is now, the real node's in shadow mode, leaving it untouched.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import grpc

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import admission_pb2_grpc as pb_grpc
from kubeletemu.checkpointmanager import deferred_writes
from kubeletemu.daemon import convert
from kubeletemu.daemon.errors import engine_errors, serialized
from kubeletemu.daemon.logging import get_logger
from kubeletemu.daemon.metrics import ALIGNED_NUMA_NODE, KubeletMetrics
from kubeletemu.daemon.refusals import STATE_NOT_WRITABLE_METADATA
from kubeletemu.daemon.state_disk import StateDisk
from kubeletemu.emulator import HANDLER_RESOURCE_ALLOCATOR, AdmissionReport, NodeEmulator
from kubeletemu.manifest.source import pod_from_source
from kubeletemu.pod import Pod
from kubeletemu.podresources import nrt, view
from kubeletemu.podresources.fingerprint import METHOD_WITH_EXCLUSIVE_RESOURCES, parse_method
from kubeletemu.scheduler import live
from kubeletemu.scheduler.leastnumanodes import least_numa_nodes_for_node
from kubeletemu.scheduler.objects import Cluster, parse_objects
from kubeletemu.scheduler.profile import load_profile, profiles_from_text, schedule
from kubeletemu.shadow import READ_ONLY_MESSAGE, ShadowReport
from kubeletemu.simulate import render_json, render_table
from kubeletemu.simulate.spec import LiveSimulation, parse_live_simulation
from kubeletemu.topologymanager import ERROR_TOPOLOGY_AFFINITY
from kubeletemu.topologymanager.policy import POLICY_SINGLE_NUMA_NODE
from kubeletemu.topologymanager.scope import SCOPE_CONTAINER

log = get_logger("kubeletemu.admission")

T = TypeVar("T")

NOT_SHADOWING_MESSAGE = (
    "not in shadow mode: this daemon emulates a node of its own; start it with --shadow (or shadow: true) "
    "beside a kubelet to mirror that kubelet"
)


class AdmissionServicer(pb_grpc.AdmissionServicer):
    def __init__(
        self,
        emulator: Callable[[], NodeEmulator],
        lock: asyncio.Lock,
        metrics: KubeletMetrics,
        shadow_report: Callable[[], ShadowReport] | None = None,
        state_disk: StateDisk | None = None,
    ) -> None:
        # A getter, not the object: a SIGHUP reload (or a shadow refresh) swaps the emulator under the lock.
        self.emulator = emulator
        self.lock = lock
        self.metrics = metrics
        # Set in shadow mode: the latest report of the mirror.
        self.shadow_report = shadow_report
        # Set when the daemon makes admissions durable off the event loop (group commit), not in shadow mode.
        self.state_disk = state_disk

    async def Admit(self, request: pb.AdmitRequest, context: grpc.aio.ServicerContext) -> pb.AdmitResponse:
        await self._refuse_in_shadow_mode(context)
        return await self._admit(request, context)

    async def RemovePod(
        self, request: pb.RemovePodRequest, context: grpc.aio.ServicerContext
    ) -> pb.RemovePodResponse:
        await self._refuse_in_shadow_mode(context)
        return await self._remove(request, context)

    async def GetShadowReport(
        self, request: pb.GetShadowReportRequest, context: grpc.aio.ServicerContext
    ) -> pb.ShadowReport:
        if self.shadow_report is None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, NOT_SHADOWING_MESSAGE)
            raise AssertionError("unreachable: abort raises")
        return shadow_report_msg(self.shadow_report())

    async def _refuse_in_shadow_mode(self, context: grpc.aio.ServicerContext) -> None:
        if self.shadow_report is not None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, READ_ONLY_MESSAGE)

    async def _admit(self, request: pb.AdmitRequest, context: grpc.aio.ServicerContext) -> pb.AdmitResponse:
        pod = await decode_pod(request.pod, context)
        async with self.lock, engine_errors(context):
            await self._refuse_unless_writable(context)
            emulator = self.emulator()
            started = time.perf_counter()
            try:
                report, durable = self._change(lambda: emulator.admit(pod))
            finally:
                # Even after a failure: whatever the managers counted or changed shows.
                self.metrics.observe_node(emulator)
            self._observe(emulator, report, time.perf_counter() - started)
        # Outside the lock: the next admission is decided while this one's files reach the disk.
        log.info(
            "admit",
            pod=f"{pod.namespace}/{pod.name}",
            uid=pod.uid,
            admitted=report.admitted,
            reason=report.reason,
            decided_by=report.decided_by,
        )
        response = convert.admit_response(report)
        await self._await_durable(durable, context)
        return response

    async def WouldAdmit(
        self, request: pb.WouldAdmitRequest, context: grpc.aio.ServicerContext
    ) -> pb.AdmitResponse:
        pod = await decode_pod(request.pod, context)
        async with self.lock, engine_errors(context):
            overrides = convert.overrides_from(request.overrides)
            # Empty: the daemon's own kubelet; else that version's (an unsupported one is INVALID_ARGUMENT).
            version = request.kubelet_version or None
            return convert.admit_response(self.emulator().would_admit(pod, overrides, version))
        raise AssertionError("unreachable: engine_errors aborts the call or re-raises")

    async def Simulate(
        self, request: pb.SimulateRequest, context: grpc.aio.ServicerContext
    ) -> pb.SimulateResponse:
        """The node is forked under the lock (a consistent copy, even of a mirror being refreshed); the
        replay then runs on the copy in a worker thread, without the lock: a long stream must not hold up
        admissions nor stall the event loop, where health checks and the systemd watchdog run."""
        simulation, node, name = await self._fork_for_simulation(request, context)
        started = time.perf_counter()
        async with engine_errors(context):
            response = await asyncio.to_thread(_simulate, simulation, node, name)
        log.info(
            "simulate",
            configurations=len(simulation.matrix.configurations(node.config)),
            steps=len(simulation.stream),
            pods=len(node.registry),
            seconds=round(time.perf_counter() - started, 3),
        )
        return response

    @serialized
    def _fork_for_simulation(
        self, request: pb.SimulateRequest, context: Any
    ) -> tuple[LiveSimulation, NodeEmulator, str]:
        live = self.emulator()
        simulation = parse_live_simulation(request.simulation, live.config, "simulation", dict(request.files))
        return simulation, live.fork(), view.node_name(live.config)

    async def _remove(
        self, request: pb.RemovePodRequest, context: grpc.aio.ServicerContext
    ) -> pb.RemovePodResponse:
        async with self.lock, engine_errors(context):
            await self._refuse_unless_writable(context)
            emulator = self.emulator()
            try:
                pod, durable = self._change(lambda: emulator.remove(request.uid))
            finally:
                self.metrics.observe_node(emulator)
        log.info("remove", pod=f"{pod.namespace}/{pod.name}", uid=pod.uid)
        await self._await_durable(durable, context)
        return pb.RemovePodResponse(name=pod.name, namespace=pod.namespace, uid=pod.uid)

    async def _refuse_unless_writable(self, context: grpc.aio.ServicerContext) -> None:
        """Under the lock, before deciding: a degraded daemon refuses changes (unless the directory has
        become writable again, which this checks)."""
        if self.state_disk is None:
            return
        refusal = await self.state_disk.refusal()
        if refusal is not None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, refusal, STATE_NOT_WRITABLE_METADATA)

    def _change(self, change: Callable[[], T]) -> tuple[T, Future[None] | None]:
        """Run a state change; its checkpoint and registry writes go to the writer as one batch (``None``
        when there is no writer, and the emulator wrote them itself, or nothing was written)."""
        if self.state_disk is None:
            return change(), None
        with deferred_writes() as pending:
            try:
                result = change()
            finally:
                # Even when the change failed part-way: the in-memory state moved, the files follow.
                durable = self.state_disk.writer.submit(pending.freeze()) if pending else None
        return result, durable

    async def _await_durable(self, durable: Future[None] | None, context: grpc.aio.ServicerContext) -> None:
        """The answer waits for the files; if they could not be written, the call is undone first, so
        the failure the client gets and the node agree."""
        if durable is None or self.state_disk is None:
            return
        try:
            await asyncio.wrap_future(durable)
        except Exception as err:
            message = await self.state_disk.undo(err)
            log.error("state not saved", error=message)
            await context.abort(grpc.StatusCode.UNAVAILABLE, message, STATE_NOT_WRITABLE_METADATA)

    @serialized
    def GetAffinity(self, request: pb.GetAffinityRequest, context: Any) -> pb.GetAffinityResponse:
        hint = self.emulator().get_affinity(request.pod_uid, request.container_name)
        return pb.GetAffinityResponse(affinity=convert.hint_msg(hint))

    @serialized
    def ListPods(self, request: pb.ListPodsRequest, context: Any) -> pb.ListPodsResponse:
        emulator = self.emulator()
        return pb.ListPodsResponse(
            pods=[convert.admitted_pod_msg(p, cs, emulator.qos_class(p)) for p, cs in emulator.pods()]
        )

    @serialized
    def GetNodeTopology(self, request: pb.GetNodeTopologyRequest, context: Any) -> pb.NodeTopology:
        return convert.node_topology_msg(self.emulator().topology())

    @serialized
    def GetFingerprint(self, request: pb.GetFingerprintRequest, context: Any) -> pb.GetFingerprintResponse:
        method = parse_method(request.method or METHOD_WITH_EXCLUSIVE_RESOURCES)
        sign, status = view.node_fingerprint(self.emulator(), method)
        return convert.fingerprint_msg(sign, method, status)

    @serialized
    def GetNodeResourceTopology(
        self, request: pb.GetNodeResourceTopologyRequest, context: Any
    ) -> pb.NodeResourceTopology:
        method = request.fingerprint_method or METHOD_WITH_EXCLUSIVE_RESOURCES
        update = request.update_trigger or nrt.RTE_UPDATE_PERIODIC
        emulator = self.emulator()
        msg = convert.nrt_msg(live.published(emulator, request.flavour, method, update))
        device = live.published_device(emulator, request.flavour)
        if device is not None:
            msg.koordinator_device = json.dumps(device.to_manifest(), separators=(",", ":"))
        return msg

    async def LeastNUMANodes(
        self, request: pb.LeastNUMANodesRequest, context: grpc.aio.ServicerContext
    ) -> pb.LeastNUMANodesResponse:
        pod = await decode_pod(request.pod, context)
        async with self.lock, engine_errors(context):
            result = least_numa_nodes_for_node(
                self.emulator(), pod, request.scope or None, request.max_numa_nodes or None
            )
            return convert.least_numa_nodes_msg(result)
        raise AssertionError("unreachable: engine_errors aborts the call or re-raises")

    async def Schedule(
        self, request: pb.ScheduleRequest, context: grpc.aio.ServicerContext
    ) -> pb.ScheduleResponse:
        """The scheduler-side models on this node and the objects given (``kubeletemu.scheduler``)."""
        pod = await decode_pod(request.pod, context)
        async with self.lock, engine_errors(context):
            cluster = Cluster()
            for obj in parse_objects(request.objects, "objects"):
                cluster.add(obj)
            profile = (
                profiles_from_text(request.scheduler_config, request.profile or None)
                if request.scheduler_config
                else load_profile(None, request.profile or None)
            )
            flavour = request.flavour or live.profile_flavour(profile)
            nodes = live.with_node(self.emulator(), cluster, flavour)
            return convert.schedule_msg(schedule(pod, nodes, profile), profile)
        raise AssertionError("unreachable: engine_errors aborts the call or re-raises")

    def _observe(self, emulator: NodeEmulator, report: AdmissionReport, seconds: float) -> None:
        """The kubelet's Topology Manager admission metrics, counted where it counts them: admission errors
        for any refusal inside the allocator; aligned-resource counts (single-numa-node only) per container
        in container scope and per pod in pod scope, failures on a policy refusal. The CPU and Memory
        Managers' own metrics come from the engine (``KubeletMetrics.observe_node``)."""
        m = self.metrics
        m.topology_manager_admission_requests_total.inc()
        m.topology_manager_admission_duration_ms.observe(seconds * 1000)
        cm = emulator.cm
        scope = cm.topology_manager_scope
        by_allocator = not report.admitted and report.decided_by == HANDLER_RESOURCE_ALLOCATOR
        if by_allocator:
            m.topology_manager_admission_errors_total.inc()
        if cm.topology_manager_policy == POLICY_SINGLE_NUMA_NODE:
            if by_allocator and report.reason == ERROR_TOPOLOGY_AFFINITY:
                m.container_aligned_compute_resources_failure_count.labels(scope, ALIGNED_NUMA_NODE).inc()
            elif not by_allocator:
                aligned = len(report.containers) if scope == SCOPE_CONTAINER else 1
                m.container_aligned_compute_resources_count.labels(scope, ALIGNED_NUMA_NODE).inc(aligned)


async def decode_pod(source: pb.PodSource, context: grpc.aio.ServicerContext) -> Pod:
    """A request's pod, decoded and validated before the lock is taken and anything is reserved, in a worker
    thread: a manifest near its bounds takes a second to read, and the event loop answers other clients
    (and the watchdog) meanwhile."""
    async with engine_errors(context):
        return await asyncio.to_thread(pod_from_source, source)
    raise AssertionError("unreachable: engine_errors aborts the call or re-raises")


def _simulate(simulation: LiveSimulation, node: NodeEmulator, name: str) -> pb.SimulateResponse:
    """Table and JSON only: the client draws any chart from the JSON (no plotting library on nodes)."""
    report = simulation.run(node, name)
    return pb.SimulateResponse(json=render_json(report), table=render_table(report))


def shadow_report_msg(report: ShadowReport) -> pb.ShadowReport:
    paths = report.paths
    version = report.kubelet_version
    return pb.ShadowReport(
        kubelet_version="" if version is None else version.version,
        kubelet_version_source="" if version is None else version.source,
        kubelet_binary="" if version is None else version.binary,
        kubelet_binary_version="" if version is None else version.reported,
        kubelet_version_note="" if version is None else version.note,
        generation=report.generation,
        refreshed_at=report.refreshed_at,
        checked_at=report.checked_at,
        trigger=report.trigger,
        duration_seconds=report.duration_seconds,
        kubelet_root_dir=str(paths.root_dir),
        kubelet_config=str(paths.config),
        kubelet_podresources_socket=str(paths.podresources_socket),
        watch_mode=report.watch_mode,
        pods_listed=report.pods_listed,
        pods_matched=report.pods_matched,
        pods_derived=report.pods_derived,
        ambiguous_matches=report.ambiguous,
        stale_uids=report.stale_uids,
        placeholders=report.placeholders,
        warnings=report.warnings,
        replay_order=report.replay_order,
        containers_checked=report.containers_checked,
        containers_agreeing=report.containers_agreeing,
        divergences=[
            pb.ShadowDivergence(
                namespace=d.namespace,
                name=d.name,
                uid=d.uid,
                container=d.container,
                resource=d.resource,
                kubelet=d.kubelet,
                kubeletemu=d.emulator,
                replay_position=d.position,
                detail=d.detail,
            )
            for d in report.divergences
        ],
        interchangeable_devices=report.interchangeable_devices,
        last_error=report.last_error,
    )
