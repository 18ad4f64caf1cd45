"""``NodeResourceTopologyMatchArgs``, read from a KubeSchedulerConfiguration ``pluginConfig`` entry's
``args`` as the scheduler decodes them: the one parser of these args, for the Filter/Score model
(:mod:`kubeletemu.scheduler.nrtmatch`) and the cache factory (:mod:`kubeletemu.scheduler.nrtcache`).

scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``: ``apis/config/v1/types.go`` (fields),
``apis/config/v1/defaults.go`` (``SetDefaults_NodeResourceTopologyMatchArgs``),
``apis/config/validation/validation_pluginargs.go`` (``ValidateNodeResourceTopologyMatchArgs``, called by
the plugin's ``New`` with a nil path):

- ``scoringStrategy`` absent: LeastAllocated with cpu and memory at weight 1. Present, its ``type`` is
  *not* defaulted (``{}`` fails validation), an empty ``resources`` becomes cpu and memory, and a weight
  of 0 becomes 1 (negative weights stay; scoring then uses 1);
- ``cache``: foreignPodsDetect All, resyncMethod Autodetect, informerMode Dedicated; resyncScope stays
  unset (the cache reads that as All). An empty string is a set pointer and is kept;
- ``preemptionMode`` Disabled; ``cacheResyncPeriodSeconds`` 0 (an ``*int64``: null is unset, a value
  outside int64 does not decode); ``discardReservedNodes`` false;
- validation refuses an unknown ``scoringStrategy.type`` or ``preemptionMode`` with the plugin's text
  (``scoringStrategy.type: Invalid value: "X": invalid ScoringStrategyType``; both at once as Go's
  aggregate ``[a, b]``); unknown fields are refused as the scheduler's strict decoder refuses them.

The plugin accepts any string for the four cache enums and acts on an unknown one as resyncMethod →
``All``, foreignPodsDetect → ``All``, informerMode → ``Shared``, resyncScope → ``OnlyResources``; so does
this parser by default (a config the real scheduler runs must run here, with the same effect).
``strict=True`` adds a check of ours for tools that want typos caught: such a value is refused
(``Unsupported value``, naming what the plugin would do).

Errors are the reporter's (:class:`~kubeletemu.config.ConfigError` naming the source and the field).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubeletemu.config import fields
from kubeletemu.golang import go_quote
from kubeletemu.scheduler.nrtmatch.allocation import (
    BALANCED_ALLOCATION,
    LEAST_ALLOCATED,
    LEAST_NUMA_NODES,
    MOST_ALLOCATED,
)

SCORING_STRATEGIES = (MOST_ALLOCATED, BALANCED_ALLOCATION, LEAST_ALLOCATED, LEAST_NUMA_NODES)
PREEMPTION_DISABLED = "Disabled"
PREEMPTION_ENABLED = "Enabled"
PREEMPTION_MODES = (PREEMPTION_DISABLED, PREEMPTION_ENABLED)
DEFAULT_SOURCE = "pluginConfig[NodeResourceTopologyMatch].args"
_T = TypeVar("_T")
_INT64 = (-(1 << 63), (1 << 63) - 1)

FOREIGN_PODS_DETECT = ("None", "All", "OnlyExclusiveResources")
RESYNC_METHODS = ("Autodetect", "All", "OnlyExclusiveResources")
INFORMER_MODES = ("Shared", "Dedicated")
RESYNC_SCOPES = ("All", "OnlyResources")
# cache field -> (supported values, what the plugin does with any other value)
_CACHE_ENUMS = {
    "foreignPodsDetect": (FOREIGN_PODS_DETECT, "All"),
    "resyncMethod": (RESYNC_METHODS, "All"),
    "informerMode": (INFORMER_MODES, "Shared"),
    "resyncScope": (RESYNC_SCOPES, "OnlyResources"),
}


@dataclass(frozen=True)
class ResourceSpec:
    name: str
    weight: int


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES

    def weights(self) -> dict[str, int]:
        """``resourceToWeightMap``: a repeated name keeps its last weight."""
        return {r.name: r.weight for r in self.resources}


@dataclass(frozen=True)
class NodeResourceTopologyCache:
    """``NodeResourceTopologyCache``, defaulted; None is an unset pointer."""

    foreign_pods_detect: str | None = "All"
    resync_method: str | None = "Autodetect"
    informer_mode: str | None = "Dedicated"
    resync_scope: str | None = None


# The names the model (``CacheArgs``) and the cache package (``CacheConfig``) have used for it.
CacheArgs = NodeResourceTopologyCache
CacheConfig = NodeResourceTopologyCache


@dataclass(frozen=True)
class NodeResourceTopologyMatchArgs:
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)
    cache_resync_period_seconds: int = 0
    discard_reserved_nodes: bool = False
    cache: NodeResourceTopologyCache = field(default_factory=NodeResourceTopologyCache)
    preemption_mode: str = PREEMPTION_DISABLED


_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "scoringStrategy",
    "cacheResyncPeriodSeconds",
    "discardReservedNodes",
    "cache",
    "preemptionMode",
)


class _Fields:
    """Field paths under ``prefix`` (where the args sit in the document, "" for the document itself)."""

    def __init__(self, where: fields.Reporter, prefix: str) -> None:
        self.where, self.prefix = where, prefix

    def path(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix and name else name or self.prefix

    def error(self, name: str, problem: str) -> Exception:
        return self.where.error(self.path(name), problem)

    def strict(self, name: str, obj: Mapping[str, Any], known: tuple[str, ...]) -> None:
        """The strict decoder's refusal of an unknown field (named inside the args, as Go names it)."""
        for key in obj:
            if key not in known:
                unknown = f"{name}.{key}" if name else key
                raise self.error("", f"strict decoding error: unknown field {go_quote(unknown)}")

    def optional_string(self, name: str, value: Any) -> str | None:
        return None if value is None else fields.string(self.where, self.path(name), value)


