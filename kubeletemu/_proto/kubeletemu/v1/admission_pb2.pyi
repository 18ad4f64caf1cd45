from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourceRequirements(_message.Message):
    __slots__ = ("requests", "limits")
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LimitsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.ScalarMap[str, str]
    limits: _containers.ScalarMap[str, str]
    def __init__(self, requests: _Optional[_Mapping[str, str]] = ..., limits: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Container(_message.Message):
    __slots__ = ("name", "resources", "restart_policy")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    RESTART_POLICY_FIELD_NUMBER: _ClassVar[int]
    name: str
    resources: ResourceRequirements
    restart_policy: str
    def __init__(self, name: _Optional[str] = ..., resources: _Optional[_Union[ResourceRequirements, _Mapping]] = ..., restart_policy: _Optional[str] = ...) -> None: ...

class Pod(_message.Message):
    __slots__ = ("name", "namespace", "uid", "init_containers", "containers", "resources", "overhead", "runtime_class_name", "annotations", "priority")
    class OverheadEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    INIT_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    OVERHEAD_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    uid: str
    init_containers: _containers.RepeatedCompositeFieldContainer[Container]
    containers: _containers.RepeatedCompositeFieldContainer[Container]
    resources: ResourceRequirements
    overhead: _containers.ScalarMap[str, str]
    runtime_class_name: str
    annotations: _containers.ScalarMap[str, str]
    priority: int
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., uid: _Optional[str] = ..., init_containers: _Optional[_Iterable[_Union[Container, _Mapping]]] = ..., containers: _Optional[_Iterable[_Union[Container, _Mapping]]] = ..., resources: _Optional[_Union[ResourceRequirements, _Mapping]] = ..., overhead: _Optional[_Mapping[str, str]] = ..., runtime_class_name: _Optional[str] = ..., annotations: _Optional[_Mapping[str, str]] = ..., priority: _Optional[int] = ...) -> None: ...

class PodSource(_message.Message):
    __slots__ = ("pod", "manifest")
    POD_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    pod: Pod
    manifest: str
    def __init__(self, pod: _Optional[_Union[Pod, _Mapping]] = ..., manifest: _Optional[str] = ...) -> None: ...

class AdmitRequest(_message.Message):
    __slots__ = ("pod",)
    POD_FIELD_NUMBER: _ClassVar[int]
    pod: PodSource
    def __init__(self, pod: _Optional[_Union[PodSource, _Mapping]] = ...) -> None: ...

class PolicyOverrides(_message.Message):
    __slots__ = ("topology_manager_policy", "topology_manager_scope", "topology_manager_policy_options", "replace_policy_options")
    class TopologyManagerPolicyOptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOPOLOGY_MANAGER_POLICY_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_MANAGER_SCOPE_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_MANAGER_POLICY_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    REPLACE_POLICY_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    topology_manager_policy: str
    topology_manager_scope: str
    topology_manager_policy_options: _containers.ScalarMap[str, str]
    replace_policy_options: bool
    def __init__(self, topology_manager_policy: _Optional[str] = ..., topology_manager_scope: _Optional[str] = ..., topology_manager_policy_options: _Optional[_Mapping[str, str]] = ..., replace_policy_options: _Optional[bool] = ...) -> None: ...

class WouldAdmitRequest(_message.Message):
    __slots__ = ("pod", "overrides", "kubelet_version")
    POD_FIELD_NUMBER: _ClassVar[int]
    OVERRIDES_FIELD_NUMBER: _ClassVar[int]
    KUBELET_VERSION_FIELD_NUMBER: _ClassVar[int]
    pod: PodSource
    overrides: PolicyOverrides
    kubelet_version: str
    def __init__(self, pod: _Optional[_Union[PodSource, _Mapping]] = ..., overrides: _Optional[_Union[PolicyOverrides, _Mapping]] = ..., kubelet_version: _Optional[str] = ...) -> None: ...

class TopologyHint(_message.Message):
    __slots__ = ("numa_nodes", "any_numa", "preferred")
    NUMA_NODES_FIELD_NUMBER: _ClassVar[int]
    ANY_NUMA_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_FIELD_NUMBER: _ClassVar[int]
    numa_nodes: _containers.RepeatedScalarFieldContainer[int]
    any_numa: bool
    preferred: bool
    def __init__(self, numa_nodes: _Optional[_Iterable[int]] = ..., any_numa: _Optional[bool] = ..., preferred: _Optional[bool] = ...) -> None: ...

