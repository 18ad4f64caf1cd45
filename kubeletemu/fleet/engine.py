"""One fleet configuration run on a simulated clock (``simpy``): exact nodes, their kubelets and exporters,
kube-controller-manager's controllers, one scheduler with its queue and NRT cache, a workload, and what
came of it. The parts are modules laid out as the cluster's components are; this one wires them.

A pod's life, as a cluster runs it:

* **created** by its controller (:mod:`.controllers`): an arrival of the arrival process opens a slot of its
  template's controller with a first pod; a ReplicaSet template's replicas are created by the controller's
  first sync. The scheduler's informer sees it at once and it enters the scheduling queue.
* **scheduled** (:mod:`.scheduling`: filter, score, ``selectHost``); a model with a Reserve (Koordinator's)
  may still refuse it; the NodeResourceTopologyMatch cache reserves it on the node, the pod is **bound**
  (the API server and the scheduler's cache hold it at once) and PostBind runs. A pod no node takes goes
  back to the queue.
* **admitted** by the node's kubelet when it sees the bind (``NodeEmulator.admit``, unchanged). A rejected
  pod (TopologyAffinityError or another admission error) is **Failed** and stays Failed: its template's
  controller replaces it (a ReplicaSet when its informer shows the failure, ``informerDelay`` +
  ``syncDelay``; a Job after its pod-failure backoff, up to its ``backoffLimit``; a bare pod never is), and
  the pod object stays until the pod garbage collector deletes it.
* an admitted pod is **Pending** for its start-up latency (``workload.startupLatency``), then **Running** (the
  containers' poststart hooks run: RTE's notify file for Guaranteed pods); a one-shot pod ends after its
  lifetime: **Succeeded** (poststop hooks), its exclusive CPUs and memory held until the managers' next
  sweep (:mod:`.kubelet`: the node's next admission, or the CPU Manager's reconcile), its object kept
  until collected.

What each watcher counts follows its shipped code: the scheduler's NodeInfo never counts a terminated pod
(:func:`kubeletemu.fleet.kubelet.is_terminated`); the overreserve cache's informer (Dedicated: every phase
but Pending; Shared: Running only, :mod:`kubeletemu.scheduler.nrtcache.informers`); the exporters what
their kubelet's podresources ``List`` returns at its version (:mod:`.exporters.listing`). Each exporter runs
its own event loop (:mod:`.exporters`); the overreserve cache resyncs on its period, flushing a dirty node
only when the NRT's pod-set fingerprint matches the pods its informer places there. A flush on an NRT
written before the admission of a pod the cache had reserved there drops that reservation: the run's log
names each such flush and the rejections on that node that follow it.

The run ends when every arrival has come and every open slot has reached Running (or ``drain`` after the
last arrival). The workload (arrivals, templates, lifetimes, each pod's start-up latency) comes from the seed
alone, so every scheduler of a matrix meets the same pods; the exporters' ticker phases and the garbage
collector's from the seed and the node's name. Nothing depends on the configuration's position in a matrix.

A wait that had not ended when the run did is censored (:mod:`.censored`): counted apart, and a percentile
its rank falls on is None, not the run's length.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import simpy

from kubeletemu.emulator import AdmissionReport, NodeEmulator
from kubeletemu.fleet.censored import censored_max, censored_percentile
from kubeletemu.fleet.clock import SimClock
from kubeletemu.fleet.controllers import JobController, PodGC, ReplicaSetController, Slot
from kubeletemu.fleet.controllers.podgc import GC_CHECK_PERIOD_S
from kubeletemu.fleet.cycle import KeptRejections
from kubeletemu.fleet.cycle.extender import EXTENDER, ExtenderSettings, FleetExtender
from kubeletemu.fleet.distributions import FIXED
from kubeletemu.fleet.exporters import Exporter, make_exporter
from kubeletemu.fleet.gc_tuning import fewer_collections
from kubeletemu.fleet.kubelet import (
    AT_ADMISSION,
    AT_RECONCILE,
    FAILED,
    PENDING,
    RUNNING,
    SUCCEEDED,
    TRACKED,
    KubeletNode,
    holds_exclusive,
    is_terminated,
)
from kubeletemu.fleet.queue.hints import EXTENDER as EXTENDER_PLUGIN
from kubeletemu.fleet.runlog import RunLog
from kubeletemu.fleet.scheduler_queue import SchedulerQueue
from kubeletemu.fleet.scheduling import CachedTopology, ExactScheduler, Scheduler, with_cache_source
from kubeletemu.fleet.spec import (
    BARE_POD,
    EXACT_NUMA,
    EXACT_SETUPS,
    JOB,
    REPLICA_SET,
    ConfigurationSpec,
    group_config,
)
from kubeletemu.fleet.workload import Arrival, PodRecord, arrivals, stable_seed
from kubeletemu.machine import Machine
from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod, QOSClass, derived_uid
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.nrtcache import Cache, InformerStore, OverReserve, cache_from_cache_args
from kubeletemu.scheduler.nrtcache.podsets import (
    check_pod_fingerprint_for_node,
    make_node_to_pod_data_map,
    pod_fingerprint_for_node_topology,
)
from kubeletemu.scheduler.objects import Node, NodeResourceTopology
from kubeletemu.simulate.metrics import numa_usage
from kubeletemu.topologymanager.errors import ERROR_TOPOLOGY_AFFINITY

FINGERPRINT_MISMATCH = "NodeTopology podset fingerprint mismatch"
ProgressFn = Callable[[int, int], None]

__all__ = ["Arrival", "FleetRun", "arrivals", "run_configuration", "stable_seed"]


@dataclass(eq=False)
class _Node:
    """A node as the fleet holds it: its kubelet, its exporter, and the scheduler's view of it."""

    kubelet: KubeletNode
    node: Node
    info: NodeInfo
    exporter: Exporter | None = None
    pods: dict[str, Pod] = field(default_factory=dict)  # the scheduler's cache: bound, not terminated
    nrt_written_at: float = 0.0
    reserved: dict[str, float] = field(default_factory=dict)  # overreserve: key -> bind time, since a flush
    stale_flush: tuple[float, tuple[str, ...]] | None = None  # last flush that lost reservations
    errors: int = 0

    @property
    def index(self) -> int:
        return self.kubelet.index

    @property
    def name(self) -> str:
        return self.kubelet.name

    @property
    def emulator(self) -> NodeEmulator:
        return self.kubelet.emulator


