"""Scheduler profiles from an unchanged ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``),
and one scheduling cycle of a pod over the nodes: every enabled filter on every node in input order (the
first failing filter decides, as ``RunFilterPlugins``), then the enabled scores of the nodes that passed,
weighted and summed (none of the modelled plugins has a score normaliser), and the node with the highest
total. The real scheduler picks at random among equal totals; here the first in input order wins, so a
run is reproducible.

Only the plugins that decide resource and NUMA fit are modelled (:data:`MODELS`); the other in-tree
plugins (node affinity, taints, spreading, volumes…) need inputs a NodeResourceTopology does not carry,
and are accepted in a configuration and left out; so is Koordinator's ``DeviceShare``, which runs inside
the ``NodeNUMAResource`` model (:data:`MODELLED_INSIDE`). Without a configuration the profile is the default
scheduler's resource part: ``NodeResourcesFit`` (filter and score, weight 1) and
``NodeResourcesBalancedAllocation`` (score, weight 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeletemu.config import ConfigError, fields
from kubeletemu.golang import go_quote
from kubeletemu.manifest.documents import YAMLSyntaxError, yaml_documents
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import (
    FILTER,
    SCORE,
    Decision,
    Model,
    NodeInfo,
    NodeVerdict,
    PluginPanic,
    PluginScore,
    Status,
)
from kubeletemu.scheduler.koordinator.model import node_numa_resource, node_numa_resource_design
from kubeletemu.scheduler.noderesourcesfit import (
    BALANCED_NAME,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
    NodeResourcesFitArgs,
    ResourceSpec,
)
from kubeletemu.scheduler.nrtmatch.args import parse_args
from kubeletemu.scheduler.nrtmatch.model import NodeResourceTopologyMatch
from kubeletemu.scheduler.objects import Cluster

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER = "default-scheduler"
EXTENSION_POINTS = ("multiPoint", "filter", "score")
# In-tree plugins that are accepted and not modelled (they need objects an NRT does not carry).
NOT_MODELLED = frozenset(
    {
        "PrioritySort",
        "DefaultBinder",
        "DefaultPreemption",
        "SchedulingGates",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "EBSLimits",
        "GCEPDLimits",
        "AzureDiskLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "ImageLocality",
        "DynamicResources",
    }
)
# Plugins modelled inside another model, accepted by name: Koordinator's DeviceShare always runs inside
# NodeNUMAResource (its PreFilter, Filter, Reserve and NUMA hints; see koordinator/model.py), so naming it
# changes nothing, and without NodeNUMAResource it is not modelled (its pluginConfig args are not read).
MODELLED_INSIDE = {"DeviceShare": "NodeNUMAResource"}
# (the plugin's pluginConfig args, where they come from for error messages) -> the model.
ModelFactory = Callable[[Mapping[str, Any] | None, str], Model]


def _fit(raw: Mapping[str, Any] | None, source: str) -> Model:
    return NodeResourcesFit(NodeResourcesFitArgs.from_args(raw, source))


def _balanced(raw: Mapping[str, Any] | None, source: str) -> Model:
    where = fields.Where(source)
    args = fields.mapping(where, "", raw)
    specs = tuple(
        ResourceSpec(
            fields.string(
                where, f"resources[{i}].name", fields.mapping(where, f"resources[{i}]", r).get("name")
            ),
            1,
        )
        for i, r in enumerate(fields.sequence(where, "resources", args.get("resources")))
    )
    return NodeResourcesBalancedAllocation(specs) if specs else NodeResourcesBalancedAllocation()


def _topology_match(raw: Mapping[str, Any] | None, source: str) -> Model:
    """scheduler-plugins' NodeResourceTopologyMatch. One cycle has no reservation history, so it reads the
    NRTs as published (the passthrough cache); the cache args are still decoded and validated."""
    return NodeResourceTopologyMatch(parse_args(raw, source))


def _koordinator(raw: Mapping[str, Any] | None, source: str) -> Model:
    """Koordinator's NodeNUMAResource, as shipped."""
    return node_numa_resource(raw, source)


def _koordinator_design(raw: Mapping[str, Any] | None, source: str) -> Model:
    """Koordinator's NUMA scheduling as its design document describes it (a name of our own)."""
    return node_numa_resource_design(raw, source)


# Plugin name -> how to build its model from its pluginConfig args.
MODELS: dict[str, ModelFactory] = {
    "NodeResourcesFit": _fit,
    BALANCED_NAME: _balanced,
    "NodeResourceTopologyMatch": _topology_match,
    "NodeNUMAResource": _koordinator,
    "NodeNUMAResourceDesign": _koordinator_design,
}


