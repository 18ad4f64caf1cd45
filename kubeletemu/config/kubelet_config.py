"""The ``KubeletConfiguration`` fields that shape admission, read from a node's real config file.

Field names are the kubelet's camelCase ones (``kubelet.config.k8s.io/v1beta1``); every other field of a
real ``/var/lib/kubelet/config.yaml`` is ignored, as the kubelet's lenient decoder would keep it for
features we do not emulate. Defaults are the kubelet's (``SetDefaults_KubeletConfiguration`` and, for
``evictionHard``, ``loadConfigFile``). Validation reproduces, with the kubelet's texts:

- ``ValidateKubeletConfiguration``: topology manager policy and scope, ``maxPods``, ``reservedSystemCPUs``
  (and its conflict with ``systemReservedCgroup``/``kubeReservedCgroup``), ``reservedMemory`` entries;
- ``parseResourceList`` for ``systemReserved``/``kubeReserved``;
- ``eviction.ParseThresholdConfig`` for ``evictionHard``;
- the CPU and memory managers' ``unknown policy`` refusal.

Whether ``reservedMemory`` adds up to the node-allocatable reservation is the memory manager's check at
start (it needs the machine); here the entries are only parsed and carried.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kubeletemu.config import fields
from kubeletemu.config.emulator_config import parse_duration
from kubeletemu.config.fields import Where
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CPUSetError
from kubeletemu.golang import go_quote
from kubeletemu.memorymanager.reserved_memory import MemoryReservation
from kubeletemu.quantity import Quantity, QuantityError

API_VERSION = "kubelet.config.k8s.io/v1beta1"
KIND = "KubeletConfiguration"

TOPOLOGY_MANAGER_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_MANAGER_SCOPES = ("container", "pod")
CPU_MANAGER_POLICIES = ("none", "static")
MEMORY_MANAGER_POLICIES = ("None", "Static")

# eviction.DefaultEvictionHard (Linux): used when evictionHard is absent from the file.
DEFAULT_EVICTION_HARD: Mapping[str, str] = MappingProxyType(
    {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
        "imagefs.available": "15%",
    }
)
DEFAULT_MAX_PODS = 110
# SetDefaults_KubeletConfiguration (v1.37.2 pkg/kubelet/apis/config/v1beta1/defaults.go): an absent or zero
# cpuManagerReconcilePeriod is 10 s; the same at 1.33-1.36.
DEFAULT_CPU_MANAGER_RECONCILE_PERIOD_S = 10.0

# The eviction signals the kubelet knows (signalToResource).
EVICTION_SIGNALS = frozenset(
    {
        "memory.available",
        "allocatableMemory.available",
        "nodefs.available",
        "nodefs.inodesFree",
        "imagefs.available",
        "imagefs.inodesFree",
        "containerfs.available",
        "containerfs.inodesFree",
        "pid.available",
    }
)
# parseResourceList accepts these in systemReserved / kubeReserved.
RESERVABLE_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pid"})
_HUGEPAGES_PREFIX = "hugepages-"
_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _frozen(items: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(items))


@dataclass(frozen=True)
class KubeletConfiguration:
    """The admission-relevant subset of ``KubeletConfiguration``, defaulted and validated."""

    topology_manager_policy: str = "none"
    topology_manager_scope: str = "container"
    topology_manager_policy_options: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    # Whether the file sets the options, even to ``{}`` (a non-nil map to the kubelet): with the
    # TopologyManagerPolicyOptions gate off that alone stops it (``loader.check_feature_gates``).
    topology_manager_policy_options_given: bool = False
    cpu_manager_policy: str = "none"
    cpu_manager_policy_options: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    # Seconds between the static CPU Manager's reconcileState runs (its removeStaleState releases the
    # exclusive CPUs of pods no longer active); only the fleet's kubelets run that loop.
    cpu_manager_reconcile_period_s: float = DEFAULT_CPU_MANAGER_RECONCILE_PERIOD_S
    reserved_system_cpus: CPUSet = field(default_factory=CPUSet)
    memory_manager_policy: str = "None"
    reserved_memory: tuple[MemoryReservation, ...] = ()
    system_reserved: Mapping[str, Quantity] = field(default_factory=lambda: _frozen({}))
    kube_reserved: Mapping[str, Quantity] = field(default_factory=lambda: _frozen({}))
    # Hard eviction thresholds as written (``100Mi``, ``10%``), after the kubelet's defaulting.
    eviction_hard: Mapping[str, str] = field(default_factory=lambda: DEFAULT_EVICTION_HARD)
    merge_default_eviction_settings: bool = False
    max_pods: int = DEFAULT_MAX_PODS
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: _frozen({}))

    @property
    def effective_system_reserved(self) -> Mapping[str, Quantity]:
        """``systemReserved`` as the kubelet uses it: a non-empty ``reservedSystemCPUs`` replaces its cpu
        with the number of reserved CPUs (``cmd/kubelet/app/server.go``, ``run``)."""
        if not self.reserved_system_cpus:
            return self.system_reserved
        return _frozen({**self.system_reserved, "cpu": Quantity(len(self.reserved_system_cpus))})

    @property
    def effective_kube_reserved(self) -> Mapping[str, Quantity]:
        """``kubeReserved`` without its cpu when ``reservedSystemCPUs`` is set (the cpu moved to system)."""
        if not self.reserved_system_cpus:
            return self.kube_reserved
        return _frozen({k: v for k, v in self.kube_reserved.items() if k != "cpu"})


def parse_kubelet_configuration(doc: Mapping[str, Any], where: Where) -> KubeletConfiguration:
    """A decoded ``KubeletConfiguration`` document (``apiVersion``/``kind`` already checked) into the
    dataclass; raises :class:`ConfigError` with the kubelet's text where it has one."""

    def text(key: str, default: str) -> str:
        value = doc.get(key)
        return default if value is None or value == "" else fields.scalar_text(where, key, value)

    tm_policy = text("topologyManagerPolicy", "none")
    if tm_policy not in TOPOLOGY_MANAGER_POLICIES:
        names = " ".join(go_quote(p) for p in TOPOLOGY_MANAGER_POLICIES)
        raise where.error(
            "topologyManagerPolicy",
            f"invalid configuration: topologyManagerPolicy (--topology-manager-policy) {go_quote(tm_policy)} "
            f"must be one of: [{names}]",
        )
    tm_scope = text("topologyManagerScope", "container")
    if tm_scope not in TOPOLOGY_MANAGER_SCOPES:
        raise where.error(
            "topologyManagerScope",
            f"invalid configuration: topologyManagerScope (--topology-manager-scope) {go_quote(tm_scope)} "
            f'must be one of: "container", or "pod"',
        )
    cpu_policy = text("cpuManagerPolicy", "none")
    if cpu_policy not in CPU_MANAGER_POLICIES:
        raise where.error("cpuManagerPolicy", f"unknown policy: {go_quote(cpu_policy)}")
    memory_policy = text("memoryManagerPolicy", "None")
    if memory_policy not in MEMORY_MANAGER_POLICIES:
        raise where.error("memoryManagerPolicy", f"unknown policy: {go_quote(memory_policy)}")

    max_pods = 0 if doc.get("maxPods") is None else fields.integer(where, "maxPods", doc["maxPods"])
    if max_pods < 0:
        raise where.error(
            "maxPods", f"invalid configuration: maxPods (--max-pods) {max_pods} must not be a negative number"
        )

    return KubeletConfiguration(
        topology_manager_policy=tm_policy,
        topology_manager_scope=tm_scope,
        topology_manager_policy_options=_frozen(
            fields.string_map(where, "topologyManagerPolicyOptions", doc.get("topologyManagerPolicyOptions"))
        ),
        topology_manager_policy_options_given=doc.get("topologyManagerPolicyOptions") is not None,
        cpu_manager_policy=cpu_policy,
        cpu_manager_policy_options=_frozen(
            fields.string_map(where, "cpuManagerPolicyOptions", doc.get("cpuManagerPolicyOptions"))
        ),
        cpu_manager_reconcile_period_s=_reconcile_period(doc.get("cpuManagerReconcilePeriod"), where),
        reserved_system_cpus=_reserved_system_cpus(doc, where),
        memory_manager_policy=memory_policy,
        reserved_memory=_reserved_memory(doc.get("reservedMemory"), where),
        system_reserved=_resource_list(doc.get("systemReserved"), where, "systemReserved"),
        kube_reserved=_resource_list(doc.get("kubeReserved"), where, "kubeReserved"),
        eviction_hard=_eviction_hard(doc, where),
        merge_default_eviction_settings=_merge_default_eviction_settings(doc, where),
        max_pods=max_pods or DEFAULT_MAX_PODS,
        feature_gates=_frozen(fields.bool_map(where, "featureGates", doc.get("featureGates"))),
    )


