"""``state/checkpoint.go``: the ``cpu_manager_state`` file, byte-compatible with the kubelet's.

Current format (V2)::

    {"policyName":"static","defaultCpuSet":"0-1,4","entries":{"<podUID>":{"<ctr>":"2-3"}},"checksum":N}

``entries`` is left out when empty. The older V1 format keyed ``entries`` by container id only
(``{"<containerID>":"2-3"}``); it is still read and migrated with a container-id map.

The checksum is FNV-32a over go-spew's ``%#v`` dump of the struct with the checksum field zeroed
(``dump.ForHash``): map keys sorted, strings unquoted, nested maps without types, e.g.
``(*state.CPUManagerCheckpoint){PolicyName:(string)static DefaultCPUSet:(string)0-2,4-7
Entries:(map[string]map[string]string)map[<uid>:map[<ctr>:3]] Checksum:(checksum.Checksum)0}``.
A checksum of 0 is accepted as "none" (the old file backend wrote none).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.checkpointmanager import fnv32a
from kubeletemu.cpumanager.errors import CheckpointError, CorruptCheckpointError
from kubeletemu.golang import go_string_order, json_kind

_GO_STRUCT_V2 = "CPUManagerCheckpoint"
_GO_STRUCT_V1 = "CPUManagerCheckpointV1"
_UINT64_MAX = (1 << 64) - 1


def _spew_string_map(values: Mapping[str, str] | None) -> str:
    if values is None:
        return "<nil>"
    return "map[" + " ".join(f"{k}:{values[k]}" for k in sorted(values, key=_go_string_key)) + "]"


# Go compares strings bytewise (UTF-8), which differs from Python's code-point order only for surrogates.
_go_string_key = go_string_order


def spew_dump_v2(
    policy_name: str, default_cpu_set: str, entries: Mapping[str, Mapping[str, str] | None] | None
) -> str:
    """go-spew ``%#v`` of a V2 checkpoint with ``Checksum`` 0."""
    if entries is None:
        body = "<nil>"
    else:
        body = (
            "map["
            + " ".join(
                f"{pod}:{_spew_string_map(entries[pod])}" for pod in sorted(entries, key=_go_string_key)
            )
            + "]"
        )
    return (
        f"(*state.{_GO_STRUCT_V2}){{PolicyName:(string){policy_name} DefaultCPUSet:(string){default_cpu_set} "
        f"Entries:(map[string]map[string]string){body} Checksum:(checksum.Checksum)0}}"
    )


def spew_dump_v1(policy_name: str, default_cpu_set: str, entries: Mapping[str, str] | None) -> str:
    """The V1 dump, with the type renamed to ``CPUManagerCheckpoint`` as ``VerifyChecksum`` (V1) does."""
    return (
        f"(*state.{_GO_STRUCT_V2}){{PolicyName:(string){policy_name} DefaultCPUSet:(string){default_cpu_set} "
        f"Entries:(map[string]string){_spew_string_map(entries)} Checksum:(checksum.Checksum)0}}"
    )


# -- Go encoding/json ---------------------------------------------------------------------------------

# What go_json_string escapes or replaces; text without any of it is copied verbatim.
_GO_JSON_ESCAPED = re.compile(r'[\x00-\x1f"\\<>&\u2028\u2029\ud800-\udfff]')


def go_json_string(text: str) -> str:
    """``encoding/json`` string encoding: HTML-safe escapes, U+2028/2029 escaped, UTF-8 kept."""
    if _GO_JSON_ESCAPED.search(text) is None:  # the usual UIDs, names and CPU lists
        return f'"{text}"'
    return go_json_string_escaped(text)


