"""The labels and annotations NodeNUMAResource reads, as koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` defines them in ``apis/extension`` (``numa_aware.go``,
``qos.go``/``qos_utils.go``, ``priority.go``/``priority_utils.go``, ``node_reservation.go``,
``system_qos.go``, ``node_resource_amplification.go``).

Each getter mirrors the shipped ``Get…`` function: a missing key is the zero value, a value that is not
the JSON the Go struct expects is an :class:`AnnotationError` (Go's ``json.Unmarshal`` error; its exact
text is not reproduced). Unknown JSON fields are ignored, as ``encoding/json`` does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CPUSetError
from kubeletemu.pod import Pod, QOSClass
from kubeletemu.quantity import Quantity, QuantityError

DOMAIN_PREFIX = "koordinator.sh/"
SCHEDULING_DOMAIN_PREFIX = "scheduling.koordinator.sh"
NODE_DOMAIN_PREFIX = "node.koordinator.sh"

LABEL_POD_QOS = DOMAIN_PREFIX + "qosClass"
LABEL_POD_PRIORITY_CLASS = DOMAIN_PREFIX + "priority-class"
ANNOTATION_NUMA_TOPOLOGY_SPEC = SCHEDULING_DOMAIN_PREFIX + "/numa-topology-spec"
ANNOTATION_RESOURCE_SPEC = SCHEDULING_DOMAIN_PREFIX + "/resource-spec"
ANNOTATION_RESOURCE_STATUS = SCHEDULING_DOMAIN_PREFIX + "/resource-status"
ANNOTATION_NODE_CPU_TOPOLOGY = NODE_DOMAIN_PREFIX + "/cpu-topology"
ANNOTATION_NODE_CPU_ALLOCS = NODE_DOMAIN_PREFIX + "/pod-cpu-allocs"
ANNOTATION_NODE_CPU_SHARED_POOLS = NODE_DOMAIN_PREFIX + "/cpu-shared-pools"
ANNOTATION_NODE_BE_CPU_SHARED_POOLS = NODE_DOMAIN_PREFIX + "/be-cpu-shared-pools"
ANNOTATION_NODE_RESERVATION = NODE_DOMAIN_PREFIX + "/reservation"
ANNOTATION_NODE_SYSTEM_QOS_RESOURCE = NODE_DOMAIN_PREFIX + "/system-qos-resource"
ANNOTATION_NODE_AMPLIFICATION_RATIO = NODE_DOMAIN_PREFIX + "/resource-amplification-ratio"
LABEL_NODE_CPU_BIND_POLICY = NODE_DOMAIN_PREFIX + "/cpu-bind-policy"
LABEL_NODE_NUMA_ALLOCATE_STRATEGY = NODE_DOMAIN_PREFIX + "/numa-allocate-strategy"
LABEL_NUMA_TOPOLOGY_POLICY = NODE_DOMAIN_PREFIX + "/numa-topology-policy"
ANNOTATION_KUBELET_CPU_MANAGER_POLICY = "kubelet.koordinator.sh/cpu-manager-policy"

KUBELET_CPU_MANAGER_POLICY_STATIC = "static"
KUBELET_CPU_MANAGER_POLICY_NONE = "none"
KUBELET_OPTION_FULL_PCPUS_ONLY = "full-pcpus-only"

# CPUBindPolicy, NodeCPUBindPolicy, CPUExclusivePolicy.
CPU_BIND_DEFAULT = "Default"
CPU_BIND_FULL_PCPUS = "FullPCPUs"
CPU_BIND_SPREAD_BY_PCPUS = "SpreadByPCPUs"
CPU_BIND_CONSTRAINED_BURST = "ConstrainedBurst"
NODE_CPU_BIND_NONE = "None"
NODE_CPU_BIND_FULL_PCPUS_ONLY = "FullPCPUsOnly"
NODE_CPU_BIND_SPREAD_BY_PCPUS = "SpreadByPCPUs"
CPU_EXCLUSIVE_NONE = "None"
CPU_EXCLUSIVE_PCPU_LEVEL = "PCPULevel"
CPU_EXCLUSIVE_NUMA_NODE_LEVEL = "NUMANodeLevel"

# QoSClass.
QOS_LSE = "LSE"
QOS_LSR = "LSR"
QOS_LS = "LS"
QOS_BE = "BE"
QOS_SYSTEM = "SYSTEM"
QOS_NONE = ""
# QoSClassForGuaranteed: what a Guaranteed pod without the label counts as.
QOS_FOR_GUARANTEED = QOS_LSR

# PriorityClass and the value ranges of priority.go.
PRIORITY_PROD = "koord-prod"
PRIORITY_MID = "koord-mid"
PRIORITY_BATCH = "koord-batch"
PRIORITY_FREE = "koord-free"
PRIORITY_NONE = ""
DEFAULT_PRIORITY_CLASS = PRIORITY_NONE
_PRIORITY_RANGES = (
    (9000, 9999, PRIORITY_PROD),
    (7000, 7999, PRIORITY_MID),
    (5000, 5999, PRIORITY_BATCH),
    (3000, 3999, PRIORITY_FREE),
)


class AnnotationError(ValueError):
    """A label or annotation the shipped getter fails to decode."""


def _decode(annotations: Mapping[str, str], key: str, kind: type) -> Any:
    data = annotations.get(key)
    if data is None:
        return None
    try:
        value = json.loads(data)
    except json.JSONDecodeError as err:
        raise AnnotationError(f"{key}: invalid JSON: {err.msg} (offset {err.pos})") from None
    if value is None:
        return None  # JSON null leaves the Go value zero
    if not isinstance(value, kind):
        raise AnnotationError(f"{key}: cannot unmarshal {type(value).__name__} into {kind.__name__}")
    return value


def _str(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AnnotationError(f"{where}: field {key}: cannot unmarshal {type(value).__name__} into string")
    return value


def _int(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = obj.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise AnnotationError(f"{where}: field {key}: cannot unmarshal {value!r} into int32")
    return int(value)


def _resource_list(raw: Any, where: str) -> dict[str, Quantity]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise AnnotationError(f"{where}: cannot unmarshal {type(raw).__name__} into ResourceList")
    out: dict[str, Quantity] = {}
    for name, text in raw.items():
        try:
            out[name] = Quantity.parse(text)
        except QuantityError as err:
            raise AnnotationError(f"{where}: {name}: {err}") from None
    return out


# ---- pod side ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceSpec:
    """``ResourceSpec`` (annotation ``scheduling.koordinator.sh/resource-spec``)."""

    required_cpu_bind_policy: str = ""
    preferred_cpu_bind_policy: str = ""
    preferred_cpu_exclusive_policy: str = ""


@dataclass(frozen=True)
class NUMATopologySpec:
    """``NUMATopologySpec`` (annotation ``scheduling.koordinator.sh/numa-topology-spec``)."""

    numa_topology_policy: str = ""
    single_numa_node_exclusive: str = ""


@dataclass(frozen=True)
class NUMANodeResource:
    node: int
    resources: Mapping[str, Quantity] = field(default_factory=dict)


@dataclass(frozen=True)
class ResourceStatus:
    """``ResourceStatus`` (annotation ``scheduling.koordinator.sh/resource-status``), written at PreBind."""

    cpuset: str = ""
    numa_node_resources: tuple[NUMANodeResource, ...] | None = None


def resource_spec(annotations: Mapping[str, str]) -> ResourceSpec:
    """``GetResourceSpec``."""
    raw = _decode(annotations, ANNOTATION_RESOURCE_SPEC, dict)
    if raw is None:
        return ResourceSpec()
    key = ANNOTATION_RESOURCE_SPEC
    return ResourceSpec(
        _str(raw, "requiredCPUBindPolicy", key),
        _str(raw, "preferredCPUBindPolicy", key),
        _str(raw, "preferredCPUExclusivePolicy", key),
    )


def numa_topology_spec(annotations: Mapping[str, str]) -> NUMATopologySpec:
    """``GetNUMATopologySpec``."""
    raw = _decode(annotations, ANNOTATION_NUMA_TOPOLOGY_SPEC, dict)
    if raw is None:
        return NUMATopologySpec()
    key = ANNOTATION_NUMA_TOPOLOGY_SPEC
    return NUMATopologySpec(_str(raw, "numaTopologyPolicy", key), _str(raw, "singleNUMANodeExclusive", key))


def resource_status(annotations: Mapping[str, str]) -> ResourceStatus:
    """``GetResourceStatus``; ``numa_node_resources`` None when the field is absent (a Go nil slice)."""
    raw = _decode(annotations, ANNOTATION_RESOURCE_STATUS, dict)
    if raw is None:
        return ResourceStatus()
    key = ANNOTATION_RESOURCE_STATUS
    items = raw.get("numaNodeResources")
    numa: tuple[NUMANodeResource, ...] | None = None
    if items is not None:
        if not isinstance(items, list):
            raise AnnotationError(f"{key}: numaNodeResources: cannot unmarshal into a list")
        numa = tuple(
            NUMANodeResource(_int(item, "node", key), _resource_list(item.get("resources"), key))
            for item in items
            if isinstance(item, dict) or _not_object(key)
        )
    return ResourceStatus(_str(raw, "cpuset", key), numa)


def _not_object(key: str) -> bool:
    raise AnnotationError(f"{key}: numaNodeResources: cannot unmarshal into NUMANodeResource")


def qos_class_raw(pod: Pod) -> str:
    """``GetPodQoSClassRaw``: the ``koordinator.sh/qosClass`` label, unknown values being none."""
    value = pod.labels.get(LABEL_POD_QOS)
    if value in (QOS_LSE, QOS_LSR, QOS_LS, QOS_BE, QOS_SYSTEM):
        return value
    return QOS_NONE


def qos_class_with_default(pod: Pod) -> str:
    """``GetPodQoSClassWithDefault``: the label, else from the Kubernetes QoS class."""
    raw = qos_class_raw(pod)
    if raw != QOS_NONE:
        return raw
    return {
        QOSClass.GUARANTEED: QOS_FOR_GUARANTEED,
        QOSClass.BURSTABLE: QOS_LS,
        QOSClass.BEST_EFFORT: QOS_BE,
    }[pod.qos_class]


def priority_class_raw(pod: Pod) -> str:
    """``GetPodPriorityClassRaw``: the ``koordinator.sh/priority-class`` label, else ``spec.priority``."""
    if LABEL_POD_PRIORITY_CLASS in pod.labels:
        value = pod.labels[LABEL_POD_PRIORITY_CLASS]
        return (
            value if value in (PRIORITY_PROD, PRIORITY_MID, PRIORITY_BATCH, PRIORITY_FREE) else PRIORITY_NONE
        )
    if pod.priority is None:
        return PRIORITY_NONE
    for low, high, name in _PRIORITY_RANGES:
        if low <= pod.priority <= high:
            return name
    return DEFAULT_PRIORITY_CLASS


def priority_class_with_default(pod: Pod) -> str:
    """``GetPodPriorityClassWithDefault``: the raw class, else derived from the Koordinator QoS class."""
    raw = priority_class_raw(pod)
    if raw != PRIORITY_NONE:
        return raw
    qos = qos_class_with_default(pod)
    if qos in (QOS_SYSTEM, QOS_LSE, QOS_LSR, QOS_LS):
        return PRIORITY_PROD
    if qos == QOS_BE:
        return PRIORITY_BATCH
    return DEFAULT_PRIORITY_CLASS


def allow_use_cpuset(pod: Pod) -> bool:
    """``AllowUseCPUSet`` (nodenumaresource/util.go): LSE or LSR by label, and of prod priority."""
    return qos_class_raw(pod) in (QOS_LSE, QOS_LSR) and priority_class_with_default(pod) == PRIORITY_PROD


# ---- node side ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CPUInfoReport:
    """One entry of ``CPUTopology.Detail`` as koordlet reports it."""

    id: int
    core: int
    socket: int
    node: int


@dataclass(frozen=True)
class KubeletCPUManagerPolicy:
    """``KubeletCPUManagerPolicy`` (annotation ``kubelet.koordinator.sh/cpu-manager-policy``)."""

    policy: str = ""
    options: Mapping[str, str] = field(default_factory=dict)
    reserved_cpus: str = ""


@dataclass(frozen=True)
class PodCPUAlloc:
    namespace: str = ""
    name: str = ""
    uid: str = ""
    cpuset: str = ""
    managed_by_kubelet: bool = False


def cpu_topology_report(annotations: Mapping[str, str]) -> tuple[CPUInfoReport, ...]:
    """``GetCPUTopology``: the ``detail`` list."""
    raw = _decode(annotations, ANNOTATION_NODE_CPU_TOPOLOGY, dict)
    key = ANNOTATION_NODE_CPU_TOPOLOGY
    detail = (raw or {}).get("detail") or []
    if not isinstance(detail, list):
        raise AnnotationError(f"{key}: detail: cannot unmarshal into a list")
    return tuple(
        CPUInfoReport(_int(d, "id", key), _int(d, "core", key), _int(d, "socket", key), _int(d, "node", key))
        for d in detail
        if isinstance(d, dict) or _not_object(key)
    )


def kubelet_cpu_manager_policy(annotations: Mapping[str, str]) -> KubeletCPUManagerPolicy:
    """``GetKubeletCPUManagerPolicy``."""
    raw = _decode(annotations, ANNOTATION_KUBELET_CPU_MANAGER_POLICY, dict)
    if raw is None:
        return KubeletCPUManagerPolicy()
    key = ANNOTATION_KUBELET_CPU_MANAGER_POLICY
    options = raw.get("options") or {}
    if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
        raise AnnotationError(f"{key}: options: cannot unmarshal into map[string]string")
    return KubeletCPUManagerPolicy(_str(raw, "policy", key), dict(options), _str(raw, "reservedCPUs", key))


def pod_cpu_allocs(annotations: Mapping[str, str]) -> tuple[PodCPUAlloc, ...]:
    """``GetPodCPUAllocs`` (annotation ``node.koordinator.sh/pod-cpu-allocs``)."""
    raw = _decode(annotations, ANNOTATION_NODE_CPU_ALLOCS, list)
    key = ANNOTATION_NODE_CPU_ALLOCS
    out = []
    for item in raw or []:
        if not isinstance(item, dict):
            raise AnnotationError(f"{key}: cannot unmarshal into PodCPUAlloc")
        managed = item.get("managedByKubelet", False)
        if not isinstance(managed, bool):
            raise AnnotationError(f"{key}: managedByKubelet: cannot unmarshal into bool")
        out.append(
            PodCPUAlloc(
                _str(item, "namespace", key),
                _str(item, "name", key),
                _str(item, "uid", key),
                _str(item, "cpuset", key),
                managed,
            )
        )
    return tuple(out)


def node_cpu_bind_policy(labels: Mapping[str, str], kubelet: KubeletCPUManagerPolicy | None) -> str:
    """``GetNodeCPUBindPolicy``: the node label, or the kubelet's static policy with full-pcpus-only."""
    label = labels.get(LABEL_NODE_CPU_BIND_POLICY, "")
    if label == NODE_CPU_BIND_FULL_PCPUS_ONLY or (
        kubelet is not None
        and kubelet.policy == KUBELET_CPU_MANAGER_POLICY_STATIC
        and kubelet.options.get(KUBELET_OPTION_FULL_PCPUS_ONLY) == "true"
    ):
        return NODE_CPU_BIND_FULL_PCPUS_ONLY
    if label == NODE_CPU_BIND_SPREAD_BY_PCPUS:
        return label
    return NODE_CPU_BIND_NONE


