"""koord_deviceshare.json ``pluginPreFilter``, ``pluginFilter``, ``pluginReserve``: DeviceShare's PreFilter,
Filter and Reserve as deviceshare/plugin_test.go (koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``) checks them."""

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
from kubeletemu.scheduler.koordinator.deviceshare.allocator import Allocations
from kubeletemu.scheduler.koordinator.deviceshare.node_device import DeviceResources, NodeDevice
from kubeletemu.scheduler.koordinator.deviceshare.requests import (
    GPURequirements,
    PreFilterState,
    gpu_requirements,
)
from kubeletemu.scheduler.koordinator.deviceshare.resourcelist import ResourceList
from kubeletemu.scheduler.objects import Device, DeviceInfo, Node, parse_objects
from tests.conformance.loader import rows

TABLE = "koord_deviceshare"
NODE = "test-node"


def _amounts(raw: dict[str, str]) -> ResourceList:
    return {name: Quantity.parse(text).amount for name, text in raw.items()}


def _pod(requests: dict[str, str] | None, labels: dict[str, str] | None = None) -> Pod:
    """The test's pod: one container with ``requests`` (limits equal, as the API server wants for extended
    resources; DeviceShare reads only requests), or, for None, the Go test's empty ``&corev1.Pod{}`` (built
    directly: a manifest needs a container)."""
    if requests is None:
        return Pod("test", "default", "123456789", (), labels=MappingProxyType(labels or {}))
    containers = [{"name": "c", "resources": {"requests": requests, "limits": requests}}]
    return pod_from_manifest(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "test", "namespace": "default", "uid": "123456789", "labels": labels or {}},
            "spec": {"nodeName": "test-node", "containers": containers},
        }
    )


def _gpu_requirements(raw: dict[str, Any]) -> GPURequirements:
    return GPURequirements(
        number_of_gpus=raw["numberOfGPUs"],
        requests_per_gpu=_amounts(raw["requestsPerGPU"]),
        gpu_shared=raw["gpuShared"],
    )


def _want_state(raw: dict[str, Any]) -> PreFilterState:
    if raw["skip"]:
        return PreFilterState(skip=True)
    gpu = raw.get("gpuRequirements")
    return PreFilterState(
        skip=False,
        pod_requests={t: _amounts(r) for t, r in raw["podRequests"].items()},
        pod_fits_secondary_device_well_planned=raw["podFitsSecondaryDeviceWellPlanned"],
        gpu_requirements=None if gpu is None else _gpu_requirements(gpu),
    )


@pytest.mark.parametrize("row", rows(TABLE, "pluginPreFilter"))
def test_pre_filter(row: dict[str, Any]) -> None:
    got = DeviceShare().pre_filter(_pod(row["requests"]))
    want_status = row["wantStatus"]
    if want_status is not None and want_status["code"] != "Skip":
        assert isinstance(got, Status), got
        assert (got.code, got.message) == (want_status["code"], want_status["message"])
        assert row["wantState"] is None
        return
    # Success or Skip: the state PreFilter writes; Skip is exactly a state with ``skip`` set.
    assert isinstance(got, PreFilterState), got
    assert got.skip is (want_status is not None)
    assert got == _want_state(row["wantState"])


def test_pre_filter_amounts_are_exact() -> None:
    """``8Gi`` stays 8 GiB through conversion and the per-GPU split (no unit rounding)."""
    state = DeviceShare().pre_filter(_pod({"koordinator.sh/gpu-memory": "8Gi"}))
    assert isinstance(state, PreFilterState) and state.gpu_requirements is not None
    assert state.gpu_requirements.requests_per_gpu == {"koordinator.sh/gpu-memory": Fraction(8 << 30)}


# ---- Filter / Reserve ----------------------------------------------------------------------------------


