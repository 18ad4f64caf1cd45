"""Filter edge cases beyond the upstream table (filter.go at scheduler-plugins 903da7d)."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import PluginPanic
from kubeletemu.scheduler.nrtmatch.filter import filter_pod
from kubeletemu.scheduler.objects import Node
from tests.scheduler.nrtmatch.build import SINGLE_CONTAINER, SINGLE_POD, container, nrt, pod, zone

TWO = (zone("node-0", {"cpu": 4, "memory": "4Gi"}), zone("node-1", {"cpu": 8, "memory": "4Gi"}))


def node(**allocatable: str) -> Node:
    return Node(
        "n",
        allocatable=MappingProxyType(
            {k.replace("_", "/"): Quantity.parse(v) for k, v in allocatable.items()}
        ),
    )


def test_only_single_numa_node_filters() -> None:
    huge = pod(container("c", {"cpu": 64, "memory": "1Gi"}))
    for policy in ("none", "best-effort", "restricted"):
        assert filter_pod(huge, None, nrt(*TWO, attributes={"topologyManagerPolicy": policy})).ok
    assert filter_pod(huge, None, None).ok
    assert filter_pod(huge, None, nrt(*TWO, attributes=SINGLE_CONTAINER)).reasons == (
        "cannot align container",
    )


def test_init_containers_are_not_subtracted_app_containers_are() -> None:
    topology = nrt(*TWO, attributes=SINGLE_CONTAINER)
    # Two 8-CPU init containers run one after the other: both fit NUMA 1.
    inits = (container("i1", {"cpu": 8, "memory": "1Gi"}), container("i2", {"cpu": 8, "memory": "1Gi"}))
    assert filter_pod(pod(container("a", {"cpu": 1, "memory": "1Gi"}), init=inits), None, topology).ok
    # Two 6-CPU app containers: the first takes NUMA 1 (lowest fitting id), the second finds 4 + 2.
    apps = pod(container("a", {"cpu": 6, "memory": "1Gi"}), container("b", {"cpu": 6, "memory": "1Gi"}))
    assert filter_pod(apps, None, topology).reasons == ("cannot align container",)


def test_sidecar_and_init_reasons() -> None:
    topology = nrt(*TWO, attributes=SINGLE_CONTAINER)
    big = {"cpu": 9, "memory": "1Gi"}
    app = container("a", {"cpu": 1, "memory": "1Gi"})
    sidecar = pod(app, init=(container("s", big, restart="Always"),))
    assert filter_pod(sidecar, None, topology).reasons == ("cannot align sidecar container",)
    plain = pod(app, init=(container("i", big),))
    assert filter_pod(plain, None, topology).reasons == ("cannot align init container",)


def test_pod_scope_effective_request_counts_sidecars_as_init_and_overhead() -> None:
    topology = nrt(*TWO, attributes=SINGLE_POD)
    # max(init 8, app 4 + 4) = 8 fits NUMA 1; with 1 CPU of overhead it is 9: no zone has it.
    workload = pod(
        container("a", {"cpu": 4, "memory": "1Gi"}),
        container("b", {"cpu": 4, "memory": "1Gi"}),
        init=(container("s", {"cpu": 8, "memory": "1Gi"}, restart="Always"),),
    )
    assert filter_pod(workload, None, topology).ok
    heavier = replace(workload, overhead=MappingProxyType({"cpu": Quantity.parse(1)}))
    assert filter_pod(heavier, None, topology).reasons == ("cannot align pod",)


def test_node_allocatable_from_the_node_object_or_the_zones() -> None:
    topology = nrt(
        zone("node-0", {"cpu": 4, "memory": "4Gi", "example.com/gpu": 1}), attributes=SINGLE_CONTAINER
    )
    gpu_pod = pod(container("c", {"cpu": 1, "memory": "1Gi", "example.com/gpu": 1}))
    # Without a Node object the zones' resources are the node's.
    assert filter_pod(gpu_pod, None, topology).ok
    # A Node object that does not list the device: the resource is unknown to the node.
    assert filter_pod(gpu_pod, node(cpu="4", memory="4Gi"), topology).reasons == ("cannot align container",)
    assert filter_pod(gpu_pod, node(cpu="4", memory="4Gi", **{"example.com_gpu": "1"}), topology).ok


def test_host_level_and_zero_requests() -> None:
    topology = nrt(*TWO, attributes=SINGLE_CONTAINER)
    # ephemeral-storage is always in the node's allocatable and host-level: no zone needs to list it.
    assert filter_pod(
        pod(container("c", {"cpu": 1, "memory": "1Gi", "ephemeral-storage": "1Gi"})), None, topology
    ).ok
    # A non-native resource the Node lists but no zone does: host-level, fine.
    with_nic = node(cpu="12", memory="8Gi", **{"vendor.com_nic": "2"})
    assert filter_pod(
        pod(container("c", {"cpu": 1, "memory": "1Gi", "vendor.com/nic": 1})), with_nic, topology
    ).ok
    # A zero request of a resource nobody has is skipped.
    assert filter_pod(
        pod(container("c", {"cpu": 1, "memory": "1Gi", "vendor.com/other": 0})), None, topology
    ).ok
    # hugepages are native and not host-level: listed by no zone, they fail.
    assert filter_pod(
        pod(container("c", {"cpu": 1, "memory": "1Gi", "hugepages-2Mi": "2Mi"})), None, topology
    ).reasons == ("cannot align container",)


def test_best_effort_and_burstable() -> None:
    topology = nrt(
        zone("node-0", {"cpu": 1, "memory": "1Gi", "vendor.com/nic": 1}), attributes=SINGLE_CONTAINER
    )
    assert filter_pod(pod(container("c", {})), None, topology).ok
    # BestEffort asking a device is filtered.
    nics = pod(container("c", {"vendor.com/nic": 2}))
    assert filter_pod(nics, None, topology).reasons == ("cannot align container",)
    # Burstable cpu and memory always fit a zone that lists them.
    burstable = pod(container("c", {"cpu": 64, "memory": "64Gi"}, guaranteed=False))
    assert filter_pod(burstable, None, topology).ok


def test_repeated_zone_ids_make_accounting_inconsistent() -> None:
    # Two zones named node-0: the mask bit is set by the roomy one, the subtraction runs on both.
    topology = nrt(
        zone("node-0", {"cpu": 8, "memory": "4Gi"}),
        zone("node-0", {"cpu": 1, "memory": "4Gi"}),
        attributes=SINGLE_CONTAINER,
    )
    status = filter_pod(pod(container("c", {"cpu": 4, "memory": "1Gi"})), None, topology)
    assert status.code == "Error"
    assert status.reasons == (
        "inconsistent resource accounting",
        'resource "cpu" request 4 exceeds NUMA 0 availability 1',
    )


def test_zones_that_are_not_numa_nodes_are_ignored() -> None:
    topology = nrt(
        zone("socket-0", {"cpu": 64, "memory": "64Gi"}, kind="Socket"),
        zone("node-75", {"cpu": 64, "memory": "64Gi"}),
        zone("numa-1", {"cpu": 64, "memory": "64Gi"}),
        zone("node-0", {"cpu": 2, "memory": "64Gi"}),
        attributes=SINGLE_CONTAINER,
    )
    assert filter_pod(pod(container("c", {"cpu": 4, "memory": "1Gi"})), None, topology).reasons == (
        "cannot align container",
    )


def test_numa_id_64_panics_as_the_plugin_does() -> None:
    topology = nrt(
        zone("node-0", {"cpu": 2, "memory": "1Gi"}),
        zone("node-64", {"cpu": 2, "memory": "1Gi"}),
        attributes=SINGLE_CONTAINER,
    )
    with pytest.raises(PluginPanic) as info:
        filter_pod(pod(container("c", {"cpu": 1, "memory": "1Gi"})), None, topology)
    assert (info.value.crash.what, info.value.crash.where) == (
        "index out of range [64] with length 64",
        "noderesourcetopology.createNUMANodeList",
    )
