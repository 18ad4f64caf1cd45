"""koord_deviceshare.json ``allocator``: DeviceShare's ``AutopilotAllocator.Allocate`` on a whole node, with
the pod's requests and hint annotations read by the real PreFilter (deviceshare/device_allocator_test.go
TestAutopilotAllocator, TestAutopilotAllocatorWithExclusivePolicyAndRequiredScope,
Test_allocateGPUWithUnhealthyInstance), and Reserve's ``fillGPUTotalMem`` on its result."""

from __future__ import annotations

import json
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import pytest

from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import NodeInfo, Status
from kubeletemu.scheduler.koordinator.deviceshare import DeviceShare, api
from kubeletemu.scheduler.koordinator.deviceshare.allocator import AutopilotAllocator, fill_gpu_total_mem
from kubeletemu.scheduler.koordinator.deviceshare.node_device import NodeDevice, node_device
from kubeletemu.scheduler.koordinator.deviceshare.requests import PreFilterState, gpu_requirements, pre_filter
from kubeletemu.scheduler.objects import Device, parse_objects
from tests.conformance.loader import load, rows

TABLE = "koord_deviceshare"


def _device(name: str, labels: dict[str, str]) -> Device:
    raw = load(TABLE)["allocatorDevices"][name]
    raw = {**raw, "metadata": {**raw["metadata"], "labels": labels}}
    (device,) = parse_objects(json.dumps(raw), f"{TABLE}:allocatorDevices.{name}")
    assert isinstance(device, Device)
    return device


def _pod(raw: dict[str, Any]) -> Pod:
    """The test's pod: one container with the requests and the hint annotations (hostNetwork is set in the
    Go test but DeviceShare never reads it). Limits equal the requests, as the API server's validation of
    extended resources wants; DeviceShare reads only the requests."""
    return pod_from_manifest(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pod", "namespace": "default", "annotations": raw["annotations"]},
            "spec": {
                "hostNetwork": raw.get("hostNetwork", False),
                "containers": [
                    {"name": "c", "resources": {"requests": raw["requests"], "limits": raw["requests"]}}
                ],
            },
        }
    )


def _node(row: dict[str, Any]) -> NodeDevice:
    device = _device(row["device"], row.get("deviceLabels", {}))
    pods: tuple[Pod, ...] = ()
    if row.get("assignedDevices"):
        annotations = {api.ANNOTATION_DEVICE_ALLOCATED: json.dumps(row["assignedDevices"])}
        pods = (
            Pod(
                "assigned-pod",
                "default",
                "assigned-uid",
                (),
                annotations=MappingProxyType(annotations),
                node_name=device.name,
            ),
        )
    built = node_device(NodeInfo(device.name, None, None, pods, device))
    assert built is not None
    return built


def _doc(allocations: dict[str, list[api.DeviceAllocation]]) -> dict[str, list[dict[str, Any]]]:
    """Allocations by type, sorted by minor (``sortDeviceAllocations``), amounts as exact numbers."""
    return {
        t: [
            {
                "minor": a.minor,
                "resources": dict(sorted(a.resources.items())),
                "vfs": [(v.minor, v.bus_id) for v in a.vfs],
            }
            for a in sorted(items, key=lambda a: a.minor)
        ]
        for t, items in allocations.items()
    }


def _want(raw: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    if raw is None:
        return {}
    allocations = api.device_allocations({api.ANNOTATION_DEVICE_ALLOCATED: json.dumps(raw)})
    assert allocations is not None
    return _doc(allocations)


def _state(row: dict[str, Any]) -> PreFilterState | Status:
    """The real PreFilter on the row's pod, or, for ``podRequests``, the state the Go test sets by hand
    (converted requests, no hints: ``parseGPURequirements`` on a pod without annotations)."""
    if "pod" in row:
        return pre_filter(_pod(row["pod"]))
    requests = {t: {k: Quantity.parse(v).amount for k, v in r.items()} for t, r in row["podRequests"].items()}
    bare = Pod("pod", "default", "uid", ())
    return PreFilterState(
        skip=False, pod_requests=requests, gpu_requirements=gpu_requirements(bare, requests, {})
    )


@pytest.mark.parametrize("row", rows(TABLE, "allocator"))
def test_allocator(row: dict[str, Any]) -> None:
    state = _state(row)
    assert isinstance(state, PreFilterState) and not state.skip, state
    node = _node(row)
    allocations, status = AutopilotAllocator(state, node, {}).allocate()
    assert status.ok is not row["wantErr"], status
    if status.ok:
        fill_gpu_total_mem(allocations, node)
    assert _doc(allocations) == _want(row["want"])


def test_reserve_fills_gpu_memory_from_the_device() -> None:
    """Reserve runs ``fillGPUTotalMem``: a whole GPU asked as ``nvidia.com/gpu`` (core and ratio only) is
    written with the device's memory, 83201216Ki = 85198045184 bytes (plugin.go ``allocate``)."""
    device = _device("fakeDeviceCR", {})
    pod = _pod({"requests": {"nvidia.com/gpu": "1"}, "annotations": {}})
    result = DeviceShare().reserve(pod, NodeInfo(device.name, None, None, (), device), None)
    assert result.status.ok, result.status
    (gpu,) = result.allocations["gpu"]
    assert (gpu.minor, dict(gpu.resources)) == (
        0,
        {
            api.RESOURCE_GPU_CORE: Fraction(100),
            api.RESOURCE_GPU_MEMORY_RATIO: Fraction(100),
            api.RESOURCE_GPU_MEMORY: Fraction(85198045184),
        },
    )