class ResourceHints(_message.Message):
    __slots__ = ("resource", "no_preference", "hints")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NO_PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    HINTS_FIELD_NUMBER: _ClassVar[int]
    resource: str
    no_preference: bool
    hints: _containers.RepeatedCompositeFieldContainer[TopologyHint]
    def __init__(self, resource: _Optional[str] = ..., no_preference: _Optional[bool] = ..., hints: _Optional[_Iterable[_Union[TopologyHint, _Mapping]]] = ...) -> None: ...

class ProviderHints(_message.Message):
    __slots__ = ("provider", "nil_map", "resources")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    NIL_MAP_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    provider: str
    nil_map: bool
    resources: _containers.RepeatedCompositeFieldContainer[ResourceHints]
    def __init__(self, provider: _Optional[str] = ..., nil_map: _Optional[bool] = ..., resources: _Optional[_Iterable[_Union[ResourceHints, _Mapping]]] = ...) -> None: ...

class MemoryBlock(_message.Message):
    __slots__ = ("memory_type", "size", "numa_nodes")
    MEMORY_TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODES_FIELD_NUMBER: _ClassVar[int]
    memory_type: str
    size: int
    numa_nodes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, memory_type: _Optional[str] = ..., size: _Optional[int] = ..., numa_nodes: _Optional[_Iterable[int]] = ...) -> None: ...

class DeviceAssignment(_message.Message):
    __slots__ = ("resource_name", "device_ids", "numa_nodes")
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_IDS_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODES_FIELD_NUMBER: _ClassVar[int]
    resource_name: str
    device_ids: _containers.RepeatedScalarFieldContainer[str]
    numa_nodes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, resource_name: _Optional[str] = ..., device_ids: _Optional[_Iterable[str]] = ..., numa_nodes: _Optional[_Iterable[int]] = ...) -> None: ...

class ContainerResult(_message.Message):
    __slots__ = ("name", "kind", "affinity", "provider_hints", "cpu_ids", "exclusive_cpus", "memory", "devices")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    AFFINITY_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_HINTS_FIELD_NUMBER: _ClassVar[int]
    CPU_IDS_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    affinity: TopologyHint
    provider_hints: _containers.RepeatedCompositeFieldContainer[ProviderHints]
    cpu_ids: _containers.RepeatedScalarFieldContainer[int]
    exclusive_cpus: bool
    memory: _containers.RepeatedCompositeFieldContainer[MemoryBlock]
    devices: _containers.RepeatedCompositeFieldContainer[DeviceAssignment]
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., affinity: _Optional[_Union[TopologyHint, _Mapping]] = ..., provider_hints: _Optional[_Iterable[_Union[ProviderHints, _Mapping]]] = ..., cpu_ids: _Optional[_Iterable[int]] = ..., exclusive_cpus: _Optional[bool] = ..., memory: _Optional[_Iterable[_Union[MemoryBlock, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[DeviceAssignment, _Mapping]]] = ...) -> None: ...

class ScoreDecision(_message.Message):
    __slots__ = ("container", "chosen", "over", "signal", "detail")
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_FIELD_NUMBER: _ClassVar[int]
    OVER_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    container: str
    chosen: _containers.RepeatedScalarFieldContainer[int]
    over: _containers.RepeatedScalarFieldContainer[int]
    signal: str
    detail: str
    def __init__(self, container: _Optional[str] = ..., chosen: _Optional[_Iterable[int]] = ..., over: _Optional[_Iterable[int]] = ..., signal: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class AdmitResponse(_message.Message):
    __slots__ = ("name", "namespace", "uid", "admitted", "reason", "message", "decided_by", "qos_class", "containers", "score_decisions", "cleanup", "preempted")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    ADMITTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_FIELD_NUMBER: _ClassVar[int]
    QOS_CLASS_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    SCORE_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    CLEANUP_FIELD_NUMBER: _ClassVar[int]
    PREEMPTED_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    uid: str
    admitted: bool
    reason: str
    message: str
    decided_by: str
    qos_class: str
    containers: _containers.RepeatedCompositeFieldContainer[ContainerResult]
    score_decisions: _containers.RepeatedCompositeFieldContainer[ScoreDecision]
    cleanup: str
    preempted: _containers.RepeatedCompositeFieldContainer[PreemptedPod]
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., uid: _Optional[str] = ..., admitted: _Optional[bool] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., decided_by: _Optional[str] = ..., qos_class: _Optional[str] = ..., containers: _Optional[_Iterable[_Union[ContainerResult, _Mapping]]] = ..., score_decisions: _Optional[_Iterable[_Union[ScoreDecision, _Mapping]]] = ..., cleanup: _Optional[str] = ..., preempted: _Optional[_Iterable[_Union[PreemptedPod, _Mapping]]] = ...) -> None: ...