def register(name: str, factory: ModelFactory) -> None:
    MODELS[name] = factory


@dataclass(frozen=True)
class Profile:
    name: str
    filters: tuple[Model, ...] = ()
    scores: tuple[tuple[Model, int], ...] = ()

    @property
    def models(self) -> tuple[Model, ...]:
        seen: dict[int, Model] = {}
        for model in (*self.filters, *(m for m, _ in self.scores)):
            seen.setdefault(id(model), model)
        return tuple(seen.values())


def default_profile() -> Profile:
    fit = NodeResourcesFit()
    return Profile(DEFAULT_SCHEDULER, (fit,), ((fit, 1), (NodeResourcesBalancedAllocation(), 1)))


@dataclass
class _Where:
    source: str
    prefix: str = ""

    def error(self, path: str, problem: str) -> ConfigError:
        full = f"{self.prefix}.{path}" if self.prefix and path else (self.prefix or path)
        return ConfigError(f"{self.source}: {full}: {problem}" if full else f"{self.source}: {problem}")


@dataclass
class _Enabled:
    filter: list[str] = field(default_factory=list)
    score: dict[str, int] = field(default_factory=dict)


def _plugin_sets(where: _Where, plugins: Mapping[str, Any]) -> _Enabled:
    """Enabled filter and score plugins from ``multiPoint``, ``filter`` and ``score`` on top of the default
    resource plugins (``disabled: [{name: "*"}]`` drops the defaults of that point)."""
    enabled = _Enabled(["NodeResourcesFit"], {"NodeResourcesFit": 1, BALANCED_NAME: 1})
    for point in EXTENSION_POINTS:
        section = fields.mapping(where, f"plugins.{point}", plugins.get(point))
        for i, item in enumerate(
            fields.sequence(where, f"plugins.{point}.disabled", section.get("disabled"))
        ):
            name = fields.string(
                where, f"plugins.{point}.disabled[{i}].name", fields.mapping(where, "", item).get("name")
            )
            if name == "*":
                if point in ("multiPoint", "filter"):
                    enabled.filter.clear()
                if point in ("multiPoint", "score"):
                    enabled.score.clear()
                continue
            if point in ("multiPoint", "filter") and name in enabled.filter:
                enabled.filter.remove(name)
            if point in ("multiPoint", "score"):
                enabled.score.pop(name, None)
        for i, item in enumerate(fields.sequence(where, f"plugins.{point}.enabled", section.get("enabled"))):
            path = f"plugins.{point}.enabled[{i}]"
            plugin = fields.mapping(where, path, item)
            name = fields.string(where, f"{path}.name", plugin.get("name"))
            if name not in MODELS and name not in NOT_MODELLED and name not in MODELLED_INSIDE:
                raise where.error(f"{path}.name", f"unknown plugin {go_quote(name)}")
            weight = fields.integer(where, f"{path}.weight", plugin.get("weight", 0)) or 1
            if point in ("multiPoint", "filter") and name not in enabled.filter:
                enabled.filter.append(name)
            if point in ("multiPoint", "score"):
                enabled.score[name] = weight
    return enabled


def _build_models(
    source: str, index: int, enabled: _Enabled, args: Mapping[str, tuple[int, Any]]
) -> dict[str, Model]:
    """One model per enabled, modelled plugin (shared by its filter and score), from its pluginConfig."""
    built: dict[str, Model] = {}
    for plugin in [*enabled.filter, *enabled.score]:
        if plugin in built or plugin not in MODELS:
            continue
        at = args.get(plugin)
        where = (
            f"profiles[{index}].pluginConfig[{at[0]}].args"
            if at
            else f"profiles[{index}] ({plugin} defaults)"
        )
        built[plugin] = MODELS[plugin](at[1] if at else None, f"{source}: {where}")
    return built


