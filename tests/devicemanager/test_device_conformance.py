"""``device_hints.json``: device hints per container and per pod, ``devicesToAllocate``, the arguments of
``GetPreferredAllocation`` and ``getPodDeviceRequest``, and (1.36 on) the tests kubernetes#138244 added:
``deviceNUMANodes``, ``generateDeviceTopologyHints`` over the devices' NUMA nodes, and its hints merged by the
best-effort and restricted policies."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.devicemanager import Device, DeviceManager, get_pod_device_request
from kubeletemu.devicemanager.manager import HINTS_OVER_DEVICE_NODES
from kubeletemu.devicemanager.topology_hints import device_numa_nodes, generate_device_topology_hints
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import NUMAInfo, PolicyOptions, ProviderHints, ResourceHints, TopologyHint
from kubeletemu.topologymanager.policy_best_effort import BestEffortPolicy
from kubeletemu.topologymanager.policy_restricted import RestrictedPolicy
from kubeletemu.versions import SUPPORTED
from kubeletemu.versions.behaviours import in_effect
from tests.conformance.loader import load, versioned_rows


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


def _row_hints(row: dict[str, Any], version: str) -> ResourceHints:
    """The hints ``row``'s API gives with the kubelet of ``version`` emulated."""
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
    return got


def _expected_hints(raw: dict[str, Any]) -> dict[str, list[TopologyHint] | None]:
    return {r: None if hints is None else [_hint(h) for h in hints] for r, hints in raw.items()}


def _same_hints(got: ResourceHints, expected: dict[str, list[TopologyHint] | None]) -> bool:
    """Equal as upstream compares them: per resource, nil vs a list, and the list as a sorted multiset."""
    if set(got) != set(expected):
        return False
    for resource, hints in expected.items():
        given = got[resource]
        if (hints is None) != (given is None):
            return False
        if hints is not None and given is not None and Counter(hints) != Counter(given):
            return False
    return True


@pytest.mark.parametrize(("row", "version"), versioned_rows("device_hints", "cases", key="id"))
def test_topology_hints(row: dict[str, Any], version: str) -> None:
    got = _row_hints(row, version)
    expected = _expected_hints(row["expected_hints"])
    assert set(got) == set(expected)
    for resource, hints in expected.items():
        if hints is None:
            assert got[resource] is None, resource
        else:
            got_list = got[resource]
            assert got_list is not None, resource
            assert len(got_list) == len(hints)
            assert set(got_list) == set(hints), resource


def _version_limited_cases() -> list[Any]:
    return [
        pytest.param(row, id=row["id"])
        for row in load("device_hints")["cases"]
        if row["versions"] != list(SUPPORTED)
    ]


@pytest.mark.parametrize("row", _version_limited_cases())
def test_version_limited_rows_differ_outside_their_versions(row: dict[str, Any]) -> None:
    """A row split by version (kubernetes#138244) is a real difference: every other version answers
    otherwise, and the row's twin (same test and description) covers exactly those versions."""
    expected = _expected_hints(row["expected_hints"])
    outside = [v for v in SUPPORTED if v not in row["versions"]]
    assert outside
    for version in outside:
        assert not _same_hints(_row_hints(row, version), expected), version
    twins = [
        r
        for r in load("device_hints")["cases"]
        if r["test"] == row["test"] and r["description"] == row["description"] and r is not row
    ]
    assert [v for t in twins for v in t["versions"]] == outside


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


# ---- kubernetes#138244's own tests (1.36 on) ---------------------------------------------------------


def _devices(raw: list[dict[str, Any]]) -> dict[str, Device]:
    return {d["id"]: _device(d) for d in raw}


def _generated(row: dict[str, Any], version: str) -> list[TopologyHint]:
    """``generateDeviceTopologyHints`` as the kubelet of ``version`` builds it (the behaviour registry says
    whether hints are built over the devices' NUMA nodes only)."""
    return generate_device_topology_hints(
        row["numa_nodes"],
        _devices(row["devices"]),
        row["available"],
        row["reusable"],
        row["request"],
        device_nodes_only=in_effect(HINTS_OVER_DEVICE_NODES, version),
    )


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("device_hints", "device_numa_nodes_cases", key="description")
)
def test_device_numa_nodes(row: dict[str, Any], version: str) -> None:
    assert in_effect(HINTS_OVER_DEVICE_NODES, version)
    assert device_numa_nodes(row["numa_nodes"], _devices(row["devices"])) == row["expected"]


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("device_hints", "generate_cases", key="description")
)
def test_generate_device_topology_hints(row: dict[str, Any], version: str) -> None:
    got = _generated(row, version)
    if "expected_mask_count" in row:
        want = row["expected_mask_count"]
        mask = BitMask.of(*want["numa_affinity"])
        assert sum(1 for h in got if h.affinity == mask) == want["count"]
    else:
        expected = [_hint(h) for h in row["expected_hints"]]
        assert len(got) == len(expected)
        assert set(got) == set(expected)


@pytest.mark.parametrize(("row", "version"), versioned_rows("device_hints", "merge_cases", key="description"))
def test_device_hints_merge_with_other_providers(row: dict[str, Any], version: str) -> None:
    providers: list[ProviderHints] = [{row["resource"]: _generated(row, version)}]
    for other in row["other_providers"]:
        providers.append({name: [_hint(h) for h in hints] for name, hints in other.items()})
    numa_info = NUMAInfo(row["numa_nodes"], {})
    policies = {"best-effort": BestEffortPolicy, "restricted": RestrictedPolicy}
    expected = row["expected"]
    for name in row["policies"]:
        best, admit = policies[name](numa_info, PolicyOptions()).merge(providers)
        assert admit == expected["admit"], name
        assert best.affinity == BitMask.of(*expected["numa_affinity"]), name
        assert best.preferred == expected["preferred"], name