class PreemptedPod(_message.Message):
    __slots__ = ("name", "namespace", "uid", "phase", "reason", "message")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    uid: str
    phase: str
    reason: str
    message: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., uid: _Optional[str] = ..., phase: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class RemovePodRequest(_message.Message):
    __slots__ = ("uid",)
    UID_FIELD_NUMBER: _ClassVar[int]
    uid: str
    def __init__(self, uid: _Optional[str] = ...) -> None: ...

class RemovePodResponse(_message.Message):
    __slots__ = ("name", "namespace", "uid")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    uid: str
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., uid: _Optional[str] = ...) -> None: ...

class GetAffinityRequest(_message.Message):
    __slots__ = ("pod_uid", "container_name")
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    container_name: str
    def __init__(self, pod_uid: _Optional[str] = ..., container_name: _Optional[str] = ...) -> None: ...

class GetAffinityResponse(_message.Message):
    __slots__ = ("affinity",)
    AFFINITY_FIELD_NUMBER: _ClassVar[int]
    affinity: TopologyHint
    def __init__(self, affinity: _Optional[_Union[TopologyHint, _Mapping]] = ...) -> None: ...

class ListPodsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AdmittedPod(_message.Message):
    __slots__ = ("name", "namespace", "uid", "qos_class", "containers")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    QOS_CLASS_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    namespace: str
    uid: str
    qos_class: str
    containers: _containers.RepeatedCompositeFieldContainer[ContainerResult]
    def __init__(self, name: _Optional[str] = ..., namespace: _Optional[str] = ..., uid: _Optional[str] = ..., qos_class: _Optional[str] = ..., containers: _Optional[_Iterable[_Union[ContainerResult, _Mapping]]] = ...) -> None: ...

class ListPodsResponse(_message.Message):
    __slots__ = ("pods",)
    PODS_FIELD_NUMBER: _ClassVar[int]
    pods: _containers.RepeatedCompositeFieldContainer[AdmittedPod]
    def __init__(self, pods: _Optional[_Iterable[_Union[AdmittedPod, _Mapping]]] = ...) -> None: ...

class GetNodeTopologyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HugepagesResources(_message.Message):
    __slots__ = ("page_size_bytes", "total_bytes", "allocatable_bytes", "free_bytes")
    PAGE_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_BYTES_FIELD_NUMBER: _ClassVar[int]
    FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    page_size_bytes: int
    total_bytes: int
    allocatable_bytes: int
    free_bytes: int
    def __init__(self, page_size_bytes: _Optional[int] = ..., total_bytes: _Optional[int] = ..., allocatable_bytes: _Optional[int] = ..., free_bytes: _Optional[int] = ...) -> None: ...

