"""The overreserve cache through a scheduling cycle on a simulated clock: reserve, a Filter rejection that
marks the node, a published NRT whose fingerprint is stale (ignored), then one that matches (flushed)."""

from __future__ import annotations

import pytest

from kubeletemu.pod import Container, Pod
from kubeletemu.podresources import fingerprint as pfp
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.nrtcache import InformerStore, OverReserve, cache_from_args
from kubeletemu.scheduler.objects import AttributeInfo, NodeResourceTopology, ResourceInfo, Zone


def pod(name: str, cpu: str, *, node: str | None = None, phase: str = "Pending") -> Pod:
    """A Guaranteed pod asking ``cpu`` CPUs and 1Gi."""
    resources = {"cpu": Quantity.parse(cpu), "memory": Quantity.parse("1Gi")}
    return Pod(
        name=name,
        namespace="default",
        uid=f"uid-{name}",
        containers=(Container("c", resources, resources),),
        node_name=node,
        phase=phase,
    )


def nrt(
    cpu0: str, cpu1: str, pods: list[tuple[str, str]], method: str = pfp.METHOD_ALL
) -> NodeResourceTopology:
    """node-a, single-numa-node, with zone CPUs available and the fingerprint of ``pods``."""

    def zone(i: int, cpu: str) -> Zone:
        return Zone(
            f"node-{i}",
            "Node",
            resources=(
                ResourceInfo("cpu", Quantity(4), Quantity(4), Quantity.parse(cpu)),
                ResourceInfo("memory", Quantity.parse("8Gi"), Quantity.parse("8Gi"), Quantity.parse("8Gi")),
            ),
        )

    return NodeResourceTopology(
        name="node-a",
        zones=(zone(0, cpu0), zone(1, cpu1)),
        attributes=(
            AttributeInfo("topologyManagerPolicy", "single-numa-node"),
            AttributeInfo("topologyManagerScope", "container"),
            AttributeInfo(pfp.ATTRIBUTE, pfp.compute(pods)),
            AttributeInfo(pfp.ATTRIBUTE_METHOD, method),
        ),
    )


def cpus(cache: OverReserve, node: str = "node-a") -> list[Quantity]:
    got, info = cache.get_cached_nrt_copy(node, pod("probe", "1"))
    assert got is not None and info.fresh
    return [z.resource("cpu").available for z in got.zones]  # type: ignore[union-attr]


def test_reserve_stale_fingerprint_then_matching_fingerprint() -> None:
    store = InformerStore()
    store.update_nrt(nrt("4", "4", []))
    cache = cache_from_args({"cacheResyncPeriodSeconds": 5}, store, now=0.0)
    assert isinstance(cache, OverReserve)
    node = NodeInfo("node-a")

    # t=1: p1 (3 CPUs) reserved: charged to both zones, which the next Filter sees.
    first = pod("p1", "3")
    cache.reserve_node_resources("node-a", first)
    assert cpus(cache) == [Quantity(1), Quantity(1)]
    # Reserve alone does not make the node dirty ...
    assert len(cache.get_desynced_nodes()) == 0
    # ... a Filter rejection does: p2 (2 CPUs) fits no zone of the over-reserved view.
    cache.node_maybe_over_reserved("node-a", pod("p2", "2"))
    assert cache.get_desynced_nodes().maybe_over_reserved == ("node-a",)
    # p1 binds (PostBind changes nothing) and runs; the kubelet gives it zone 0.
    cache.post_bind("node-a", first)
    store.add_pod(pod("p1", "3", node="node-a", phase="Running"))

    # t=5: the exporter's NRT still fingerprints the empty pod set: stale, ignored.
    assert cache.tick(5.0)
    store.update_nrt(nrt("1", "4", []))
    assert not cache.tick(7.0)
    assert cache.tick(10.0)
    assert cache.get_desynced_nodes().maybe_over_reserved == ("node-a",)
    assert cpus(cache) == [Quantity(1), Quantity(1)]
    topology = cache.topology(node, pod("p2", "2"))
    assert topology is not None and topology.attribute(pfp.ATTRIBUTE) == pfp.compute([])
    assert cache.generation == 0
    assert cache.last_resync is not None
    assert cache.last_resync.skipped == {"node-a": "NodeTopology podset fingerprint mismatch"}

    # t=12: the NRT now accounts for default/p1: the next resync flushes the node.
    store.update_nrt(nrt("1", "4", [("default", "p1")]))
    assert not cache.tick(12.0)
    assert cache.tick(15.0)
    assert len(cache.get_desynced_nodes()) == 0
    assert cpus(cache) == [Quantity(1), Quantity(4)]
    assert cache.topology(node, pod("p2", "2")) == store.nrt("node-a")
    assert cache.get_cached_nrt_copy("node-a", pod("p2", "2"))[1].generation == 1


def test_autodetect_counts_only_exclusive_pods_when_the_nrt_says_so() -> None:
    store = InformerStore()
    store.update_nrt(nrt("4", "4", []))
    cache = cache_from_args({"cacheResyncPeriodSeconds": 1}, store)
    assert isinstance(cache, OverReserve)
    burstable = Pod(
        name="web",
        namespace="default",
        uid="uid-web",
        containers=(Container("c", {"cpu": Quantity.parse("500m")}),),
        node_name="node-a",
        phase="Running",
    )
    store.add_pod(burstable)
    store.add_pod(pod("db", "2", node="node-a", phase="Running"))
    cache.node_maybe_over_reserved("node-a", pod("x", "1"))
    # Signed over the exclusive pods only, as RTE's default method does.
    store.update_nrt(nrt("2", "4", [("default", "db")], pfp.METHOD_WITH_EXCLUSIVE_RESOURCES))
    assert cache.tick(1.0)
    assert len(cache.get_desynced_nodes()) == 0