def node_numa_topology_policy(labels: Mapping[str, str]) -> str:
    """``GetNodeNUMATopologyPolicy``: the label as written (any string)."""
    return labels.get(LABEL_NUMA_TOPOLOGY_POLICY, "")


def reserved_cpus(annotations: Mapping[str, str]) -> str:
    """``GetReservedCPUs``: ``reservedCPUs`` of the ``node.koordinator.sh/reservation`` annotation; a decode
    error is logged and counts as none."""
    if not annotations.get(ANNOTATION_NODE_RESERVATION):
        return ""
    try:
        raw = _decode(annotations, ANNOTATION_NODE_RESERVATION, dict)
        return _str(raw or {}, "reservedCPUs", ANNOTATION_NODE_RESERVATION)
    except AnnotationError:
        return ""


def system_qos_exclusive_cpus(annotations: Mapping[str, str]) -> CPUSet | None:
    """The CPUs of ``node.koordinator.sh/system-qos-resource`` when exclusive (the default); None when the
    annotation fails to decode or its cpuset to parse (both logged by the shipped code)."""
    try:
        raw = _decode(annotations, ANNOTATION_NODE_SYSTEM_QOS_RESOURCE, dict) or {}
        exclusive = raw.get("cpusetExclusive")
        if exclusive is not None and not isinstance(exclusive, bool):
            return None
        if exclusive is False:
            return CPUSet()
        return CPUSet.parse(_str(raw, "cpuset", ANNOTATION_NODE_SYSTEM_QOS_RESOURCE))
    except (AnnotationError, CPUSetError):
        return None


