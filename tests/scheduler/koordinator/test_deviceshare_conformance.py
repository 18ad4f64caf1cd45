"""koord_deviceshare.json: DeviceShare's NUMA hints, its allocation inside an affinity and the hints of a
designated allocation (deviceshare/topology_hint_test.go TestPlugin_GetPodTopologyHints,
TestPlugin_Allocate, Test_generateDesignatedHints)."""

from __future__ import annotations

import json
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.koordinator.deviceshare import api
from kubeletemu.scheduler.koordinator.deviceshare.hints import (
    ERR_DESIGNATED_ALLOCATION_LACK_NUMA,
    allocate_with_affinity,
    designated_hints,
    topology_hints,
)
from kubeletemu.scheduler.koordinator.deviceshare.node_device import NodeDevice, node_device, numa_topology
from kubeletemu.scheduler.koordinator.deviceshare.requests import PreFilterState, gpu_requirements
from kubeletemu.scheduler.koordinator.merge import NUMATopologyHint
from kubeletemu.scheduler.objects import Device, parse_objects
from tests.conformance.loader import load, rows

TABLE = "koord_deviceshare"


def _device() -> Device:
    (device,) = parse_objects(json.dumps(load(TABLE)["device"]), TABLE)
    assert isinstance(device, Device)
    return device


def _node(row: dict[str, Any]) -> NodeDevice:
    pods: tuple[Pod, ...] = ()
    if row.get("assignedDevices"):
        annotations = {api.ANNOTATION_DEVICE_ALLOCATED: json.dumps(row["assignedDevices"])}
        pods = (
            Pod(
                "assigned-pod",
                "default",
                "123456",
                (),
                annotations=MappingProxyType(annotations),
                node_name="node-1",
            ),
        )
    built = node_device(NodeInfo("node-1", None, None, pods, _device()))
    assert built is not None
    return built


def _state(row: dict[str, Any]) -> PreFilterState:
    requests = {t: {k: Quantity.parse(v).amount for k, v in r.items()} for t, r in row["podRequests"].items()}
    annotations = {}
    if "hints" in row:
        annotations[api.ANNOTATION_DEVICE_ALLOCATE_HINT] = json.dumps(row["hints"])
    if "jointAllocate" in row:
        annotations[api.ANNOTATION_DEVICE_JOINT_ALLOCATE] = json.dumps(row["jointAllocate"])
    hints = api.device_allocate_hints(annotations) or {}
    pod = Pod("p", "default", "uid", (Container("c"),))
    return PreFilterState(
        skip=False,
        pod_requests=requests,
        hints=hints,
        has_selectors=any(h.selector is not None for h in hints.values()),
        joint_allocate=api.device_joint_allocate(annotations),
        gpu_requirements=gpu_requirements(pod, requests, hints),
    )


@pytest.mark.parametrize("row", rows(TABLE, "hints"))
def test_hints(row: dict[str, Any]) -> None:
    got, status = topology_hints(_state(row), _node(row), {})
    want = row["want"]
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert _hints_doc(got) == want
    assert status.ok is not row["wantErr"], status


@pytest.mark.parametrize("row", rows(TABLE, "allocate"))
def test_allocate(row: dict[str, Any]) -> None:
    bits = row["affinity"]
    affinity = NUMATopologyHint(BitMask.of(*bits) if bits is not None else None)
    status = allocate_with_affinity(_state(row), _node(row), {}, affinity)
    assert status.ok is not row["wantErr"], status


def _hints_doc(hints: dict[str, list[NUMATopologyHint]]) -> dict[str, list[dict[str, Any]]]:
    return {
        t: [
            {
                "numaNodes": h.affinity.bits() if h.affinity else None,
                "preferred": h.preferred,
                "score": h.score,
            }
            for h in hs
        ]
        for t, hs in hints.items()
    }


@pytest.mark.parametrize("row", rows(TABLE, "designatedHints"))
def test_designated_hints(row: dict[str, Any]) -> None:
    allocations = api.device_allocations({api.ANNOTATION_DEVICE_ALLOCATED: json.dumps(row["allocations"])})
    assert allocations is not None
    got, status = designated_hints(allocations, numa_topology(_device().devices))
    assert list(status.reasons) == (row["wantStatus"] or [])
    assert got is not None and _hints_doc(got) == row["wantDesignated"]


def test_designated_devices_span_their_numa_nodes_or_lack_one() -> None:
    """generateDesignatedHints: one hint over the NUMA nodes of every designated device, for every type;
    a minor the topology does not place refuses the node."""
    topology = numa_topology(_device().devices)
    both = {api.ANNOTATION_DEVICE_ALLOCATED: json.dumps({"gpu": [{"minor": 1}], "rdma": [{"minor": 4}]})}
    allocations = api.device_allocations(both)
    assert allocations is not None
    got, status = designated_hints(allocations, topology)
    assert status.ok and got is not None
    assert _hints_doc(got) == {
        t: [{"numaNodes": [0, 1], "preferred": True, "score": 500}] for t in ("gpu", "rdma")
    }
    missing = api.device_allocations({api.ANNOTATION_DEVICE_ALLOCATED: json.dumps({"gpu": [{"minor": 9}]})})
    assert missing is not None
    got, status = designated_hints(missing, topology)
    assert got is None and (status.code, list(status.reasons)) == (
        "Unschedulable",
        [ERR_DESIGNATED_ALLOCATION_LACK_NUMA],
    )


def test_unhealthy_gpu_has_no_resources() -> None:
    """buildDeviceResources: an unhealthy device keeps its place, with nothing to give."""
    raw = load(TABLE)["device"]
    raw = {
        **raw,
        "spec": {
            "devices": [
                {**d, "health": False} if d.get("minor") == 4 and d["type"] == "gpu" else d
                for d in raw["spec"]["devices"]
            ]
        },
    }
    (device,) = parse_objects(json.dumps(raw), TABLE)
    assert isinstance(device, Device)
    built = node_device(NodeInfo("node-1", None, None, (), device))
    assert built is not None
    assert built.total["gpu"][4] == {} and built.total["gpu"][5][api.RESOURCE_GPU_CORE] == Fraction(100)
