"""nrt_cache_overreserve.json: scheduler-plugins cache/overreserve_test.go, row by row."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.nrtcache import CacheConfig, InformerMode, InformerStore, NRTUpdate, OverReserve
from kubeletemu.scheduler.nrtcache.informers import (
    PodFilter,
    is_pod_relevant_always,
    is_pod_relevant_dedicated,
    is_pod_relevant_shared,
)
from kubeletemu.scheduler.nrtcache.overreserve import get_cache_resync_method
from kubeletemu.scheduler.nrtcache.podsets import ExclusiveResources, PodData, make_node_to_pod_data_map
from kubeletemu.scheduler.objects import NodeResourceTopology
from tests.conformance.loader import rows
from tests.scheduler.nrtcache.helpers import Tables

TABLE = "nrt_cache_overreserve"
T = Tables(TABLE)
RELEVANCE: dict[str, PodFilter] = {
    "always": is_pod_relevant_always,
    "shared": is_pod_relevant_shared,
    "dedicated": is_pod_relevant_dedicated,
}


def new_cache(store: InformerStore, *, client: bool = True, lister: bool = True) -> OverReserve:
    """mustOverReserve: nil config, pod relevance Always, preemption Disabled."""
    return OverReserve(
        store if client else None,
        store.pod_informer(InformerMode.DEDICATED) if lister else None,
        None,
        is_pod_relevant=is_pod_relevant_always,
    )


@pytest.mark.parametrize("row", rows(TABLE, "get_cache_resync_method"))
def test_get_cache_resync_method(row: dict[str, Any]) -> None:
    cfg = row["cfg"]
    config = None if cfg is None else CacheConfig(resync_method=cfg.get("resyncMethod"))
    assert get_cache_resync_method(config) == row["expected"]


@pytest.mark.parametrize("row", rows(TABLE, "get_cached_nrt_copy"))
def test_get_cached_nrt_copy(row: dict[str, Any]) -> None:
    store = InformerStore()
    for raw in row["client_nrts"]:
        store.update_nrt(T.nrt(raw))
    cache = new_cache(store)
    pod = T.pod(None)
    if row["has_foreign_pods"]:
        cache.node_has_foreign_pods(row["node"], pod)
    got, info = cache.get_cached_nrt_copy(row["node"], pod)
    assert info.fresh is row["expected_fresh"]
    assert got == T.maybe_nrt(row["expected_nrt"])


def _is_nrt_equal(a: NodeResourceTopology, b: NodeResourceTopology) -> bool:
    """Upstream's isNRTEqual: zones, topologyPolicies and attributes."""
    return (a.zones, a.topology_policies, a.attributes) == (b.zones, b.topology_policies, b.attributes)


def _expect_cached(cache: OverReserve, step: dict[str, Any]) -> None:
    got, info = cache.get_cached_nrt_copy(step["node"], T.pod(step["pod"]))
    if "nrt" in step:
        expected = T.maybe_nrt(step["nrt"])
        if expected is None:
            assert got is None
        else:
            assert got is not None
            if step.get("compare") == "isNRTEqual":
                assert _is_nrt_equal(got, expected), got
            else:
                assert got == expected
    if "available_every_zone" in step:
        assert got is not None
        for zone in got.zones:
            for name, amount in step["available_every_zone"].items():
                info_ = zone.resource(name)
                assert info_ is not None
                assert info_.available == Quantity.parse(amount), (zone.name, name, info_.available)
    if "fresh" in step:
        assert info.fresh is step["fresh"]
    if "generation" in step:
        assert info.generation == step["generation"]


@pytest.mark.parametrize("row", rows(TABLE, "scenarios"))
def test_scenario(row: dict[str, Any]) -> None:
    store = InformerStore()
    cache: OverReserve | None = None
    pending: list[NRTUpdate] = []
    for step in row["steps"]:
        op = step["op"]
        if op == "new":
            for raw in step.get("client_nrts", []):
                store.update_nrt(T.nrt(raw))
            with_client = step.get("client", True) is not None
            with_lister = step.get("pod_lister", True) is not None
            if "expect_error" in step:
                with pytest.raises(ValueError, match=step["expect_error"]):
                    new_cache(store, client=with_client, lister=with_lister)
                continue
            cache = new_cache(store)
            continue
        assert cache is not None
        if op == "test_only_update_nrt":
            cache.test_only_update_nrt(T.nrt(step["nrt"]))
        elif op == "reserve":
            cache.reserve_node_resources(step["node"], T.pod(step["pod"]))
        elif op == "unreserve":
            cache.unreserve_node_resources(step["node"], T.pod(step["pod"]))
        elif op == "node_maybe_over_reserved":
            cache.node_maybe_over_reserved(step["node"], T.pod(step["pod"]))
        elif op == "node_has_foreign_pods":
            cache.node_has_foreign_pods(step["node"], T.pod(step["pod"]))
        elif op == "client_create_nrt":
            store.update_nrt(T.nrt(step["nrt"]))
        elif op == "lister_add_pod":
            T.add_pod(store, step["pod"])
        elif op == "resync":
            cache.resync()
        elif op == "make_nrt_updates":
            pending = cache.make_nrt_updates_for_nodes(cache.get_desynced_nodes())
            assert len(pending) == step["expect_count"]
        elif op == "flush_pending":
            cache.flush_nodes(*pending)
        elif op == "flush_nodes":
            generation = cache.flush_nodes(*(NRTUpdate(T.nrt(raw)) for raw in step["nrts"]))
            assert generation == step["expect_generation"]
        elif op == "expect_desynced":
            nodes = cache.get_desynced_nodes()
            if "len" in step:
                assert len(nodes) == step["len"]
            if "dirty_count" in step:
                assert nodes.dirty_count == step["dirty_count"]
            if "maybe_over_reserved_sorted" in step:
                assert sorted(nodes.maybe_over_reserved) == step["maybe_over_reserved_sorted"]
        elif op == "expect_cached":
            _expect_cached(cache, step)
        else:
            raise AssertionError(f"unknown op {op!r}")


def _pod_data(data: PodData) -> dict[str, Any]:
    out: dict[str, Any] = {"namespace": data.namespace, "name": data.name}
    if data.exclusive_resources is not ExclusiveResources.UNKNOWN:
        out["exclusiveResources"] = data.exclusive_resources.name.title()
    if data.pinned_containers:
        out["pinnedContainers"] = list(data.pinned_containers)
    return out


@pytest.mark.parametrize("row", rows(TABLE, "node_to_pod_data_map"))
def test_make_node_to_pod_data_map(row: dict[str, Any]) -> None:
    pods = [T.pod_object(raw) for raw in row["pods"]]
    got = make_node_to_pod_data_map(
        pods, RELEVANCE[row["pod_relevance"]], lambda _: None, row["preemption_mode"]
    )
    assert {node: [_pod_data(d) for d in objs] for node, objs in got.items()} == row["expected"]
