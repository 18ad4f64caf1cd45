"""nrt_cache_discardreserved.json and nrt_cache_passthrough.json: scheduler-plugins
cache/discardreserved_test.go and cache/passthrough_test.go, row by row."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.pod import Pod
from kubeletemu.scheduler.nrtcache import Cache, DiscardReserved, InformerStore, Passthrough
from tests.conformance.loader import rows
from tests.scheduler.nrtcache.helpers import Tables

DISCARD = Tables("nrt_cache_discardreserved")
PASSTHROUGH = Tables("nrt_cache_passthrough")


def _check_get_cached(tables: Tables, cache_for: type[Cache], row: dict[str, Any]) -> None:
    """cache_test.go checkGetCachedNRTCopy."""
    store = InformerStore()
    for raw in row["client_nrts"]:
        store.update_nrt(tables.nrt(raw))
    cache = cache_for(store)  # type: ignore[call-arg]
    pod = tables.pod(None)
    if row["has_foreign_pods"]:
        cache.node_has_foreign_pods(row["node"], pod)
    got, info = cache.get_cached_nrt_copy(row["node"], pod)
    assert info.fresh is row["expected_fresh"]
    assert got == tables.maybe_nrt(row["expected_nrt"])


@pytest.mark.parametrize("row", rows("nrt_cache_discardreserved", "get_cached_nrt_copy"))
def test_discardreserved_get_cached_nrt_copy(row: dict[str, Any]) -> None:
    _check_get_cached(DISCARD, DiscardReserved, row)


@pytest.mark.parametrize("row", rows("nrt_cache_passthrough", "get_cached_nrt_copy"))
def test_passthrough_get_cached_nrt_copy(row: dict[str, Any]) -> None:
    _check_get_cached(PASSTHROUGH, Passthrough, row)


@pytest.mark.parametrize("row", rows("nrt_cache_discardreserved", "scenarios"))
def test_discardreserved_scenario(row: dict[str, Any]) -> None:
    cache = DiscardReserved(None if row["no_client"] else InformerStore())
    for node, uids in row["reservation_map"].items():
        for uid in uids:
            cache.reserve_node_resources(node, Pod(name="", namespace="", uid=uid, containers=()))
    for step in row["steps"]:
        op = step["op"]
        if op == "reserve":
            cache.reserve_node_resources(step["node"], DISCARD.pod(step["pod"]))
        elif op == "remove_reservation_for_node":
            cache.remove_reservation_for_node(step["node"], DISCARD.pod(step["pod"]))
        elif op == "expect_cached":
            got, info = cache.get_cached_nrt_copy(step["node"], DISCARD.pod(step["pod"]))
            assert got == DISCARD.maybe_nrt(step["nrt"])
            assert info.fresh is step["fresh"]
        elif op == "expect_reservations":
            got_map = {
                node: sorted(uid for uid, on in pods.items() if on)
                for node, pods in cache.reservation_map.items()
            }
            assert got_map == step["reservations"]
        else:
            raise AssertionError(f"unknown op {op!r}")
