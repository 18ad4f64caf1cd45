"""The device names, labels and annotations DeviceShare reads, as koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` defines them (``apis/extension/device_share.go``,
``apis/scheduling/v1alpha1/device_types.go``), with their getters.

A getter mirrors the shipped ``Get…``: an absent annotation is None, JSON that does not fit the Go struct is
an :class:`~kubeletemu.scheduler.koordinator.extension.AnnotationError` (the text of Go's
``json.Unmarshal`` error is not reproduced). Label selectors are ``metav1.LabelSelector`` as
``util.GetFastLabelSelector`` reads them: None matches everything where the plugin checks ``selector ==
nil``, ``{}`` matches everything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubeletemu.quantity import Quantity, QuantityError
from kubeletemu.scheduler.koordinator.extension import (
    DOMAIN_PREFIX,
    NODE_DOMAIN_PREFIX,
    SCHEDULING_DOMAIN_PREFIX,
    AnnotationError,
)

# DeviceType.
GPU = "gpu"
FPGA = "fpga"
RDMA = "rdma"

ANNOTATION_DEVICE_ALLOCATED = SCHEDULING_DOMAIN_PREFIX + "/device-allocated"
ANNOTATION_DEVICE_ALLOCATE_HINT = SCHEDULING_DOMAIN_PREFIX + "/device-allocate-hint"
ANNOTATION_DEVICE_JOINT_ALLOCATE = SCHEDULING_DOMAIN_PREFIX + "/device-joint-allocate"
ANNOTATION_GPU_PARTITION_SPEC = SCHEDULING_DOMAIN_PREFIX + "/gpu-partition-spec"
ANNOTATION_GPU_PARTITIONS = SCHEDULING_DOMAIN_PREFIX + "/gpu-partitions"

RESOURCE_NVIDIA_GPU = "nvidia.com/gpu"
RESOURCE_HYGON_DCU = "dcu.com/gpu"
RESOURCE_AMD_GPU = "amd.com/gpu"
RESOURCE_RDMA = DOMAIN_PREFIX + "rdma"
RESOURCE_FPGA = DOMAIN_PREFIX + "fpga"
RESOURCE_GPU = DOMAIN_PREFIX + "gpu"
RESOURCE_GPU_SHARED = DOMAIN_PREFIX + "gpu.shared"
RESOURCE_GPU_CORE = DOMAIN_PREFIX + "gpu-core"
RESOURCE_GPU_MEMORY = DOMAIN_PREFIX + "gpu-memory"
RESOURCE_GPU_MEMORY_RATIO = DOMAIN_PREFIX + "gpu-memory-ratio"
RESOURCE_HUAWEI_NPU_CORE = "huawei.com/npu-core"
RESOURCE_HUAWEI_NPU_CPU = "huawei.com/npu-cpu"
RESOURCE_HUAWEI_NPU_DVPP = "huawei.com/npu-dvpp"

LABEL_GPU_PARTITION_POLICY = NODE_DOMAIN_PREFIX + "/gpu-partition-policy"
LABEL_GPU_VENDOR = NODE_DOMAIN_PREFIX + "/gpu-vendor"
LABEL_GPU_MODEL = NODE_DOMAIN_PREFIX + "/gpu-model"
LABEL_SECONDARY_DEVICE_WELL_PLANNED = NODE_DOMAIN_PREFIX + "/secondary-device-well-planned"
LABEL_GPU_ISOLATION_PROVIDER = DOMAIN_PREFIX + "gpu-isolation-provider"
GPU_VENDOR_NVIDIA = "nvidia"
GPU_PARTITION_POLICY_HONOR = "Honor"

# DeviceAllocateStrategy, DeviceExclusivePolicy, DeviceJointAllocateScope, GPUPartitionAllocatePolicy.
APPLY_FOR_ALL = "ApplyForAll"
REQUESTS_AS_COUNT = "RequestsAsCount"
DEVICE_LEVEL = "DeviceLevel"
PCIE_LEVEL = "PCIeLevel"
SAME_PCIE = "SamePCIe"
PARTITION_RESTRICTED = "Restricted"
PARTITION_BEST_EFFORT = "BestEffort"

# DeviceTopologyScope → level.
TOPOLOGY_SCOPE_LEVEL = {"Device": 4, "PCIe": 3, "NUMANode": 2, "Node": 1}
SCOPE_NODE = "Node"
SCOPE_NUMA_NODE = "NUMANode"
SCOPE_PCIE = "PCIe"


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector:
    """``metav1.LabelSelector`` as a ``labels.Selector``."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        for r in self.expressions:
            present = r.key in labels
            if r.operator == "In" and not (present and labels[r.key] in r.values):
                return False
            if r.operator == "NotIn" and present and labels[r.key] in r.values:
                return False
            if r.operator == "Exists" and not present:
                return False
            if r.operator == "DoesNotExist" and present:
                return False
        return True


