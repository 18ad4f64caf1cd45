"""kubeletemu.cli.wire.protodoc reads protobuf's encoding into exactly the document ``message_doc`` makes of
the message the protobuf runtime parses: every message of every .proto, filled at random."""

from __future__ import annotations

import math
import random
import struct
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from kubeletemu._proto.kubeletemu.v1 import admission_pb2
from kubeletemu._proto.podresources.v1 import api_pb2 as podresources_v1
from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as podresources_v1alpha1
from kubeletemu._proto.wireschema import MESSAGES
from kubeletemu.cli.protojson import message_doc
from kubeletemu.cli.wire.protodoc import WireError, _one, decode

FILES = (admission_pb2.DESCRIPTOR, podresources_v1.DESCRIPTOR, podresources_v1alpha1.DESCRIPTOR)
_INTS = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def all_messages() -> list[Descriptor]:
    found: list[Descriptor] = []

    def visit(message: Descriptor) -> None:
        if not message.GetOptions().map_entry:
            found.append(message)
        for nested in message.nested_types:
            visit(nested)

    for file in FILES:
        for message in file.message_types_by_name.values():
            visit(message)
    return found


def _scalar(field: FieldDescriptor, rng: random.Random) -> Any:
    kind = field.type
    if kind in _INTS:
        low, high = _INTS[kind]
        return rng.choice([low, high, 0, 1, -1 if low else 2, rng.randint(low, high)])
    if kind == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if kind == FieldDescriptor.TYPE_DOUBLE:
        return rng.choice([0.0, -0.0, 1.5, 1e300, -2.5e-300, math.inf, rng.uniform(-1e6, 1e6)])
    if kind == FieldDescriptor.TYPE_FLOAT:
        return rng.choice([0.0, 0.1, 3.4e38, -1.25, rng.uniform(-1e3, 1e3)])
    if kind == FieldDescriptor.TYPE_STRING:
        return "".join(rng.choice("ab0-_/ é漢\U0001f600") for _ in range(rng.randrange(0, 12)))
    if kind == FieldDescriptor.TYPE_BYTES:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 9)))
    if kind == FieldDescriptor.TYPE_ENUM:
        numbers = [v.number for v in field.enum_type.values]
        return rng.choice([*numbers, max(numbers) + 7])  # an open enum keeps an unknown number
    raise AssertionError(field.type)


def fill(message: Message, rng: random.Random, depth: int = 0) -> Message:
    """Each field set or left alone at random; repeated fields and maps of 0 to 3 items."""
    for field in message.DESCRIPTOR.fields:
        if rng.random() < 0.3:
            continue
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
            target = getattr(message, field.name)
            for _ in range(rng.randrange(4)):
                key = _scalar(key_field, rng)
                if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                    value = target[key]  # reading a key of a message map creates its entry
                    if depth < 3:
                        fill(value, rng, depth + 1)
                else:
                    target[key] = _scalar(value_field, rng)
        elif field.is_repeated:
            target = getattr(message, field.name)
            for _ in range(rng.randrange(4) if depth < 3 else 0):
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    fill(target.add(), rng, depth + 1)
                else:
                    target.append(_scalar(field, rng))
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if depth < 3:
                fill(getattr(message, field.name), rng, depth + 1)
                getattr(message, field.name).SetInParent()
        else:
            setattr(message, field.name, _scalar(field, rng))
    return message


def _same(ours: Any, theirs: Any) -> bool:
    """Equal, with -0.0 told from 0.0 (both print differently in JSON)."""
    if isinstance(theirs, float):
        return isinstance(ours, float) and (
            ours == theirs and math.copysign(1, ours) == math.copysign(1, theirs)
        )
    if isinstance(theirs, dict):
        return (
            isinstance(ours, dict)
            and list(ours) == list(theirs)
            and all(_same(ours[k], theirs[k]) for k in theirs)
        )
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(map(_same, ours, theirs))
    return type(ours) is type(theirs) and ours == theirs


