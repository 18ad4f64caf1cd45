"""Which cache the NodeResourceTopologyMatch plugin builds from its args, and how it wires it
(scheduler-plugins ``pkg/noderesourcetopology/pluginhelpers.go`` ``initNodeTopologyInformer``,
``initNodeTopologyForeignPodsDetection`` and ``podprovider.NewFromHandle``, at commit
903da7df82cb8794dda8f2d510ba1156111662dd):

1. ``discardReservedNodes: true`` → discardreserved (the period is ignored);
2. else ``cacheResyncPeriodSeconds <= 0`` → passthrough;
3. else overreserve over the pod informer ``informerMode`` names (Dedicated only for exactly
   ``Dedicated``), with the foreign-pods detector unless ``foreignPodsDetect`` is ``None``
   (exclusive-only for exactly ``OnlyExclusiveResources``), and its resync loop started at ``now``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeletemu.config import fields
from kubeletemu.scheduler.nrtcache.discardreserved import DiscardReserved
from kubeletemu.scheduler.nrtcache.foreignpods import (
    FOREIGN_PODS_DETECT_NONE,
    FOREIGN_PODS_DETECT_ONLY_EXCLUSIVE_RESOURCES,
    ForeignPodsDetector,
)
from kubeletemu.scheduler.nrtcache.informers import (
    DEFAULT_SCHEDULER_NAME,
    InformerMode,
    InformerStore,
    pod_relevance,
)
from kubeletemu.scheduler.nrtcache.interface import Cache
from kubeletemu.scheduler.nrtcache.overreserve import OverReserve
from kubeletemu.scheduler.nrtcache.passthrough import Passthrough
from kubeletemu.scheduler.nrtmatch.args import NodeResourceTopologyMatchArgs, parse_args

PLUGIN_NAME = "NodeResourceTopologyMatch"


def parse_cache_args(
    raw: Mapping[str, Any] | None, where: fields.Reporter | None = None, *, strict: bool = False
) -> NodeResourceTopologyMatchArgs:
    """The plugin args, read by the plugin's one parser (:func:`.nrtmatch.args.parse_args`), errors naming
    ``args.<field>`` (through ``where``, else as ``NodeResourceTopologyMatch args``)."""
    return parse_args(raw, where=where or fields.Where(f"{PLUGIN_NAME} args"), prefix="args", strict=strict)


def informer_mode(args: NodeResourceTopologyMatchArgs) -> InformerMode:
    """``wantsDedicatedInformer``."""
    return InformerMode.DEDICATED if args.cache.informer_mode == "Dedicated" else InformerMode.SHARED


def cache_from_cache_args(
    args: NodeResourceTopologyMatchArgs,
    store: InformerStore,
    *,
    profile_names: Iterable[str] = (DEFAULT_SCHEDULER_NAME,),
    now: float = 0.0,
) -> Cache:
    """The cache the plugin's ``New`` builds; ``profile_names`` are the scheduler profiles whose pods are
    not foreign, ``now`` the simulated start time of the resync loop."""
    if args.discard_reserved_nodes:
        return DiscardReserved(store)
    if args.cache_resync_period_seconds <= 0:
        return Passthrough(store)
    mode = informer_mode(args)
    informer = store.pod_informer(mode)
    cache = OverReserve(
        store,
        informer,
        args.cache,
        is_pod_relevant=pod_relevance(mode),
        preemption_mode=args.preemption_mode,
    )
    detect = args.cache.foreign_pods_detect
    if detect != FOREIGN_PODS_DETECT_NONE:
        ForeignPodsDetector(
            cache,
            informer,
            profile_names,
            only_exclusive_resources=detect == FOREIGN_PODS_DETECT_ONLY_EXCLUSIVE_RESOURCES,
        )
    cache.start_resync_loop(args.cache_resync_period_seconds, now)
    return cache


def cache_from_args(
    raw: Mapping[str, Any] | None,
    store: InformerStore,
    *,
    where: fields.Reporter | None = None,
    profile_names: Iterable[str] = (DEFAULT_SCHEDULER_NAME,),
    now: float = 0.0,
    strict: bool = False,
) -> Cache:
    """Parse the plugin args (:func:`parse_cache_args`) and build the cache they select."""
    args = parse_cache_args(raw, where, strict=strict)
    return cache_from_cache_args(args, store, profile_names=profile_names, now=now)
