"""A pod's device requests and DeviceShare's PreFilter state, as ``pkg/scheduler/plugins/deviceshare/
utils.go`` (``GetPodDeviceRequests``, ``ValidateDeviceRequest``, ``ConvertDeviceRequest``, ``preparePod``,
``parseGPURequirements``) and ``devicehandler_gpu.go`` (``calcDesiredRequestsAndCountForGPU``) compute them
at koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``.

Per device type (gpu, rdma, fpga) the pod's requests of that type's resource names are validated as a
combination and converted: ``nvidia.com/gpu: 2`` becomes ``gpu-core: 200, gpu-memory-ratio: 200``,
``koordinator.sh/gpu: 50`` becomes ``gpu-core: 50, gpu-memory-ratio: 50``, and so on. Quantities are read
with ``Value()`` (rounded up), as the shipped code does. Device types are visited in name order where Go
ranges over a map (its order is random; the first invalid type's error is the one returned).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from kubeletemu.lifecycle.resources import pod_request_list
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import UNSCHEDULABLE_AND_UNRESOLVABLE, Status
from kubeletemu.scheduler.koordinator.deviceshare import api
from kubeletemu.scheduler.koordinator.deviceshare.resourcelist import ResourceList, is_zero, value
from kubeletemu.scheduler.koordinator.extension import AnnotationError

# Combination flags (utils.go's iota order).
NVIDIA_GPU, AMD_GPU, HYGON_DCU, KOORD_GPU, GPU_SHARED, GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO = (
    1 << i for i in range(8)
)
HUAWEI_NPU_CORE, HUAWEI_NPU_CPU, HUAWEI_NPU_DVPP, FPGA, RDMA = (1 << i for i in range(8, 13))

DEVICE_RESOURCE_NAMES: Mapping[str, tuple[str, ...]] = {
    api.GPU: (
        api.RESOURCE_NVIDIA_GPU,
        api.RESOURCE_AMD_GPU,
        api.RESOURCE_HYGON_DCU,
        api.RESOURCE_GPU,
        api.RESOURCE_GPU_SHARED,
        api.RESOURCE_GPU_CORE,
        api.RESOURCE_GPU_MEMORY,
        api.RESOURCE_GPU_MEMORY_RATIO,
        api.RESOURCE_HUAWEI_NPU_CORE,
        api.RESOURCE_HUAWEI_NPU_CPU,
        api.RESOURCE_HUAWEI_NPU_DVPP,
    ),
    api.RDMA: (api.RESOURCE_RDMA,),
    api.FPGA: (api.RESOURCE_FPGA,),
}
FLAGS: Mapping[str, int] = {
    api.RESOURCE_NVIDIA_GPU: NVIDIA_GPU,
    api.RESOURCE_AMD_GPU: AMD_GPU,
    api.RESOURCE_HYGON_DCU: HYGON_DCU,
    api.RESOURCE_GPU: KOORD_GPU,
    api.RESOURCE_GPU_CORE: GPU_CORE,
    api.RESOURCE_GPU_MEMORY: GPU_MEMORY,
    api.RESOURCE_GPU_MEMORY_RATIO: GPU_MEMORY_RATIO,
    api.RESOURCE_GPU_SHARED: GPU_SHARED,
    api.RESOURCE_HUAWEI_NPU_CORE: HUAWEI_NPU_CORE,
    api.RESOURCE_HUAWEI_NPU_CPU: HUAWEI_NPU_CPU,
    api.RESOURCE_HUAWEI_NPU_DVPP: HUAWEI_NPU_DVPP,
    api.RESOURCE_FPGA: FPGA,
    api.RESOURCE_RDMA: RDMA,
}


def _percentage(amount: Fraction) -> bool:
    """``ValidatePercentageResource``: up to 100, or a whole multiple of 100."""
    v = value(amount)
    return not (v > 100 and v % 100 != 0)


def _multiple(a: Fraction, b: Fraction) -> bool:
    return value(a) % value(b) == 0


def _less_than_100_times(a: Fraction, b: Fraction) -> bool:
    return value(a) // value(b) <= 100


def _valid_true(_: Mapping[str, Fraction]) -> bool:
    return True


def _valid_percentage(req: Mapping[str, Fraction]) -> bool:
    core, ratio = req.get(api.RESOURCE_GPU_CORE), req.get(api.RESOURCE_GPU_MEMORY_RATIO)
    return (core is None or _percentage(core)) and (ratio is None or _percentage(ratio))


def _valid_shared(req: Mapping[str, Fraction]) -> bool:
    shared = req.get(api.RESOURCE_GPU_SHARED)
    if shared is None:
        return False
    for name in (api.RESOURCE_GPU_CORE, api.RESOURCE_GPU_MEMORY_RATIO):
        amount = req.get(name)
        if amount is not None and (not _multiple(amount, shared) or not _less_than_100_times(amount, shared)):
            return False
    return True


def _valid_npu_shared(req: Mapping[str, Fraction]) -> bool:
    shared = req.get(api.RESOURCE_GPU_SHARED)
    if shared is None or value(shared) > 1:
        return False
    dvpp = req.get(api.RESOURCE_HUAWEI_NPU_DVPP)
    return dvpp is None or value(dvpp) <= 100


VALID_COMBINATIONS: Mapping[int, Callable[[Mapping[str, Fraction]], bool]] = {
    NVIDIA_GPU: _valid_true,
    AMD_GPU: _valid_true,
    HYGON_DCU: _valid_true,
    KOORD_GPU: _valid_true,
    GPU_MEMORY: _valid_percentage,
    GPU_MEMORY_RATIO: _valid_percentage,
    GPU_CORE | GPU_MEMORY: _valid_percentage,
    GPU_CORE | GPU_MEMORY_RATIO: _valid_percentage,
    HUAWEI_NPU_CORE | GPU_MEMORY_RATIO: _valid_percentage,
    GPU_SHARED | GPU_MEMORY: _valid_shared,
    GPU_SHARED | GPU_MEMORY_RATIO: _valid_shared,
    GPU_SHARED | GPU_CORE | GPU_MEMORY: _valid_shared,
    GPU_SHARED | GPU_CORE | GPU_MEMORY_RATIO: _valid_shared,
    GPU_SHARED | HUAWEI_NPU_CORE | HUAWEI_NPU_CPU | GPU_MEMORY: _valid_npu_shared,
    GPU_SHARED | HUAWEI_NPU_CORE | HUAWEI_NPU_CPU | HUAWEI_NPU_DVPP | GPU_MEMORY: _valid_npu_shared,
    FPGA: _valid_true,
    RDMA: _valid_true,
}
# Resources checked one by one (``DeviceResourceValidators``).
PERCENTAGE_RESOURCES = (api.RESOURCE_GPU, api.RESOURCE_FPGA, api.RESOURCE_RDMA)


def _keep(*names: str) -> Callable[[Mapping[str, Fraction]], ResourceList]:
    return lambda req: {n: req[n] for n in names if n in req}


def _whole_gpus(name: str) -> Callable[[Mapping[str, Fraction]], ResourceList]:
    def convert(req: Mapping[str, Fraction]) -> ResourceList:
        amount = Fraction(value(req[name]) * 100)
        return {api.RESOURCE_GPU_CORE: amount, api.RESOURCE_GPU_MEMORY_RATIO: amount}

    return convert


def _koord_gpu(req: Mapping[str, Fraction]) -> ResourceList:
    return {
        api.RESOURCE_GPU_CORE: req[api.RESOURCE_GPU],
        api.RESOURCE_GPU_MEMORY_RATIO: req[api.RESOURCE_GPU],
    }


# ResourceCombinationsMapper; a missing name maps to a zero amount in Go (``podRequest[name]``).
MAPPERS: Mapping[int, Callable[[Mapping[str, Fraction]], ResourceList]] = {
    GPU_MEMORY: _keep(api.RESOURCE_GPU_MEMORY),
    GPU_MEMORY_RATIO: _keep(api.RESOURCE_GPU_MEMORY_RATIO),
    GPU_CORE | GPU_MEMORY: _keep(api.RESOURCE_GPU_CORE, api.RESOURCE_GPU_MEMORY),
    GPU_CORE | GPU_MEMORY_RATIO: _keep(api.RESOURCE_GPU_CORE, api.RESOURCE_GPU_MEMORY_RATIO),
    HUAWEI_NPU_CORE | GPU_MEMORY_RATIO: _keep(api.RESOURCE_HUAWEI_NPU_CORE, api.RESOURCE_GPU_MEMORY_RATIO),
    KOORD_GPU: _koord_gpu,
    GPU_SHARED | GPU_MEMORY: _keep(api.RESOURCE_GPU_SHARED, api.RESOURCE_GPU_MEMORY),
    GPU_SHARED | GPU_MEMORY_RATIO: _keep(api.RESOURCE_GPU_SHARED, api.RESOURCE_GPU_MEMORY_RATIO),
    GPU_SHARED | GPU_CORE | GPU_MEMORY: _keep(
        api.RESOURCE_GPU_SHARED, api.RESOURCE_GPU_CORE, api.RESOURCE_GPU_MEMORY
    ),
    GPU_SHARED | GPU_CORE | GPU_MEMORY_RATIO: _keep(
        api.RESOURCE_GPU_SHARED, api.RESOURCE_GPU_CORE, api.RESOURCE_GPU_MEMORY_RATIO
    ),
    GPU_SHARED | HUAWEI_NPU_CORE | HUAWEI_NPU_CPU | GPU_MEMORY: _keep(
        api.RESOURCE_GPU_SHARED,
        api.RESOURCE_HUAWEI_NPU_CORE,
        api.RESOURCE_HUAWEI_NPU_CPU,
        api.RESOURCE_GPU_MEMORY,
    ),
    GPU_SHARED | HUAWEI_NPU_CORE | HUAWEI_NPU_CPU | HUAWEI_NPU_DVPP | GPU_MEMORY: _keep(
        api.RESOURCE_GPU_SHARED,
        api.RESOURCE_HUAWEI_NPU_CORE,
        api.RESOURCE_HUAWEI_NPU_CPU,
        api.RESOURCE_HUAWEI_NPU_DVPP,
        api.RESOURCE_GPU_MEMORY,
    ),
    NVIDIA_GPU: _whole_gpus(api.RESOURCE_NVIDIA_GPU),
    AMD_GPU: _whole_gpus(api.RESOURCE_AMD_GPU),
    HYGON_DCU: _whole_gpus(api.RESOURCE_HYGON_DCU),
    FPGA: _keep(api.RESOURCE_FPGA),
    RDMA: _keep(api.RESOURCE_RDMA),
}


class RequestError(ValueError):
    """``ValidateDeviceRequest``'s error (PreFilter: UnschedulableAndUnresolvable)."""