MESSAGE_TYPES = all_messages()


def test_the_schema_holds_every_message() -> None:
    assert {m.full_name for m in MESSAGE_TYPES} <= set(MESSAGES)
    assert len(MESSAGE_TYPES) > 60


@pytest.mark.parametrize("descriptor", MESSAGE_TYPES, ids=lambda d: d.full_name)
def test_random_messages_decode_as_message_doc_reads_them(descriptor: Descriptor) -> None:
    rng = random.Random(descriptor.full_name)
    cls = GetMessageClass(descriptor)
    for _ in range(25):
        message = fill(cls(), rng)
        data = message.SerializeToString()
        assert _same(decode(descriptor.full_name, data), message_doc(cls.FromString(data)))


@pytest.mark.parametrize("descriptor", MESSAGE_TYPES, ids=lambda d: d.full_name)
def test_concatenated_messages_merge_as_the_runtime_merges(descriptor: Descriptor) -> None:
    """The last scalar wins, repeated fields append, a singular message merges, the last oneof member set
    clears the others."""
    rng = random.Random("merge " + descriptor.full_name)
    cls = GetMessageClass(descriptor)
    for _ in range(10):
        data = fill(cls(), rng).SerializeToString() + fill(cls(), rng).SerializeToString()
        assert _same(decode(descriptor.full_name, data), message_doc(cls.FromString(data)))


def test_unpacked_repeated_scalars_and_unknown_fields() -> None:
    """A repeated scalar sent one value at a time (the pre-proto3 way) reads as the packed one; a field the
    schema does not know is skipped."""
    cls = admission_pb2.ContainerResult
    packed = cls(name="a", cpu_ids=[3, 300, 0]).SerializeToString()
    cpu_ids = cls.DESCRIPTOR.fields_by_name["cpu_ids"].number
    unpacked = cls(name="a").SerializeToString() + b"".join(
        bytes([cpu_ids << 3]) + _varint(v) for v in (3, 300, 0)
    )
    unknown = (
        bytes([(99 << 3 | 2) & 0x7F | 0x80, 99 >> 4])
        + b"\x03xyz"
        + bytes([(98 << 3) & 0x7F | 0x80, 98 >> 4, 5])
    )
    for data in (packed, unpacked, unpacked + unknown):
        assert decode("kubeletemu.v1.ContainerResult", data) == message_doc(cls.FromString(data))
    assert decode("kubeletemu.v1.ContainerResult", unpacked)["cpu_ids"] == [3, 300, 0]


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@pytest.mark.parametrize(
    "data",
    [b"\x0a\x05ab", b"\x08", b"\x08\xff", b"\x00\x01", b"\x0b", b"\x0a\x02\xff\xfe"],
    ids=["short-string", "no-varint", "open-varint", "field-0", "group", "not-utf8"],
)
def test_malformed_answers_are_errors_for_both(data: bytes) -> None:
    """Truncated fields, field number 0, groups and a string that is not UTF-8: the runtime refuses each
    (name is field 1, a string, in AdmittedPod), and so does the decoder."""
    with pytest.raises(DecodeError):
        admission_pb2.AdmittedPod.FromString(data)
    with pytest.raises(WireError):
        decode("kubeletemu.v1.AdmittedPod", data)


def test_a_float_field_reads_as_the_runtime_widens_it() -> None:
    """No .proto here has a ``float`` (32-bit) field yet: the runtime gives its value widened to a Python
    float, 0.1 becoming 0.10000000149011612, and so does the decoder."""
    assert _one("float", None, struct.pack("<f", 0.1)) == 0.10000000149011612
    assert _one("double", None, struct.pack("<d", 0.1)) == 0.1


def test_an_unknown_message_name_is_an_error() -> None:
    with pytest.raises(WireError, match="no message"):
        decode("kubeletemu.v1.Nothing", b"")