def _selector(raw: Any, where: str) -> LabelSelector | None:
    """``GetFastLabelSelector`` (``LabelSelectorAsSelector``'s validation: operators and their values)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise AnnotationError(f"{where}: cannot unmarshal {type(raw).__name__} into LabelSelector")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise AnnotationError(f"{where}.matchLabels: cannot unmarshal into map[string]string")
    expressions = []
    for i, item in enumerate(raw.get("matchExpressions") or []):
        if not isinstance(item, dict):
            raise AnnotationError(f"{where}.matchExpressions[{i}]: cannot unmarshal into requirement")
        op, values = item.get("operator", ""), tuple(item.get("values") or ())
        if op in ("In", "NotIn") and not values:
            raise AnnotationError(
                f"{where}: values: Invalid value: for 'in', 'notin' operators, values set can't be empty"
            )
        if op in ("Exists", "DoesNotExist") and values:
            raise AnnotationError(
                f"{where}: values: Invalid value: values set must be empty for exists and does not exist"
            )
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise AnnotationError(f"{where}: {op!r} is not a valid label selector operator")
        expressions.append(Requirement(str(item.get("key", "")), op, tuple(str(v) for v in values)))
    return LabelSelector(dict(labels), tuple(expressions))


@dataclass(frozen=True)
class DeviceHint:
    """``DeviceHint`` of the ``device-allocate-hint`` annotation (selectors already parsed)."""

    selector: LabelSelector | None = None
    vf_selector: LabelSelector | None = None
    allocate_strategy: str = ""
    required_topology_scope: str = ""
    exclusive_policy: str = ""


def _load(annotations: Mapping[str, str], key: str) -> Any:
    data = annotations.get(key)
    if data is None:
        return None
    try:
        return json.loads(data)
    except json.JSONDecodeError as err:
        raise AnnotationError(f"{key}: invalid JSON: {err.msg} (offset {err.pos})") from None


def _string(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AnnotationError(f"{where}: field {key}: cannot unmarshal {type(value).__name__} into string")
    return value


def device_allocate_hints(annotations: Mapping[str, str]) -> dict[str, DeviceHint] | None:
    """``GetDeviceAllocateHints``; a hint's selectors fail as ``newHintSelectors`` reports them."""
    raw = _load(annotations, ANNOTATION_DEVICE_ALLOCATE_HINT)
    if ANNOTATION_DEVICE_ALLOCATE_HINT not in annotations:
        return None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise AnnotationError(f"{ANNOTATION_DEVICE_ALLOCATE_HINT}: cannot unmarshal into DeviceAllocateHints")
    hints: dict[str, DeviceHint] = {}
    for device_type, item in raw.items():
        if item is None:
            continue  # a nil *DeviceHint: the plugin reads it as no hint
        if not isinstance(item, dict):
            raise AnnotationError(
                f"{ANNOTATION_DEVICE_ALLOCATE_HINT}: {device_type}: cannot unmarshal into DeviceHint"
            )
        where = f"{ANNOTATION_DEVICE_ALLOCATE_HINT}: {device_type}"
        hints[device_type] = DeviceHint(
            selector=_selector(item.get("selector"), f"{where}.selector"),
            vf_selector=_selector(item.get("vfSelector"), f"{where}.vfSelector"),
            allocate_strategy=_string(item, "allocateStrategy", where),
            required_topology_scope=_string(item, "requiredTopologyScope", where),
            exclusive_policy=_string(item, "exclusivePolicy", where),
        )
    return hints