def _go_names(names: list[str]) -> str:
    return "[" + " ".join(names) + "]"


def validate_device_request(request: Mapping[str, Fraction]) -> int:
    """``ValidateDeviceRequest``: the combination's flags, or :class:`RequestError`."""
    if not request:
        raise RequestError("pod request should not be empty")
    combination = 0
    for name in sorted(request):
        combination |= FLAGS.get(name, 0)
        if name in PERCENTAGE_RESOURCES and not _percentage(request[name]):
            raise RequestError(f"invalid resource unit {name}: {_quantity_text(request[name])}")
    valid = VALID_COMBINATIONS.get(combination)
    if valid is None or not valid(request):
        raise RequestError(f"invalid resource device requests: {_go_names(sorted(request))}")
    return combination


def _quantity_text(amount: Fraction) -> str:
    from kubeletemu.quantity import Quantity

    return str(Quantity(amount))


def pod_device_requests(pod: Pod) -> dict[str, ResourceList]:
    """``GetPodDeviceRequests``: per device type, the converted requests (zero requests dropped)."""
    requests = {k: v for k, v in pod_request_list(pod).items() if v != 0}
    out: dict[str, ResourceList] = {}
    for device_type in sorted(DEVICE_RESOURCE_NAMES):
        request = {n: requests[n] for n in DEVICE_RESOURCE_NAMES[device_type] if n in requests}
        if is_zero(request):
            continue
        combination = validate_device_request(request)
        mapper = MAPPERS.get(combination)
        out[device_type] = mapper(request) if mapper is not None else {}
    return out


