from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WatchRequest(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, nodes: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeStateUpdate(_message.Message):
    __slots__ = ("state", "heartbeat")
    STATE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    state: NodeState
    heartbeat: Heartbeat
    def __init__(self, state: _Optional[_Union[NodeState, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("incarnation", "nodes")
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    incarnation: str
    nodes: _containers.RepeatedCompositeFieldContainer[NodeGeneration]
    def __init__(self, incarnation: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[NodeGeneration, _Mapping]]] = ...) -> None: ...

class NodeGeneration(_message.Message):
    __slots__ = ("node_name", "generation")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    generation: int
    def __init__(self, node_name: _Optional[str] = ..., generation: _Optional[int] = ...) -> None: ...

class NodeState(_message.Message):
    __slots__ = ("node_name", "generation", "incarnation", "kubelet_version", "host_json", "config_json", "pods", "cpu_state", "memory_state", "device_state", "hints", "refused_pods")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    KUBELET_VERSION_FIELD_NUMBER: _ClassVar[int]
    HOST_JSON_FIELD_NUMBER: _ClassVar[int]
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    CPU_STATE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_STATE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_STATE_FIELD_NUMBER: _ClassVar[int]
    HINTS_FIELD_NUMBER: _ClassVar[int]
    REFUSED_PODS_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    generation: int
    incarnation: str
    kubelet_version: str
    host_json: str
    config_json: str
    pods: _containers.RepeatedScalarFieldContainer[bytes]
    cpu_state: bytes
    memory_state: bytes
    device_state: bytes
    hints: _containers.RepeatedCompositeFieldContainer[StoredHint]
    refused_pods: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node_name: _Optional[str] = ..., generation: _Optional[int] = ..., incarnation: _Optional[str] = ..., kubelet_version: _Optional[str] = ..., host_json: _Optional[str] = ..., config_json: _Optional[str] = ..., pods: _Optional[_Iterable[bytes]] = ..., cpu_state: _Optional[bytes] = ..., memory_state: _Optional[bytes] = ..., device_state: _Optional[bytes] = ..., hints: _Optional[_Iterable[_Union[StoredHint, _Mapping]]] = ..., refused_pods: _Optional[_Iterable[str]] = ...) -> None: ...

class StoredHint(_message.Message):
    __slots__ = ("pod_uid", "container", "has_affinity", "numa_nodes", "preferred")
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    HAS_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODES_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_FIELD_NUMBER: _ClassVar[int]
    pod_uid: str
    container: str
    has_affinity: bool
    numa_nodes: _containers.RepeatedScalarFieldContainer[int]
    preferred: bool
    def __init__(self, pod_uid: _Optional[str] = ..., container: _Optional[str] = ..., has_affinity: _Optional[bool] = ..., numa_nodes: _Optional[_Iterable[int]] = ..., preferred: _Optional[bool] = ...) -> None: ...
