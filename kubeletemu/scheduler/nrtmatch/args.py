"""``NodeResourceTopologyMatchArgs``, read from a KubeSchedulerConfiguration ``pluginConfig`` entry's
``args`` as the scheduler decodes them.

scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``: ``apis/config/v1/types.go`` (fields),
``apis/config/v1/defaults.go`` (``SetDefaults_NodeResourceTopologyMatchArgs``),
``apis/config/validation/validation_pluginargs.go`` (``ValidateNodeResourceTopologyMatchArgs``):

- ``scoringStrategy`` absent: LeastAllocated with cpu and memory at weight 1. Present, its ``type`` is
  *not* defaulted (``{}`` fails validation), an empty ``resources`` becomes cpu and memory, and a weight
  of 0 becomes 1 (negative weights stay; scoring then uses 1);
- ``cache``: foreignPodsDetect All, resyncMethod Autodetect, informerMode Dedicated; resyncScope stays
  unset (the cache reads that as All). The plugin does not validate these names;
- ``preemptionMode`` Disabled; ``cacheResyncPeriodSeconds`` 0; ``discardReservedNodes`` false;
- validation refuses an unknown ``scoringStrategy.type`` or ``preemptionMode`` with the plugin's text
  (``scoringStrategy.type: Invalid value: "X": invalid ScoringStrategyType``); unknown fields are refused
  as the scheduler's strict decoder refuses them.

Errors are :class:`~kubeletemu.config.ConfigError` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.config import fields
from kubeletemu.config.errors import ConfigError
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
class CacheArgs:
    """``NodeResourceTopologyCache``, defaulted."""

    foreign_pods_detect: str = "All"
    resync_method: str = "Autodetect"
    informer_mode: str = "Dedicated"
    resync_scope: str | None = None


@dataclass(frozen=True)
class NodeResourceTopologyMatchArgs:
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)
    cache_resync_period_seconds: int = 0
    discard_reserved_nodes: bool = False
    cache: CacheArgs = field(default_factory=CacheArgs)
    preemption_mode: str = PREEMPTION_DISABLED


_TOP = ("apiVersion", "kind", "scoringStrategy", "cacheResyncPeriodSeconds", "discardReservedNodes", "cache")
_TOP_FIELDS = (*_TOP, "preemptionMode")
_CACHE_FIELDS = ("foreignPodsDetect", "resyncMethod", "informerMode", "resyncScope")


def _strict(where: fields.Where, path: str, obj: Mapping[str, Any], known: tuple[str, ...]) -> None:
    for key in obj:
        if key not in known:
            name = f"{path}.{key}" if path else key
            raise where.error("", f"strict decoding error: unknown field {go_quote(name)}")


def _optional_string(where: fields.Where, path: str, value: Any) -> str | None:
    return None if value is None else fields.string(where, path, value)


def parse_args(raw: Mapping[str, Any] | None, source: str = DEFAULT_SOURCE) -> NodeResourceTopologyMatchArgs:
    """Decode, default and validate ``args`` (None or ``{}``: every default)."""
    where = fields.Where(source)
    obj = fields.mapping(where, "", raw)
    _strict(where, "", obj, _TOP_FIELDS)

    strategy = ScoringStrategy()
    if obj.get("scoringStrategy") is not None:
        raw_strategy = fields.mapping(where, "scoringStrategy", obj["scoringStrategy"])
        _strict(where, "scoringStrategy", raw_strategy, ("type", "resources"))
        kind = _optional_string(where, "scoringStrategy.type", raw_strategy.get("type")) or ""
        resources = []
        for i, item in enumerate(
            fields.sequence(where, "scoringStrategy.resources", raw_strategy.get("resources"))
        ):
            path = f"scoringStrategy.resources[{i}]"
            spec = fields.mapping(where, path, item)
            _strict(where, path, spec, ("name", "weight"))
            name = _optional_string(where, f"{path}.name", spec.get("name")) or ""
            weight = (
                0 if spec.get("weight") is None else fields.integer(where, f"{path}.weight", spec["weight"])
            )
            resources.append(ResourceSpec(name, weight or 1))
        strategy = ScoringStrategy(kind, tuple(resources) or DEFAULT_RESOURCES)

    period = obj.get("cacheResyncPeriodSeconds")
    discard = obj.get("discardReservedNodes")
    cache = fields.mapping(where, "cache", obj.get("cache"))
    _strict(where, "cache", cache, _CACHE_FIELDS)
    defaults = CacheArgs()

    def cache_field(key: str, default: str | None) -> str | None:
        value = _optional_string(where, f"cache.{key}", cache.get(key))
        return default if value is None else value  # "" is kept, as a non-nil pointer is

    cache_args = CacheArgs(
        cache_field("foreignPodsDetect", defaults.foreign_pods_detect) or "",
        cache_field("resyncMethod", defaults.resync_method) or "",
        cache_field("informerMode", defaults.informer_mode) or "",
        cache_field("resyncScope", None),
    )
    preemption = _optional_string(where, "preemptionMode", obj.get("preemptionMode"))
    args = NodeResourceTopologyMatchArgs(
        scoring_strategy=strategy,
        cache_resync_period_seconds=0
        if period is None
        else fields.integer(where, "cacheResyncPeriodSeconds", period),
        discard_reserved_nodes=False
        if discard is None
        else fields.boolean(where, "discardReservedNodes", discard),
        cache=cache_args,
        preemption_mode=PREEMPTION_DISABLED if preemption is None else preemption,
    )
    _validate(where, args)
    return args


def _validate(where: fields.Where, args: NodeResourceTopologyMatchArgs) -> None:
    """``ValidateNodeResourceTopologyMatchArgs``; several errors print as Go's aggregate ``[a, b]``."""
    problems = []
    if args.scoring_strategy.type not in SCORING_STRATEGIES:
        problems.append(
            f"scoringStrategy.type: Invalid value: {go_quote(args.scoring_strategy.type)}: "
            "invalid ScoringStrategyType"
        )
    if args.preemption_mode not in PREEMPTION_MODES:
        problems.append(
            f"preemptionMode: Invalid value: {go_quote(args.preemption_mode)}: invalid PreemptionMode"
        )
    if len(problems) == 1:
        raise ConfigError(f"{where.source}: {problems[0]}")
    if problems:
        raise ConfigError(f"{where.source}: [{', '.join(problems)}]")