def parse_profiles(text: str, source: str) -> dict[str, Profile]:
    """Every profile of a KubeSchedulerConfiguration, by ``schedulerName``."""
    try:
        documents = [d for d in yaml_documents(text) if d is not None]
    except YAMLSyntaxError as err:
        raise ConfigError(f"{source}: invalid YAML: {err}") from None
    where = _Where(source)
    if len(documents) != 1:
        raise where.error("", f"expected one KubeSchedulerConfiguration document, found {len(documents)}")
    doc = fields.mapping(where, "", documents[0])
    if doc.get("kind") != KIND:
        raise where.error("kind", f"expected {KIND}, got {doc.get('kind')!r}")
    if doc.get("apiVersion") != API_VERSION:
        version = go_quote(str(doc.get("apiVersion")))
        raise where.error(
            "apiVersion", f"Unsupported value: {version}: supported values: {go_quote(API_VERSION)}"
        )
    raw_profiles = fields.sequence(where, "profiles", doc.get("profiles")) or [{}]
    profiles: dict[str, Profile] = {}
    for p, raw in enumerate(raw_profiles):
        at = _Where(source, f"profiles[{p}]")
        profile = fields.mapping(at, "", raw)
        name = fields.string(at, "schedulerName", profile.get("schedulerName", DEFAULT_SCHEDULER))
        enabled = _plugin_sets(at, fields.mapping(at, "plugins", profile.get("plugins")))
        args: dict[str, tuple[int, Any]] = {}
        for c, item in enumerate(fields.sequence(at, "pluginConfig", profile.get("pluginConfig"))):
            entry = fields.mapping(at, f"pluginConfig[{c}]", item)
            plugin = fields.string(at, f"pluginConfig[{c}].name", entry.get("name"))
            args[plugin] = (c, entry.get("args"))
        built = _build_models(source, p, enabled, args)
        filters = tuple(built[n] for n in enabled.filter if n in built)
        scores = tuple((built[n], w) for n, w in enabled.score.items() if n in built)
        if name in profiles:
            raise at.error("schedulerName", f"Duplicate value: {go_quote(name)}")
        profiles[name] = Profile(name, filters, scores)
    return profiles


def profiles_from_text(text: str, name: str | None, source: str = "scheduler config") -> Profile:
    """The named profile (the first when unnamed) of a configuration given as text."""
    profiles = parse_profiles(text, source)
    if name is None:
        return next(iter(profiles.values()))
    if name not in profiles:
        raise ConfigError(f"{source}: no profile {go_quote(name)} (profiles: {', '.join(profiles)})")
    return profiles[name]


def load_profile(path: str | None, name: str | None) -> Profile:
    """The named profile of the file (the first when unnamed), or the default profile without a file."""
    if path is None:
        if name not in (None, DEFAULT_SCHEDULER):
            raise ConfigError(
                f"--profile {name}: no scheduler configuration given, only {DEFAULT_SCHEDULER} exists"
            )
        return default_profile()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    return profiles_from_text(text, name, path)


# ---- one scheduling cycle ----------------------------------------------------------------------------


def node_infos(cluster: Cluster) -> list[NodeInfo]:
    return [
        NodeInfo(
            name,
            cluster.nodes.get(name),
            cluster.topologies.get(name),
            tuple(cluster.pods_on(name)),
            cluster.devices.get(name),
            tuple(cluster.reservations_on(name)),
        )
        for name in cluster.node_names
    ]


def _policy(profile: Profile, pod: Pod, node: NodeInfo) -> str:
    """The policy the first NUMA-aware model of the profile applies to the pod on the node."""
    for model in profile.models:
        policy = model.policy(pod, node)
        if policy:
            return policy
    return ""


def evaluate(pod: Pod, node: NodeInfo, profile: Profile) -> NodeVerdict:
    """Filters in order (the first failure decides), then the weighted sum of the scores."""
    try:
        policy = _policy(profile, pod, node)
    except PluginPanic:
        policy = ""
    status = Status()
    for model in profile.filters:
        try:
            status = model.filter(pod, node)
        except PluginPanic as panic:
            return NodeVerdict(node.name, Status(), None, policy, panic.crash, FILTER)
        if not status.ok:
            return NodeVerdict(node.name, status, None, policy)
    scores = []
    for model, weight in profile.scores:
        try:
            scores.append(PluginScore(model.name, model.score(pod, node), weight))
        except PluginPanic as panic:
            return NodeVerdict(node.name, status, None, policy, panic.crash, SCORE)
    total = sum(s.score * s.weight for s in scores)
    return NodeVerdict(node.name, status, total, policy, plugin_scores=tuple(scores))


def schedule(pod: Pod, nodes: Sequence[NodeInfo], profile: Profile) -> Decision:
    decision = Decision(pod)
    best: int | None = None
    for node in nodes:
        verdict = evaluate(pod, node, profile)
        decision.nodes.append(verdict)
        if verdict.schedulable and verdict.score is not None and (best is None or verdict.score > best):
            best, decision.chosen = verdict.score, node.name
    return decision
