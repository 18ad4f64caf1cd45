"""``device_hints.json``: device hints per container and per pod, ``devicesToAllocate``, the arguments of
``GetPreferredAllocation`` and ``getPodDeviceRequest``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.devicemanager import Device, DeviceManager, get_pod_device_request
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import TopologyHint
from tests.conformance.loader import versioned_rows


class FixedAffinity:
    """The Topology Manager store, answering one hint for every container."""

    def __init__(self, hint: TopologyHint | None = None) -> None:
        self.hint = hint if hint is not None else TopologyHint()

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        return self.hint

    def get_policy(self) -> Any:
        raise AssertionError("not used")


def _device(raw: dict[str, Any]) -> Device:
    nodes = raw["numa_nodes"]
    return Device(raw["id"], None if nodes is None else tuple(nodes))


def _container(raw: dict[str, Any]) -> Container:
    limits = {name: Quantity.parse(v) for name, v in raw.get("limits", {}).items()}
    return Container(raw.get("name", ""), requests=limits, limits=limits)


def _pod(raw: dict[str, Any]) -> Pod:
    return Pod(
        name=raw.get("uid", "pod"),
        namespace="default",
        uid=raw.get("uid", "pod"),
        containers=tuple(_container(c) for c in raw.get("containers", [])),
        init_containers=tuple(_container(c) for c in raw.get("init_containers", [])),
    )


def _hint(raw: dict[str, Any]) -> TopologyHint:
    return TopologyHint(BitMask.of(*raw["numa_affinity"]), raw["preferred"])


def _manager_for_hints(row: dict[str, Any], version: str) -> DeviceManager:
    assert row["healthy"] == "all registered devices are healthy"
    manager = DeviceManager(
        row["numa_nodes"],
        FixedAffinity(),
        active_pods=lambda: row["active_pods"],
        kubelet_version=version,
    )
    for resource, devices in row["devices"].items():
        manager.register_resource(resource, [_device(d) for d in devices])
    for pod_uid, containers in row["allocated"].items():
        for name, resources in containers.items():
            for resource, ids in resources.items():
                known = manager.all_devices[resource]
                per_numa: dict[int, list[str]] = {}
                for dev_id in ids:
                    for node in known[dev_id].numa_nodes or (-1,):
                        per_numa.setdefault(node, []).append(dev_id)
                manager.pod_devices.insert(pod_uid, name, resource, per_numa)
    manager.allocated_devices = manager.pod_devices.devices()
    for pod_uid, resources in row["devices_to_reuse"].items():
        manager.devices_to_reuse[pod_uid] = {r: set(ids) for r, ids in resources.items()}
    return manager


@pytest.mark.parametrize(("row", "version"), versioned_rows("device_hints", "cases", key="id"))
def test_topology_hints(row: dict[str, Any], version: str) -> None:
    manager = _manager_for_hints(row, version)
    pod = _pod(row["pod"])
    if row["api"] == "GetTopologyHints":
        container = pod.container(row["container"]) if row["container"] else pod.containers[0]
        assert container is not None
        got = manager.get_topology_hints(pod, container)
    else:
        assert row["api"] == "GetPodTopologyHints"
        got = manager.get_pod_topology_hints(pod)
    assert got is not None
    expected = row["expected_hints"]
    assert set(got) == set(expected)
    for resource, hints in expected.items():
        if hints is None:
            assert got[resource] is None, resource
        else:
            got_list = got[resource]
            assert got_list is not None, resource
            assert len(got_list) == len(hints)
            assert set(got_list) == {_hint(h) for h in hints}, resource


def _allocation_manager(row: dict[str, Any], plugin_answer: list[str] | None, version: str) -> DeviceManager:
    hint = _hint(row["hint"])
    manager = DeviceManager(
        sorted({n for d in row["devices"] for n in d["numa_nodes"] or ()}),
        FixedAffinity(hint),
        kubelet_version=version,
    )
    preferred = None if plugin_answer is None else (lambda available, must, size: list(plugin_answer))
    manager.register_resource(row["resource"], [_device(d) for d in row["devices"]], preferred)
    manager.allocated_devices[row["resource"]] = set(row["allocated_devices"])
    return manager


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("device_hints", "allocation_cases", key="description")
)
def test_topology_aligned_allocation(row: dict[str, Any], version: str) -> None:
    manager = _allocation_manager(row, row["plugin_get_preferred_allocation"], version)
    got = manager.devices_to_allocate(
        "fakePod", "fakeContainer", row["resource"], row["request"], set(row["reusable_devices"])
    )
    expected = row["expected"]
    assert len(got) == len(set(got)) == expected["size"]
    assert set(expected["must_contain"]) <= set(got)
    devices = {d["id"]: d for d in row["devices"]}
    if any(d["numa_nodes"] for d in row["devices"]):
        histogram = Counter(str(devices[d]["numa_nodes"][0]) for d in got if devices[d]["numa_nodes"])
        assert dict(histogram) == expected["numa_histogram"]
    else:
        assert expected["numa_histogram"] == {}


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("device_hints", "get_preferred_allocation_cases", key="description")
)
def test_get_preferred_allocation_parameters(row: dict[str, Any], version: str) -> None:
    manager = _allocation_manager(row, [], version)
    manager.devices_to_allocate(
        "fakePod", "fakeContainer", row["resource"], row["request"], set(row["reusable_devices"])
    )
    assert len(manager.preferred_allocation_calls) == 1
    resource, call = manager.preferred_allocation_calls[0]
    expected = row["expected_call"]
    assert resource == row["resource"]
    assert set(call.available) == set(expected["available"])
    assert len(call.available) == len(expected["available"])
    assert set(call.must_include) == set(expected["must_include"])
    assert call.size == expected["size"]


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("device_hints", "get_pod_device_request_cases", key="description")
)
def test_get_pod_device_request(row: dict[str, Any], version: str) -> None:
    pod = Pod(
        name="pod",
        namespace="default",
        uid="pod",
        containers=tuple(_container(c) for c in row["containers"]),
        init_containers=tuple(_container(c) for c in row["init_containers"]),
    )
    registered = set(row["registered_resources"])
    assert get_pod_device_request(pod, registered.__contains__) == row["expected"]
