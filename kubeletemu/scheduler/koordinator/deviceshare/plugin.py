"""DeviceShare's PreFilter, Filter and Reserve and its NUMA hint provider for one pod on one node, as
``pkg/scheduler/plugins/deviceshare/plugin.go`` and ``topology_hint.go`` ship them at
koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``.

Filter trusts the Topology Manager: when NodeNUMAResource's Filter stored a NUMA affinity for the node (its
admission already ran DeviceShare's ``Allocate`` inside that affinity), it passes; otherwise it tries an
allocation anywhere on the node. Reserve allocates inside the stored affinity (anywhere when none was
stored). Not modelled: Score, reservations and preemption, designated allocations, GPU shared-resource
templates, the device scorer. ``gpuShareUnsupportedModels`` (empty by default) is a constructor argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import ERROR, UNSCHEDULABLE_AND_UNRESOLVABLE, NodeInfo, Status, memo
from kubeletemu.scheduler.koordinator.deviceshare import api
from kubeletemu.scheduler.koordinator.deviceshare.allocator import (
    Allocations,
    AutopilotAllocator,
    GPUTotalMemError,
    fill_gpu_total_mem,
)
from kubeletemu.scheduler.koordinator.deviceshare.hints import Hints, allocate_with_affinity, topology_hints
from kubeletemu.scheduler.koordinator.deviceshare.node_device import NodeDevice, node_device
from kubeletemu.scheduler.koordinator.deviceshare.requests import PreFilterState, pre_filter
from kubeletemu.scheduler.koordinator.merge import NUMATopologyHint

NAME = "DeviceShare"
ERR_GPU_ISOLATION_PROVIDER = "GPUIsolationProviderHAMICore not found on the node"


@dataclass(frozen=True)
class DeviceReserveResult:
    status: Status
    allocations: Allocations = field(default_factory=dict)


def _labels(node: NodeInfo) -> Mapping[str, str]:
    return node.node.labels if node.node is not None else {}


class DeviceShare:
    """The shipped plugin with its default args (``disableDeviceNUMATopologyAlignment`` false)."""

    name = NAME

    def __init__(
        self,
        disable_numa_alignment: bool = False,
        gpu_share_unsupported_models: Mapping[str, Set[str]] | None = None,
    ) -> None:
        self.disable_numa_alignment = disable_numa_alignment
        # DeviceShareArgs.gpuShareUnsupportedModels: GPU vendor -> models that refuse shared GPU requests.
        self.gpu_share_unsupported_models: Mapping[str, Set[str]] = gpu_share_unsupported_models or {}

    def pre_filter(self, pod: Pod) -> PreFilterState | Status:
        return memo(pod, "_koord_deviceshare_pre_filter", lambda: pre_filter(pod))

    def _device(self, node: NodeInfo) -> NodeDevice | None:
        return node_device(node)

    # ---- the Topology Manager's hint provider ---------------------------------------------------------

    def pod_topology_hints(self, pod: Pod, node: NodeInfo) -> tuple[Hints | None, Status]:
        """``GetPodTopologyHints``: (None, success) is a provider without preference."""
        state = self.pre_filter(pod)
        if self.disable_numa_alignment or isinstance(state, Status) or state.skip:
            return None, Status()
        device = self._device(node)
        if device is None:
            return None, Status()
        return topology_hints(state, device, _labels(node))

    def allocate(self, pod: Pod, node: NodeInfo, affinity: NUMATopologyHint) -> Status:
        """``Allocate``: the pod's devices must fit inside the merged affinity."""
        state = self.pre_filter(pod)
        if self.disable_numa_alignment or isinstance(state, Status) or state.skip:
            return Status()
        device = self._device(node)
        if device is None:
            return Status()
        return allocate_with_affinity(state, device, _labels(node), affinity)

    # ---- Filter / Reserve -----------------------------------------------------------------------------

    def filter(self, pod: Pod, node: NodeInfo, affinity_stored: bool) -> Status:
        """``Filter`` (plugin.go ``Plugin.Filter``: the GPU isolation provider and unsupported-model checks
        come before the stored-affinity shortcut); ``affinity_stored``: NodeNUMAResource's admission stored
        an affinity this cycle."""
        state = self.pre_filter(pod)
        if isinstance(state, Status):
            return state
        if state.skip:
            return Status()
        gpu = state.gpu_requirements
        provider = pod.labels.get(api.LABEL_GPU_ISOLATION_PROVIDER, "")
        if (
            gpu is not None
            and gpu.gpu_shared
            and provider not in ("", _labels(node).get(api.LABEL_GPU_ISOLATION_PROVIDER))
        ):
            return Status(ERROR, (ERR_GPU_ISOLATION_PROVIDER,))
        if gpu is not None and gpu.gpu_shared:
            labels = _labels(node)
            vendor, model = labels.get(api.LABEL_GPU_VENDOR, ""), labels.get(api.LABEL_GPU_MODEL, "")
            if model in self.gpu_share_unsupported_models.get(vendor, ()):
                # Label values carry no characters Go's %q would escape.
                return Status(
                    UNSCHEDULABLE_AND_UNRESOLVABLE,
                    (f'model "{model}" of vendor "{vendor}" does not support GPU Share',),
                )
        if affinity_stored:
            return Status()
        device = self._device(node)
        if device is None:
            return Status()
        return AutopilotAllocator(state, device, _labels(node)).allocate()[1]

    def reserve(self, pod: Pod, node: NodeInfo, affinity: NUMATopologyHint | None) -> DeviceReserveResult:
        """``Reserve`` (``allocate``) inside the stored ``affinity`` (None: none stored); the GPU allocations
        then get their missing memory or memory ratio from the device (``fillGPUTotalMem``)."""
        state = self.pre_filter(pod)
        if isinstance(state, Status):
            return DeviceReserveResult(state)
        if state.skip:
            return DeviceReserveResult(Status())
        device = self._device(node)
        if device is None:
            return DeviceReserveResult(Status())
        mask = None if self.disable_numa_alignment or affinity is None else affinity.affinity
        allocator = AutopilotAllocator(state, device, _labels(node), numa_nodes=mask, reserve_phase=True)
        allocations, status = allocator.allocate()
        if not status.ok:
            return DeviceReserveResult(status)
        try:
            fill_gpu_total_mem(allocations, device)
        except GPUTotalMemError as err:
            return DeviceReserveResult(Status(ERROR, (f"fillGPUTotalMem failed: {err}, node: {node.name}",)))
        return DeviceReserveResult(status, allocations)
