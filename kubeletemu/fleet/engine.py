"""One fleet configuration run on a simulated clock (``simpy``): exact nodes, their exporters, one scheduler
with its NRT cache, a pod workload, and what came of it.

The cycle of a pod, as a cluster runs it:

* created (a Poisson arrival from the templates, or a trace entry) and queued: the scheduling queue is
  FIFO (one priority), each unschedulable pod retrying after the default scheduler's backoff, 1 s doubling
  up to 10 s per attempt (``podInitialBackoffSeconds``/``podMaxBackoffSeconds``);
* scheduled (:mod:`.scheduling`); a model with a Reserve (Koordinator's) may still refuse it then; the
  NodeResourceTopologyMatch cache reserves the pod on its node, the pod is bound (the API server and the
  scheduler's own view hold it at once) and PostBind runs;
* admitted by the node's kubelet at the moment it is bound (``NodeEmulator.admit``): Running until its
  lifetime ends, then removed; or rejected (TopologyAffinityError or another admission error), Failed,
  and replaced by its controller after ``recreateBackoff`` (the failed pod object is deleted then);
* each node's exporter publishes the node's NRT, as ``kubeletemu nrt`` computes it (RTE's, or koordlet's for
  Koordinator), at start, every ``period`` plus up to ``jitter``, and ``delay`` after each change of the
  node when ``onChange`` is set; the overreserve cache resyncs on its own period, flushing a dirty node only
  when the NRT's pod-set fingerprint matches the pods it knows on the node.

The run ends when every workload pod has arrived and none is pending or waiting to be re-created, or
``drain`` after the last arrival. The workload (arrivals, templates, lifetimes) comes from the seed alone,
so every scheduler of a matrix meets the same pods; the exporters' jitter from the seed, the exporter's
parameters and the node's name. Nothing depends on the configuration's position in a matrix.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import heapq
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import simpy

from kubeletemu.emulator import NodeEmulator
from kubeletemu.fleet.scheduling import CachedTopology, ExactScheduler, Scheduler, with_cache_source
from kubeletemu.fleet.spec import (
    EXACT,
    ConfigurationSpec,
    Lifetime,
    WorkloadSpec,
    group_config,
)
from kubeletemu.machine import Machine
from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod, derived_uid
from kubeletemu.podresources import nrt as node_side
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.live import FLAVOUR_KOORDLET
from kubeletemu.scheduler.nrtcache import Cache, InformerStore, OverReserve, cache_from_cache_args
from kubeletemu.scheduler.objects import Node, NodeResourceTopology, from_node_side
from kubeletemu.simulate.metrics import numa_usage
from kubeletemu.topologymanager.errors import ERROR_TOPOLOGY_AFFINITY

INITIAL_BACKOFF_S = 1.0
MAX_BACKOFF_S = 10.0
FINGERPRINT_MISMATCH = "NodeTopology podset fingerprint mismatch"
ProgressFn = Callable[[int, int], None]


def stable_seed(*parts: object) -> int:
    """A seed from values (not from Python's salted ``hash``): the same on every run and machine."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclass(frozen=True)
class Arrival:
    at: float
    name: str
    template: int  # index into the workload's parsed pods
    lifetime: float | None


def arrivals(workload: WorkloadSpec, seed: int) -> list[Arrival]:
    """The workload's pods in arrival order, from the seed alone."""
    rng = random.Random(stable_seed("workload", seed))
    if workload.trace:
        return [
            Arrival(e.at, json.loads(e.manifest)["metadata"]["name"], i, e.lifetime)
            for i, e in enumerate(workload.trace)
        ]
    weights = [t.weight for t in workload.templates]
    indices = list(range(len(workload.templates)))
    out = []
    now = 0.0
    for n in range(workload.total):
        now += rng.expovariate(workload.rate)
        [template] = rng.choices(indices, weights)
        out.append(
            Arrival(
                now,
                f"{workload.templates[template].name}-{n:05d}",
                template,
                _lifetime(workload.lifetime, rng),
            )
        )
    return out


def _lifetime(lifetime: Lifetime, rng: random.Random) -> float | None:
    if lifetime.kind == "fixed":
        return lifetime.a
    if lifetime.kind == "exponential":
        return rng.expovariate(1.0 / lifetime.a)
    if lifetime.kind == "uniform":
        return rng.uniform(lifetime.a, lifetime.b)
    return None


@dataclass
class _PodState:
    pod: Pod
    created: float
    lifetime: float | None
    generation: int = 0  # how many times the controller re-created it
    attempts: int = 0
    bound: Pod | None = None


@dataclass
class _Node:
    index: int
    name: str
    emulator: NodeEmulator
    node: Node
    info: NodeInfo
    rng: random.Random
    pods: dict[str, Pod] = field(default_factory=dict)  # the scheduler's view: bound pods by UID
    state_version: int = 0
    published: tuple[int, str, NodeResourceTopology] | None = None
    publish_scheduled: bool = False
    errors: int = 0


@dataclass
class _Counters:
    topology_affinity_errors: int = 0
    other_admission_errors: int = 0
    admissions: int = 0
    scheduling_attempts: int = 0
    plugin_crashes: int = 0
    reserve_failures: int = 0
    pods_created: int = 0
    completed: int = 0
    fingerprint_match: int = 0
    fingerprint_mismatch: int = 0
    resync_skipped_other: int = 0
    nrt_publishes: int = 0


class FleetRun:
    """The state of one configuration's run (see the module docstring)."""

    def __init__(self, config: ConfigurationSpec, progress: ProgressFn | None = None, *, memo: bool = True):
        self.config = config
        self.progress = progress
        self.env = simpy.Environment()
        self.counters = _Counters()
        self.nodes: list[_Node] = []
        self.by_name: dict[str, _Node] = {}
        self._build_nodes()
        self.store = InformerStore()
        self.cache: Cache | None = None
        self.source: CachedTopology | None = None
        exporter = config.exporter
        self.publishes = exporter is not None
        if self.publishes:
            for node in self.nodes:
                self._publish(node, node_side.RTE_UPDATE_PERIODIC)
        exact = ExactScheduler({n.name: n.emulator for n in self.nodes}) if config.kind == EXACT else None
        profile = exact.profile if exact is not None else config.build_profile()
        args = config.nrt_match_args(profile)
        if args is not None:
            self.cache = cache_from_cache_args(args, self.store, profile_names=[profile.name], now=0.0)
            self.source = CachedTopology(self.cache, memo=memo)
            profile = with_cache_source(profile, self.source)
        self.profile = profile
        self.scheduler = exact or Scheduler(profile, config.percentage_of_nodes_to_score)
        self.reservers = [m for m in profile.models if callable(getattr(m, "reserve", None))]
        self.templates = [_template_pod(t.manifest, config.source) for t in config.workload.templates] or [
            _template_pod(e.manifest, config.source) for e in config.workload.trace
        ]
        self.arrivals = arrivals(config.workload, config.seed)
        self.queue: list[tuple[float, int, _PodState]] = []
        self.sequence = 0
        self.wake: simpy.Event | None = None
        self.pending = 0  # created, not bound
        self.awaiting_recreation = 0
        self.arrived = 0
        self.pending_times: list[float] = []
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
                exporter = self.config.exporter
                rng = random.Random(
                    stable_seed(
                        "exporter",
                        self.config.seed,
                        exporter.period_s if exporter else 0,
                        exporter.jitter_s if exporter else 0,
                        name,
                    )
                )
                self.nodes.append(_Node(len(self.nodes), name, emulator, node, NodeInfo(name, node), rng))
        self.by_name = {n.name: n for n in self.nodes}
        self.infos = [n.info for n in self.nodes]  # the scheduler's node list, updated node by node

    # ---- exporters ------------------------------------------------------------------------------------

    def _publish(self, node: _Node, update: str) -> None:
        exporter = self.config.exporter
        assert exporter is not None
        node.publish_scheduled = False
        if node.published is not None and node.published[:2] == (node.state_version, update):
            topology = node.published[2]
        else:
            if self.config.flavour == FLAVOUR_KOORDLET:
                from kubeletemu.scheduler.koordinator.koordlet import koordlet_node_resource_topology

                topology = koordlet_node_resource_topology(node.emulator)
            else:
                topology = from_node_side(
                    node_side.node_resource_topology(node.emulator, exporter.fingerprint_method, update)
                )
            node.published = (node.state_version, update, topology)
        self.counters.nrt_publishes += 1
        self.store.update_nrt(topology)
        node.info = self.infos[node.index] = dataclasses.replace(node.info, topology=topology)
        if self.source is not None:
            self.source.changed(node.name)

    def _exporter(self, node: _Node) -> Any:
        exporter = self.config.exporter
        assert exporter is not None
        while True:
            wait = exporter.period_s + (
                node.rng.uniform(0.0, exporter.jitter_s) if exporter.jitter_s else 0.0
            )
            yield self.env.timeout(wait)
            self._publish(node, node_side.RTE_UPDATE_PERIODIC)

    def _node_changed(self, node: _Node) -> None:
        node.state_version += 1
        exporter = self.config.exporter
        if exporter is None or exporter.on_change_delay_s is None or node.publish_scheduled:
            return
        node.publish_scheduled = True
        self._after(
            exporter.on_change_delay_s, functools.partial(self._publish, node, node_side.RTE_UPDATE_REACTIVE)
        )

    def _after(self, delay: float, action: Callable[[], None]) -> None:
        """``action`` at ``delay`` seconds from now (a timer event, cheaper than a process)."""

        def fire(_event: simpy.Event) -> None:
            action()

        self.env.timeout(delay).callbacks.append(fire)

    def _resync_loop(self, cache: OverReserve) -> Any:
        while True:
            due = cache.next_resync
            assert due is not None
            yield self.env.timeout(max(0.0, due - self.env.now))
            if cache.tick(self.env.now):
                self._count_resync(cache)
                if self.source is not None:
                    self.source.changed_all()

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

    # ---- the workload -----------------------------------------------------------------------------------

    def _arrivals(self) -> Any:
        total = len(self.arrivals)
        step = max(1, -(-total // 100))  # at most every 1 % of the pods
        for arrival in self.arrivals:
            yield self.env.timeout(max(0.0, arrival.at - self.env.now))
            template = self.templates[arrival.template]
            pod = dataclasses.replace(
                template, name=arrival.name, uid=derived_uid(template.namespace, arrival.name)
            )
            self._create(_PodState(pod, self.env.now, arrival.lifetime))
            self.arrived += 1
            if self.progress is not None and (self.arrived % step == 0 or self.arrived == total):
                self.progress(self.arrived, total)
        self._check_done()

    def _create(self, state: _PodState) -> None:
        self.counters.pods_created += 1
        self.store.add_pod(state.pod, scheduler_name=self.profile.name)
        self._pending_delta(+1)
        self._enqueue(state)

    def _enqueue(self, state: _PodState) -> None:
        self.sequence += 1
        heapq.heappush(self.queue, (self.env.now, self.sequence, state))
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    def _pending_delta(self, delta: int) -> None:
        self.pending += delta
        point = self.pending_over_time[-1]
        if point[0] == round(self.env.now, 6):
            point[1] = self.pending
        else:
            self.pending_over_time.append([round(self.env.now, 6), self.pending])

    def _check_done(self) -> None:
        if (
            self.arrived == len(self.arrivals)
            and self.pending == 0
            and self.awaiting_recreation == 0
            and not self.stop.triggered
        ):
            self.stop.succeed()

    def _deadline(self) -> Any:
        last = self.arrivals[-1].at if self.arrivals else 0.0
        yield self.env.timeout(last + self.config.workload.drain_s)
        if not self.stop.triggered:
            self.stop.succeed()

    # ---- the scheduler ----------------------------------------------------------------------------------

    def _scheduler(self) -> Any:
        while True:
            if not self.queue:
                self.wake = self.env.event()
                yield self.wake
                continue
            _, _, state = heapq.heappop(self.queue)
            self._schedule_one(state, self.infos)

    def _schedule_one(self, state: _PodState, infos: list[NodeInfo]) -> None:
        self.counters.scheduling_attempts += 1
        state.attempts += 1
        outcome = self.scheduler.schedule(state.pod, infos)
        self.counters.plugin_crashes += outcome.crashes
        chosen = outcome.chosen
        if chosen is not None:
            for model in self.reservers:
                status = model.reserve(state.pod, chosen)  # type: ignore[attr-defined]
                if not status.ok:
                    self.counters.reserve_failures += 1
                    chosen = None
                    break
        if chosen is None:
            backoff = min(INITIAL_BACKOFF_S * 2 ** (state.attempts - 1), MAX_BACKOFF_S)
            self._after(backoff, functools.partial(self._enqueue, state))
            return
        self._bind(state, self.by_name[chosen.name])

    def _set_pods(self, node: _Node) -> None:
        node.info = self.infos[node.index] = dataclasses.replace(node.info, pods=tuple(node.pods.values()))
        if self.source is not None:
            self.source.changed(node.name)

    def _bind(self, state: _PodState, node: _Node) -> None:
        pod = dataclasses.replace(state.pod, node_name=node.name)
        state.bound = pod
        if self.cache is not None:
            self.cache.reserve_node_resources(node.name, pod)
        node.pods[pod.uid] = pod
        self._set_pods(node)
        self.store.update_pod(pod, scheduler_name=self.profile.name)
        if self.cache is not None:
            self.cache.post_bind(node.name, pod)
        self.pending_times.append(self.env.now - state.created)
        self._pending_delta(-1)
        # The kubelet admits at once.
        report = node.emulator.admit(pod)
        self.counters.admissions += 1
        if report.admitted:
            self.store.update_pod(dataclasses.replace(pod, phase="Running"), scheduler_name=self.profile.name)
            self._node_changed(node)
            if state.lifetime is not None:
                self._after(state.lifetime, functools.partial(self._finish, state, node))
        else:
            if report.reason == ERROR_TOPOLOGY_AFFINITY:
                self.counters.topology_affinity_errors += 1
                node.errors += 1
            else:
                self.counters.other_admission_errors += 1
            failed = dataclasses.replace(pod, phase="Failed")
            self.store.update_pod(failed, scheduler_name=self.profile.name)
            del node.pods[pod.uid]  # the scheduler's informer drops terminal pods
            self._set_pods(node)
            self.awaiting_recreation += 1
            self._after(self.config.workload.recreate_backoff_s, functools.partial(self._recreate, state))
        self._check_done()

    def _recreate(self, state: _PodState) -> None:
        self.awaiting_recreation -= 1
        self.store.remove_pod(state.pod.namespace, state.pod.name)
        generation = state.generation + 1
        base = state.pod.name.rsplit("-r", 1)[0] if state.generation else state.pod.name
        name = f"{base}-r{generation}"
        pod = dataclasses.replace(state.pod, name=name, uid=derived_uid(state.pod.namespace, name))
        self._create(_PodState(pod, self.env.now, state.lifetime, generation))

    def _finish(self, state: _PodState, node: _Node) -> None:
        pod = state.bound
        assert pod is not None
        node.emulator.remove(pod.uid)
        del node.pods[pod.uid]
        self._set_pods(node)
        self.store.remove_pod(pod.namespace, pod.name)
        self.counters.completed += 1
        self._node_changed(node)

    # ---- the run ------------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        env = self.env
        if self.publishes:
            for node in self.nodes:
                if self.config.exporter is not None and self.config.exporter.period_s > 0:
                    env.process(self._exporter(node))
        if isinstance(self.cache, OverReserve):
            self._count_resync(self.cache)  # the resync the loop ran at start
            env.process(self._resync_loop(self.cache))
        env.process(self._scheduler())
        env.process(self._arrivals())
        env.process(self._deadline())
        env.run(until=self.stop)
        if self.progress is not None:
            self.progress(len(self.arrivals), len(self.arrivals))
        return self.result()

    def result(self) -> dict[str, Any]:
        config, counters = self.config, self.counters
        waits = sorted(self.pending_times)
        utilisation, free_cpu, free_memory = _utilisation(self.nodes)
        running = sum(len(n.emulator.registry.pods()) for n in self.nodes)
        total = config.workload.pods
        return {
            "name": config.name,
            "scheduler": config.scheduler,
            "cache": config.cache,
            "resync_period_s": config.resync_period_s,
            "exporter_period_s": config.exporter.period_s if config.exporter else None,
            "seed": config.seed,
            "kubelet_versions": sorted({n.emulator.config.emulator.kubelet_version for n in self.nodes}),
            "pods_total": total,
            "topology_affinity_errors": counters.topology_affinity_errors,
            "topology_affinity_error_rate": (
                round(counters.topology_affinity_errors / counters.admissions, 6)
                if counters.admissions
                else 0.0
            ),
            "other_admission_errors": counters.other_admission_errors,
            "pending_p50_s": _percentile(waits, 50),
            "pending_p99_s": _percentile(waits, 99),
            "pending_max_s": round(waits[-1], 6) if waits else 0.0,
            "scheduling_attempts": counters.scheduling_attempts,
            "running_at_end": running,
            "never_scheduled": self.pending,
            "resyncs": {
                "fingerprint_match": counters.fingerprint_match,
                "fingerprint_mismatch": counters.fingerprint_mismatch,
            },
            "largest_single_numa_free": {"cpu": free_cpu, "memory": free_memory},
            "errors_per_node": {n.name: n.errors for n in self.nodes if n.errors},
            "pending_over_time": self.pending_over_time,
            "numa_utilisation": utilisation,
            # Beyond the contract:
            "admissions": counters.admissions,
            "pods_created": counters.pods_created,
            "completed": counters.completed,
            "plugin_crashes": counters.plugin_crashes,
            "reserve_failures": counters.reserve_failures,
            "resync_skipped_other": counters.resync_skipped_other,
            "nrt_publishes": counters.nrt_publishes,
            "simulated_s": round(self.env.now, 6),
            "nodes": len(self.nodes),
        }


def _template_pod(manifest: str, source: str) -> Pod:
    return pod_from_manifest(json.loads(manifest), source=source)


def _percentile(ordered: list[float], q: int) -> float:
    """Nearest rank: the smallest value with at least q % of the values at or below it."""
    if not ordered:
        return 0.0
    rank = max(1, -(-q * len(ordered) // 100))
    return round(ordered[rank - 1], 6)


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
