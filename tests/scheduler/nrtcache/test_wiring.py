"""How the plugin args pick and wire a cache: implementation choice, pod informers, foreign pods, the
resyncScope attribute watcher, and the args' errors."""

from __future__ import annotations

import pytest

from kubeletemu.config import ConfigError
from kubeletemu.pod import Container, Pod
from kubeletemu.podresources import fingerprint as pfp
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import UNSCHEDULABLE, NodeInfo
from kubeletemu.scheduler.nrtcache import (
    NOT_FRESH_REASON,
    DiscardReserved,
    InformerMode,
    InformerStore,
    OverReserve,
    Passthrough,
    TopologyNotFresh,
    cache_from_args,
    parse_cache_args,
)
from kubeletemu.scheduler.nrtmatch import NodeResourceTopologyMatch
from kubeletemu.scheduler.objects import AttributeInfo, NodeResourceTopology, ResourceInfo, Zone


def pod(name: str, *, node: str | None = "node-a", phase: str = "Running", cpu: str = "2") -> Pod:
    resources = {"cpu": Quantity.parse(cpu), "memory": Quantity.parse("1Gi")}
    return Pod(
        name=name,
        namespace="default",
        uid=f"uid-{name}",
        containers=(Container("c", resources, resources),),
        node_name=node,
        phase=phase,
    )


def nrt(signed: list[tuple[str, str]], policy: str = "single-numa-node") -> NodeResourceTopology:
    zone = Zone("node-0", "Node", resources=(ResourceInfo("cpu", Quantity(8), Quantity(8), Quantity(8)),))
    return NodeResourceTopology(
        name="node-a",
        zones=(zone,),
        attributes=(
            AttributeInfo("topologyManagerPolicy", policy),
            AttributeInfo(pfp.ATTRIBUTE, pfp.compute(signed)),
        ),
    )


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        ({}, Passthrough),
        ({"cacheResyncPeriodSeconds": 0}, Passthrough),
        ({"cacheResyncPeriodSeconds": -3}, Passthrough),
        ({"cacheResyncPeriodSeconds": 5}, OverReserve),
        ({"discardReservedNodes": True}, DiscardReserved),
        ({"discardReservedNodes": True, "cacheResyncPeriodSeconds": 5}, DiscardReserved),
    ],
)
def test_implementation_choice(args: dict[str, object], kind: type) -> None:
    assert type(cache_from_args(args, InformerStore())) is kind


def test_informer_modes_pick_the_resync_pod_set() -> None:
    store = InformerStore()
    store.update_nrt(nrt([("default", "run"), ("default", "done")]))
    store.add_pod(pod("run"))
    store.add_pod(pod("done", phase="Succeeded"))
    store.add_pod(pod("wait", phase="Pending"))
    dedicated = cache_from_args({"cacheResyncPeriodSeconds": 1}, store)
    shared = cache_from_args({"cacheResyncPeriodSeconds": 1, "cache": {"informerMode": "Shared"}}, store)
    assert isinstance(dedicated, OverReserve) and isinstance(shared, OverReserve)
    assert dedicated.pod_lister.mode is InformerMode.DEDICATED
    for cache in (dedicated, shared):
        cache.node_maybe_over_reserved("node-a", pod("x"))
        cache.tick(1.0)
    # Dedicated counts the Succeeded pod (the NRT signs it too); Shared sees only the Running one.
    assert len(dedicated.get_desynced_nodes()) == 0
    assert shared.get_desynced_nodes().maybe_over_reserved == ("node-a",)


def test_foreign_pods_mark_the_node_not_fresh_until_a_resync() -> None:
    store = InformerStore()
    store.update_nrt(nrt([]))
    cache = cache_from_args({"cacheResyncPeriodSeconds": 10}, store, profile_names=["topo-aware"])
    node = NodeInfo("node-a")
    store.add_pod(pod("mine"), scheduler_name="topo-aware")
    assert cache.topology(node, pod("p")) is not None
    store.add_pod(pod("theirs"))  # default-scheduler
    with pytest.raises(TopologyNotFresh, match=NOT_FRESH_REASON):
        cache.topology(node, pod("p"))
    store.update_nrt(nrt([("default", "mine"), ("default", "theirs")]))
    assert cache.tick(10.0)
    assert cache.topology(node, pod("p")) == store.nrt("node-a")


def test_pods_already_running_elsewhere_mark_nodes_at_start_up() -> None:
    store = InformerStore()
    store.update_nrt(nrt([]))
    store.add_pod(pod("daemon"))
    cache = cache_from_args({"cacheResyncPeriodSeconds": 10}, store, profile_names=["topo-aware"])
    assert cache.get_cached_nrt_copy("node-a", pod("p"))[1].fresh is False
    quiet = cache_from_args(
        {"cacheResyncPeriodSeconds": 10, "cache": {"foreignPodsDetect": "None"}},
        store,
        profile_names=["topo-aware"],
    )
    assert quiet.get_cached_nrt_copy("node-a", pod("p"))[1].fresh is True


def test_only_exclusive_foreign_pods_count_with_only_exclusive_resources() -> None:
    store = InformerStore()
    store.update_nrt(nrt([]))
    args = {"cacheResyncPeriodSeconds": 10, "cache": {"foreignPodsDetect": "OnlyExclusiveResources"}}
    cache = cache_from_args(args, store, profile_names=["topo-aware"])
    burstable = Container("c", {"cpu": Quantity.parse("2")})
    store.add_pod(Pod("web", "default", "uid-web", (burstable,), node_name="node-a", phase="Running"))
    assert cache.get_cached_nrt_copy("node-a", pod("p"))[1].fresh
    store.add_pod(pod("pinned", cpu="2"))
    assert not cache.get_cached_nrt_copy("node-a", pod("p"))[1].fresh