class _Harness(DeviceShare):
    """plugin_test.go's harness around the shipped plugin: the PreFilter state the row writes into the cycle
    state (``cycleState.Write(stateKey, ...)``; None: the real PreFilter on the pod) and the row's device
    cache (``pl.nodeDeviceCache = ...``), keyed by node name."""

    def __init__(self, state: PreFilterState | None, cache: dict[str, NodeDevice], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._state = state
        self._cache = cache

    def pre_filter(self, pod: Pod) -> PreFilterState | Status:
        return self._state if self._state is not None else super().pre_filter(pod)

    def _device(self, node: NodeInfo) -> NodeDevice | None:
        return self._cache.get(node.name)


def _device_resources(raw: dict[str, dict[str, dict[str, str]]]) -> dict[str, DeviceResources]:
    return {t: {int(m): _amounts(r) for m, r in by_minor.items()} for t, by_minor in raw.items()}


def _device_infos(raw: dict[str, list[dict[str, Any]]], where: str) -> dict[str, tuple[DeviceInfo, ...]]:
    """``deviceInfos`` parsed as the devices of a Device object (type taken from the key)."""
    out: dict[str, tuple[DeviceInfo, ...]] = {}
    for device_type, infos in raw.items():
        doc = {
            "apiVersion": "scheduling.koordinator.sh/v1alpha1",
            "kind": "Device",
            "metadata": {"name": NODE},
            "spec": {"devices": [{"type": device_type, **i} for i in infos]},
        }
        (device,) = parse_objects(json.dumps(doc), f"{where}.deviceInfos.{device_type}")
        assert isinstance(device, Device)
        out[device_type] = device.devices
    return out


def _node_device(raw: dict[str, Any], where: str) -> NodeDevice:
    """The row's ``nodeDevice`` literal: free, total and used as given (not recomputed), no NUMA topology,
    no VF allocations, no GPU topology scope or partition table (the literals leave them nil)."""
    return NodeDevice(
        total=_device_resources(raw["deviceTotal"]),
        used=_device_resources(raw["deviceUsed"]),
        free=_device_resources(raw["deviceFree"]),
        infos=_device_infos(raw["deviceInfos"], where),
    )


def _cache(row: dict[str, Any], where: str) -> dict[str, NodeDevice]:
    return {} if row["nodeDevice"] is None else {NODE: _node_device(row["nodeDevice"], where)}


def _summed_requests(pod_requests: dict[str, dict[str, str]] | None) -> dict[str, str]:
    """The harness adds the state's podRequests of every type into one container's requests."""
    out: dict[str, Quantity] = {}
    for requests in (pod_requests or {}).values():
        for name, text in requests.items():
            out[name] = (
                Quantity(out[name].amount + Quantity.parse(text).amount)
                if name in out
                else Quantity.parse(text)
            )
    return {name: str(q) for name, q in out.items()}


def _status_matches(got: Status, want: dict[str, str] | None) -> None:
    """Go compares the code and that the message contains the wanted one."""
    if want is None:
        assert got.ok, got
    else:
        assert got.code == want["code"] and want["message"] in got.message, got


@pytest.mark.parametrize("row", rows(TABLE, "pluginFilter"))
def test_filter(row: dict[str, Any]) -> None:
    where = f"{TABLE}:pluginFilter.{row['name']}"
    state = None
    if "state" in row:
        shared = row["state"]["gpuRequirements"]["gpuShared"]
        state = PreFilterState(
            skip=False,
            gpu_requirements=GPURequirements(number_of_gpus=0, requests_per_gpu={}, gpu_shared=shared),
        )
    requests = _summed_requests(row["podRequests"])
    pod = _pod(requests or None, row.get("podLabels"))
    node = NodeInfo(NODE, Node(NODE, labels=row["nodeLabels"]))
    unsupported = {
        vendor: frozenset(models) for vendor, models in row.get("gpuShareUnsupportedModels", {}).items()
    }
    plugin = _Harness(state, _cache(row, where), gpu_share_unsupported_models=unsupported)
    got = plugin.filter(pod, node, affinity_stored=False)
    _status_matches(got, row["want"])


def _reserve_state(raw: dict[str, Any]) -> PreFilterState:
    """The state the Reserve harness writes: the row's podRequests, no hints, and ``parseGPURequirements``
    on an empty pod; podFitsSecondaryDeviceWellPlanned stays false (the literals leave it unset)."""
    if raw.get("skip"):
        return PreFilterState(skip=True)
    requests = {t: _amounts(r) for t, r in raw["podRequests"].items()}
    bare = Pod("", "", "", ())
    return PreFilterState(
        skip=False, pod_requests=requests, gpu_requirements=gpu_requirements(bare, requests, {})
    )


def _allocations(allocations: Allocations) -> dict[str, list[tuple[int, ResourceList]]]:
    """Per type, (minor, resources) sorted by minor (``sortDeviceAllocations``), amounts exact."""
    return {t: sorted((a.minor, dict(a.resources)) for a in items) for t, items in allocations.items()}


@pytest.mark.parametrize("row", rows(TABLE, "pluginReserve"))
def test_reserve(row: dict[str, Any]) -> None:
    where = f"{TABLE}:pluginReserve.{row['name']}"
    plugin = _Harness(_reserve_state(row["state"]), _cache(row, where))
    node = NodeInfo(NODE, Node(NODE, labels=row["nodeLabels"]))
    result = plugin.reserve(Pod("", "", "", ()), node, None)
    _status_matches(result.status, row["wantStatus"])
    want = row["wantAllocationResult"]
    if want is not None:
        parsed = api.device_allocations({api.ANNOTATION_DEVICE_ALLOCATED: json.dumps(want)})
        assert parsed is not None
        assert _allocations(result.allocations) == _allocations(parsed)
    else:
        # No allocation checked upstream; a failed Reserve allocates nothing.
        assert result.status.ok or not result.allocations