class NUMANode(_message.Message):
    __slots__ = ("id", "cpu_ids", "allocatable_cpu_ids", "free_cpu_ids", "memory_total_bytes", "memory_allocatable_bytes", "memory_free_bytes", "hugepages", "distances", "devices")
    class DistancesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    CPU_IDS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_CPU_IDS_FIELD_NUMBER: _ClassVar[int]
    FREE_CPU_IDS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ALLOCATABLE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    HUGEPAGES_FIELD_NUMBER: _ClassVar[int]
    DISTANCES_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    id: int
    cpu_ids: _containers.RepeatedScalarFieldContainer[int]
    allocatable_cpu_ids: _containers.RepeatedScalarFieldContainer[int]
    free_cpu_ids: _containers.RepeatedScalarFieldContainer[int]
    memory_total_bytes: int
    memory_allocatable_bytes: int
    memory_free_bytes: int
    hugepages: _containers.RepeatedCompositeFieldContainer[HugepagesResources]
    distances: _containers.ScalarMap[int, int]
    devices: _containers.RepeatedCompositeFieldContainer[DeviceAssignment]
    def __init__(self, id: _Optional[int] = ..., cpu_ids: _Optional[_Iterable[int]] = ..., allocatable_cpu_ids: _Optional[_Iterable[int]] = ..., free_cpu_ids: _Optional[_Iterable[int]] = ..., memory_total_bytes: _Optional[int] = ..., memory_allocatable_bytes: _Optional[int] = ..., memory_free_bytes: _Optional[int] = ..., hugepages: _Optional[_Iterable[_Union[HugepagesResources, _Mapping]]] = ..., distances: _Optional[_Mapping[int, int]] = ..., devices: _Optional[_Iterable[_Union[DeviceAssignment, _Mapping]]] = ...) -> None: ...

class NodeTopology(_message.Message):
    __slots__ = ("numa_nodes", "reserved_cpu_ids", "shared_pool_cpu_ids", "topology_manager_policy", "topology_manager_scope", "topology_manager_policy_options", "cpu_manager_policy", "memory_manager_policy", "kubelet_start_errors")
    class TopologyManagerPolicyOptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NUMA_NODES_FIELD_NUMBER: _ClassVar[int]
    RESERVED_CPU_IDS_FIELD_NUMBER: _ClassVar[int]
    SHARED_POOL_CPU_IDS_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_MANAGER_POLICY_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_MANAGER_SCOPE_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_MANAGER_POLICY_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    CPU_MANAGER_POLICY_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MANAGER_POLICY_FIELD_NUMBER: _ClassVar[int]
    KUBELET_START_ERRORS_FIELD_NUMBER: _ClassVar[int]
    numa_nodes: _containers.RepeatedCompositeFieldContainer[NUMANode]
    reserved_cpu_ids: _containers.RepeatedScalarFieldContainer[int]
    shared_pool_cpu_ids: _containers.RepeatedScalarFieldContainer[int]
    topology_manager_policy: str
    topology_manager_scope: str
    topology_manager_policy_options: _containers.ScalarMap[str, str]
    cpu_manager_policy: str
    memory_manager_policy: str
    kubelet_start_errors: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, numa_nodes: _Optional[_Iterable[_Union[NUMANode, _Mapping]]] = ..., reserved_cpu_ids: _Optional[_Iterable[int]] = ..., shared_pool_cpu_ids: _Optional[_Iterable[int]] = ..., topology_manager_policy: _Optional[str] = ..., topology_manager_scope: _Optional[str] = ..., topology_manager_policy_options: _Optional[_Mapping[str, str]] = ..., cpu_manager_policy: _Optional[str] = ..., memory_manager_policy: _Optional[str] = ..., kubelet_start_errors: _Optional[_Iterable[str]] = ...) -> None: ...

class GetFingerprintRequest(_message.Message):
    __slots__ = ("method",)
    METHOD_FIELD_NUMBER: _ClassVar[int]
    method: str
    def __init__(self, method: _Optional[str] = ...) -> None: ...

class PodName(_message.Message):
    __slots__ = ("namespace", "name")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class GetFingerprintResponse(_message.Message):
    __slots__ = ("fingerprint", "method", "node_name", "pods", "status_json")
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    STATUS_JSON_FIELD_NUMBER: _ClassVar[int]
    fingerprint: str
    method: str
    node_name: str
    pods: _containers.RepeatedCompositeFieldContainer[PodName]
    status_json: str
    def __init__(self, fingerprint: _Optional[str] = ..., method: _Optional[str] = ..., node_name: _Optional[str] = ..., pods: _Optional[_Iterable[_Union[PodName, _Mapping]]] = ..., status_json: _Optional[str] = ...) -> None: ...

