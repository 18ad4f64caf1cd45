"""The generated podresources stubs are wire-compatible with the kubelet's own api.proto.

The upstream files in ``data/`` are compiled by protoc in a child process into a FileDescriptorSet (never
into the default descriptor pool, where a second ``v1.*`` definition would collide with ours) and compared
with the descriptors our stubs register: every message field (name, number, type, label, type name,
proto3 ``optional``) and every service method. A fully populated message is also encoded with our stubs and
decoded with classes built from the upstream descriptors in a private pool.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as v1alpha1
from kubeletemu._proto.podresources.v1alpha1 import api_pb2_grpc as v1alpha1_grpc

DATA = Path(__file__).parent / "data"
UPSTREAM_V1 = DATA / "kubelet_api_v1.proto"
UPSTREAM_V1_RELEASED = DATA / "kubelet_api_v1_v0.36.3.proto"
UPSTREAM_V1ALPHA1 = DATA / "kubelet_api_v1alpha1.proto"

FieldKey = tuple[str, int, int, int, str, bool]
MethodKey = tuple[str, str, str, bool, bool]


def _compile(proto: Path, tmp: Path) -> descriptor_pb2.FileDescriptorProto:
    """protoc in a child process: the upstream file as a FileDescriptorProto, untouched by our pool."""
    out = tmp / f"{proto.stem}.pb"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{proto.parent}",
            f"--descriptor_set_out={out}",
            proto.name,
        ],
        cwd=proto.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    assert len(fds.file) == 1
    return fds.file[0]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    tmp = tmp_path_factory.mktemp("upstream-descriptors")
    return {p.name: _compile(p, tmp) for p in (UPSTREAM_V1, UPSTREAM_V1_RELEASED, UPSTREAM_V1ALPHA1)}


def _ours(module: ModuleType) -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(fdp)
    return fdp


def _fields(fdp: descriptor_pb2.FileDescriptorProto) -> dict[str, dict[int, FieldKey]]:
    return {
        msg.name: {
            f.number: (f.name, f.number, f.type, f.label, f.type_name, f.proto3_optional) for f in msg.field
        }
        for msg in fdp.message_type
    }


def _methods(fdp: descriptor_pb2.FileDescriptorProto) -> dict[str, list[MethodKey]]:
    return {
        svc.name: [
            (m.name, m.input_type, m.output_type, m.client_streaming, m.server_streaming) for m in svc.method
        ]
        for svc in fdp.service
    }


def _normalised(fdp: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """Drop what is not wire contract: the file's path, comments, and json_name (derived from the name)."""
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(fdp)
    copy.ClearField("name")
    copy.ClearField("source_code_info")
    for msg in copy.message_type:
        for f in msg.field:
            f.ClearField("json_name")
    return copy


def _message_names(proto: Path) -> list[str]:
    # Read independently of protoc so the parametrization itself does not depend on the compiler.
    return re.findall(r"^message (\w+)", proto.read_text(), flags=re.MULTILINE)


@pytest.mark.parametrize("message", _message_names(UPSTREAM_V1))
def test_v1_message_fields_match_upstream(
    upstream: dict[str, descriptor_pb2.FileDescriptorProto], message: str
) -> None:
    theirs = _fields(upstream[UPSTREAM_V1.name])
    ours = _fields(_ours(v1))
    assert message in ours, f"message v1.{message} missing from protos/podresources/v1/api.proto"
    assert ours[message] == theirs[message]


@pytest.mark.parametrize("message", _message_names(UPSTREAM_V1ALPHA1))
def test_v1alpha1_message_fields_match_upstream(
    upstream: dict[str, descriptor_pb2.FileDescriptorProto], message: str
) -> None:
    theirs = _fields(upstream[UPSTREAM_V1ALPHA1.name])
    ours = _fields(_ours(v1alpha1))
    assert message in ours
    assert ours[message] == theirs[message]


@pytest.mark.parametrize(
    ("module", "upstream_file"),
    [(v1, UPSTREAM_V1.name), (v1alpha1, UPSTREAM_V1ALPHA1.name)],
    ids=["v1", "v1alpha1"],
)
def test_services_and_whole_descriptor_match_upstream(
    upstream: dict[str, descriptor_pb2.FileDescriptorProto], module: ModuleType, upstream_file: str
) -> None:
    theirs, ours = upstream[upstream_file], _ours(module)
    assert ours.package == theirs.package
    assert ours.syntax == theirs.syntax == "proto3"
    assert _methods(ours) == _methods(theirs)
    assert sorted(_fields(ours)) == sorted(_fields(theirs))
    # Everything else too: oneofs (the synthetic one of share_id), nesting, enums, file options.
    assert _normalised(ours) == _normalised(theirs)