@dataclass(frozen=True)
class GPURequirements:
    """``GPURequirements`` (shared-resource templates are not modelled: never enforced)."""

    number_of_gpus: int
    requests_per_gpu: ResourceList
    gpu_shared: bool
    honor_gpu_partition: bool = False
    restricted_gpu_partition: bool = False
    ring_bus_bandwidth: Fraction | None = None
    required_topology_scope: str = ""
    required_topology_scope_level: int = 0


def desired_requests_and_count_for_gpu(requests: Mapping[str, Fraction]) -> tuple[ResourceList, int, bool]:
    """``calcDesiredRequestsAndCountForGPU``: (requests per GPU, number of GPUs, shared)."""
    desired = 1
    shared = False
    gpu_share = requests.get(api.RESOURCE_GPU_SHARED)
    ratio = requests.get(api.RESOURCE_GPU_MEMORY_RATIO)
    if gpu_share is not None and value(gpu_share) > 0:
        desired = value(gpu_share)
    elif ratio is not None and value(ratio) > 100 and value(ratio) % 100 == 0:
        desired = value(ratio) // 100
    out: ResourceList = {}
    for name in (
        api.RESOURCE_GPU_CORE,
        api.RESOURCE_HUAWEI_NPU_CORE,
        api.RESOURCE_HUAWEI_NPU_CPU,
        api.RESOURCE_HUAWEI_NPU_DVPP,
    ):
        if name in requests:
            out[name] = Fraction(_go_div(value(requests[name]), desired))
    if ratio is not None:
        per_gpu = _go_div(value(ratio), desired)
        shared = per_gpu < 100
        out[api.RESOURCE_GPU_MEMORY_RATIO] = Fraction(per_gpu)
    elif api.RESOURCE_GPU_MEMORY in requests:
        shared = True
        out[api.RESOURCE_GPU_MEMORY] = Fraction(_go_div(value(requests[api.RESOURCE_GPU_MEMORY]), desired))
    return out, desired, shared


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


