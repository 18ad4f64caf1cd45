"""The NodeResourceTopologyMatch plugin args that configure its cache, from a ``pluginConfig`` entry of a
``KubeSchedulerConfiguration`` (scheduler-plugins ``apis/config`` v1 types, ``SetDefaults_*`` and
``validation`` at commit 903da7df82cb8794dda8f2d510ba1156111662dd).

Read (camelCase, as in the YAML): ``cacheResyncPeriodSeconds`` (int64, absent = 0), ``discardReservedNodes``
(bool), ``cache: {foreignPodsDetect, resyncMethod, informerMode, resyncScope}``, ``preemptionMode``.
``scoringStrategy`` belongs to the Filter/Score model and is not read here. Defaults as
``SetDefaults_NodeResourceTopologyMatchArgs``: foreignPodsDetect ``All``, resyncMethod ``Autodetect``,
informerMode ``Dedicated``, preemptionMode ``Disabled``; ``resyncScope`` is not defaulted there (the cache
falls back to ``All`` when it is absent).

The plugin validates only ``preemptionMode`` (and the scoring strategy) and accepts any string for the four
cache enums, acting on an unknown value as: resyncMethod → ``All``, foreignPodsDetect → ``All``,
informerMode → ``Shared``, resyncScope → ``OnlyResources``. A typo there silently changes behaviour, so by
default an unknown value is refused (``Unsupported value``, naming what the plugin would do);
``strict=False`` accepts it as the plugin does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeletemu.config import ConfigError, fields
from kubeletemu.golang import go_quote

PLUGIN_NAME = "NodeResourceTopologyMatch"
_INT64 = (-(1 << 63), (1 << 63) - 1)

FOREIGN_PODS_DETECT = ("None", "All", "OnlyExclusiveResources")
RESYNC_METHODS = ("Autodetect", "All", "OnlyExclusiveResources")
INFORMER_MODES = ("Shared", "Dedicated")
RESYNC_SCOPES = ("All", "OnlyResources")
PREEMPTION_MODES = ("Disabled", "Enabled")

# field -> (supported values, what the plugin does with any other value)
_CACHE_ENUMS = {
    "foreignPodsDetect": (FOREIGN_PODS_DETECT, "All"),
    "resyncMethod": (RESYNC_METHODS, "All"),
    "informerMode": (INFORMER_MODES, "Shared"),
    "resyncScope": (RESYNC_SCOPES, "OnlyResources"),
}


@dataclass(frozen=True)
class CacheConfig:
    """``NodeResourceTopologyCache``; None is an unset pointer."""

    foreign_pods_detect: str | None = None
    resync_method: str | None = None
    informer_mode: str | None = None
    resync_scope: str | None = None


@dataclass(frozen=True)
class CacheArgs:
    """The cache slice of ``NodeResourceTopologyMatchArgs``, defaulted."""

    cache_resync_period_seconds: int = 0
    discard_reserved_nodes: bool = False
    cache: CacheConfig = CacheConfig("All", "Autodetect", "Dedicated", None)
    preemption_mode: str = "Disabled"


def parse_cache_args(
    raw: Mapping[str, Any] | None, where: fields.Reporter | None = None, *, strict: bool = True
) -> CacheArgs:
    """Read, default and validate the args mapping; errors are :class:`ConfigError` (or ``where``'s)
    naming ``args.<field>``."""
    reporter: fields.Reporter = where or fields.Where(f"{PLUGIN_NAME} args")
    args = fields.mapping(reporter, "args", raw)
    period = fields.integer(
        reporter, "args.cacheResyncPeriodSeconds", args.get("cacheResyncPeriodSeconds", 0)
    )
    if not _INT64[0] <= period <= _INT64[1]:
        raise reporter.error(
            "args.cacheResyncPeriodSeconds", f"Invalid value: {period}: out of the int64 range"
        )
    discard = fields.boolean(reporter, "args.discardReservedNodes", args.get("discardReservedNodes", False))
    cache = fields.mapping(reporter, "args.cache", args.get("cache"))
    values: dict[str, str | None] = {}
    for key, (supported, fallback) in _CACHE_ENUMS.items():
        value = cache.get(key)
        if value is None:
            values[key] = None
            continue
        text = fields.string(reporter, f"args.cache.{key}", value)
        if strict and text not in supported:
            listed = ", ".join(go_quote(s) for s in supported)
            raise reporter.error(
                f"args.cache.{key}",
                f"Unsupported value: {go_quote(text)}: supported values: {listed} "
                f"(the plugin does not validate it and would act as {go_quote(fallback)})",
            )
        values[key] = text
    preemption = fields.string(reporter, "args.preemptionMode", args.get("preemptionMode", "Disabled"))
    if preemption not in PREEMPTION_MODES:
        # validation.ValidateNodeResourceTopologyMatchArgs's field.Invalid.
        raise reporter.error(
            "args.preemptionMode", f"Invalid value: {go_quote(preemption)}: invalid PreemptionMode"
        )
    return CacheArgs(
        cache_resync_period_seconds=period,
        discard_reserved_nodes=discard,
        cache=CacheConfig(
            foreign_pods_detect=_or_default(values["foreignPodsDetect"], "All"),
            resync_method=_or_default(values["resyncMethod"], "Autodetect"),
            informer_mode=_or_default(values["informerMode"], "Dedicated"),
            resync_scope=values["resyncScope"],
        ),
        preemption_mode=preemption,
    )


def _or_default(value: str | None, default: str) -> str:
    # An empty string is a set pointer upstream: only an absent field takes the default.
    return default if value is None else value


__all__ = ["CacheArgs", "CacheConfig", "ConfigError", "parse_cache_args"]
