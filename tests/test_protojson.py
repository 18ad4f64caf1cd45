"""``kubeletemu.cli.protojson``: every scalar kind as a program reads it, against what the proto3 JSON
mapping (``MessageToDict``) writes for the same message."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, json_format, wrappers_pb2

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.cli.protojson import message_doc


def test_64_bit_integers_stay_integers() -> None:
    big = 2**63 - 1
    assert message_doc(wrappers_pb2.Int64Value(value=big)) == {"value": big}
    assert message_doc(wrappers_pb2.UInt64Value(value=2**64 - 1)) == {"value": 2**64 - 1}
    # What -o json printed before: the JSON mapping's strings.
    assert json_format.MessageToDict(wrappers_pb2.Int64Value(value=big)) == str(big)


def test_map_keys_keep_their_type_and_fields_their_order() -> None:
    node = pb.NUMANode(id=0, memory_free_bytes=1 << 40, distances={1: 21, 0: 10})
    doc = message_doc(node)
    assert list(doc) == [f.name for f in pb.NUMANode.DESCRIPTOR.fields]  # id first, though 0
    assert doc["distances"] == {0: 10, 1: 21} and doc["memory_free_bytes"] == 1 << 40
    mapped = json_format.MessageToDict(node, preserving_proto_field_name=True)
    assert mapped["distances"] == {"1": 21, "0": 10} and "id" not in mapped


def test_presence_as_always_print_fields_with_no_presence() -> None:
    """Unset ``optional`` fields and messages are left out, fields without presence always written."""
    unset = pb.NodeVerdict(name="n")
    expected = json_format.MessageToDict(
        unset, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    assert (
        message_doc(unset) == expected == {"name": "n", "reason": "", "policy": "", "error": "", "scores": []}
    )
    zero = pb.NodeVerdict(name="n", fits=False, score=0)
    assert (message_doc(zero)["fits"], message_doc(zero)["score"]) == (False, 0)
    assert "pod" not in message_doc(pb.ScheduleRequest())  # an unset message


def test_enums_by_name_and_bytes_in_base64() -> None:
    field = descriptor_pb2.FieldDescriptorProto(name="f", type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64)
    assert message_doc(field)["type"] == "TYPE_INT64"
    assert message_doc(wrappers_pb2.BytesValue(value=b"\x00\xff")) == {"value": "AP8="}