@dataclass(frozen=True)
class DeviceJointAllocate:
    device_types: tuple[str, ...] = ()
    required_scope: str = ""


def device_joint_allocate(annotations: Mapping[str, str]) -> DeviceJointAllocate | None:
    """``GetDeviceJointAllocate``."""
    if ANNOTATION_DEVICE_JOINT_ALLOCATE not in annotations:
        return None
    raw = _load(annotations, ANNOTATION_DEVICE_JOINT_ALLOCATE)
    if raw is None:
        return DeviceJointAllocate()
    if not isinstance(raw, dict):
        raise AnnotationError(
            f"{ANNOTATION_DEVICE_JOINT_ALLOCATE}: cannot unmarshal into DeviceJointAllocate"
        )
    types = raw.get("deviceTypes") or []
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise AnnotationError(
            f"{ANNOTATION_DEVICE_JOINT_ALLOCATE}: deviceTypes: cannot unmarshal into []DeviceType"
        )
    return DeviceJointAllocate(tuple(types), _string(raw, "requiredScope", ANNOTATION_DEVICE_JOINT_ALLOCATE))


@dataclass(frozen=True)
class VirtualFunctionRef:
    minor: int
    bus_id: str


@dataclass(frozen=True)
class DeviceAllocation:
    """One device of ``device-allocated``: its minor, the resources taken, the VFs it hands out."""

    minor: int
    resources: Mapping[str, Fraction]
    vfs: tuple[VirtualFunctionRef, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "minor": self.minor,
            "resources": {k: _text(v) for k, v in sorted(self.resources.items())},
        }
        if self.vfs:
            out["extension"] = {"vfs": [{"minor": v.minor, "busID": v.bus_id} for v in self.vfs]}
        return out


def _text(amount: Fraction) -> str:
    return str(Quantity(amount))


DeviceAllocations = dict[str, list[DeviceAllocation]]


def device_allocations(annotations: Mapping[str, str]) -> DeviceAllocations | None:
    """``GetDeviceAllocations``: the pod's ``device-allocated`` annotation, per device type."""
    if ANNOTATION_DEVICE_ALLOCATED not in annotations:
        return None
    raw = _load(annotations, ANNOTATION_DEVICE_ALLOCATED)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise AnnotationError(f"{ANNOTATION_DEVICE_ALLOCATED}: cannot unmarshal into DeviceAllocations")
    out: DeviceAllocations = {}
    for device_type, items in raw.items():
        where = f"{ANNOTATION_DEVICE_ALLOCATED}: {device_type}"
        if items is None:
            out[device_type] = []
            continue
        if not isinstance(items, list):
            raise AnnotationError(f"{where}: cannot unmarshal into []*DeviceAllocation")
        allocations = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise AnnotationError(f"{where}[{i}]: cannot unmarshal into DeviceAllocation")
            minor = item.get("minor", 0)
            if isinstance(minor, bool) or not isinstance(minor, int):
                raise AnnotationError(f"{where}[{i}].minor: cannot unmarshal into int32")
            resources = item.get("resources") or {}
            if not isinstance(resources, dict):
                raise AnnotationError(f"{where}[{i}].resources: cannot unmarshal into ResourceList")
            try:
                parsed = {k: Quantity.parse(v).amount for k, v in resources.items()}
            except QuantityError as err:
                raise AnnotationError(f"{where}[{i}].resources: {err}") from None
            vfs = []
            extension = item.get("extension") or {}
            for vf in (extension.get("vfs") or []) if isinstance(extension, dict) else []:
                if isinstance(vf, dict):
                    vfs.append(
                        VirtualFunctionRef(int(vf.get("minor", 0) or 0), str(vf.get("busID", "") or ""))
                    )
            allocations.append(DeviceAllocation(minor, parsed, tuple(vfs)))
        out[device_type] = allocations
    return out