def go_json_string_escaped(text: str) -> str:
    """``go_json_string`` character by character (the path for text that needs escapes)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif code < 0x20 or char in "<>&" or code in (0x2028, 0x2029):
            out.append(f"\\u{code:04x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _go_json_object(items: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{go_json_string(k)}:{v}" for k, v in items) + "}"


def _go_json_string_map(values: Mapping[str, str]) -> str:
    return _go_json_object([(k, go_json_string(values[k])) for k in sorted(values, key=_go_string_key)])


_json_kind = json_kind


def _decode_document(blob: bytes, struct: str) -> dict[str, Any]:
    try:
        text = blob.decode("utf-8", "replace")
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        if err.pos >= len(err.doc.rstrip()):
            raise CheckpointError("unexpected end of JSON input") from None
        raise CheckpointError(f"invalid JSON at offset {err.pos}: {err.msg}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise CheckpointError(
            f"json: cannot unmarshal {_json_kind(doc)} into Go value of type state.{struct}"
        )
    return doc


def _field(doc: Mapping[str, Any], name: str) -> tuple[bool, Any]:
    """Go matches JSON keys to struct fields exactly first, then case-insensitively; the last key wins."""
    if name in doc:
        return True, doc[name]
    found, value = False, None
    for key, item in doc.items():
        if key.casefold() == name.casefold():
            found, value = True, item
    return found, value


def _type_error(value: Any, struct: str, path: str, go_type: str) -> CheckpointError:
    return CheckpointError(
        f"json: cannot unmarshal {_json_kind(value)} into Go struct field {struct}.{path} of type {go_type}"
    )


def _decode_string(doc: Mapping[str, Any], name: str, struct: str) -> str:
    found, value = _field(doc, name)
    if not found or value is None:
        return ""
    if not isinstance(value, str):
        raise _type_error(value, struct, name, "string")
    return value


def _decode_checksum(doc: Mapping[str, Any], struct: str) -> int:
    found, value = _field(doc, "checksum")
    if not found or value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(value, struct, "checksum", "checksum.Checksum")
    if isinstance(value, float) or not 0 <= value <= _UINT64_MAX:
        raise CheckpointError(
            f"json: cannot unmarshal number {value} into Go struct field {struct}.checksum "
            "of type checksum.Checksum"
        )
    return value


def _decode_string_map(value: Any, struct: str, path: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _type_error(value, struct, path, "map[string]string")
    out: dict[str, str] = {}
    for key, item in value.items():
        if item is None:
            out[key] = ""
        elif not isinstance(item, str):
            raise _type_error(item, struct, path, "string")
        else:
            out[key] = item
    return out


# -- the two formats -----------------------------------------------------------------------------------


@dataclass
class CPUManagerCheckpoint:
    """The V2 checkpoint. ``entries`` None is Go's nil map (``"entries": null``); a fresh one is empty."""

    policy_name: str = ""
    default_cpu_set: str = ""
    entries: dict[str, dict[str, str] | None] | None = field(default_factory=dict)
    checksum: int = 0

    def dump(self) -> str:
        return spew_dump_v2(self.policy_name, self.default_cpu_set, self.entries)

    def compute_checksum(self) -> int:
        return fnv32a(self.dump().encode("utf-8", "surrogatepass"))

    def marshal(self) -> bytes:
        """``MarshalCheckpoint``: set the checksum, then Go's compact JSON (``entries`` omitted if empty)."""
        self.checksum = self.compute_checksum()
        items = [
            ("policyName", go_json_string(self.policy_name)),
            ("defaultCpuSet", go_json_string(self.default_cpu_set)),
        ]
        if self.entries:
            pods = []
            for pod in sorted(self.entries, key=_go_string_key):
                containers = self.entries[pod]
                pods.append((pod, "null" if containers is None else _go_json_string_map(containers)))
            items.append(("entries", _go_json_object(pods)))
        items.append(("checksum", str(self.checksum)))
        return _go_json_object(items).encode("utf-8")

    @classmethod
    def unmarshal(cls, blob: bytes, go_struct: str = _GO_STRUCT_V2) -> CPUManagerCheckpoint:
        """``UnmarshalCheckpoint`` into a fresh checkpoint (Go's json.Unmarshal rules for this struct);
        ``go_struct`` is the Go type its errors name (``CPUManagerCheckpointV2`` from 1.36 on)."""
        doc = _decode_document(blob, go_struct)
        entries: dict[str, dict[str, str] | None] | None = {}
        found, raw = _field(doc, "entries")
        if found:
            if raw is None:
                entries = None
            elif not isinstance(raw, dict):
                raise _type_error(raw, go_struct, "entries", "map[string]map[string]string")
            else:
                for pod, containers in raw.items():
                    assert entries is not None
                    entries[pod] = _decode_string_map(containers, go_struct, "entries")
        return cls(
            policy_name=_decode_string(doc, "policyName", go_struct),
            default_cpu_set=_decode_string(doc, "defaultCpuSet", go_struct),
            entries=entries,
            checksum=_decode_checksum(doc, go_struct),
        )

    def verify_checksum(self) -> None:
        """``VerifyChecksum``: 0 means "no checksum"; otherwise it must match."""
        if self.checksum != 0 and self.checksum != self.compute_checksum():
            raise CorruptCheckpointError()