@dataclass
class _Counters:
    topology_affinity_errors: int = 0
    other_admission_errors: int = 0
    admissions: int = 0
    scheduling_attempts: int = 0
    plugin_crashes: int = 0
    reserve_failures: int = 0
    pods_created: int = 0
    replacements: int = 0
    completed: int = 0
    fingerprint_match: int = 0
    fingerprint_mismatch: int = 0
    resync_skipped_other: int = 0
    stale_flushes: int = 0
    reservations_lost: int = 0
    errors_after_stale_flush: int = 0
    bind_failures: int = 0


@dataclass
class _TemplateStats:
    pending: list[float] = field(default_factory=list)
    topology_affinity_errors: int = 0
    pods: int = 0


class FleetRun:
    """The state of one configuration's run (see the module docstring)."""

    def __init__(self, config: ConfigurationSpec, progress: ProgressFn | None = None, *, memo: bool = True):
        self.config = config
        self.progress = progress
        self.env = simpy.Environment()
        self.clock = SimClock(self.env)
        self.counters = _Counters()
        self.log = RunLog()
        self.store = InformerStore()
        self.nodes: list[_Node] = []
        self._build_nodes()
        self.by_name = {n.name: n for n in self.nodes}
        self.infos = [n.info for n in self.nodes]  # the scheduler's node list, updated node by node
        self.infos_version = 0  # moves whenever an entry of infos is replaced
        self.memo = memo
        self.cache: Cache | None = None
        self.source: CachedTopology | None = None
        # The NRTs written before the scheduler starts reach no queue (there is none yet, nor any pod).
        self._nrt_events: SchedulerQueue | None = None
        self._start_exporters()
        # selectHost's random pick among the top scores: the run's own stream.
        select_rng = random.Random(stable_seed("select-host", config.seed))
        # parallelism > 1: the order the filter's goroutines find feasible nodes in, its own stream.
        order_rng = (
            random.Random(stable_seed("feasible-order", config.seed)) if config.parallelism > 1 else None
        )
        exact = (
            ExactScheduler(
                {n.name: n.emulator for n in self.nodes},
                config.percentage_of_nodes_to_score,
                numa=config.kind == EXACT_NUMA,
                version=config.scheduler_version,
                rng=select_rng,
                memo=memo,
                count_assumed=config.count_assumed,
                order_rng=order_rng,
            )
            if config.kind in EXACT_SETUPS
            else None
        )
        profile = exact.profile if exact is not None else config.build_profile()
        args = config.nrt_match_args(profile)
        if args is not None:
            self.cache = cache_from_cache_args(args, self.store, profile_names=[profile.name], now=0.0)
            self.source = CachedTopology(self.cache, memo=memo)
            profile = with_cache_source(profile, self.source)
        self.overreserve = self.cache if isinstance(self.cache, OverReserve) else None
        self.would_admit = exact.would_admit if exact is not None else None
        self.profile = profile
        # The extender setup: kubeletemu extender's own code, fed by the nodes' agents (their first full
        # states before anything runs).
        self.extender = (
            FleetExtender(config.extender or ExtenderSettings(), self.clock.now)
            if config.kind == EXTENDER
            else None
        )
        self._reports_due: set[str] = set()
        if self.extender is not None:
            for node in self.nodes:
                self.extender.report(node.name, node.emulator)
        self.scheduler = exact or Scheduler(
            profile,
            config.percentage_of_nodes_to_score,
            version=config.scheduler_version,
            rng=select_rng,
            memo=memo,
            order_rng=order_rng,
            extender=self.extender,
        )
        self.reservers = [m for m in profile.models if callable(getattr(m, "reserve", None))]
        workload = config.workload
        manifests = [t.manifest for t in workload.templates] or [e.manifest for e in workload.trace]
        self.templates = [pod_from_manifest(json.loads(m), source=config.source) for m in manifests]
        self.template_names = [t.name for t in workload.templates] or [p.name for p in self.templates]
        self.template_stats = {name: _TemplateStats() for name in dict.fromkeys(self.template_names)}
        self.arrivals = arrivals(workload, config.seed)
        self.controllers = [self._controller(index, name) for index, name in enumerate(self.template_names)]
        self.gc: PodGC[PodRecord] = PodGC(
            self.clock, config.controllers.terminated_pod_gc_threshold, self._collect
        )
        self.records: dict[str, PodRecord] = {}
        self.slots: list[Slot] = []
        plugins = [m.name for m in profile.filters] + [m.name for m in self.reservers]
        if self.extender is not None:
            plugins.append(EXTENDER_PLUGIN)  # the framework's defaultEnqueueExtension for its extenders
        self.queue = self._nrt_events = SchedulerQueue(
            self.clock, config.scheduler_version, plugins, self._wake
        )
        self.wake: simpy.Event | None = None
        self.pending = 0  # created, not bound
        self.waiting = 0  # open slots not yet Running
        self.arrived = 0
        self.pending_times: list[float] = []
        self.replacement_delays: list[float] = []
        self.pending_over_time: list[list[float]] = [[0.0, 0]]
        self.stop = self.env.event()

    # ---- set-up ---------------------------------------------------------------------------------------

    def _build_nodes(self) -> None:
        for group in self.config.node_groups:
            config = group_config(group)
            machine: Machine = group.topology.machine()
            labels = MappingProxyType(dict(group.labels))
            for index in range(group.count):
                name = f"{group.name}-{index:03d}"
                node_config = dataclasses.replace(
                    config, emulator=dataclasses.replace(config.emulator, node_name=name)
                )
                emulator = NodeEmulator(node_config, machine)
                node = Node(
                    name=name,
                    labels=labels,
                    allocatable=MappingProxyType(dict(emulator.allocatable.allocatable)),
                )
                # The CPU Manager's reconcile ticker started with the kubelet, before the run.
                period = node_config.kubelet.cpu_manager_reconcile_period_s
                phase = random.Random(stable_seed("cpu-reconcile", self.config.seed, name)).uniform(0, period)
                kubelet = KubeletNode(len(self.nodes), name, emulator, reconcile_phase=phase)
                self.nodes.append(_Node(kubelet, node, NodeInfo(name, node)))

    def _start_exporters(self) -> None:
        """Every exporter has published before the scheduler starts (its cache lists the NRTs then)."""
        spec = self.config.exporter
        if spec is None:
            return
        for node in self.nodes:
            rng = random.Random(
                stable_seed("exporter", self.config.seed, spec.type, spec.period_s, node.name)
            )
            phase = rng.uniform(0.0, spec.period_s) if spec.period_s > 0 else 0.0
            node.exporter = make_exporter(node.kubelet, self.clock, spec, phase, self._nrt_written)
            node.exporter.start()

    # ---- the API server's side of the exporters -------------------------------------------------------

    def _nrt_written(self, kubelet: KubeletNode, topology: NodeResourceTopology) -> None:
        node = self.nodes[kubelet.index]
        node.nrt_written_at = self.clock.now()
        old = self.store.nrt(node.name)
        self.store.update_nrt(topology)
        if self._nrt_events is not None:
            self._nrt_events.nrt_written(old, topology)
        self._replace_info(node, topology=topology)

    # ---- the overreserve cache's resync ---------------------------------------------------------------

    def _resync_loop(self, cache: OverReserve) -> Any:
        while True:
            due = cache.next_resync
            assert due is not None
            yield self.env.timeout(max(0.0, due - self.env.now))
            if cache.tick(self.env.now):
                self._count_resync(cache)
                if self.source is not None:
                    # A resync changes what GetCachedNRTCopy answers only for the nodes it flushed.
                    outcome = cache.last_resync
                    if outcome is None:
                        self.source.changed_all()
                    else:
                        for name in outcome.flushed:
                            self.source.changed(name)

    def _count_resync(self, cache: OverReserve) -> None:
        outcome = cache.last_resync
        if outcome is None:
            return
        self.counters.fingerprint_match += len(outcome.flushed)
        for reason in outcome.skipped.values():
            if reason == FINGERPRINT_MISMATCH:
                self.counters.fingerprint_mismatch += 1
            else:
                self.counters.resync_skipped_other += 1
        for name in outcome.flushed:
            self._flushed(self.by_name[name])

    def _flushed(self, node: _Node) -> None:
        """A flush replaced the node's cached NRT with the last one written: the reservations of pods
        admitted after that write are gone, though the pods hold their resources."""
        written = node.nrt_written_at
        lost = []
        for key, bound_at in node.reserved.items():
            record = self.records.get(key)
            if (
                bound_at > written
                and record is not None
                and record.admitted
                and not is_terminated(record.phase)
            ):
                lost.append(record)
        node.reserved.clear()
        if not lost:
            node.stale_flush = None
            return
        now = self.clock.now()
        names = tuple(r.name for r in lost)
        node.stale_flush = (now, names)
        self.counters.stale_flushes += 1
        self.counters.reservations_lost += len(lost)
        described = ", ".join(f"{r.name} (bound {r.bound_at:.3f}s, {r.phase})" for r in lost)
        self.log.add(
            now,
            f"resync flushed {node.name} on its NRT written at {written:.3f}s, before the admission of "
            f"{described}: the reservation(s) are gone, the resources are not",
        )

    # ---- the workload and its controllers -------------------------------------------------------------

    def _arrivals(self) -> Any:
        total = len(self.arrivals)
        step = max(1, -(-total // 100))  # at most every 1 % of the pods
        for arrival in self.arrivals:
            yield self.env.timeout(max(0.0, arrival.at - self.env.now))
            slot = self._open_slot(arrival.template, arrival.name, arrival.lifetime)
            self._create(slot, ours=False)
            self.arrived += 1
            if self.progress is not None and (self.arrived % step == 0 or self.arrived == total):
                self.progress(self.arrived, total)
        self._check_done()

    def _open_slot(self, template: int, name: str, lifetime: float | None) -> Slot:
        slot = Slot(len(self.slots), template, name, self.clock.now(), lifetime)
        self.slots.append(slot)
        self.waiting += 1
        return slot

    def _start_replica_sets(self) -> None:
        for index, template in enumerate(self.config.workload.templates):
            if template.replicas is None:
                continue
            slots = [
                self._open_slot(index, f"{template.name}-{n:05d}", None) for n in range(template.replicas)
            ]
            controller = self.controllers[index]
            assert isinstance(controller, ReplicaSetController)  # replicas: a ReplicaSet's (spec)
            controller.open_replicas(slots)

    def _controller(self, index: int, name: str) -> ReplicaSetController | JobController | None:
        """The template's controller by kind (a trace's pods: ReplicaSet); None for bare pods."""
        templates = self.config.workload.templates
        kind = templates[index].controller if templates else REPLICA_SET
        controllers = self.config.controllers
        if kind == JOB:
            limit = templates[index].backoff_limit
            return JobController(name, self.clock, controllers.job, limit, self._create_for, self._give_up)
        if kind == BARE_POD:
            return None
        return ReplicaSetController(name, self.clock, controllers.replica_set, self._create_for)

    def _give_up(self, slot: Slot) -> None:
        """No pod will be created for the slot again (a bare pod failed, a Job past its backoffLimit): it
        closes without Running (censored)."""
        if slot.done or slot.running_at is not None:
            return
        slot.done = True
        self.waiting -= 1
        self._check_done()

    def _create_for(self, slot: Slot) -> None:
        """A create the slot's controller sent."""
        self._create(slot, ours=True)

    def _create(self, slot: Slot, *, ours: bool) -> None:
        """The API server creates a pod object for the slot."""
        template = self.templates[slot.template]
        name = slot.name if slot.pods == 0 else f"{slot.name}-r{slot.pods}"
        slot.pods += 1
        pod = dataclasses.replace(
            template, name=name, uid=derived_uid(template.namespace, name), phase=PENDING, node_name=None
        )
        record = PodRecord(pod, slot, self.clock.now())
        self.records[record.key] = record
        self.counters.pods_created += 1
        if slot.pods > 1:
            self.counters.replacements += 1
            if slot.failed_at is not None:
                self.replacement_delays.append(self.clock.now() - slot.failed_at)
        self.template_stats[self.template_names[slot.template]].pods += 1
        self.store.add_pod(pod, scheduler_name=self.profile.name)
        self._observe(record, PENDING, ours=ours)
        self._pending_delta(+1)
        self.queue.pod_created(record)

    def _observe(self, record: PodRecord, phase: str | None, *, ours: bool = False) -> None:
        """The controllers' informer delivers the pod's change ``informerDelay`` later."""
        controller = self.controllers[record.slot.template]
        if controller is None:
            return
        key, slot = record.key, record.slot
        self.clock.after(
            controller.spec.informer_delay_s, lambda: controller.observe(key, slot, phase, ours=ours)
        )

    def _write(self, record: PodRecord, pod: Pod) -> None:
        """The API server stores the pod's new state; the informers see it."""
        old, record.pod = record.pod, pod
        self.store.update_pod(pod, scheduler_name=self.profile.name)
        self.queue.pod_changed(old, pod)
        self._observe(record, record.phase)

    def _collect(self, record: PodRecord) -> None:
        """The pod garbage collector deletes an ended pod."""
        self.records.pop(record.key, None)
        self.store.remove_pod(record.pod.namespace, record.pod.name)
        self.queue.pod_deleted(record.pod)
        if record.node is not None:
            node = self.nodes[record.node]
            node.kubelet.forget(record.pod)
            self._agent_reports(node)
        self._observe(record, None)

    def _pending_delta(self, delta: int) -> None:
        self.pending += delta
        point = self.pending_over_time[-1]
        if point[0] == round(self.env.now, 6):
            point[1] = self.pending
        else:
            self.pending_over_time.append([round(self.env.now, 6), self.pending])

    def _check_done(self) -> None:
        if self.arrived == len(self.arrivals) and self.waiting == 0 and not self.stop.triggered:
            self.stop.succeed()

    def _deadline(self) -> Any:
        last = self.arrivals[-1].at if self.arrivals else 0.0
        yield self.env.timeout(last + self.config.workload.drain_s)
        if not self.stop.triggered:
            self.stop.succeed()

    # ---- the scheduler ----------------------------------------------------------------------------------

    def _wake(self) -> None:
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    def _scheduler(self) -> Any:
        scheduler, counters = self.scheduler, self.counters
        while True:
            kept, crashes = scheduler.cycles_kept, scheduler.crashes_kept
            answers = self._kept_failures()
            if answers is None:
                record = self.queue.pop()
            else:
                record = self.queue.pop(answers.answer)
                answers.finish()
            counters.scheduling_attempts += scheduler.cycles_kept - kept
            counters.plugin_crashes += scheduler.crashes_kept - crashes
            if record is None:
                self.wake = self.env.event()
                yield self.wake
                continue
            self._schedule_one(record)

    def _kept_failures(self) -> KeptRejections | None:
        """Attempts answered by kept failed cycles (:meth:`_schedule_one` with nothing to bind), for the
        queue to fail at once: the plugins that rejected the pod (the attempts and crashes counted by the
        scheduler at ``finish``). Attempts take no simulated time and write nothing, so no event comes
        between a pod's pop and its failure, and the scheduler's state stays as it is while the queue
        pops."""
        return self.scheduler.kept_rejections(self.infos, self._state())

    def _schedule_one(self, record: PodRecord) -> None:
        self.counters.scheduling_attempts += 1
        outcome = self.scheduler.schedule(record.pod, self.infos, now=self.clock.now(), state=self._state())
        self.counters.plugin_crashes += outcome.crashes
        chosen = outcome.chosen
        rejected, pending = outcome.unschedulable_plugins, outcome.pending_plugins
        if chosen is not None:
            for model in self.reservers:
                status = model.reserve(record.pod, chosen)  # type: ignore[attr-defined]
                if not status.ok:
                    # A Reserve rejection: the plugin is the one that rejected the pod.
                    self.counters.reserve_failures += 1
                    rejected, pending = frozenset({model.name}), frozenset()
                    chosen = None
                    break
        if chosen is None:
            self.queue.failed(record, rejected, pending)
            return
        self._assume(record, self.by_name[chosen.name])

    def _state(self) -> tuple[int, int] | None:
        """What every Filter reads, as a version: the node list and the NRT cache's answers (None: the
        run asks every model every time)."""
        if not self.memo:
            return None
        return self.infos_version, (self.source.generation if self.source is not None else 0)

    def _set_pods(self, node: _Node) -> None:
        self._replace_info(node, pods=tuple(node.pods.values()))

    def _replace_info(self, node: _Node, **changes: Any) -> None:
        """The node's NodeInfo replaced (kept answers go by the object), the version the scheduler's kept
        cycles go by moved on, and the NRT cache's kept answer for the node dropped."""
        node.info = self.infos[node.index] = dataclasses.replace(node.info, **changes)
        self.infos_version += 1
        if self.source is not None:
            self.source.changed(node.name)

    def _assume(self, record: PodRecord, node: _Node) -> None:
        """``assume`` and Reserve (kube-scheduler v1.36.3 ``schedule_one.go``, ``schedulingCycle``): the
        scheduler's cache counts the pod on the node from now; the binding cycle runs on its own
        (``bindingCycle``, ``binding.latency`` later) and may fail."""
        pod = dataclasses.replace(record.pod, node_name=node.name)
        if self.cache is not None:
            self.cache.reserve_node_resources(node.name, pod)
            if self.overreserve is not None:
                node.reserved[record.key] = self.clock.now()
        node.pods[pod.uid] = pod
        self._set_pods(node)
        if self.would_admit is not None:
            self.would_admit.assume(node.name, pod)
        binding = self.config.binding
        record.binds += 1
        latency, failed = binding.latency.a, False
        if binding.latency.kind != FIXED or binding.failure_rate > 0:  # a draw (none at the defaults)
            rng = random.Random(stable_seed("bind", self.config.seed, pod.name, record.binds))
            latency = binding.latency.draw(rng) or 0.0
            failed = binding.failure_rate > 0 and rng.random() < binding.failure_rate
        if failed:
            self.clock.after(latency, lambda: self._bind_failed(record, node, pod))
        elif latency > 0:
            self.clock.after(latency, lambda: self._bound(record, node, pod))
        else:
            self._bound(record, node, pod)

    def _bind_failed(self, record: PodRecord, node: _Node, pod: Pod) -> None:
        """``handleBindingCycleError``: Unreserve and ``ForgetPod``, an AssignedPodDelete for the queue, and
        the pod back to it as a failed attempt (``FailureHandler``)."""
        self.counters.bind_failures += 1
        if self.cache is not None:
            self.cache.unreserve_node_resources(node.name, pod)
        node.reserved.pop(record.key, None)
        node.pods.pop(pod.uid, None)
        self._set_pods(node)
        if self.would_admit is not None:
            self.would_admit.settled(node.name, pod.uid)
        self.queue.bind_failed(record, pod)

    def _bound(self, record: PodRecord, node: _Node, pod: Pod) -> None:
        """The Binding is stored (the binding cycle's ``Done``); the kubelet's watch delivers it
        ``binding.kubeletWatchLatency`` later."""
        self.queue.binding(record)
        now = self.clock.now()
        record.bound_at, record.node = now, node.index
        self._write(record, pod)
        if self.cache is not None:
            self.cache.post_bind(node.name, pod)
        wait = now - record.created
        self.pending_times.append(wait)
        self.template_stats[self.template_names[record.slot.template]].pending.append(wait)
        self._pending_delta(-1)
        watch_latency = self.config.binding.watch_latency
        watch = watch_latency.a
        if watch_latency.kind != FIXED:
            watch = watch_latency.draw(random.Random(stable_seed("watch", self.config.seed, pod.name))) or 0.0
        if watch > 0:
            self.clock.after(watch, lambda: self._admit(record, node, pod, later=True))
        else:
            self._admit(record, node, pod)

    def _admit(self, record: PodRecord, node: _Node, pod: Pod, *, later: bool = False) -> None:
        """The kubelet sees the pod bound to it and admits it (or rejects it)."""
        if self.would_admit is not None:
            self.would_admit.settled(node.name, pod.uid)
        report, swept = node.kubelet.admit(pod, self.clock.now())
        self._agent_reports(node)
        self.counters.admissions += 1
        if report.admitted:
            record.admitted = True
            record.exclusive = holds_exclusive(report)
            if later:
                # The node changed under an unchanged NodeInfo: what the scheduler kept for it is stale.
                self._replace_info(node)
            if node.exporter is not None and (record.exclusive or swept):
                node.exporter.state_files_written()
            latency = self._startup_latency(pod)
            self.clock.after(latency, lambda: self._started(record, node))
        else:
            if node.exporter is not None and swept:
                node.exporter.state_files_written()  # the sweep before the refusal rewrote a state file
            self._rejected(record, node, pod, report)

    def _startup_latency(self, pod: Pod) -> float:
        """The pod's own draw (from the seed and its name: the same for every scheduler)."""
        rng = random.Random(stable_seed("startup", self.config.seed, pod.name))
        value = self.config.workload.startup_latency.draw(rng)
        return 0.0 if value is None else value

    def _rejected(self, record: PodRecord, node: _Node, pod: Pod, report: AdmissionReport) -> None:
        now = self.clock.now()
        stats = self.template_stats[self.template_names[record.slot.template]]
        if report.reason == ERROR_TOPOLOGY_AFFINITY:
            self.counters.topology_affinity_errors += 1
            stats.topology_affinity_errors += 1
            node.errors += 1
            cause = ""
            if node.stale_flush is not None:
                self.counters.errors_after_stale_flush += 1
                at, lost = node.stale_flush
                cause = (
                    f"; {node.name} was flushed at {at:.3f}s on an NRT written before the admission of "
                    f"{', '.join(lost)}"
                )
            self.log.add(now, f"{pod.name} rejected by {node.name}: {ERROR_TOPOLOGY_AFFINITY}{cause}")
        else:
            self.counters.other_admission_errors += 1
        node.pods.pop(pod.uid, None)  # the scheduler's informer drops terminated pods
        self._set_pods(node)
        record.slot.failed_at, record.slot.failed_created = now, record.creation_second
        self._write(record, dataclasses.replace(pod, phase=FAILED))
        self.gc.pod_terminated(record.key, record)
        if self.controllers[record.slot.template] is None:
            self._give_up(record.slot)  # a bare pod: nothing replaces it

    def _started(self, record: PodRecord, node: _Node) -> None:
        """The containers started: Running (the poststart hooks run)."""
        pod = dataclasses.replace(record.pod, phase=RUNNING)
        self._write(record, pod)
        if node.exporter is not None:
            node.exporter.container_started(pod.qos_class == QOSClass.GUARANTEED)
        slot = record.slot
        if slot.running_at is None:
            slot.running_at = self.clock.now()
            self.waiting -= 1
        if slot.lifetime is not None:
            self.clock.after(slot.lifetime, lambda: self._completed(record, node))
        self._check_done()

    def _completed(self, record: PodRecord, node: _Node) -> None:
        """The containers exited: Succeeded (the poststop hooks run). Its exclusive CPUs and memory stay
        with the managers until their next sweep (:mod:`kubeletemu.fleet.kubelet`): the node's next
        admission, or the CPU Manager's next reconcile."""
        pod = record.pod
        kubelet = node.kubelet
        holds_cpus = kubelet.complete(pod, self.clock.now())
        self._agent_reports(node)
        if holds_cpus and not kubelet.reconcile_due:
            kubelet.reconcile_due = True
            self.clock.after(
                kubelet.next_reconcile(self.clock.now()) - self.clock.now(), lambda: self._reconcile(node)
            )
        if node.exporter is not None:
            node.exporter.container_stopped(pod.qos_class == QOSClass.GUARANTEED)
        record.slot.done = True
        node.pods.pop(pod.uid, None)
        self._set_pods(node)
        self._write(record, dataclasses.replace(pod, phase=SUCCEEDED))
        self.counters.completed += 1
        self.gc.pod_terminated(record.key, record)

    def _reconcile(self, node: _Node) -> None:
        """The CPU Manager's reconcile ticker fired with stale CPUs to release (the ticks between release
        nothing and are not run)."""
        kubelet = node.kubelet
        kubelet.reconcile_due = False
        released = kubelet.reconcile(self.clock.now())
        if released:
            self._agent_reports(node)
        if released and node.exporter is not None:
            node.exporter.state_files_written()

    def _agent_reports(self, node: _Node) -> None:
        """The node changed: its agent's next report (its feed's poll) reaches the extender ``feedLatency``
        later with the node's state then; changes before it coalesce into that one report."""
        extender = self.extender
        if extender is None or node.name in self._reports_due:
            return
        self._reports_due.add(node.name)

        def report() -> None:
            self._reports_due.discard(node.name)
            extender.report(node.name, node.emulator)

        latency = extender.settings.feed_latency_s
        if latency > 0:
            self.clock.after(latency, report)
        else:
            report()

    # ---- the run ------------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        env = self.env
        if self.overreserve is not None:
            self._count_resync(self.overreserve)  # the resync the loop ran at start
            env.process(self._resync_loop(self.overreserve))
        rng = random.Random(stable_seed("podgc", self.config.seed))
        self.gc.start(rng.uniform(0.0, GC_CHECK_PERIOD_S))
        env.process(self._scheduler())
        self._start_replica_sets()
        env.process(self._arrivals())
        env.process(self._deadline())
        with fewer_collections():
            env.run(until=self.stop)
        if self.progress is not None:
            self.progress(len(self.arrivals), len(self.arrivals))
        return self.result()

    def _time_to_running(self) -> dict[int, float | None]:
        """Per slot: from its first creation to Running; None for a slot that never got there (censored)."""
        return {
            s.id: (s.running_at - s.first_created if s.running_at is not None else None) for s in self.slots
        }

    def _mismatched_nodes(self) -> list[str]:
        """Overreserve: the nodes whose last written NRT's fingerprint the cache's pod set does not match
        now (a resync would not flush them)."""
        cache = self.overreserve
        if cache is None:
            return []
        by_node = make_node_to_pod_data_map(
            cache.pod_lister.list(), cache.is_pod_relevant, cache.nrt_res_names.get, cache.preemption_mode
        )
        out = []
        for node in self.nodes:
            nrt = self.store.nrt(node.name)
            if nrt is None:
                continue
            expected, only_exclusive = pod_fingerprint_for_node_topology(nrt, cache.resync_method)
            if (
                check_pod_fingerprint_for_node(by_node.get(node.name, []), expected, only_exclusive)
                is not None
            ):
                out.append(node.name)
        return out

    def result(self) -> dict[str, Any]:
        config, counters = self.config, self.counters
        # A pod object never bound, and a slot never Running, waited longer than the run let it: censored.
        unbound = [r for r in self.records.values() if r.bound_at is None]
        waits = sorted(self.pending_times)
        to_running = self._time_to_running()
        running_times = sorted(t for t in to_running.values() if t is not None)
        never_running = len(to_running) - len(running_times)
        utilisation, free_cpu, free_memory = _utilisation(self.nodes)
        phases = [r.phase for r in self.records.values()]
        templates: dict[str, Any] = {}
        for name, stats in self.template_stats.items():
            times = [to_running[s.id] for s in self.slots if self.template_names[s.template] == name]
            slot_times = sorted(t for t in times if t is not None)
            slots_censored = len(times) - len(slot_times)
            pending = sorted(stats.pending)
            pending_censored = sum(self.template_names[r.slot.template] == name for r in unbound)
            templates[name] = {
                "pods": stats.pods,
                "topology_affinity_errors": stats.topology_affinity_errors,
                "pending_p50_s": censored_percentile(pending, pending_censored, 50),
                "pending_p99_s": censored_percentile(pending, pending_censored, 99),
                "pending_censored": pending_censored,
                "time_to_running_p50_s": censored_percentile(slot_times, slots_censored, 50),
                "time_to_running_p99_s": censored_percentile(slot_times, slots_censored, 99),
                "never_running": slots_censored,
            }
        exporters = [n.exporter for n in self.nodes if n.exporter is not None]
        delays = sorted(self.replacement_delays)
        return {
            "name": config.name,
            "scheduler": config.scheduler,
            "scheduler_version": config.scheduler_version,
            "cache": config.cache,
            "resync_period_s": config.resync_period_s,
            "exporter": config.exporter.type if config.exporter else None,
            "exporter_period_s": config.exporter.period_s if config.exporter else None,
            "seed": config.seed,
            "kubelet_versions": sorted({n.emulator.config.emulator.kubelet_version for n in self.nodes}),
            "pods_total": config.workload.pods,
            "topology_affinity_errors": counters.topology_affinity_errors,
            "topology_affinity_error_rate": (
                round(counters.topology_affinity_errors / counters.admissions, 6)
                if counters.admissions
                else 0.0
            ),
            "other_admission_errors": counters.other_admission_errors,
            "pending_p50_s": censored_percentile(waits, len(unbound), 50),
            "pending_p99_s": censored_percentile(waits, len(unbound), 99),
            "pending_max_s": censored_max(waits, len(unbound)),
            "pending_censored": len(unbound),
            "time_to_running_p50_s": censored_percentile(running_times, never_running, 50),
            "time_to_running_p99_s": censored_percentile(running_times, never_running, 99),
            "time_to_running_max_s": censored_max(running_times, never_running),
            "scheduling_attempts": counters.scheduling_attempts,
            "running_at_end": phases.count(RUNNING),
            "never_scheduled": self.pending,
            "never_running": never_running,
            "resyncs": {
                "fingerprint_match": counters.fingerprint_match,
                "fingerprint_mismatch": counters.fingerprint_mismatch,
            },
            "largest_single_numa_free": {"cpu": free_cpu, "memory": free_memory},
            "errors_per_node": {n.name: n.errors for n in self.nodes if n.errors},
            "templates": templates,
            "pending_over_time": self.pending_over_time,
            "numa_utilisation": utilisation,
            # Beyond the contract:
            "admissions": counters.admissions,
            "pods_created": counters.pods_created,
            "replacements": counters.replacements,
            "completed": counters.completed,
            "failed_at_end": phases.count(FAILED),
            "succeeded_at_end": phases.count(SUCCEEDED),
            "garbage_collected": self.gc.deleted,
            "plugin_crashes": counters.plugin_crashes,
            "reserve_failures": counters.reserve_failures,
            "bind_failures": counters.bind_failures,
            "resync_skipped_other": counters.resync_skipped_other,
            "fingerprint_mismatch_at_end": self._mismatched_nodes(),
            "replacement_delay_s": {
                "min": round(delays[0], 6) if delays else None,
                "p50": _percentile(delays, 50) if delays else None,
                "max": round(delays[-1], 6) if delays else None,
            },
            "released_after_exit": _released_after_exit(self.nodes),
            "stale_flushes": counters.stale_flushes,
            "reservations_lost": counters.reservations_lost,
            "errors_after_stale_flush": counters.errors_after_stale_flush,
            "exporter_scans": sum(e.scans for e in exporters),
            "nrt_publishes": sum(e.writes for e in exporters),
            "simulated_s": round(self.env.now, 6),
            "nodes": len(self.nodes),
            "log": self.log.result(),
        }


def _percentile(ordered: list[float], q: int) -> float:
    """Nearest rank: the smallest value with at least q % of the values at or below it."""
    if not ordered:
        return 0.0
    rank = max(1, -(-q * len(ordered) // 100))
    return round(ordered[rank - 1], 6)


def _released_after_exit(nodes: list[_Node]) -> dict[str, Any]:
    """Per manager (``cpu``, ``memory``): how many ended pods' state it released at a reconcile and at an
    admission, how long after the pod's exit (nearest-rank p50 and max, seconds), and how many ended pods
    it still held when the run ended."""
    out: dict[str, Any] = {}
    for manager in TRACKED:
        releases = [r for n in nodes for r in n.kubelet.releases if r.manager == manager]
        held = sorted(r.held_s for r in releases)
        out[manager] = {
            "at_reconcile": sum(r.cause == AT_RECONCILE for r in releases),
            "at_admission": sum(r.cause == AT_ADMISSION for r in releases),
            "held_p50_s": _percentile(held, 50) if held else None,
            "held_max_s": round(held[-1], 6) if held else None,
            "still_held": sum(manager in h for n in nodes for _, h in n.kubelet.stale.values()),
        }
    return out


def _utilisation(nodes: list[_Node]) -> tuple[list[dict[str, Any]], int, int]:
    rows: list[dict[str, Any]] = []
    free_cpu = free_memory = 0
    for node in nodes:
        devices = _device_use(node.emulator)
        for usage in numa_usage(node.emulator):
            cpu = (
                usage.cpus_exclusive / usage.cpus_allocatable
                if usage.cpus_allocatable and usage.cpus_exclusive is not None
                else 0.0
            )
            memory = (
                usage.memory_assigned / usage.memory_allocatable
                if usage.memory_allocatable and usage.memory_assigned is not None
                else 0.0
            )
            free_cpu = max(free_cpu, (usage.free_cpus or 0) * 1000)
            free_memory = max(free_memory, usage.free_memory or 0)
            rows.append(
                {
                    "node": node.name,
                    "numa": usage.node,
                    "cpu": round(cpu, 6),
                    "memory": round(memory, 6),
                    "devices": devices.get(usage.node),
                }
            )
    return rows, free_cpu, free_memory


def _device_use(emulator: NodeEmulator) -> dict[int, float]:
    """Allocated over healthy-or-not devices per NUMA node (nodes without devices are absent)."""
    manager = emulator.cm.devices
    total: dict[int, int] = {}
    used: dict[int, int] = {}
    for resource, devices in manager.all_devices.items():
        allocated = manager.allocated_devices.get(resource, set())
        for device_id, device in devices.items():
            for numa in device.numa_node_ids():
                total[numa] = total.get(numa, 0) + 1
                if device_id in allocated:
                    used[numa] = used.get(numa, 0) + 1
    return {numa: round(used.get(numa, 0) / count, 6) for numa, count in total.items() if count}


def run_configuration(config: ConfigurationSpec, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Run one configuration and return its result (the contract of ``kubeletemu fleet -o json``)."""
    return FleetRun(config, progress).run()