@dataclass(frozen=True)
class GPUPartitionSpec:
    allocate_policy: str = PARTITION_BEST_EFFORT
    ring_bus_bandwidth: Fraction | None = None


def gpu_partition_spec(annotations: Mapping[str, str]) -> GPUPartitionSpec | None:
    """``GetGPUPartitionSpec``: an empty policy is BestEffort."""
    if ANNOTATION_GPU_PARTITION_SPEC not in annotations:
        return None
    raw = _load(annotations, ANNOTATION_GPU_PARTITION_SPEC) or {}
    if not isinstance(raw, dict):
        raise AnnotationError(f"{ANNOTATION_GPU_PARTITION_SPEC}: cannot unmarshal into GPUPartitionSpec")
    policy = _string(raw, "allocatePolicy", ANNOTATION_GPU_PARTITION_SPEC) or PARTITION_BEST_EFFORT
    bandwidth = raw.get("ringBusBandwidth")
    try:
        ring = None if bandwidth is None else Quantity.parse(bandwidth).amount
    except QuantityError as err:
        raise AnnotationError(f"{ANNOTATION_GPU_PARTITION_SPEC}: ringBusBandwidth: {err}") from None
    return GPUPartitionSpec(policy, ring)


@dataclass(frozen=True)
class GPUPartition:
    minors: tuple[int, ...]
    allocation_score: int = 0
    ring_bus_bandwidth: Fraction | None = None

    @property
    def minors_hash(self) -> int:
        return hash_minors(self.minors)


def hash_minors(minors: Any) -> int:
    """``hashMinors``: one bit per minor."""
    out = 0
    for minor in minors:
        out |= 1 << minor
    return out


def gpu_partition_table(annotations: Mapping[str, str]) -> dict[int, list[GPUPartition]] | None:
    """``GetGPUPartitionTable`` (the Device's ``gpu-partitions`` annotation; an error is logged by the
    scheduler, which then has no table)."""
    data = annotations.get(ANNOTATION_GPU_PARTITIONS, "")
    if data == "":
        return None
    raw = _load(annotations, ANNOTATION_GPU_PARTITIONS)
    if not isinstance(raw, dict):
        raise AnnotationError(f"{ANNOTATION_GPU_PARTITIONS}: invalid gpu partitions in device cr: {data}")
    table: dict[int, list[GPUPartition]] = {}
    for key, items in raw.items():
        try:
            count = int(key)
        except ValueError:
            raise AnnotationError(f"{ANNOTATION_GPU_PARTITIONS}: key {key!r} is not an int") from None
        partitions = []
        for item in items or []:
            if not isinstance(item, dict):
                raise AnnotationError(f"{ANNOTATION_GPU_PARTITIONS}: cannot unmarshal into GPUPartition")
            bandwidth = item.get("ringBusBandwidth")
            try:
                ring = None if bandwidth is None else Quantity.parse(bandwidth).amount
            except QuantityError as err:
                raise AnnotationError(f"{ANNOTATION_GPU_PARTITIONS}: ringBusBandwidth: {err}") from None
            partitions.append(
                GPUPartition(
                    tuple(int(m) for m in item.get("minors") or []),
                    int(item.get("allocationScore", 0) or 0),
                    ring,
                )
            )
        table[count] = partitions
    return table


def gpu_partition_policy_honor(labels: Mapping[str, str]) -> bool:
    """``GetGPUPartitionPolicy(obj) == Honor``."""
    return labels.get(LABEL_GPU_PARTITION_POLICY) == GPU_PARTITION_POLICY_HONOR