@dataclass
class CPUManagerCheckpointV1:
    """The V1 checkpoint: ``entries`` maps a container id to its CPUs."""

    policy_name: str = ""
    default_cpu_set: str = ""
    entries: dict[str, str] | None = field(default_factory=dict)
    checksum: int = 0

    def dump(self) -> str:
        return spew_dump_v1(self.policy_name, self.default_cpu_set, self.entries)

    def compute_checksum(self) -> int:
        return fnv32a(self.dump().encode("utf-8", "surrogatepass"))

    def marshal(self) -> bytes:
        self.checksum = self.compute_checksum()
        items = [
            ("policyName", go_json_string(self.policy_name)),
            ("defaultCpuSet", go_json_string(self.default_cpu_set)),
        ]
        if self.entries:
            items.append(("entries", _go_json_string_map(self.entries)))
        items.append(("checksum", str(self.checksum)))
        return _go_json_object(items).encode("utf-8")

    @classmethod
    def unmarshal(cls, blob: bytes) -> CPUManagerCheckpointV1:
        doc = _decode_document(blob, _GO_STRUCT_V1)
        entries: dict[str, str] | None = {}
        found, raw = _field(doc, "entries")
        if found:
            entries = _decode_string_map(raw, _GO_STRUCT_V1, "entries")
        return cls(
            policy_name=_decode_string(doc, "policyName", _GO_STRUCT_V1),
            default_cpu_set=_decode_string(doc, "defaultCpuSet", _GO_STRUCT_V1),
            entries=entries,
            checksum=_decode_checksum(doc, _GO_STRUCT_V1),
        )

    def verify_checksum(self) -> None:
        if self.checksum != 0 and self.checksum != self.compute_checksum():
            raise CorruptCheckpointError()


# podUID, container name for a container id (the kubelet's ContainerMap, used to migrate V1 files).
ContainerRefLookup = Callable[[str], "tuple[str, str] | None"]


# How restoreState wraps a failed V1 → V2 migration: 1.36 on (loadAndMigrateCheckpointV2, kubernetes#134768)
# and, before, 1.33 … 1.35's restoreState (read at v1.35.6 and v1.36.3, openshift/kubernetes as vendored in
# openshift/microshift release-4.22 @ 5019821e0e and release-4.23 @ ab25d11482, state_checkpoint.go).
MIGRATION_ERROR = "failed to migrate checkpoint from v1 to v2"
LEGACY_MIGRATION_ERROR = "error migrating v1 checkpoint state to v2 checkpoint state"


def migrate_v1_to_v2(
    src: CPUManagerCheckpointV1, lookup: ContainerRefLookup, wrap: str = MIGRATION_ERROR
) -> CPUManagerCheckpoint:
    """``migrateV1CheckpointToV2Checkpoint``; every container id must be known (else ``wrap: …``)."""
    dst = CPUManagerCheckpoint(policy_name=src.policy_name, default_cpu_set=src.default_cpu_set)
    for container_id in sorted(src.entries or {}):
        ref = lookup(container_id)
        if ref is None:
            raise CheckpointError(
                f"{wrap}: containerID '{container_id}' not found in initial containers list"
            )
        pod_uid, name = ref
        assert dst.entries is not None
        pod = dst.entries.setdefault(pod_uid, {})
        assert pod is not None
        pod[name] = (src.entries or {})[container_id]
    return dst


def load_checkpoint(blob: bytes, lookup: ContainerRefLookup | None = None) -> CPUManagerCheckpoint:
    """``loadAndMigrateCheckpointV2``: V2 first; on any failure, V1 (migrated); else the V1 error."""
    try:
        checkpoint = CPUManagerCheckpoint.unmarshal(blob)
        checkpoint.verify_checksum()
        return checkpoint
    except CheckpointError:
        pass
    v1 = CPUManagerCheckpointV1.unmarshal(blob)
    v1.verify_checksum()
    return migrate_v1_to_v2(v1, lookup or (lambda _cid: None))