def _reconcile_period(value: Any, where: Where) -> float:
    """A ``metav1.Duration``: a Go duration string (a YAML number is no string to its JSON decoding); zero
    or absent is the default. A negative period would make the kubelet's ``wait.Until`` loop without
    pause, so it is refused."""
    if value is None:
        return DEFAULT_CPU_MANAGER_RECONCILE_PERIOD_S
    text = fields.string(where, "cpuManagerReconcilePeriod", value)
    if text.startswith("-"):
        raise where.error("cpuManagerReconcilePeriod", f"must not be negative, got {text}")
    try:
        seconds = 0.0 if text in ("0", "+0") else parse_duration(text.removeprefix("+"))
    except ValueError as err:
        raise where.error("cpuManagerReconcilePeriod", str(err)) from None
    return seconds or DEFAULT_CPU_MANAGER_RECONCILE_PERIOD_S


def _reserved_system_cpus(doc: Mapping[str, Any], where: Where) -> CPUSet:
    raw = doc.get("reservedSystemCPUs")
    if raw is None or raw == "":
        return CPUSet()
    value = fields.scalar_text(where, "reservedSystemCPUs", raw)
    for key in ("systemReservedCgroup", "kubeReservedCgroup"):
        if doc.get(key):
            raise where.error(
                "reservedSystemCPUs",
                "invalid configuration: can't use reservedSystemCPUs (--reserved-cpus) with "
                "systemReservedCgroup (--system-reserved-cgroup) or "
                "kubeReservedCgroup (--kube-reserved-cgroup)",
            )
    try:
        return CPUSet.parse(value)
    except CPUSetError as err:
        raise where.error(
            "reservedSystemCPUs",
            "invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) "
            f"{value}, error: {err}",
        ) from None