def test_a_guaranteed_pod_with_memory_is_exclusive_even_with_fractional_cpu() -> None:
    # IsExclusive: any positive memory request of a Guaranteed pod counts, whatever the kubelet's memory
    # manager does; RTE's with-exclusive-resources only counts NUMA-pinned memory (Static policy).
    store = InformerStore()
    store.update_nrt(nrt([]))
    args = {"cacheResyncPeriodSeconds": 10, "cache": {"foreignPodsDetect": "OnlyExclusiveResources"}}
    cache = cache_from_args(args, store, profile_names=["topo-aware"])
    store.add_pod(pod("shared-cpu", cpu="1500m"))
    assert not cache.get_cached_nrt_copy("node-a", pod("p"))[1].fresh


def test_a_topology_manager_change_flushes_without_fingerprint() -> None:
    store = InformerStore()
    store.update_nrt(nrt([]))
    cache = cache_from_args({"cacheResyncPeriodSeconds": 10}, store)
    only_resources = cache_from_args(
        {"cacheResyncPeriodSeconds": 10, "cache": {"resyncScope": "OnlyResources"}}, store
    )
    assert isinstance(cache, OverReserve) and isinstance(only_resources, OverReserve)
    store.update_nrt(nrt([("default", "nobody")], policy="restricted"))
    assert cache.get_desynced_nodes().config_changed == ("node-a",)
    assert only_resources.get_desynced_nodes().config_changed == ()
    cache.tick(10.0)
    assert cache.topology(NodeInfo("node-a"), pod("p")) == store.nrt("node-a")


def test_discardreserved_skips_nodes_with_a_reservation_in_flight() -> None:
    store = InformerStore()
    store.update_nrt(nrt([]))
    cache = cache_from_args({"discardReservedNodes": True}, store)
    node = NodeInfo("node-a")
    cache.reserve_node_resources("node-a", pod("p1"))
    with pytest.raises(TopologyNotFresh):
        cache.topology(node, pod("p2"))
    cache.post_bind("node-a", pod("p1"))
    assert cache.topology(node, pod("p2")) == store.nrt("node-a")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"cache": {"resyncMethod": "Exclusive"}},
            'args.cache.resyncMethod: Unsupported value: "Exclusive": supported values: "Autodetect", "All", '
            '"OnlyExclusiveResources" (the plugin does not validate it and would act as "All")',
        ),
        (
            {"cache": {"informerMode": "dedicated"}},
            'args.cache.informerMode: Unsupported value: "dedicated": supported values: "Shared", '
            '"Dedicated" (the plugin does not validate it and would act as "Shared")',
        ),
        ({"preemptionMode": "On"}, 'args.preemptionMode: Invalid value: "On": invalid PreemptionMode'),
        (
            {"cacheResyncPeriodSeconds": "5"},
            "args.cacheResyncPeriodSeconds: expected an integer, got a string",
        ),
        ({"discardReservedNodes": "yes"}, "args.discardReservedNodes: expected true or false, got a string"),
        ({"cache": ["All"]}, "args.cache: expected a mapping, got a list"),
    ],
)
def test_args_errors_name_the_field(args: dict[str, object], message: str) -> None:
    # strict: the cache enums' typo check (ours, opt-in); the other refusals are the plugin's own.
    with pytest.raises(ConfigError) as err:
        parse_cache_args(args, strict=True)
    assert str(err.value) == f"NodeResourceTopologyMatch args: {message}"


def test_unknown_enums_act_as_the_plugin_does_by_default() -> None:
    args = parse_cache_args({"cache": {"informerMode": "dedicated", "resyncScope": ""}})
    assert (args.cache.informer_mode, args.cache.resync_scope) == ("dedicated", "")
    cache = cache_from_args(
        {"cacheResyncPeriodSeconds": 1, "cache": {"informerMode": "dedicated", "resyncScope": ""}},
        InformerStore(),
        strict=False,
    )
    assert isinstance(cache, OverReserve)
    assert cache.pod_lister.mode is InformerMode.SHARED
    assert cache.resync_scope == ""  # not "All": no attribute watcher


def test_a_cache_is_the_plugins_topology_source() -> None:
    """The cache's "not fresh" is the one the plugin catches: a node with a reservation in flight (discard
    mode) fails Filter with ``invalid node topology data`` and scores 0; after PostBind it fits again."""
    memory = ResourceInfo("memory", Quantity.parse("4Gi"), Quantity.parse("4Gi"), Quantity.parse("4Gi"))
    base = nrt([])
    zone = Zone("node-0", "Node", resources=(*base.zones[0].resources, memory))
    store = InformerStore()
    store.update_nrt(NodeResourceTopology(name="node-a", zones=(zone,), attributes=base.attributes))
    cache = cache_from_args({"discardReservedNodes": True}, store)
    node = NodeInfo("node-a", topology=store.nrt("node-a"))
    plugin = NodeResourceTopologyMatch(source=cache)
    cache.reserve_node_resources("node-a", pod("p1"))
    status = plugin.filter(pod("p2"), node)
    assert (status.code, status.reasons) == (UNSCHEDULABLE, (NOT_FRESH_REASON,))
    assert plugin.score(pod("p2"), node) == 0
    cache.post_bind("node-a", pod("p1"))
    assert plugin.filter(pod("p2"), node).ok
    assert plugin.score(pod("p2"), node) > 0