def parse_args(
    raw: Mapping[str, Any] | None,
    source: str = DEFAULT_SOURCE,
    *,
    where: fields.Reporter | None = None,
    prefix: str = "",
    strict: bool = False,
) -> NodeResourceTopologyMatchArgs:
    """Decode, default and validate ``args`` (None or ``{}``: every default). Errors name ``source`` (or
    go through ``where``) and the field, under ``prefix``; ``strict=True`` refuses unknown cache enums."""
    f = _Fields(where or fields.Where(source), prefix)
    obj = fields.mapping(f.where, f.path(""), raw)
    f.strict("", obj, _TOP_FIELDS)
    args = NodeResourceTopologyMatchArgs(
        scoring_strategy=_scoring_strategy(f, obj.get("scoringStrategy")),
        cache_resync_period_seconds=_period(f, obj.get("cacheResyncPeriodSeconds")),
        discard_reserved_nodes=False
        if obj.get("discardReservedNodes") is None
        else fields.boolean(f.where, f.path("discardReservedNodes"), obj["discardReservedNodes"]),
        cache=_cache(f, obj.get("cache"), strict),
        preemption_mode=_or_default(
            f.optional_string("preemptionMode", obj.get("preemptionMode")), PREEMPTION_DISABLED
        ),
    )
    _validate(f, args)
    return args


def _scoring_strategy(f: _Fields, raw: Any) -> ScoringStrategy:
    if raw is None:
        return ScoringStrategy()
    obj = fields.mapping(f.where, f.path("scoringStrategy"), raw)
    f.strict("scoringStrategy", obj, ("type", "resources"))
    kind = f.optional_string("scoringStrategy.type", obj.get("type")) or ""
    resources = []
    for i, item in enumerate(
        fields.sequence(f.where, f.path("scoringStrategy.resources"), obj.get("resources"))
    ):
        name = f"scoringStrategy.resources[{i}]"
        spec = fields.mapping(f.where, f.path(name), item)
        f.strict(name, spec, ("name", "weight"))
        resource = f.optional_string(f"{name}.name", spec.get("name")) or ""
        weight = spec.get("weight")
        weight = 0 if weight is None else fields.integer(f.where, f.path(f"{name}.weight"), weight)
        resources.append(ResourceSpec(resource, weight or 1))
    return ScoringStrategy(kind, tuple(resources) or DEFAULT_RESOURCES)


def _period(f: _Fields, raw: Any) -> int:
    if raw is None:
        return 0
    period = fields.integer(f.where, f.path("cacheResyncPeriodSeconds"), raw)
    if not _INT64[0] <= period <= _INT64[1]:
        raise f.error("cacheResyncPeriodSeconds", f"Invalid value: {period}: out of the int64 range")
    return period


def _cache(f: _Fields, raw: Any, strict: bool) -> NodeResourceTopologyCache:
    obj = fields.mapping(f.where, f.path("cache"), raw)
    f.strict("cache", obj, tuple(_CACHE_ENUMS))
    values: dict[str, str | None] = {}
    for key, (supported, fallback) in _CACHE_ENUMS.items():
        value = values[key] = f.optional_string(f"cache.{key}", obj.get(key))
        if strict and value is not None and value not in supported:
            listed = ", ".join(go_quote(s) for s in supported)
            raise f.error(
                f"cache.{key}",
                f"Unsupported value: {go_quote(value)}: supported values: {listed} "
                f"(the plugin does not validate it and would act as {go_quote(fallback)})",
            )
    defaults = NodeResourceTopologyCache()
    return NodeResourceTopologyCache(
        _or_default(values["foreignPodsDetect"], defaults.foreign_pods_detect),
        _or_default(values["resyncMethod"], defaults.resync_method),
        _or_default(values["informerMode"], defaults.informer_mode),
        values["resyncScope"],  # not defaulted: the cache reads unset as All
    )


def _or_default(value: str | None, default: _T) -> str | _T:
    # "" is a set pointer upstream: only an absent (or null) field takes the default.
    return default if value is None else value


def _validate(f: _Fields, args: NodeResourceTopologyMatchArgs) -> None:
    """``ValidateNodeResourceTopologyMatchArgs``; several errors print as Go's aggregate ``[a, b]``."""
    problems = []
    if args.scoring_strategy.type not in SCORING_STRATEGIES:
        problems.append(
            f"{f.path('scoringStrategy.type')}: Invalid value: {go_quote(args.scoring_strategy.type)}: "
            "invalid ScoringStrategyType"
        )
    if args.preemption_mode not in PREEMPTION_MODES:
        problems.append(
            f"{f.path('preemptionMode')}: Invalid value: {go_quote(args.preemption_mode)}: "
            "invalid PreemptionMode"
        )
    if len(problems) == 1:
        field_path, problem = problems[0].split(": ", 1)
        raise f.where.error(field_path, problem)
    if problems:
        raise f.where.error("", f"[{', '.join(problems)}]")
