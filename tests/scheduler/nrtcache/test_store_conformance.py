"""nrt_cache_store.json, nrt_cache_common.json, nrt_cache_foreign_pods.json, nrt_cache_attr_watch.json and
nrt_cache_args.json: the scheduler-plugins cache/store_test.go, cache_test.go, foreign_pods_test.go,
attr_watch_test.go tables and the apis/config defaults of the cache args."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubeletemu.pod import Pod
from kubeletemu.podresources import fingerprint as pfp
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.nrtcache import WatchEvent, is_foreign_pod, parse_cache_args
from kubeletemu.scheduler.nrtcache.assumed import ResourceStore
from kubeletemu.scheduler.nrtcache.attrwatch import AttrWatcher
from kubeletemu.scheduler.nrtcache.exclusive import are_exclusive_for_pod
from kubeletemu.scheduler.nrtcache.informers import PodObject
from kubeletemu.scheduler.nrtcache.nrtstore import NRTResourcesStore, NRTStore, resource_names_from_nrt
from kubeletemu.scheduler.nrtcache.podsets import (
    ExclusiveResources,
    PodData,
    categorize_pod,
    check_pod_fingerprint_for_node,
    pod_fingerprint_for_node_topology,
)
from kubeletemu.scheduler.objects import NodeResourceTopology
from tests.conformance.loader import rows
from tests.scheduler.nrtcache.helpers import Tables

STORE = Tables("nrt_cache_store")
ERRORS: dict[str, type[pfp.FingerprintError]] = {
    "Malformed": pfp.MalformedFingerprintError,
    "IncompatibleVersion": pfp.IncompatibleVersionError,
    "Mismatch": pfp.FingerprintMismatchError,
}


def _names(names: frozenset[str] | None) -> list[str] | None:
    return None if names is None else sorted(names)


@pytest.mark.parametrize("row", rows("nrt_cache_store", "resource_names_from_nrt"))
def test_resource_names_from_nrt(row: dict[str, Any]) -> None:
    assert _names(resource_names_from_nrt(STORE.maybe_nrt(row["nrt"]))) == row["expected"]


@pytest.mark.parametrize("row", rows("nrt_cache_store", "nrt_resources_store"))
def test_nrt_resources_store(row: dict[str, Any]) -> None:
    store = NRTResourcesStore(STORE.nrt(raw) for raw in row["initial"])
    for step in row["steps"]:
        if step["op"] == "get":
            assert _names(store.get(step["node"])) == step["expected"]
        elif step["op"] == "update":
            store.update(STORE.nrt(step["nrt"]))
        else:
            store.delete(step["node"])


@pytest.mark.parametrize("row", rows("nrt_cache_store", "fingerprint_from_nrt"))
def test_fingerprint_from_nrt(row: dict[str, Any]) -> None:
    assert pod_fingerprint_for_node_topology(STORE.nrt(row["nrt"]), "Autodetect")[0] == row["expected"]


@pytest.mark.parametrize("row", rows("nrt_cache_store", "fingerprint_method_from_nrt"))
def test_fingerprint_method_from_nrt(row: dict[str, Any]) -> None:
    assert pod_fingerprint_for_node_topology(STORE.nrt(row["nrt"]), "Autodetect")[1] is row["expected"]


@pytest.mark.parametrize("row", rows("nrt_cache_store", "nrt_store"))
def test_nrt_store(row: dict[str, Any]) -> None:
    store = NRTStore(STORE.nrt(raw) for raw in row["initial"])
    assert store.contains(row["node"]) is row["contains"]
    assert (store.get(row["node"]) is not None) is row["contains"]


@pytest.mark.parametrize("row", rows("nrt_cache_store", "resource_store"))
def test_resource_store(row: dict[str, Any]) -> None:
    store = ResourceStore()
    for step in row["steps"]:
        if step["op"] == "add":
            assert store.add_pod(STORE.pod(step["pod"])) is step["expect_existed"]
        elif step["op"] == "delete":
            assert store.delete_pod(STORE.pod(step["pod"])) is step["expect_existed"]
        else:
            got = store.update_nrt(STORE.nrt(step["nrt"]))
            zones = {z.name: z for z in got.zones}
            for zone_name, resources in step["expected"].items():
                for name, amounts in resources.items():
                    info = zones[zone_name].resource(name)
                    if amounts is None:
                        assert info is None
                        continue
                    assert info is not None
                    assert (info.capacity, info.available) == tuple(Quantity.parse(a) for a in amounts)


@pytest.mark.parametrize("row", rows("nrt_cache_store", "check_pod_fingerprint_for_node"))
def test_check_pod_fingerprint_for_node(row: dict[str, Any]) -> None:
    objs = [PodData(o["namespace"], o["name"]) for o in row["objs"]]
    err = check_pod_fingerprint_for_node(objs, row["pfp"], row["only_exclusive"])
    expected = row["expected_error"]
    assert (err is None) if expected is None else isinstance(err, ERRORS[expected])


@pytest.mark.parametrize("row", rows("nrt_cache_common", "has_exclusive_resources"))
def test_has_exclusive_resources(row: dict[str, Any]) -> None:
    data = PodData(
        "ns-0",
        "pod-0",
        tuple(row["pinnedContainers"] or ()),
        ExclusiveResources[row["exclusiveResources"].upper()],
    )
    assert data.has_exclusive_resources() is row["expected"]


FOREIGN = Tables("nrt_cache_foreign_pods")


@pytest.mark.parametrize("row", rows("nrt_cache_foreign_pods", "is_foreign_pod"))
def test_is_foreign_pod(row: dict[str, Any]) -> None:
    resources = None if row["nrt_resources"] is None else frozenset(row["nrt_resources"])
    pod = FOREIGN.pod_object(row["pod"])
    assert is_foreign_pod(pod, resources, row["profile_names"], row["exclusive_only"]) is row["expected"]


WATCH = Tables("nrt_cache_attr_watch")


@pytest.mark.parametrize("row", rows("nrt_cache_attr_watch", "process_event"))
def test_attr_watcher_process_event(row: dict[str, Any]) -> None:
    nodes: dict[str, int] = {}
    watcher = AttrWatcher(NRTStore(WATCH.nrt(raw) for raw in row["initial"]), nodes)
    for event, raw in row["events"]:
        watcher.process_event(WatchEvent(event), WATCH.nrt(raw))
    assert sorted(nodes) == row["expected"]


@pytest.mark.parametrize("row", rows("nrt_cache_args", "defaults"))
def test_args_defaults(row: dict[str, Any]) -> None:
    args = parse_cache_args(row["args"])
    expected = row["expected"]
    assert args.cache_resync_period_seconds == expected["cacheResyncPeriodSeconds"]
    assert args.discard_reserved_nodes is expected["discardReservedNodes"]
    cache = expected["cache"]
    assert (args.cache.foreign_pods_detect, args.cache.resync_method) == (
        cache["foreignPodsDetect"],
        cache["resyncMethod"],
    )
    assert (args.cache.informer_mode, args.cache.resync_scope) == (
        cache["informerMode"],
        cache["resyncScope"],
    )
    assert args.preemption_mode == expected["preemptionMode"]


def test_the_store_charges_the_same_nrt_object_again_after_each_change() -> None:
    """The store keeps its last charged NRT by identity (the fleet asks it for every node after each
    flush): an add or a delete between two asks with the same object changes the answer as a new store
    with the same pods gives it."""
    [row] = [r for r in rows("nrt_cache_store", "resource_store") if r[0][0]["name"] == "update NRT"]
    steps = row[0][0]["steps"]
    [nrt_step] = [s for s in steps if s["op"] == "update_nrt"]
    nrt = STORE.nrt(nrt_step["nrt"])
    [first] = [STORE.pod(s["pod"]) for s in steps if s["op"] == "add"]
    other = dataclasses.replace(first, name="pod-other")

    def fresh(*pods: Pod) -> NodeResourceTopology:
        store = ResourceStore()
        for pod in pods:
            store.add_pod(pod)
        return store.update_nrt(STORE.nrt(nrt_step["nrt"]))

    store = ResourceStore()
    store.add_pod(first)
    assert store.update_nrt(nrt) == fresh(first)
    assert store.update_nrt(nrt) is store.update_nrt(nrt)  # kept
    store.add_pod(other)
    assert store.update_nrt(nrt) == fresh(first, other) != fresh(first)
    store.delete_pod(first)
    assert store.update_nrt(nrt) == fresh(other)
    store.add_pod(other)  # replaced by an equal request: the same answer
    assert store.update_nrt(nrt) == fresh(other)


def test_a_pods_category_is_kept_per_resource_names_and_reported_qos() -> None:
    """Every resync categorizes every pod again; the answer is kept on the pod per (the node's NRT
    resource names, the reported QoS class) and equals the uncached one whatever the order asked."""
    [row] = [r for r in rows("nrt_cache_store", "resource_store") if r[0][0]["name"] == "update NRT"]
    [pod] = [STORE.pod(s["pod"]) for s in row[0][0]["steps"] if s["op"] == "add"]
    guaranteed = dataclasses.replace(
        pod, containers=tuple(dataclasses.replace(c, limits=dict(c.requests)) for c in pod.containers)
    )
    asks = [
        (names, qos)
        for names in (None, frozenset({"cpu"}), frozenset({"vendor-a.com/nic"}), frozenset())
        for qos in (None, "Guaranteed", "BestEffort")
    ]
    for subject in (pod, guaranteed):
        answers = set()
        for names, qos in [*asks, *reversed(asks)]:
            got = categorize_pod(PodObject(subject, qos_class=qos), names).has_exclusive_resources()
            assert got is are_exclusive_for_pod(subject, names, qos), (names, qos)
            answers.add(got)
        assert answers == {True, False} or subject is pod