def _quantity(where: Where, path: str, value: Any) -> Quantity:
    text = fields.scalar_text(where, path, value)
    try:
        return Quantity.parse(text)
    except QuantityError as err:
        raise where.error(path, str(err)) from None


def _resource_list(value: Any, where: Where, name: str) -> Mapping[str, Quantity]:
    """``parseResourceList``: cpu, memory, ephemeral-storage and pid only, none negative."""
    result: dict[str, Quantity] = {}
    for key, raw in fields.string_map(where, name, value).items():
        path = f"{name}[{key}]"
        if key not in RESERVABLE_RESOURCES:
            raise where.error(path, f"cannot reserve {go_quote(key)} resource")
        try:
            quantity = Quantity.parse(raw)
        except QuantityError as err:
            raise where.error(
                path, f"failed to parse quantity {go_quote(raw)} for {go_quote(key)} resource: {err}"
            ) from None
        if quantity.amount < 0:
            raise where.error(path, f"resource quantity for {go_quote(key)} cannot be negative: {raw}")
        result[key] = quantity
    return _frozen(result)


def _reserved_memory(value: Any, where: Where) -> tuple[MemoryReservation, ...]:
    """``reservedMemory``, checked as ``validateReservedMemoryConfiguration`` does (supported limit types,
    non-zero values, no NUMA node/resource pair twice)."""
    entries: list[MemoryReservation] = []
    seen: set[tuple[int, str]] = set()
    for index, raw in enumerate(fields.sequence(where, "reservedMemory", value)):
        path = f"reservedMemory[{index}]"
        entry = fields.mapping(where, path, raw)
        if "numaNode" not in entry:
            raise where.error(f"{path}.numaNode", "required")
        numa_node = fields.integer(where, f"{path}.numaNode", entry["numaNode"])
        if not 0 <= numa_node < 2**31:
            raise where.error(f"{path}.numaNode", f"must be a NUMA node id, got {numa_node}")
        limits: dict[str, Quantity] = {}
        for name, raw_quantity in fields.mapping(where, f"{path}.limits", entry.get("limits")).items():
            limit_path = f"{path}.limits[{name}]"
            if name != "memory" and not name.startswith(_HUGEPAGES_PREFIX):
                raise where.error(
                    limit_path,
                    f"invalid configuration: the limit type {go_quote(name)} for NUMA node {numa_node} "
                    "is not supported, only [memory hugepages-<HugePageSize>] is accepted",
                )
            quantity = _quantity(where, limit_path, raw_quantity)
            if quantity.is_zero():
                raise where.error(
                    limit_path,
                    f"invalid configuration: reserved memory may not be zero for NUMA node {numa_node} and "
                    f"resource {go_quote(name)}",
                )
            if (numa_node, name) in seen:
                raise where.error(
                    limit_path,
                    f"invalid configuration: the reserved memory has a duplicate value for NUMA node "
                    f"{numa_node} and resource {go_quote(name)}",
                )
            seen.add((numa_node, name))
            limits[name] = quantity
        entries.append(MemoryReservation(numa_node, _frozen(limits)))
    return tuple(entries)