def test_a_dirty_node_without_relevant_pods_never_resyncs() -> None:
    store = InformerStore()
    store.update_nrt(nrt("4", "4", []))
    cache = cache_from_args({"cacheResyncPeriodSeconds": 1}, store)
    assert isinstance(cache, OverReserve)
    cache.node_maybe_over_reserved("node-a", pod("x", "8"))
    store.update_nrt(nrt("4", "4", []))  # correctly signed: no pod at all
    assert cache.tick(1.0)
    assert cache.get_desynced_nodes().maybe_over_reserved == ("node-a",)
    assert cache.last_resync is not None
    assert cache.last_resync.skipped == {"node-a": "cannot find any pod for node"}


def test_an_nrt_published_after_start_is_never_cached() -> None:
    store = InformerStore()
    cache = cache_from_args({"cacheResyncPeriodSeconds": 1}, store)
    store.update_nrt(nrt("4", "4", []))
    cache.reserve_node_resources("node-a", pod("p1", "3"))
    assert cache.tick(1.0)
    got, info = cache.get_cached_nrt_copy("node-a", pod("p2", "1"))
    assert got is None and info.fresh  # Filter lets every pod through
    assert cache.topology(NodeInfo("node-a"), pod("p2", "1")) is None


def test_tick_runs_on_the_period_grid() -> None:
    cache = cache_from_args({"cacheResyncPeriodSeconds": 5}, InformerStore(), now=100.0)
    assert isinstance(cache, OverReserve)
    assert cache.next_resync == 105.0
    assert not cache.tick(104.9)
    assert cache.tick(107.0)
    assert cache.next_resync == 110.0
    assert not cache.tick(109.0)
    assert cache.tick(123.0)  # missed 110, 115, 120: one run
    assert cache.next_resync == 125.0


def test_repeated_marks_of_a_replayed_cycle_equal_marking_each_node() -> None:
    """A kept scheduling cycle replays its NodeMaybeOverReserved calls as one tuple: the marks (keys, their
    order and counts) are those of calling it per node, also after a flush removed the node."""

    def fresh() -> tuple[InformerStore, OverReserve]:
        store = InformerStore()
        store.update_nrt(nrt("4", "4", []))
        cache = cache_from_args({"cacheResyncPeriodSeconds": 1}, store)
        assert isinstance(cache, OverReserve)
        store.add_pod(pod("p1", "3", node="node-a", phase="Running"))
        return store, cache

    (store_one, one), (store_bulk, bulk) = fresh(), fresh()
    replayed = ("node-b", "node-a", "node-c")
    p = pod("p2", "2")
    for cache in (one, bulk):
        cache.node_maybe_over_reserved("node-z", p)
    for _ in range(3):
        for name in replayed:
            one.node_maybe_over_reserved(name, p)
        bulk.nodes_maybe_over_reserved(replayed, p)
    assert list(bulk.nodes_maybe_overreserved.items()) == list(one.nodes_maybe_overreserved.items())
    assert bulk.nodes_maybe_overreserved == {"node-z": 1, "node-b": 3, "node-a": 3, "node-c": 3}
    # A matching NRT flushes node-a; replaying the same tuple marks it anew, after the others.
    for store, cache in ((store_one, one), (store_bulk, bulk)):
        store.update_nrt(nrt("1", "4", [("default", "p1")]))
        assert cache.tick(1.0)
    for _ in range(2):
        for name in replayed:
            one.node_maybe_over_reserved(name, p)
        bulk.nodes_maybe_over_reserved(replayed, p)
    assert list(bulk.nodes_maybe_overreserved.items()) == list(one.nodes_maybe_overreserved.items())
    assert list(bulk.nodes_maybe_overreserved) == ["node-z", "node-b", "node-c", "node-a"]
    assert bulk.get_desynced_nodes().maybe_over_reserved == one.get_desynced_nodes().maybe_over_reserved


@pytest.mark.parametrize("times", [1, 2, 5])
def test_replays_given_at_once_equal_giving_each(times: int) -> None:
    """``times`` replays of a cycle's tuple in one call mark as that many calls do, before and after the
    tuple's first marking."""
    store = InformerStore()
    store.update_nrt(nrt("4", "4", []))
    one, bulk = (cache_from_args({"cacheResyncPeriodSeconds": 1}, store) for _ in range(2))
    assert isinstance(one, OverReserve) and isinstance(bulk, OverReserve)
    replayed, other = ("node-b", "node-a"), ("node-c", "node-b")
    p = pod("p2", "2")
    for _ in range(times):
        one.nodes_maybe_over_reserved(replayed, p)
    for _ in range(times + 1):
        one.nodes_maybe_over_reserved(other, p)
    for _ in range(times):
        one.nodes_maybe_over_reserved(replayed, p)
    bulk.nodes_maybe_over_reserved(replayed, p, times)
    bulk.nodes_maybe_over_reserved(other, p, times + 1)
    bulk.nodes_maybe_over_reserved(replayed, p, times)
    assert list(bulk.nodes_maybe_overreserved.items()) == list(one.nodes_maybe_overreserved.items())
    assert bulk.nodes_maybe_overreserved == {
        "node-b": 3 * times + 1,
        "node-a": 2 * times,
        "node-c": times + 1,
    }
