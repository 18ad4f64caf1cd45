"""A fleet what-if described in one YAML file (``kind: Fleet``), for ``kubeletemu fleet -f``.

```yaml
apiVersion: kubeletemu.io/v1alpha1
kind: Fleet
seed: 1                          # the default of matrix.seeds
schedulerVersion: "1.36"         # kube-scheduler's queue (1.32 ... 1.36; default the newest)
parallelism: 1                   # kube-scheduler's: above 1, the filter's goroutines find feasible nodes in
                                 #   an order drawn from the seed (ties with it); 1, the default: node order
nodeGroups:                      # every node is a real NodeEmulator
- name: worker                   # nodes are worker-000, worker-001, ...
  count: 50
  topology:                      # as in a Simulation: synthetic / capture / host
    synthetic: {sockets: 2, coresPerSocket: 20, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 93}
  config: [kubelet-config.yaml]  # KubeletConfiguration (+ EmulatorConfiguration) files
  labels: {node.koordinator.sh/numa-topology-policy: SingleNUMANode}   # the Node object's labels
  kubeletVersion: "1.34"         # optional: wins over the files' kubeletVersion
exporter:                        # one per node, publishing the node's NRT (kubeletemu nrt)
  type: resource-topology-exporter   # or nfd-topology-updater (Koordinator profiles read koordlet's)
  period: 60s                    # the fixed ticker (RTE/nfd --sleep-interval, koordlet's sync); 0: none
  notifyFile: true               # RTE --notify-file, touched by the OCI hook at container poststart/poststop
                                 #   of Guaranteed pods (default false, as RTE's)
  maxEventsPerSecond: 1          # RTE's rate limiter (--max-events-per-second; 0: none)
  kubeletStateDir: true          # nfd-topology-updater --kubelet-state-dir watched (its default)
  fingerprintMethod: with-exclusive-resources   # RTE's default; nfd-topology-updater signs every listed pod
binding:                         # the binding cycle and the kubelet's watch (0 by default: docs/fleet.md)
  latency: {fixed: 0s}           # assume (Reserve) to the Binding stored: kube-scheduler's bindingCycle
  failureRate: 0                 # a bind that fails (seeded per pod): ForgetPod, Unreserve, back to the queue
  kubeletWatchLatency: {fixed: 0s}   # the Binding stored to the kubelet's watch delivering it (admission)
controllers:                     # kube-controller-manager's, as far as the fleet needs them
  replicaSet: {informerDelay: 100ms, syncDelay: 100ms}
  job: {informerDelay: 100ms, syncDelay: 100ms}   # the Job controller's (its backoff is upstream's)
  podGC: {terminatedPodThreshold: 12500}   # --terminated-pod-gc-threshold, checked every 20 s
schedulers:                      # the setups to compare, by name
- name: default                  # the NUMA-blind default scheduler
  model: default
- name: topology-aware           # any plugin of kubeletemu.scheduler.profile.MODELS with its args
  model: NodeResourceTopologyMatch
  args: {scoringStrategy: {type: LeastAllocated}, cacheResyncPeriodSeconds: 5}
- name: koordinator
  config: kube-scheduler.yaml    # a KubeSchedulerConfiguration file (or inline, as a mapping)
  profile: koord-scheduler       # which profile (default: the first)
  schedulerVersion: "1.33"       # optional: this scheduler's queue version
- name: exact                    # each node's WouldAdmit as Filter, the default scores
  model: exact
  args: {countAssumedPods: true} # WouldAdmit counts assumed pods (bound, not yet admitted); the default
- name: exact-numa               # the same Filter, scored fewest NUMA nodes then tightest fit (exact state)
  model: exact-numa
- name: extender                 # the default profile asking kubeletemu extender (its own code, simulated)
  model: extender
  args: {weight: 10, closeOn: agent-report, ttl: 60s, feedLatency: 50ms}   # these are the defaults
workload:
  templates:                     # or trace: FILE (Pod manifests annotated with arrival times)
  - weight: 3                    # one-shot pods of the arrival process, each a slot of its template's
    controller: ReplicaSet       # who replaces a rejected pod (default ReplicaSet: at once, as before);
                                 #   Job: after its pod-failure backoff (10 s doubling, capped at 10 min),
                                 #   the Job failing past backoffLimit; Pod: a bare pod, never replaced
    pod: {metadata: {name: web}, spec: {containers: [{name: c, resources: {limits: {cpu: "4"}}}]}}
  - weight: 1
    controller: Job
    backoffLimit: 6              # Job only (the Job's spec.backoffLimit; default 6)
    pod: {metadata: {name: batch}, spec: {containers: [{name: c, resources: {limits: {cpu: "2"}}}]}}
  - replicas: 10                 # or a ReplicaSet of this many pods, created at the start
    pod: {metadata: {name: db}, spec: {containers: [{name: c, resources: {limits: {cpu: "8"}}}]}}
  rate: 2                        # Poisson arrivals per second (with weighted templates)
  total: 400
  lifetime: {exponential: 120s}  # or {fixed: 60s}, {uniform: [30s, 90s]}; absent: pods run to the end
  startupLatency: {uniform: [1s, 3s]}   # bind (and admission) to Running; this is the default
  drain: 300s                    # after the last arrival, how long pods may still get to Running
matrix:                          # each axis optional
  schedulers: [default, topology-aware, exact]   # default: every scheduler
  caches: [passthrough, overreserve]   # NodeResourceTopologyMatch only: overrides its args
  resyncPeriods: [5s]            # overreserve only (whole seconds)
  exporterPeriods: [10s]         # schedulers that read NRTs only
  seeds: [1, 2, 3, 4, 5]         # a summary with a 95 % interval per configuration over its seeds
```

A trace file holds Pod manifests, each annotated ``fleet.kubeletemu.io/arrival`` (seconds or a duration,
from the start) and optionally ``fleet.kubeletemu.io/lifetime``. Relative paths are taken from the
file's directory.

Fields that older files used and the engine no longer has are refused with a pointer to what replaced
them: ``workload.recreateBackoff`` (a ReplicaSet replaces a Failed pod when it observes it:
``controllers.replicaSet``), ``exporter.jitter`` (the exporters' tickers are fixed; each node's ticker phase
comes from the seed) and ``exporter.onChange`` (``exporter.notifyFile`` for RTE, ``exporter.kubeletStateDir``
for nfd-topology-updater).

:meth:`FleetSpec.configurations` expands the matrix: scheduler × cache × resync period × exporter period ×
seed, an axis that does not apply to a scheduler collapsing for it (the default scheduler and ``exact``
read no NRT; only NodeResourceTopologyMatch has caches; only overreserve resyncs). Each
:class:`ConfigurationSpec` carries everything a worker process needs (texts, not open files or
emulators) and is named by its own parameters, so its result does not depend on the matrix's order.

Any problem is a :class:`FleetError` naming the file, the field and the reason, raised before anything
runs.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubeletemu.config import Config, ConfigError, load_config, parse_config
from kubeletemu.config import fields as read
from kubeletemu.config.emulator_config import parse_duration
from kubeletemu.config.loader import check_feature_gates
from kubeletemu.fleet.cycle.extender import EXTENDER, ExtenderSettings
from kubeletemu.fleet.distributions import (
    EXPONENTIAL,
    FIXED,
    KINDS,
    UNIFORM,
    Distribution,
    Lifetime,
)
from kubeletemu.fleet.queue import versions as scheduler_versions
from kubeletemu.manifest import ManifestError, pod_from_manifest, pods_from_documents
from kubeletemu.manifest.documents import YAMLSyntaxError, decode_documents
from kubeletemu.scheduler.extender.ledger import CLOSING_RULES
from kubeletemu.scheduler.live import FLAVOUR_KOORDLET, FLAVOUR_RTE
from kubeletemu.scheduler.nrtmatch.args import NodeResourceTopologyMatchArgs
from kubeletemu.scheduler.nrtmatch.model import NodeResourceTopologyMatch
from kubeletemu.scheduler.objects import ObjectError
from kubeletemu.scheduler.profile import MODELS, Profile, default_profile, parse_profiles
from kubeletemu.simulate.errors import SimulationError
from kubeletemu.simulate.spec import one_document, parse_topology, read_text
from kubeletemu.simulate.topology import TopologySource
from kubeletemu.versions.version import parse_version

KIND = "Fleet"
EXACT = "exact"
EXACT_NUMA = "exact-numa"
EXACT_SETUPS = (EXACT, EXACT_NUMA)  # kubeletemu.fleet.cycle.exact builds them
DEFAULT = "default"
NRT_MATCH = "NodeResourceTopologyMatch"
KOORDINATOR_PLUGINS = ("NodeNUMAResource", "NodeNUMAResourceDesign")
PASSTHROUGH, OVERRESERVE, DISCARDRESERVED = "passthrough", "overreserve", "discardreserved"
CACHES = (PASSTHROUGH, OVERRESERVE, DISCARDRESERVED)
FINGERPRINT_METHODS = ("with-exclusive-resources", "all")
# The exporters: the two that publish for NodeResourceTopologyMatch, and Koordinator's koordlet.
RTE = "resource-topology-exporter"
NFD = "nfd-topology-updater"
KOORDLET = "koordlet"
EXPORTER_TYPES = (RTE, NFD)
ARRIVAL_ANNOTATION = "fleet.kubeletemu.io/arrival"
LIFETIME_ANNOTATION = "fleet.kubeletemu.io/lifetime"

_TOP_KEYS = (
    "apiVersion", "kind", "seed", "schedulerVersion", "nodeGroups", "exporter", "controllers", "schedulers",
    "workload", "matrix", "binding", "parallelism",
)  # fmt: skip
_GROUP_KEYS = ("name", "count", "topology", "config", "labels", "kubeletVersion")
_EXPORTER_KEYS = (
    "type",
    "period",
    "notifyFile",
    "maxEventsPerSecond",
    "kubeletStateDir",
    "fingerprintMethod",
)
_CONTROLLERS_KEYS = ("replicaSet", "job", "podGC")
# Who owns a template's pods (``workload.templates[].controller``); the default is today's (ReplicaSet).
REPLICA_SET, JOB, BARE_POD = "ReplicaSet", "Job", "Pod"
CONTROLLER_KINDS = (REPLICA_SET, JOB, BARE_POD)
DEFAULT_BACKOFF_LIMIT = 6  # batch/v1 Job's spec.backoffLimit default
_SCHEDULER_KEYS = ("name", "model", "args", "config", "profile", "schedulerVersion")
_WORKLOAD_KEYS = ("templates", "trace", "rate", "total", "lifetime", "startupLatency", "drain")
# Fields of older files, refused with what replaced them.
_REMOVED = {
    "workload.recreateBackoff": "removed: a ReplicaSet replaces a Failed pod when it observes it "
    "(controllers.replicaSet: informerDelay, syncDelay)",
    "exporter.jitter": "removed: the exporters' tickers are fixed, as RTE's and nfd-topology-updater's are "
    "(each node's ticker phase comes from the seed)",
    "exporter.onChange": "removed: use exporter.notifyFile (RTE's --notify-file) or exporter.kubeletStateDir "
    "(nfd-topology-updater)",
}
# A realistic start-up (image present, containers starting): bind to Running.
DEFAULT_STARTUP_LATENCY = Distribution(UNIFORM, 1.0, 3.0)
# The binding cycle's and the kubelet's watch's default: none (the fleet before they were separate events).
NO_LATENCY = Distribution(FIXED, 0.0)
# kube-controller-manager's --terminated-pod-gc-threshold default.
DEFAULT_TERMINATED_POD_GC_THRESHOLD = 12500
_MATRIX_KEYS = ("schedulers", "caches", "resyncPeriods", "exporterPeriods", "seeds")
# A plugin enabled on top of the default resource plugins, as scheduler.catalog writes its setups.
_PLUGIN_TEMPLATE = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
}


class FleetError(ValueError):
    """A Fleet file that cannot run: ``file: field: reason``."""


@dataclass(frozen=True)
class _Where(read.SourceReporter[FleetError]):
    kind: Callable[[str], FleetError] = FleetError


# ---- what a worker receives ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeGroupSpec:
    name: str
    count: int
    topology: TopologySource
    # The configuration files' texts joined as one multi-document text (read and validated at parse time).
    config_text: str
    config_source: str
    kubelet_version: str | None
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ExporterSpec:
    """One exporter per node (:mod:`kubeletemu.fleet.exporters`): ``type`` is :data:`RTE`, :data:`NFD` or
    :data:`KOORDLET` (set by the configuration from the scheduler's plugins)."""

    period_s: float
    type: str = RTE
    notify_file: bool = False
    max_events_per_second: int = 1
    kubelet_state_dir: bool = True
    fingerprint_method: str = "with-exclusive-resources"


@dataclass(frozen=True)
class ReplicaSetSpec:
    """The ReplicaSet controller's reaction time: a pod change reaches its informer ``informer_delay_s``
    after the API server has it; a sync (the creates it sends included) takes ``sync_delay_s``."""

    informer_delay_s: float = 0.1
    sync_delay_s: float = 0.1


@dataclass(frozen=True)
class BindingSpec:
    """kube-scheduler's binding cycle and the kubelet's watch (:mod:`kubeletemu.fleet.engine`): the time
    from a pod's assume to its Binding stored (``latency``), the chance the bind fails (``failure_rate``:
    ``ForgetPod`` and requeue), and the time from the Binding stored to the kubelet's admission
    (``watch_latency``). Zero (the default) is the fleet as before: one instant."""

    latency: Distribution = NO_LATENCY
    failure_rate: float = 0.0
    watch_latency: Distribution = NO_LATENCY


@dataclass(frozen=True)
class ControllersSpec:
    replica_set: ReplicaSetSpec = field(default_factory=ReplicaSetSpec)
    terminated_pod_gc_threshold: int = DEFAULT_TERMINATED_POD_GC_THRESHOLD
    job: ReplicaSetSpec = field(default_factory=ReplicaSetSpec)  # the Job controller's delays


@dataclass(frozen=True)
class Template:
    name: str
    weight: float  # 0 for a ReplicaSet template (not in the arrival process)
    manifest: str  # the Pod manifest as JSON text
    replicas: int | None = None
    controller: str = REPLICA_SET
    backoff_limit: int = DEFAULT_BACKOFF_LIMIT


@dataclass(frozen=True)
class TraceEntry:
    at: float
    lifetime: float | None
    manifest: str


@dataclass(frozen=True)
class WorkloadSpec:
    templates: tuple[Template, ...] = ()
    rate: float = 0.0
    total: int = 0
    lifetime: Lifetime = field(default_factory=Lifetime)
    trace: tuple[TraceEntry, ...] = ()
    drain_s: float = 300.0
    startup_latency: Distribution = DEFAULT_STARTUP_LATENCY

    @property
    def pods(self) -> int:
        """The workload's pods (controller slots): arrivals, or trace entries, plus ReplicaSet replicas."""
        replicas = sum(t.replicas or 0 for t in self.templates)
        return (len(self.trace) if self.trace else self.total) + replicas


@dataclass(frozen=True)
class ConfigurationSpec:
    """One point of the matrix, self-contained and picklable."""

    name: str
    scheduler: str
    kind: str  # "profile", "exact", "exact-numa" or "extender"
    # The KubeSchedulerConfiguration text ("" for the default profile) and the profile's schedulerName.
    scheduler_config: str
    profile: str | None
    flavour: str
    cache: str | None
    resync_period_s: float | None
    exporter: ExporterSpec | None
    node_groups: tuple[NodeGroupSpec, ...]
    workload: WorkloadSpec
    seed: int
    source: str = "<fleet>"
    percentage_of_nodes_to_score: int = 0
    scheduler_version: str = scheduler_versions.DEFAULT_VERSION
    controllers: ControllersSpec = field(default_factory=ControllersSpec)
    binding: BindingSpec = field(default_factory=BindingSpec)
    count_assumed: bool = True  # an exact setup's WouldAdmit counts assumed pods
    parallelism: int = 1  # kube-scheduler's parallelism: above 1, feasible nodes in a seeded order
    extender: ExtenderSettings | None = None  # the extender setup's args

    def build_profile(self) -> Profile:
        if self.kind in (*EXACT_SETUPS, EXTENDER) or not self.scheduler_config:
            return default_profile()
        profiles = parse_profiles(self.scheduler_config, f"{self.source}: scheduler {self.scheduler}")
        return profiles[self.profile] if self.profile else next(iter(profiles.values()))

    def nrt_match_args(self, profile: Profile | None = None) -> NodeResourceTopologyMatchArgs | None:
        """The NodeResourceTopologyMatch args as the profile's model parsed them (None: the plugin is not
        enabled); ``profile``: this configuration's, when the caller has built it already."""
        for model in (profile or self.build_profile()).models:
            if isinstance(model, NodeResourceTopologyMatch):
                return model.args
        return None


@dataclass(frozen=True)
class _Scheduler:
    name: str
    kind: str
    config: Mapping[str, Any] | None  # the KubeSchedulerConfiguration document; None: default profile
    profile: str | None
    version: str | None = None  # its own schedulerVersion
    count_assumed: bool = True  # exact setups: args.countAssumedPods
    extender: ExtenderSettings | None = None  # the extender setup: its args


@dataclass(frozen=True)
class _Matrix:
    schedulers: tuple[str, ...]
    caches: tuple[str, ...]
    resync_periods: tuple[float, ...]
    exporter_periods: tuple[float, ...]
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class FleetSpec:
    source: str
    node_groups: tuple[NodeGroupSpec, ...]
    exporter: ExporterSpec
    schedulers: tuple[_Scheduler, ...]
    workload: WorkloadSpec
    matrix: _Matrix
    scheduler_version: str = scheduler_versions.DEFAULT_VERSION
    controllers: ControllersSpec = field(default_factory=ControllersSpec)
    binding: BindingSpec = field(default_factory=BindingSpec)
    parallelism: int = 1

    def configurations(self) -> list[ConfigurationSpec]:
        """The matrix, expanded in the order of its axes; every configuration validated."""
        out: list[ConfigurationSpec] = []
        seen: set[str] = set()
        by_name = {s.name: s for s in self.schedulers}
        for scheduler_name in self.matrix.schedulers:
            scheduler = by_name[scheduler_name]
            for cache in self.matrix.caches or (None,):
                for resync in self.matrix.resync_periods or (None,):
                    for period in self.matrix.exporter_periods:
                        for seed in self.matrix.seeds:
                            config = self._configuration(scheduler, cache, resync, period, seed)
                            if config.name not in seen:
                                seen.add(config.name)
                                out.append(config)
        return out

    def _configuration(
        self, scheduler: _Scheduler, cache: str | None, resync: float | None, period: float, seed: int
    ) -> ConfigurationSpec:
        where = _Where(self.source)
        version = scheduler.version or self.scheduler_version
        if scheduler.kind in (*EXACT_SETUPS, EXTENDER):
            return ConfigurationSpec(
                name=f"{scheduler.name}/seed={seed}", scheduler=scheduler.name, kind=scheduler.kind,
                scheduler_config="", profile=None, flavour=FLAVOUR_RTE, cache=None, resync_period_s=None,
                exporter=None, node_groups=self.node_groups, workload=self.workload, seed=seed,
                source=self.source, scheduler_version=version, controllers=self.controllers,
                binding=self.binding, count_assumed=scheduler.count_assumed, parallelism=self.parallelism,
                extender=scheduler.extender,
            )  # fmt: skip
        document = dict(scheduler.config) if scheduler.config is not None else None
        plugins = _profile_plugins(document, scheduler.profile)
        reads_nrt = any(p in plugins for p in (NRT_MATCH, *KOORDINATOR_PLUGINS))
        flavour = FLAVOUR_KOORDLET if any(p in plugins for p in KOORDINATOR_PLUGINS) else FLAVOUR_RTE
        cache_kind: str | None = None
        resync_s: float | None = None
        if document is not None and NRT_MATCH in plugins:
            args = dict(_nrt_args(document, scheduler.profile))
            if cache is not None:
                args.pop("discardReservedNodes", None)
                args.pop("cacheResyncPeriodSeconds", None)
                if cache == DISCARDRESERVED:
                    args["discardReservedNodes"] = True
                elif cache == OVERRESERVE:
                    configured = _cache_of(_nrt_args(document, scheduler.profile))[1]
                    args["cacheResyncPeriodSeconds"] = int(resync if resync is not None else configured or 5)
                document = _with_nrt_args(document, scheduler.profile, args)
            cache_kind, period_arg = _cache_of(args)
            resync_s = float(period_arg) if cache_kind == OVERRESERVE else None
        text = yaml.safe_dump(document, sort_keys=False) if document is not None else ""
        parts = [scheduler.name]
        if cache_kind is not None:
            parts.append(cache_kind)
        if resync_s is not None:
            parts.append(f"resync={_seconds(resync_s)}")
        exporter = None
        if reads_nrt:
            kind = KOORDLET if flavour == FLAVOUR_KOORDLET else self.exporter.type
            exporter = dataclasses.replace(self.exporter, period_s=period, type=kind)
            parts.append(f"exporter={_seconds(period)}")
        parts.append(f"seed={seed}")
        config = ConfigurationSpec(
            name="/".join(parts), scheduler=scheduler.name, kind="profile", scheduler_config=text,
            profile=scheduler.profile, flavour=flavour, cache=cache_kind, resync_period_s=resync_s,
            exporter=exporter, node_groups=self.node_groups, workload=self.workload, seed=seed,
            source=self.source,
            percentage_of_nodes_to_score=_percentage(where, scheduler.name, document),
            scheduler_version=version, controllers=self.controllers, binding=self.binding,
            parallelism=self.parallelism,
        )  # fmt: skip
        try:
            config.build_profile()  # parses every plugin's args, the cache's included
        except (ConfigError, ObjectError, KeyError) as err:
            raise where.error(f"schedulers[{scheduler.name}]", str(err)) from None
        return config


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _enabled_plugins(profile: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for point in ("multiPoint", "filter", "score"):
        section = (profile.get("plugins") or {}).get(point) or {}
        names.update(str(p.get("name")) for p in section.get("enabled") or [] if isinstance(p, Mapping))
    return names


def _select_profile(document: Mapping[str, Any], profile: str | None) -> Mapping[str, Any]:
    profiles = document.get("profiles") or [{}]
    for item in profiles:
        if profile is None or item.get("schedulerName", "default-scheduler") == profile:
            return dict(item)
    return {}


def _profile_plugins(document: Mapping[str, Any] | None, profile: str | None) -> set[str]:
    return set() if document is None else _enabled_plugins(_select_profile(document, profile))


def _nrt_args(document: Mapping[str, Any], profile: str | None) -> Mapping[str, Any]:
    for entry in _select_profile(document, profile).get("pluginConfig") or []:
        if isinstance(entry, Mapping) and entry.get("name") == NRT_MATCH:
            args = entry.get("args") or {}
            return args if isinstance(args, Mapping) else {}
    return {}


def _with_nrt_args(
    document: Mapping[str, Any], profile: str | None, args: Mapping[str, Any]
) -> dict[str, Any]:
    """A copy of the configuration whose (selected) profile has ``args`` for NodeResourceTopologyMatch."""
    copy: dict[str, Any] = json.loads(json.dumps(document))
    profiles = copy.setdefault("profiles", [{}]) or [{}]
    copy["profiles"] = profiles
    for item in profiles:
        if profile is not None and item.get("schedulerName", "default-scheduler") != profile:
            continue
        entries = item.setdefault("pluginConfig", [])
        for entry in entries:
            if entry.get("name") == NRT_MATCH:
                entry["args"] = dict(args)
                break
        else:
            entries.append({"name": NRT_MATCH, "args": dict(args)})
        break
    return copy


def _cache_of(args: Mapping[str, Any]) -> tuple[str, int]:
    """Which cache the plugin's args select (scheduler-plugins ``pluginhelpers.go``), and the period."""
    if args.get("discardReservedNodes") is True:
        return DISCARDRESERVED, 0
    period = args.get("cacheResyncPeriodSeconds", 0)
    period = period if isinstance(period, int) and not isinstance(period, bool) else 0
    return (OVERRESERVE, period) if period > 0 else (PASSTHROUGH, 0)


def _percentage(where: _Where, name: str, document: Mapping[str, Any] | None) -> int:
    if document is None:
        return 0
    value = document.get("percentageOfNodesToScore", 0) or 0
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
        raise where.error(
            f"schedulers[{name}].config.percentageOfNodesToScore", f"expected 0..100, got {value!r}"
        )
    return value


def group_config(group: NodeGroupSpec) -> Config:
    """The group's kubelet configuration (its ``kubeletVersion`` winning over the files')."""
    config = parse_config(group.config_text, group.config_source) if group.config_text.strip() else Config()
    if group.kubelet_version is not None:
        config = dataclasses.replace(
            config, emulator=dataclasses.replace(config.emulator, kubelet_version=group.kubelet_version)
        )
        check_feature_gates(config)
    return config


# ---- parsing -------------------------------------------------------------------------------------------


def load_fleet(path: str | os.PathLike[str]) -> FleetSpec:
    try:
        text = read_text(path)
    except SimulationError as err:  # as a Simulation file: "cannot read", "not UTF-8 text"
        raise FleetError(str(err)) from None
    return parse_fleet(text, str(path), Path(path).parent)


def parse_fleet(text: str, source: str = "<fleet>", base_dir: str | os.PathLike[str] = ".") -> FleetSpec:
    where = _Where(source)
    doc = one_document(where, text, KIND)
    _known(where, "", doc, _TOP_KEYS)
    base = Path(base_dir)
    seed = read.integer(where, "seed", doc.get("seed", 1))
    version = _scheduler_version(where, "schedulerVersion", doc.get("schedulerVersion"))
    groups = _node_groups(where, base, doc.get("nodeGroups"))
    exporter = _exporter(where, doc.get("exporter"))
    controllers = _controllers(where, doc.get("controllers"))
    binding = _binding(where, doc.get("binding"))
    parallelism = _positive_int(where, "parallelism", doc.get("parallelism", 1))
    schedulers = _schedulers(where, base, doc.get("schedulers"))
    workload = _workload(where, base, doc.get("workload"))
    matrix = _matrix(where, doc.get("matrix"), schedulers, exporter, seed)
    spec = FleetSpec(
        source, groups, exporter, schedulers, workload, matrix, version or scheduler_versions.DEFAULT_VERSION,
        controllers, binding, parallelism,
    )  # fmt: skip
    spec.configurations()  # every configuration's scheduler is built once here: bad input fails now
    return spec


def _known(where: _Where, path: str, mapping: Mapping[str, Any], keys: Sequence[str]) -> None:
    prefix = f"{path}." if path else ""
    for key in mapping:
        removed = _REMOVED.get(f"{prefix}{key}")
        if removed is not None:
            raise where.error(f"{prefix}{key}", removed)
    read.known_fields(where, path, mapping, keys)


def _scheduler_version(where: _Where, path: str, raw: Any) -> str | None:
    """A kube-scheduler minor version the queue is exact to (``1.33`` or ``v1.33.2``: the minor counts)."""
    if raw is None:
        return None
    text = read.scalar_text(where, path, raw).strip().removeprefix("v")
    minor = ".".join(text.split(".")[:2])
    try:
        return scheduler_versions.check_version(minor)
    except ValueError:
        supported = ", ".join(scheduler_versions.SUPPORTED)
        raise where.error(path, f"{raw!r}: supported kube-scheduler versions: {supported}") from None


def _resolve(base: Path, value: str) -> str:
    return value if os.path.isabs(value) else str(base / value)


def duration(where: _Where, path: str, value: Any, *, allow_zero: bool = True) -> float:
    """Seconds from a number or a Go duration (``10s``, ``1m30s``, ``500ms``); never negative."""
    if isinstance(value, bool) or value is None:
        raise where.error(path, f"expected a duration (e.g. 10s) or seconds, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = read.string(where, path, value)
        try:
            seconds = parse_duration(text)
        except ValueError as err:
            raise where.error(path, str(err)) from None
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise where.error(path, f"must be {'at least 0' if allow_zero else 'positive'}, got {value!r}")
    return seconds


_EXTENDER_ARGS = ("weight", "closeOn", "ttl", "feedLatency")


def _extender_args(where: _Where, path: str, value: Any) -> ExtenderSettings:
    """The ``extender`` setup's args (kubeletemu.fleet.cycle.extender); each has the default shown above."""
    args = read.mapping(where, path, value)
    _known(where, path, args, _EXTENDER_ARGS)
    defaults = ExtenderSettings()
    weight = read.integer(where, f"{path}.weight", args.get("weight", defaults.weight))
    if weight < 1:
        raise where.error(f"{path}.weight", f"must be positive, got {weight}")
    close_on = read.string(where, f"{path}.closeOn", args.get("closeOn", defaults.close_on))
    if close_on not in CLOSING_RULES:
        raise where.error(f"{path}.closeOn", f"expected one of {', '.join(CLOSING_RULES)}, got {close_on!r}")
    ttl = duration(where, f"{path}.ttl", args.get("ttl", defaults.ttl_s), allow_zero=False)
    latency = duration(where, f"{path}.feedLatency", args.get("feedLatency", defaults.feed_latency_s))
    return ExtenderSettings(weight, close_on, ttl, latency)


def _positive_int(where: _Where, path: str, value: Any) -> int:
    number = read.integer(where, path, value)
    if number < 1:
        raise where.error(path, f"must be at least 1, got {number}")
    return number


def parse_node_groups(source: str, base_dir: str | os.PathLike[str], raw: Any) -> tuple[NodeGroupSpec, ...]:
    """A ``nodeGroups`` list as a Fleet file has it, for the other files that describe nodes
    (``kubeletemu nodes``' ``kind: Nodes``); errors are :class:`FleetError` naming ``source``."""
    return _node_groups(_Where(source), Path(base_dir), raw)


def parse_distribution(source: str, path: str, raw: Any, *, allow_zero: bool = False) -> Distribution:
    """A duration distribution as ``workload.startupLatency`` has it (``{uniform: [1s, 3s]}``...)."""
    return _distribution(_Where(source), path, raw, allow_zero=allow_zero)


def _node_groups(where: _Where, base: Path, raw: Any) -> tuple[NodeGroupSpec, ...]:
    items = read.sequence(where, "nodeGroups", raw)
    if not items:
        raise where.error("nodeGroups", "expected at least one node group")
    groups: list[NodeGroupSpec] = []
    names: set[str] = set()
    for index, item in enumerate(items):
        path = f"nodeGroups[{index}]"
        group = read.mapping(where, path, item)
        _known(where, path, group, _GROUP_KEYS)
        name = read.string(where, f"{path}.name", group.get("name", f"group{index}"))
        if not name or not all((c.isalnum() and c.islower()) or c.isdigit() or c == "-" for c in name):
            raise where.error(f"{path}.name", f"{name!r}: expected lowercase letters, digits and '-'")
        if name in names:
            raise where.error(f"{path}.name", f"duplicate node group {name!r}")
        names.add(name)
        count = _positive_int(where, f"{path}.count", group.get("count", 1))
        topology = _topology(where, base, f"{path}.topology", group.get("topology"))
        raw_config = group.get("config")
        if isinstance(raw_config, Mapping):  # one inline KubeletConfiguration (or EmulatorConfiguration)
            files = []
            texts = [yaml.safe_dump(json.loads(json.dumps(raw_config)), sort_keys=False)]
            config_source = f"{where.source}: {path}.config"
        else:
            listed = (
                [raw_config]
                if isinstance(raw_config, str)
                else read.sequence(where, f"{path}.config", raw_config)
            )
            files = [
                _resolve(base, read.string(where, f"{path}.config[{i}]", p)) for i, p in enumerate(listed)
            ]
            texts = []
            for file in files:
                try:
                    texts.append(Path(file).read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError) as err:
                    raise where.error(f"{path}.config", f"{file}: cannot read: {err}") from None
            config_source = ", ".join(files) or "<defaults>"
        version: str | None = None
        if group.get("kubeletVersion") is not None:
            try:
                version = parse_version(
                    read.scalar_text(where, f"{path}.kubeletVersion", group["kubeletVersion"])
                )
            except ValueError as err:
                raise where.error(f"{path}.kubeletVersion", str(err)) from None
        labels = read.string_map(where, f"{path}.labels", group.get("labels"))
        spec = NodeGroupSpec(
            name,
            count,
            topology,
            "\n---\n".join(texts),
            config_source,
            version,
            tuple(sorted(labels.items())),
        )
        try:
            if files:
                load_config(files, version)  # the files' own names in any error
            group_config(spec)
        except ConfigError as err:
            raise where.error(f"{path}.config", str(err)) from None
        groups.append(spec)
    return tuple(groups)


def _topology(where: _Where, base: Path, path: str, raw: Any) -> TopologySource:
    """As a Simulation's ``topology`` (:func:`kubeletemu.simulate.spec.parse_topology`); probed here once
    to fail early."""
    source = parse_topology(where, base, raw, path)
    try:
        source.machine()
    except SimulationError as err:
        raise where.error(path, str(err)) from None
    return source


def _exporter(where: _Where, raw: Any) -> ExporterSpec:
    exporter = read.mapping(where, "exporter", raw)
    _known(where, "exporter", exporter, _EXPORTER_KEYS)
    kind = read.string(where, "exporter.type", exporter.get("type", RTE))
    if kind not in EXPORTER_TYPES:
        raise where.error("exporter.type", f"{kind!r}: expected one of {', '.join(EXPORTER_TYPES)}")
    period = duration(where, "exporter.period", exporter.get("period", "60s"))
    if kind == NFD:
        for key in ("notifyFile", "maxEventsPerSecond", "fingerprintMethod"):
            if key in exporter:
                raise where.error(
                    f"exporter.{key}", f"only with type {RTE} (nfd-topology-updater has no such option)"
                )
    elif "kubeletStateDir" in exporter:
        raise where.error("exporter.kubeletStateDir", f"only with type {NFD}")
    notify = read.boolean(where, "exporter.notifyFile", exporter.get("notifyFile", False))
    state_dir = read.boolean(where, "exporter.kubeletStateDir", exporter.get("kubeletStateDir", True))
    rate = read.integer(where, "exporter.maxEventsPerSecond", exporter.get("maxEventsPerSecond", 1))
    if rate < 0:
        raise where.error("exporter.maxEventsPerSecond", f"must be at least 0, got {rate}")
    if period == 0 and not (notify if kind == RTE else state_dir):
        trigger = "notifyFile" if kind == RTE else "kubeletStateDir"
        raise where.error("exporter", f"period 0 (no ticker) needs {trigger}, or no NRT is ever refreshed")
    default_method = FINGERPRINT_METHODS[0] if kind == RTE else "all"
    method = read.string(
        where, "exporter.fingerprintMethod", exporter.get("fingerprintMethod", default_method)
    )
    if method not in FINGERPRINT_METHODS:
        raise where.error(
            "exporter.fingerprintMethod", f"{method!r}: expected one of {', '.join(FINGERPRINT_METHODS)}"
        )
    return ExporterSpec(period, kind, notify, rate, state_dir, method)


def _controllers(where: _Where, raw: Any) -> ControllersSpec:
    controllers = read.mapping(where, "controllers", raw)
    _known(where, "controllers", controllers, _CONTROLLERS_KEYS)
    replica_set, job = (_delays(where, controllers, key) for key in ("replicaSet", "job"))
    gc = read.mapping(where, "controllers.podGC", controllers.get("podGC"))
    _known(where, "controllers.podGC", gc, ("terminatedPodThreshold",))
    threshold = read.integer(
        where, "controllers.podGC.terminatedPodThreshold",
        gc.get("terminatedPodThreshold", DEFAULT_TERMINATED_POD_GC_THRESHOLD),
    )  # fmt: skip
    if threshold < 0:
        raise where.error("controllers.podGC.terminatedPodThreshold", f"must be at least 0, got {threshold}")
    return ControllersSpec(replica_set, threshold, job)


def _delays(where: _Where, controllers: Mapping[str, Any], key: str) -> ReplicaSetSpec:
    """A controller's ``{informerDelay, syncDelay}``."""
    path = f"controllers.{key}"
    raw = read.mapping(where, path, controllers.get(key))
    _known(where, path, raw, ("informerDelay", "syncDelay"))
    defaults = ReplicaSetSpec()
    return ReplicaSetSpec(
        duration(where, f"{path}.informerDelay", raw.get("informerDelay", defaults.informer_delay_s)),
        duration(where, f"{path}.syncDelay", raw.get("syncDelay", defaults.sync_delay_s)),
    )


def _binding(where: _Where, raw: Any) -> BindingSpec:
    binding = read.mapping(where, "binding", raw)
    _known(where, "binding", binding, ("latency", "failureRate", "kubeletWatchLatency"))
    defaults = BindingSpec()
    latency, watch = (
        defaults_value
        if binding.get(key) is None
        else _distribution(where, f"binding.{key}", binding[key], allow_zero=True)
        for key, defaults_value in (
            ("latency", defaults.latency),
            ("kubeletWatchLatency", defaults.watch_latency),
        )
    )
    rate = binding.get("failureRate", 0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate < 1:
        raise where.error("binding.failureRate", f"expected a fraction in [0, 1), got {rate!r}")
    return BindingSpec(latency, float(rate), watch)


def _schedulers(where: _Where, base: Path, raw: Any) -> tuple[_Scheduler, ...]:
    items = read.sequence(where, "schedulers", raw)
    if not items:
        raise where.error("schedulers", "expected at least one scheduler")
    out: list[_Scheduler] = []
    for index, item in enumerate(items):
        path = f"schedulers[{index}]"
        entry = read.mapping(where, path, item)
        _known(where, path, entry, _SCHEDULER_KEYS)
        name = read.string(where, f"{path}.name", entry.get("name"))
        if not name or "/" in name or name in {s.name for s in out}:
            raise where.error(f"{path}.name", f"{name!r}: expected a unique name without '/'")
        version = _scheduler_version(where, f"{path}.schedulerVersion", entry.get("schedulerVersion"))
        if ("model" in entry) == ("config" in entry):
            raise where.error(path, "expected exactly one of model, config")
        if "model" in entry:
            model = read.string(where, f"{path}.model", entry["model"])
            if "profile" in entry:
                raise where.error(f"{path}.profile", "only with config")
            if model == EXTENDER:
                settings = _extender_args(where, f"{path}.args", entry.get("args"))
                out.append(_Scheduler(name, EXTENDER, None, None, version, extender=settings))
                continue
            if model in (*EXACT_SETUPS, DEFAULT):
                count_assumed = True
                if model in EXACT_SETUPS:
                    exact_args = read.mapping(where, f"{path}.args", entry.get("args"))
                    _known(where, f"{path}.args", exact_args, ("countAssumedPods",))
                    count_assumed = read.boolean(
                        where, f"{path}.args.countAssumedPods", exact_args.get("countAssumedPods", True)
                    )
                elif "args" in entry:
                    raise where.error(f"{path}.args", f"model {model} takes no args")
                kind = model if model in EXACT_SETUPS else "profile"
                out.append(_Scheduler(name, kind, None, None, version, count_assumed))
                continue
            if model not in MODELS:
                known = ", ".join([DEFAULT, *EXACT_SETUPS, EXTENDER, *MODELS])
                raise where.error(f"{path}.model", f"unknown scheduler {model!r}: expected one of {known}")
            args = read.mapping(where, f"{path}.args", entry.get("args"))
            document = {
                **_PLUGIN_TEMPLATE,
                "profiles": [
                    {
                        "schedulerName": name,
                        "plugins": {"multiPoint": {"enabled": [{"name": model}]}},
                        "pluginConfig": [{"name": model, "args": json.loads(json.dumps(args))}],
                    }
                ],
            }
            out.append(_Scheduler(name, "profile", document, name, version))
            continue
        if "args" in entry:
            raise where.error(
                f"{path}.args", "only with model (put args in the configuration's pluginConfig)"
            )
        raw_config = entry["config"]
        if isinstance(raw_config, str):
            file = _resolve(base, raw_config)
            try:
                text = Path(file).read_text(encoding="utf-8")
            except OSError as err:
                raise where.error(f"{path}.config", f"{file}: cannot read: {err.strerror or err}") from None
            config_source = file
        else:
            text = yaml.safe_dump(json.loads(json.dumps(read.mapping(where, f"{path}.config", raw_config))))
            config_source = f"{where.source}: {path}.config"
        profile = (
            None if entry.get("profile") is None else read.string(where, f"{path}.profile", entry["profile"])
        )
        try:
            profiles = parse_profiles(text, config_source)
        except ConfigError as err:
            raise where.error(f"{path}.config", str(err)) from None
        if profile is not None and profile not in profiles:
            raise where.error(f"{path}.profile", f"no profile {profile!r} (profiles: {', '.join(profiles)})")
        out.append(_Scheduler(name, "profile", yaml.safe_load(text), profile, version))
    return tuple(out)


def _distribution(where: _Where, path: str, raw: Any, *, allow_zero: bool = False) -> Distribution:
    """``{fixed: D}``, ``{exponential: MEAN}`` or ``{uniform: [MIN, MAX]}`` (durations)."""
    body = read.mapping(where, path, raw)
    if len(body) != 1:
        raise where.error(path, f"expected exactly one of {', '.join(KINDS)}")
    ((kind, value),) = body.items()
    at = f"{path}.{kind}"
    if kind in (FIXED, EXPONENTIAL):
        return Distribution(kind, duration(where, at, value, allow_zero=allow_zero))
    if kind == UNIFORM:
        bounds = read.sequence(where, at, value)
        if len(bounds) != 2:
            raise where.error(at, "expected [min, max]")
        low = duration(where, f"{at}[0]", bounds[0])
        high = duration(where, f"{at}[1]", bounds[1], allow_zero=allow_zero)
        if low > high:
            raise where.error(at, f"min {bounds[0]} is above max {bounds[1]}")
        return Distribution(kind, low, high)
    raise where.error(path, f"unknown distribution {kind!r}: expected {', '.join(KINDS)}")


def _lifetime(where: _Where, raw: Any) -> Lifetime:
    return Lifetime() if raw is None else _distribution(where, "workload.lifetime", raw)


def _rate(where: _Where, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise where.error("workload.rate", f"expected pods per second (a number), got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise where.error("workload.rate", f"must be positive, got {value!r}")
    return float(value)


def _workload(where: _Where, base: Path, raw: Any) -> WorkloadSpec:
    workload = read.mapping(where, "workload", raw)
    _known(where, "workload", workload, _WORKLOAD_KEYS)
    drain = duration(where, "workload.drain", workload.get("drain", "300s"))
    lifetime = _lifetime(where, workload.get("lifetime"))
    startup = (
        DEFAULT_STARTUP_LATENCY
        if workload.get("startupLatency") is None
        else _distribution(where, "workload.startupLatency", workload["startupLatency"], allow_zero=True)
    )
    if ("templates" in workload) == ("trace" in workload):
        raise where.error("workload", "expected exactly one of templates (with rate and total), trace")
    if "trace" in workload:
        for key in ("rate", "total"):
            if key in workload:
                raise where.error(f"workload.{key}", "not with trace: the trace gives the arrivals")
        trace = _trace(where, _resolve(base, read.string(where, "workload.trace", workload["trace"])))
        return WorkloadSpec(lifetime=lifetime, trace=trace, drain_s=drain, startup_latency=startup)
    templates: list[Template] = []
    for index, item in enumerate(read.sequence(where, "workload.templates", workload["templates"])):
        path = f"workload.templates[{index}]"
        entry = read.mapping(where, path, item)
        _known(where, path, entry, ("weight", "replicas", "pod", "controller", "backoffLimit"))
        replicas: int | None = None
        weight: Any = 0.0
        controller = read.string(where, f"{path}.controller", entry.get("controller", REPLICA_SET))
        if controller not in CONTROLLER_KINDS:
            raise where.error(
                f"{path}.controller", f"{controller!r}: expected one of {', '.join(CONTROLLER_KINDS)}"
            )
        backoff_limit = DEFAULT_BACKOFF_LIMIT
        if "backoffLimit" in entry:
            if controller != JOB:
                raise where.error(f"{path}.backoffLimit", "only with controller: Job")
            backoff_limit = read.integer(where, f"{path}.backoffLimit", entry["backoffLimit"])
            if backoff_limit < 0:
                raise where.error(f"{path}.backoffLimit", f"must be at least 0, got {backoff_limit}")
        if "replicas" in entry and controller != REPLICA_SET:
            raise where.error(f"{path}.replicas", f"only with controller: {REPLICA_SET}")
        if "replicas" in entry:
            if "weight" in entry:
                raise where.error(
                    f"{path}.weight", "not with replicas: a ReplicaSet's pods are not in the arrival process"
                )
            replicas = _positive_int(where, f"{path}.replicas", entry["replicas"])
        else:
            weight = entry.get("weight", 1)
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
                raise where.error(f"{path}.weight", f"must be a positive number, got {weight!r}")
        manifest = read.mapping(where, f"{path}.pod", entry.get("pod"))
        try:
            pod = pod_from_manifest(manifest, source=f"{where.source}: {path}.pod")
        except ManifestError as err:
            raise FleetError(str(err)) from None
        if pod.name in {t.name for t in templates}:
            raise where.error(f"{path}.pod.metadata.name", f"duplicate template name {pod.name!r}")
        templates.append(
            Template(
                pod.name,
                float(weight),
                json.dumps(manifest, sort_keys=True),
                replicas,
                controller,
                backoff_limit,
            )
        )
    if not templates:
        raise where.error("workload.templates", "expected at least one pod template")
    if not any(t.replicas is None for t in templates):
        for key in ("rate", "total"):
            if key in workload:
                raise where.error(f"workload.{key}", "only with weighted templates (the arrival process)")
        return WorkloadSpec(tuple(templates), 0.0, 0, lifetime, (), drain, startup)
    if "rate" not in workload:
        raise where.error("workload.rate", "required with weighted templates")
    rate = _rate(where, workload["rate"])
    total = _positive_int(where, "workload.total", workload.get("total"))
    return WorkloadSpec(tuple(templates), rate, total, lifetime, (), drain, startup)


def _trace(where: _Where, file: str) -> tuple[TraceEntry, ...]:
    try:
        # Decoded once: the pods are read from the documents kept as the trace's manifests.
        decoded = decode_documents(Path(file).read_text(encoding="utf-8"), file)
        pods = pods_from_documents(decoded, file)
        documents = [d for d in decoded if d is not None]
    except YAMLSyntaxError as err:
        raise where.error("workload.trace", f"{file}: invalid YAML: {err}") from None
    except ManifestError as err:  # it names the file
        raise where.error("workload.trace", str(err)) from None
    except OSError as err:
        raise where.error("workload.trace", f"{file}: {err.strerror or err}") from None
    entries: list[TraceEntry] = []
    trace_where = _Where(file)
    for index, (pod, manifest) in enumerate(zip(pods, documents, strict=True)):
        path = f"document {index + 1}: metadata.annotations"
        if ARRIVAL_ANNOTATION not in pod.annotations:
            raise trace_where.error(f"{path}[{ARRIVAL_ANNOTATION}]", "required: the pod's arrival time")
        at = duration(
            trace_where, f"{path}[{ARRIVAL_ANNOTATION}]", _number_or_text(pod.annotations[ARRIVAL_ANNOTATION])
        )
        life = pod.annotations.get(LIFETIME_ANNOTATION)
        lifetime = (
            None
            if life is None
            else duration(
                trace_where, f"{path}[{LIFETIME_ANNOTATION}]", _number_or_text(life), allow_zero=False
            )
        )
        entries.append(TraceEntry(at, lifetime, json.dumps(manifest, sort_keys=True)))
    if not entries:
        raise where.error("workload.trace", f"{file} holds no pod")
    names = [json.loads(e.manifest)["metadata"]["name"] for e in entries]
    if len(set(names)) != len(names):
        raise where.error("workload.trace", f"{file}: pod names must be unique")
    return tuple(sorted(entries, key=lambda e: e.at))


def _number_or_text(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def _matrix(
    where: _Where, raw: Any, schedulers: tuple[_Scheduler, ...], exporter: ExporterSpec, seed: int
) -> _Matrix:
    matrix = read.mapping(where, "matrix", raw)
    _known(where, "matrix", matrix, _MATRIX_KEYS)
    names = tuple(
        read.string(where, f"matrix.schedulers[{i}]", s)
        for i, s in enumerate(read.sequence(where, "matrix.schedulers", matrix.get("schedulers")))
    ) or tuple(s.name for s in schedulers)
    known = {s.name for s in schedulers}
    for i, name in enumerate(names):
        if name not in known:
            raise where.error(
                f"matrix.schedulers[{i}]",
                f"unknown scheduler {name!r}: expected one of {', '.join(sorted(known))}",
            )
    caches = tuple(
        read.string(where, f"matrix.caches[{i}]", c)
        for i, c in enumerate(read.sequence(where, "matrix.caches", matrix.get("caches")))
    )
    for i, cache in enumerate(caches):
        if cache not in CACHES:
            raise where.error(
                f"matrix.caches[{i}]", f"unknown cache {cache!r}: expected one of {', '.join(CACHES)}"
            )
    resyncs = tuple(
        duration(where, f"matrix.resyncPeriods[{i}]", r, allow_zero=False)
        for i, r in enumerate(read.sequence(where, "matrix.resyncPeriods", matrix.get("resyncPeriods")))
    )
    for i, resync in enumerate(resyncs):
        if resync != int(resync):
            raise where.error(
                f"matrix.resyncPeriods[{i}]", f"{resync:g}s: cacheResyncPeriodSeconds is whole seconds"
            )
    if resyncs and OVERRESERVE not in caches:
        raise where.error("matrix.resyncPeriods", "only with overreserve in matrix.caches")
    periods = tuple(
        duration(where, f"matrix.exporterPeriods[{i}]", p)
        for i, p in enumerate(read.sequence(where, "matrix.exporterPeriods", matrix.get("exporterPeriods")))
    ) or (exporter.period_s,)
    trigger = exporter.notify_file if exporter.type == RTE else exporter.kubelet_state_dir
    for i, period in enumerate(periods):
        if period == 0 and not trigger:
            needs = "exporter.notifyFile" if exporter.type == RTE else "exporter.kubeletStateDir"
            raise where.error(f"matrix.exporterPeriods[{i}]", f"0 (no ticker) needs {needs}")
    seeds = tuple(
        read.integer(where, f"matrix.seeds[{i}]", s)
        for i, s in enumerate(read.sequence(where, "matrix.seeds", matrix.get("seeds")))
    ) or (seed,)
    for axis, values in (("schedulers", names), ("caches", caches), ("resyncPeriods", resyncs),
                         ("exporterPeriods", periods), ("seeds", seeds)):  # fmt: skip
        if len(set(values)) != len(values):
            raise where.error(f"matrix.{axis}", "a value is given twice")
    # Caches apply per scheduler; expanded with one resync per overreserve only (see _configuration).
    return _Matrix(names, caches, resyncs, periods, seeds)