@dataclass(frozen=True)
class PreFilterState:
    """DeviceShare's ``preFilterState`` (reservations, preemption and designated allocations are never
    set here: the one cycle modelled has none)."""

    skip: bool = True
    pod_requests: Mapping[str, ResourceList] = field(default_factory=dict)
    hints: Mapping[str, api.DeviceHint] = field(default_factory=dict)
    has_selectors: bool = False
    joint_allocate: api.DeviceJointAllocate | None = None
    primary_device_type: str = ""
    pod_fits_secondary_device_well_planned: bool = False
    gpu_requirements: GPURequirements | None = None


def gpu_requirements(
    pod: Pod, requests: Mapping[str, ResourceList], hints: Mapping[str, api.DeviceHint]
) -> GPURequirements | None:
    """``parseGPURequirements`` (raises :class:`AnnotationError` for a bad partition spec)."""
    gpu = requests.get(api.GPU)
    if is_zero(gpu):
        return None
    assert gpu is not None
    spec = api.gpu_partition_spec(pod.annotations)
    per_gpu, count, shared = desired_requests_and_count_for_gpu(gpu)
    hint = hints.get(api.GPU)
    scope = hint.required_topology_scope if hint is not None else ""
    return GPURequirements(
        number_of_gpus=count,
        requests_per_gpu=per_gpu,
        gpu_shared=shared,
        honor_gpu_partition=spec is not None,
        restricted_gpu_partition=spec is not None and spec.allocate_policy == api.PARTITION_RESTRICTED,
        ring_bus_bandwidth=spec.ring_bus_bandwidth if spec is not None else None,
        required_topology_scope=scope,
        required_topology_scope_level=api.TOPOLOGY_SCOPE_LEVEL.get(scope, 0),
    )


def pre_filter(pod: Pod) -> PreFilterState | Status:
    """``PreFilter`` (``preparePod``): a :class:`Status` refuses the pod on every node."""
    try:
        requests = pod_device_requests(pod)
        api.device_allocations(pod.annotations)  # parsed, then dropped: no scheduling hint names DeviceShare
    except (RequestError, AnnotationError) as err:
        return Status(UNSCHEDULABLE_AND_UNRESOLVABLE, (str(err),))
    if not requests:
        return PreFilterState(skip=True)
    try:
        hints = api.device_allocate_hints(pod.annotations) or {}
    except AnnotationError as err:
        return Status(UNSCHEDULABLE_AND_UNRESOLVABLE, (f"invalid DeviceAllocateHint annotation, err: {err}",))
    try:
        joint = api.device_joint_allocate(pod.annotations)
    except AnnotationError as err:
        return Status(
            UNSCHEDULABLE_AND_UNRESOLVABLE, (f"invalid DeviceJointAllocate annotation, err: {err}",)
        )
    if joint is not None:
        kept = tuple(
            t
            for t in joint.device_types
            if not (t in hints and hints[t].allocate_strategy == api.APPLY_FOR_ALL)
            and not is_zero(requests.get(t))
        )
        joint = api.DeviceJointAllocate(kept, joint.required_scope)
    try:
        gpu = gpu_requirements(pod, requests, hints)
    except AnnotationError as err:
        return Status(UNSCHEDULABLE_AND_UNRESOLVABLE, (f"invalid GPUPartitionSpec annotation, err: {err}",))
    return PreFilterState(
        skip=False,
        pod_requests=requests,
        hints=hints,
        has_selectors=any(h.selector is not None for h in hints.values()),
        joint_allocate=joint,
        primary_device_type=joint.device_types[0] if joint is not None and joint.device_types else "",
        pod_fits_secondary_device_well_planned=gpu is not None and not gpu.gpu_shared,
        gpu_requirements=gpu,
    )
