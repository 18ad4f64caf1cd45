"""kubeletemu.cli.wire.protoenc writes what the protobuf runtime's ``SerializeToString`` writes, from the
document ``message_doc`` makes of the message: every message of every .proto, filled at random (the filler
of tests/cli/test_wire_protodoc.py)."""

from __future__ import annotations

import random

import pytest
from google.protobuf.descriptor import Descriptor
from google.protobuf.message_factory import GetMessageClass

from kubeletemu._proto.kubeletemu.v1 import admission_pb2
from kubeletemu.cli.protojson import message_doc
from kubeletemu.cli.wire.protodoc import WireError, decode
from kubeletemu.cli.wire.protoenc import encode
from tests.cli.test_wire_protodoc import MESSAGE_TYPES, fill


def _has_map(descriptor: Descriptor, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a message of this type can hold a map: the runtime writes map entries in an order of its
    own, so such messages are compared as parsed, the others byte for byte."""
    for field in descriptor.fields:
        entry = field.message_type
        if entry is None or entry.full_name in seen:
            continue
        if entry.GetOptions().map_entry or _has_map(entry, seen | {descriptor.full_name}):
            return True
    return False


@pytest.mark.parametrize("descriptor", MESSAGE_TYPES, ids=lambda d: d.full_name)
def test_random_messages_encode_as_the_runtime_serializes_them(descriptor: Descriptor) -> None:
    rng = random.Random("encode " + descriptor.full_name)
    cls = GetMessageClass(descriptor)
    exact = not _has_map(descriptor)
    for _ in range(25):
        message = fill(cls(), rng)
        ours = encode(descriptor.full_name, message_doc(message))
        if exact:
            assert ours == message.SerializeToString()
        assert cls.FromString(ours) == message
        # decode's inverse: the document read back gives the same bytes.
        assert encode(descriptor.full_name, decode(descriptor.full_name, ours)) == ours


def test_the_requests_the_cli_sends() -> None:
    """What admit, would-admit and remove send, byte for byte as the generated classes build them."""
    source = {"manifest": '{"kind": "Pod"}'}
    overrides = {
        "topology_manager_policy": "restricted",
        "replace_policy_options": True,
        "topology_manager_policy_options": {
            "max-allowable-numa-nodes": "10",
            "prefer-closest-numa-nodes": "",
        },
    }
    pb = admission_pb2
    for name, doc, message in (
        ("AdmitRequest", {"pod": source}, pb.AdmitRequest(pod=pb.PodSource(**source))),
        ("AdmitRequest", {"pod": {}}, pb.AdmitRequest(pod=pb.PodSource())),  # present though empty
        ("RemovePodRequest", {"uid": "u-1"}, pb.RemovePodRequest(uid="u-1")),
        (
            "WouldAdmitRequest",
            {"pod": source, "overrides": overrides, "kubelet_version": "1.34"},
            pb.WouldAdmitRequest(
                pod=pb.PodSource(**source), overrides=pb.PolicyOverrides(**overrides), kubelet_version="1.34"
            ),
        ),
    ):
        ours = encode(f"kubeletemu.v1.{name}", doc)
        assert type(message).FromString(ours) == message
        assert len(ours) == len(message.SerializeToString())


def test_a_document_the_schema_does_not_know_is_an_error() -> None:
    with pytest.raises(WireError, match="no message"):
        encode("kubeletemu.v1.Nothing", {})
    with pytest.raises(WireError, match="has no field 'podd'"):
        encode("kubeletemu.v1.AdmitRequest", {"podd": {}})