def _merge_default_eviction_settings(doc: Mapping[str, Any], where: Where) -> bool:
    value = doc.get("mergeDefaultEvictionSettings")
    return False if value is None else fields.boolean(where, "mergeDefaultEvictionSettings", value)


def _eviction_hard(doc: Mapping[str, Any], where: Where) -> Mapping[str, str]:
    """``loadConfigFile``: absent → the defaults; present → as written, plus the defaults for unnamed
    signals when ``mergeDefaultEvictionSettings`` is on (otherwise unnamed signals have no threshold).
    Each statement is checked like ``parseThresholdStatement``."""
    if doc.get("evictionHard") is None:
        return DEFAULT_EVICTION_HARD
    thresholds = fields.string_map(where, "evictionHard", doc["evictionHard"])
    for signal, value in thresholds.items():
        _check_threshold(where, f"evictionHard[{signal}]", signal, value)
    if _merge_default_eviction_settings(doc, where):
        thresholds = {**DEFAULT_EVICTION_HARD, **thresholds}
    return _frozen(thresholds)


def _check_threshold(where: Where, path: str, signal: str, value: str) -> None:
    if signal not in EVICTION_SIGNALS:
        raise where.error(path, f"unsupported eviction signal {signal}")
    if value.endswith("%"):
        if value in ("0%", "100%"):  # the kubelet ignores these thresholds
            return
        number = value.rstrip("%")
        if not _FLOAT.match(number) or math.isinf(float(number)):
            raise where.error(path, f"strconv.ParseFloat: parsing {go_quote(number)}: invalid syntax")
        percentage = float(number) / 100
        if percentage < 0:
            raise where.error(path, f"eviction percentage threshold {signal} must be >= 0%: {value}")
        if percentage > 1:
            raise where.error(path, f"eviction percentage threshold {signal} must be <= 100%: {value}")
        return
    try:
        quantity = Quantity.parse(value)
    except QuantityError as err:
        raise where.error(path, str(err)) from None
    if quantity.amount <= 0:
        raise where.error(path, f"eviction threshold {signal} must be positive: {value}")