def amplification_ratios(annotations: Mapping[str, str]) -> dict[str, float] | None:
    """``GetNodeResourceAmplificationRatios``: None when the annotation is absent."""
    raw = _decode(annotations, ANNOTATION_NODE_AMPLIFICATION_RATIO, dict)
    if ANNOTATION_NODE_AMPLIFICATION_RATIO not in annotations:
        return None
    out: dict[str, float] = {}
    for name, ratio in (raw or {}).items():
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
            raise AnnotationError(f"{ANNOTATION_NODE_AMPLIFICATION_RATIO}: {name}: not a number")
        out[name] = float(ratio)
    return out


def amplify(origin: int, ratio: float) -> int:
    """``Amplify``: ``ceil(origin · ratio)`` in float64, unchanged for a ratio ≤ 1."""
    if ratio <= 1:
        return origin
    return math.ceil(float(origin) * ratio)


def amplify_resource_list(resources: dict[str, Fraction], ratios: Mapping[str, float], *names: str) -> None:
    """``AmplifyResourceList`` in place: cpu in millicores, the rest in whole units."""
    for name in names or tuple(resources):
        ratio = ratios.get(name, 0.0)
        amount = resources.get(name, Fraction(0))
        if ratio <= 1 or amount == 0:
            continue
        if name == "cpu":
            resources[name] = Fraction(amplify(math.ceil(amount * 1000), ratio), 1000)
        else:
            resources[name] = Fraction(amplify(math.ceil(amount), ratio))