def test_v1_service_methods_are_the_kubelets() -> None:
    methods = [
        (m.name, m.input_type.full_name, m.output_type.full_name)
        for m in v1.DESCRIPTOR.services_by_name["PodResourcesLister"].methods
    ]
    assert v1.DESCRIPTOR.services_by_name["PodResourcesLister"].full_name == "v1.PodResourcesLister"
    assert methods == [
        ("List", "v1.ListPodResourcesRequest", "v1.ListPodResourcesResponse"),
        ("GetAllocatableResources", "v1.AllocatableResourcesRequest", "v1.AllocatableResourcesResponse"),
        ("Get", "v1.GetPodResourcesRequest", "v1.GetPodResourcesResponse"),
    ]


def test_released_kubelet_shape_is_a_subset(upstream: dict[str, descriptor_pb2.FileDescriptorProto]) -> None:
    """Against 1.36.3 (the latest release) ours only adds the pod-level PodResources fields 4 and 5."""
    released = _fields(upstream[UPSTREAM_V1_RELEASED.name])
    ours = _fields(_ours(v1))
    extra: list[tuple[str, FieldKey]] = []
    for message, fields in ours.items():
        for number, key in fields.items():
            if number in released.get(message, {}):
                assert released[message][number] == key
            else:
                extra.append((message, key))
    assert sorted(released) == sorted(ours)
    assert [(m, k[0], k[1]) for m, k in extra] == [
        ("PodResources", "cpu_ids", 4),
        ("PodResources", "memory", 5),
    ]
    assert _methods(_ours(v1)) == _methods(upstream[UPSTREAM_V1_RELEASED.name])


class _RecordingChannel:
    """Stands in for grpc.Channel: records the method paths a stub binds."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def unary_unary(self, path: str, **_: Any) -> object:
        self.paths.append(path)
        return object()


@pytest.mark.parametrize(
    ("stub_module", "expected"),
    [
        (
            v1_grpc,
            [
                "/v1.PodResourcesLister/List",
                "/v1.PodResourcesLister/GetAllocatableResources",
                "/v1.PodResourcesLister/Get",
            ],
        ),
        (v1alpha1_grpc, ["/v1alpha1.PodResourcesLister/List"]),
    ],
    ids=["v1", "v1alpha1"],
)
def test_grpc_method_paths(stub_module: ModuleType, expected: list[str]) -> None:
    channel = _RecordingChannel()
    stub_module.PodResourcesListerStub(channel)
    assert channel.paths == expected


def _populated_list_response() -> v1.ListPodResourcesResponse:
    numa1 = v1.TopologyInfo(nodes=[v1.NUMANode(ID=1)])
    return v1.ListPodResourcesResponse(
        pod_resources=[
            v1.PodResources(
                name="gu-pod",
                namespace="ns1",
                cpu_ids=[2, 4, 6, 8],
                memory=[v1.ContainerMemory(memory_type="memory", size=2 << 30, topology=numa1)],
                containers=[
                    v1.ContainerResources(
                        name="c1",
                        cpu_ids=[2, 4],
                        devices=[
                            v1.ContainerDevices(
                                resource_name="example.com/nic", device_ids=["n1"], topology=numa1
                            )
                        ],
                        memory=[
                            v1.ContainerMemory(memory_type="hugepages-1Gi", size=1 << 30, topology=numa1)
                        ],
                        dynamic_resources=[
                            v1.DynamicResource(
                                claim_name="gpu-claim",
                                claim_namespace="ns1",
                                claim_resources=[
                                    v1.ClaimResource(
                                        cdi_devices=[v1.CDIDevice(name="vendor.com/gpu=gpudevice1")],
                                        driver_name="gpu.example.com",
                                        pool_name="node-a",
                                        device_name="gpu-0",
                                        share_id="share-7",
                                    )
                                ],
                            )
                        ],
                    )
                ],
            )
        ]
    )


def test_wire_round_trip_through_upstream_classes(
    upstream: dict[str, descriptor_pb2.FileDescriptorProto],
) -> None:
    pool = descriptor_pool.DescriptorPool()  # private: the default pool already holds our v1.*
    pool.Add(upstream[UPSTREAM_V1.name])
    theirs_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("v1.ListPodResourcesResponse"))

    ours = _populated_list_response()
    wire = ours.SerializeToString()
    theirs = theirs_cls.FromString(wire)

    as_json = json_format.MessageToDict(theirs)
    # Every field was understood by the upstream schema (unknown fields never reach the JSON form).
    assert as_json == json_format.MessageToDict(ours)
    pod = as_json["podResources"][0]
    assert pod["cpuIds"] == ["2", "4", "6", "8"]
    assert pod["containers"][0]["devices"][0]["topology"] == {"nodes": [{"ID": "1"}]}
    assert pod["containers"][0]["dynamicResources"][0]["claimResources"][0]["shareId"] == "share-7"
    assert theirs.SerializeToString() == wire
    assert v1.ListPodResourcesResponse.FromString(theirs.SerializeToString()) == ours


def test_optional_share_id_has_presence() -> None:
    unset = v1.ClaimResource(driver_name="d")
    empty = v1.ClaimResource(driver_name="d", share_id="")
    assert not unset.HasField("share_id")
    assert empty.HasField("share_id")
    assert unset.SerializeToString() != empty.SerializeToString()
