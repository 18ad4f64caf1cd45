"""The per-version podresources schema reflection serves (:mod:`kubeletemu.podresources.schema`)."""

from __future__ import annotations

import pytest
from google.protobuf import message_factory
from grpc_health.v1 import health_pb2

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as v1alpha1
from kubeletemu.podresources.schema import VERSIONED_FIELDS, absent_fields, schema_pool
from kubeletemu.versions.version import SUPPORTED

FILES = (v1.DESCRIPTOR, v1alpha1.DESCRIPTOR, health_pb2.DESCRIPTOR)


@pytest.mark.parametrize("version", SUPPORTED)
def test_each_version_has_exactly_its_fields(version: str) -> None:
    pool = schema_pool(version, FILES)
    absent = absent_fields(version)
    for (message, field), _ in VERSIONED_FIELDS.items():
        fields = {f.name for f in pool.FindMessageTypeByName(f"v1.{message}").fields}
        assert (field in fields) == ((message, field) not in absent), (version, message, field)
    # Everything else is master's, field for field.
    for name, master in v1.DESCRIPTOR.message_types_by_name.items():
        served = pool.FindMessageTypeByName(master.full_name)
        assert [(f.name, f.number) for f in served.fields] == [
            (f.name, f.number) for f in master.fields if (name, f.name) not in absent
        ]
    assert pool.FindServiceByName("v1.PodResourcesLister").methods_by_name.keys() == (
        v1.DESCRIPTOR.services_by_name["PodResourcesLister"].methods_by_name.keys()
    )


def test_the_versions_differ_where_the_rows_say() -> None:
    assert absent_fields("1.33") == absent_fields("1.34") == frozenset(VERSIONED_FIELDS)
    assert (
        absent_fields("1.35")
        == absent_fields("1.36")
        == {("PodResources", "cpu_ids"), ("PodResources", "memory")}
    )
    assert absent_fields("master") == frozenset()


def test_a_removed_optional_field_takes_its_synthetic_oneof() -> None:
    old = schema_pool("1.34", FILES).FindMessageTypeByName("v1.ClaimResource")
    new = schema_pool("1.35", FILES).FindMessageTypeByName("v1.ClaimResource")
    assert [o.name for o in old.oneofs] == []
    assert [o.name for o in new.oneofs] == ["_share_id"]


def test_a_master_reply_decodes_with_an_older_schema() -> None:
    """A 1.34 client decoding what master sends keeps what it knows (the rest is unknown fields)."""
    reply = v1.PodResources(name="p", namespace="ns", cpu_ids=[3, 4])
    old = message_factory.GetMessageClass(schema_pool("1.34", FILES).FindMessageTypeByName("v1.PodResources"))
    decoded = old.FromString(reply.SerializeToString())
    assert (decoded.name, decoded.namespace) == ("p", "ns")
    assert not hasattr(decoded, "cpu_ids")
