"""The podresources schema a kubelet version serves, for server reflection on its socket.

The messages on the wire already follow the emulated version (:mod:`kubeletemu.podresources.view` leaves
out what that version lacks). Reflection must describe the same schema, or ``grpcurl describe`` on a 1.34
node would show fields no 1.34 kubelet has. The kubelet staging ``api.proto`` gained, in range:

* ``ClaimResource.share_id`` (field 5, proto3 ``optional``) at v0.35.0 — ``podresources.claim-share-id``;
* ``PodResources.cpu_ids`` / ``memory`` (fields 4, 5, KEP-5526) at master only —
  ``podresources.pod-level-resources``

(tags read: kubernetes/kubelet v0.33.0 2087e55a, v0.34.0 2108ddc4, v0.35.0 07d8bcee, v0.36.0 eb8f71c9,
master 63b32497; the rows in ``versions/data/behaviours/podresources.json``). The methods are the same in
every supported version (``Get`` has been in the proto since 1.27; its gate decides whether it answers).

So a version's schema is master's ``api.proto`` with the fields it lacks removed (a removed proto3
``optional`` field takes its synthetic oneof with it), in a descriptor pool of its own; every other file
reflection needs (v1alpha1, health, reflection) is copied unchanged, as the default pool serves them (no
``json_name``, so grpcurl prints the proto field names). The generated stubs are untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FileDescriptor

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.versions.behaviours import in_effect
from kubeletemu.versions.version import MASTER

# (message, field) of podresources v1 → the behaviour that brought it.
VERSIONED_FIELDS: Mapping[tuple[str, str], str] = {
    ("ClaimResource", "share_id"): "podresources.claim-share-id",
    ("PodResources", "cpu_ids"): "podresources.pod-level-resources",
    ("PodResources", "memory"): "podresources.pod-level-resources",
}


def absent_fields(kubelet_version: str = MASTER) -> frozenset[tuple[str, str]]:
    """The v1 fields the kubelet of ``kubelet_version`` does not have, as ``(message, field)``."""
    return frozenset(
        field for field, behaviour in VERSIONED_FIELDS.items() if not in_effect(behaviour, kubelet_version)
    )


def _strip(proto: descriptor_pb2.FileDescriptorProto, absent: frozenset[tuple[str, str]]) -> None:
    for message in proto.message_type:
        doomed = [f for f in message.field if (message.name, f.name) in absent]
        if not doomed:
            continue
        # Synthetic oneofs of removed proto3 optional fields go too; the rest keep their order.
        dropped_oneofs = {f.oneof_index for f in doomed if f.HasField("oneof_index") and f.proto3_optional}
        kept = [f for f in message.field if (message.name, f.name) not in absent]
        renumber: dict[int, int] = {}
        oneofs: list[descriptor_pb2.OneofDescriptorProto] = []
        for index, oneof in enumerate(message.oneof_decl):
            if index not in dropped_oneofs:
                renumber[index] = len(oneofs)
                oneofs.append(oneof)
        for f in kept:
            if f.HasField("oneof_index"):
                f.oneof_index = renumber[f.oneof_index]
        del message.field[:]
        message.field.extend(kept)
        del message.oneof_decl[:]
        message.oneof_decl.extend(oneofs)


def _with_dependencies(files: Iterable[FileDescriptor]) -> list[FileDescriptor]:
    """``files`` and everything they import, dependencies first."""
    ordered: list[FileDescriptor] = []
    seen: set[str] = set()

    def visit(file: FileDescriptor) -> None:
        if file.name in seen:
            return
        seen.add(file.name)
        for dependency in file.dependencies:
            visit(dependency)
        ordered.append(file)

    for file in files:
        visit(file)
    return ordered


@cache
def schema_pool(kubelet_version: str, files: tuple[FileDescriptor, ...]) -> descriptor_pool.DescriptorPool:
    """A descriptor pool holding ``files`` (and their imports) as the kubelet of ``kubelet_version`` has
    them: podresources v1 without the fields that version lacks."""
    absent = absent_fields(kubelet_version)
    pool = descriptor_pool.DescriptorPool()
    for file in _with_dependencies(files):
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        if file.name == v1.DESCRIPTOR.name:
            _strip(proto, absent)
        pool.Add(proto)
    return pool


class VersionedPool:
    """A descriptor pool that answers with the schema of the version emulated *now*: shadow mode re-detects
    the kubelet's version on SIGHUP, and a reload may change ``kubeletVersion``. Reflection only calls the
    pool's lookup methods, which this forwards."""

    def __init__(self, kubelet_version: Callable[[], str], files: tuple[FileDescriptor, ...]) -> None:
        self._kubelet_version = kubelet_version
        self._files = files

    def __getattr__(self, name: str) -> Any:
        return getattr(schema_pool(self._kubelet_version(), self._files), name)