class GetNodeResourceTopologyRequest(_message.Message):
    __slots__ = ("fingerprint_method", "update_trigger", "flavour")
    FINGERPRINT_METHOD_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TRIGGER_FIELD_NUMBER: _ClassVar[int]
    FLAVOUR_FIELD_NUMBER: _ClassVar[int]
    fingerprint_method: str
    update_trigger: str
    flavour: str
    def __init__(self, fingerprint_method: _Optional[str] = ..., update_trigger: _Optional[str] = ..., flavour: _Optional[str] = ...) -> None: ...

class ResourceInfo(_message.Message):
    __slots__ = ("name", "capacity", "allocatable", "available")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    capacity: int
    allocatable: int
    available: int
    def __init__(self, name: _Optional[str] = ..., capacity: _Optional[int] = ..., allocatable: _Optional[int] = ..., available: _Optional[int] = ...) -> None: ...

class CostInfo(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: int
    def __init__(self, name: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...

class AttributeInfo(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class Zone(_message.Message):
    __slots__ = ("name", "type", "costs", "attributes", "resources")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COSTS_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    costs: _containers.RepeatedCompositeFieldContainer[CostInfo]
    attributes: _containers.RepeatedCompositeFieldContainer[AttributeInfo]
    resources: _containers.RepeatedCompositeFieldContainer[ResourceInfo]
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., costs: _Optional[_Iterable[_Union[CostInfo, _Mapping]]] = ..., attributes: _Optional[_Iterable[_Union[AttributeInfo, _Mapping]]] = ..., resources: _Optional[_Iterable[_Union[ResourceInfo, _Mapping]]] = ...) -> None: ...

class NodeResourceTopology(_message.Message):
    __slots__ = ("name", "annotations", "zones", "attributes", "topology_policies", "koordinator_device")
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ZONES_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_POLICIES_FIELD_NUMBER: _ClassVar[int]
    KOORDINATOR_DEVICE_FIELD_NUMBER: _ClassVar[int]
    name: str
    annotations: _containers.ScalarMap[str, str]
    zones: _containers.RepeatedCompositeFieldContainer[Zone]
    attributes: _containers.RepeatedCompositeFieldContainer[AttributeInfo]
    topology_policies: _containers.RepeatedScalarFieldContainer[str]
    koordinator_device: str
    def __init__(self, name: _Optional[str] = ..., annotations: _Optional[_Mapping[str, str]] = ..., zones: _Optional[_Iterable[_Union[Zone, _Mapping]]] = ..., attributes: _Optional[_Iterable[_Union[AttributeInfo, _Mapping]]] = ..., topology_policies: _Optional[_Iterable[str]] = ..., koordinator_device: _Optional[str] = ...) -> None: ...

class GetShadowReportRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ShadowDivergence(_message.Message):
    __slots__ = ("namespace", "name", "uid", "container", "resource", "kubelet", "kubeletemu", "replay_position", "detail")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    KUBELET_FIELD_NUMBER: _ClassVar[int]
    KUBELETEMU_FIELD_NUMBER: _ClassVar[int]
    REPLAY_POSITION_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    uid: str
    container: str
    resource: str
    kubelet: str
    kubeletemu: str
    replay_position: int
    detail: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., container: _Optional[str] = ..., resource: _Optional[str] = ..., kubelet: _Optional[str] = ..., kubeletemu: _Optional[str] = ..., replay_position: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...

class ShadowReport(_message.Message):
    __slots__ = ("generation", "refreshed_at", "checked_at", "trigger", "duration_seconds", "kubelet_root_dir", "kubelet_config", "kubelet_podresources_socket", "watch_mode", "pods_listed", "pods_matched", "pods_derived", "ambiguous_matches", "stale_uids", "placeholders", "warnings", "replay_order", "containers_checked", "containers_agreeing", "divergences", "interchangeable_devices", "last_error", "kubelet_version", "kubelet_version_source", "kubelet_binary", "kubelet_binary_version", "kubelet_version_note")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    REFRESHED_AT_FIELD_NUMBER: _ClassVar[int]
    CHECKED_AT_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    KUBELET_ROOT_DIR_FIELD_NUMBER: _ClassVar[int]
    KUBELET_CONFIG_FIELD_NUMBER: _ClassVar[int]
    KUBELET_PODRESOURCES_SOCKET_FIELD_NUMBER: _ClassVar[int]
    WATCH_MODE_FIELD_NUMBER: _ClassVar[int]
    PODS_LISTED_FIELD_NUMBER: _ClassVar[int]
    PODS_MATCHED_FIELD_NUMBER: _ClassVar[int]
    PODS_DERIVED_FIELD_NUMBER: _ClassVar[int]
    AMBIGUOUS_MATCHES_FIELD_NUMBER: _ClassVar[int]
    STALE_UIDS_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDERS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    REPLAY_ORDER_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_CHECKED_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_AGREEING_FIELD_NUMBER: _ClassVar[int]
    DIVERGENCES_FIELD_NUMBER: _ClassVar[int]
    INTERCHANGEABLE_DEVICES_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    KUBELET_VERSION_FIELD_NUMBER: _ClassVar[int]
    KUBELET_VERSION_SOURCE_FIELD_NUMBER: _ClassVar[int]
    KUBELET_BINARY_FIELD_NUMBER: _ClassVar[int]
    KUBELET_BINARY_VERSION_FIELD_NUMBER: _ClassVar[int]
    KUBELET_VERSION_NOTE_FIELD_NUMBER: _ClassVar[int]
    generation: int
    refreshed_at: float
    checked_at: float
    trigger: str
    duration_seconds: float
    kubelet_root_dir: str
    kubelet_config: str
    kubelet_podresources_socket: str
    watch_mode: str
    pods_listed: int
    pods_matched: int
    pods_derived: int
    ambiguous_matches: _containers.RepeatedScalarFieldContainer[str]
    stale_uids: _containers.RepeatedScalarFieldContainer[str]
    placeholders: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    replay_order: _containers.RepeatedScalarFieldContainer[str]
    containers_checked: int
    containers_agreeing: int
    divergences: _containers.RepeatedCompositeFieldContainer[ShadowDivergence]
    interchangeable_devices: _containers.RepeatedScalarFieldContainer[str]
    last_error: str
    kubelet_version: str
    kubelet_version_source: str
    kubelet_binary: str
    kubelet_binary_version: str
    kubelet_version_note: str
    def __init__(self, generation: _Optional[int] = ..., refreshed_at: _Optional[float] = ..., checked_at: _Optional[float] = ..., trigger: _Optional[str] = ..., duration_seconds: _Optional[float] = ..., kubelet_root_dir: _Optional[str] = ..., kubelet_config: _Optional[str] = ..., kubelet_podresources_socket: _Optional[str] = ..., watch_mode: _Optional[str] = ..., pods_listed: _Optional[int] = ..., pods_matched: _Optional[int] = ..., pods_derived: _Optional[int] = ..., ambiguous_matches: _Optional[_Iterable[str]] = ..., stale_uids: _Optional[_Iterable[str]] = ..., placeholders: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ..., replay_order: _Optional[_Iterable[str]] = ..., containers_checked: _Optional[int] = ..., containers_agreeing: _Optional[int] = ..., divergences: _Optional[_Iterable[_Union[ShadowDivergence, _Mapping]]] = ..., interchangeable_devices: _Optional[_Iterable[str]] = ..., last_error: _Optional[str] = ..., kubelet_version: _Optional[str] = ..., kubelet_version_source: _Optional[str] = ..., kubelet_binary: _Optional[str] = ..., kubelet_binary_version: _Optional[str] = ..., kubelet_version_note: _Optional[str] = ...) -> None: ...

class LeastNUMANodesRequest(_message.Message):
    __slots__ = ("pod", "scope", "max_numa_nodes")
    POD_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    MAX_NUMA_NODES_FIELD_NUMBER: _ClassVar[int]
    pod: PodSource
    scope: str
    max_numa_nodes: int
    def __init__(self, pod: _Optional[_Union[PodSource, _Mapping]] = ..., scope: _Optional[str] = ..., max_numa_nodes: _Optional[int] = ...) -> None: ...

class LeastNUMARequirement(_message.Message):
    __slots__ = ("name", "numa_nodes", "fits", "min_distance")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODES_FIELD_NUMBER: _ClassVar[int]
    FITS_FIELD_NUMBER: _ClassVar[int]
    MIN_DISTANCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    numa_nodes: _containers.RepeatedScalarFieldContainer[int]
    fits: bool
    min_distance: bool
    def __init__(self, name: _Optional[str] = ..., numa_nodes: _Optional[_Iterable[int]] = ..., fits: _Optional[bool] = ..., min_distance: _Optional[bool] = ...) -> None: ...

class LeastNUMANodesResponse(_message.Message):
    __slots__ = ("scope", "numa_nodes", "min_distance", "score", "requirements")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODES_FIELD_NUMBER: _ClassVar[int]
    MIN_DISTANCE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    scope: str
    numa_nodes: int
    min_distance: bool
    score: int
    requirements: _containers.RepeatedCompositeFieldContainer[LeastNUMARequirement]
    def __init__(self, scope: _Optional[str] = ..., numa_nodes: _Optional[int] = ..., min_distance: _Optional[bool] = ..., score: _Optional[int] = ..., requirements: _Optional[_Iterable[_Union[LeastNUMARequirement, _Mapping]]] = ...) -> None: ...

class SimulateRequest(_message.Message):
    __slots__ = ("simulation", "files")
    class FilesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SIMULATION_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    simulation: str
    files: _containers.ScalarMap[str, str]
    def __init__(self, simulation: _Optional[str] = ..., files: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SimulateResponse(_message.Message):
    __slots__ = ("json", "table")
    JSON_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    json: str
    table: str
    def __init__(self, json: _Optional[str] = ..., table: _Optional[str] = ...) -> None: ...

class ScheduleRequest(_message.Message):
    __slots__ = ("pod", "objects", "scheduler_config", "profile", "flavour")
    POD_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_CONFIG_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    FLAVOUR_FIELD_NUMBER: _ClassVar[int]
    pod: PodSource
    objects: str
    scheduler_config: str
    profile: str
    flavour: str
    def __init__(self, pod: _Optional[_Union[PodSource, _Mapping]] = ..., objects: _Optional[str] = ..., scheduler_config: _Optional[str] = ..., profile: _Optional[str] = ..., flavour: _Optional[str] = ...) -> None: ...

class NodeVerdict(_message.Message):
    __slots__ = ("name", "fits", "reason", "score", "policy", "error", "scores")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FITS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    name: str
    fits: bool
    reason: str
    score: int
    policy: str
    error: str
    scores: _containers.RepeatedCompositeFieldContainer[PluginScore]
    def __init__(self, name: _Optional[str] = ..., fits: _Optional[bool] = ..., reason: _Optional[str] = ..., score: _Optional[int] = ..., policy: _Optional[str] = ..., error: _Optional[str] = ..., scores: _Optional[_Iterable[_Union[PluginScore, _Mapping]]] = ...) -> None: ...

class PluginScore(_message.Message):
    __slots__ = ("plugin", "score", "weight")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    score: int
    weight: int
    def __init__(self, plugin: _Optional[str] = ..., score: _Optional[int] = ..., weight: _Optional[int] = ...) -> None: ...

class ScorePlugin(_message.Message):
    __slots__ = ("plugin", "weight")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    weight: int
    def __init__(self, plugin: _Optional[str] = ..., weight: _Optional[int] = ...) -> None: ...

class ScheduleResponse(_message.Message):
    __slots__ = ("pod", "nodes", "chosen", "profile", "filter_plugins", "score_plugins")
    POD_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    FILTER_PLUGINS_FIELD_NUMBER: _ClassVar[int]
    SCORE_PLUGINS_FIELD_NUMBER: _ClassVar[int]
    pod: str
    nodes: _containers.RepeatedCompositeFieldContainer[NodeVerdict]
    chosen: str
    profile: str
    filter_plugins: _containers.RepeatedScalarFieldContainer[str]
    score_plugins: _containers.RepeatedCompositeFieldContainer[ScorePlugin]
    def __init__(self, pod: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[NodeVerdict, _Mapping]]] = ..., chosen: _Optional[str] = ..., profile: _Optional[str] = ..., filter_plugins: _Optional[_Iterable[str]] = ..., score_plugins: _Optional[_Iterable[_Union[ScorePlugin, _Mapping]]] = ...) -> None: ...
