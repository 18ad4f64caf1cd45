"""Protobuf's binary encoding read straight into the documents ``-o json|yaml`` print, without the protobuf
runtime: the same dict :func:`kubeletemu.cli.protojson.message_doc` makes of the parsed message (exact
integers, map keys typed and sorted, fields in declaration order, a field with presence only when set,
enum values by name, bytes in base64), from the schema protogen generates (``kubeletemu/_proto/
wireschema.py``, see :mod:`kubeletemu.cli.wire.schemagen`).

The parse follows protobuf's rules for what may arrive: the last value of a singular field wins, a message
field seen twice is merged (parsing the concatenation of its pieces, which is what merging means on the
wire), repeated scalars come packed or one by one, setting a oneof member clears the others, unknown fields
are skipped. ``tests/cli/test_wire_protodoc.py`` compares it with ``message_doc`` on random messages.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from kubeletemu._proto.wireschema import ENUMS, MESSAGES

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
_MASK64, _MASK32 = (1 << 64) - 1, (1 << 32) - 1

# Each type's wire type and the default of a field that did not arrive.
_WIRE_TYPE = {
    "double": FIXED64,
    "fixed64": FIXED64,
    "sfixed64": FIXED64,
    "float": FIXED32,
    "fixed32": FIXED32,
    "sfixed32": FIXED32,
    "string": LENGTH,
    "bytes": LENGTH,
    "message": LENGTH,
}
_FIXED = {"double": "<d", "fixed64": "<Q", "sfixed64": "<q", "float": "<f", "fixed32": "<I", "sfixed32": "<i"}
_DEFAULT: dict[str, Any] = {"double": 0.0, "float": 0.0, "bool": False, "string": "", "bytes": ""}


class WireError(Exception):
    """Bytes that are not a valid encoding of the message asked for."""


def decode(message: str, data: bytes) -> dict[str, Any]:
    """The document of ``data``, an encoded message of full name ``message``."""
    if message not in MESSAGES:
        raise WireError(f"no message {message} in the schema")
    return _message(message, data)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise WireError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value & _MASK64, at
        shift += 7
        if shift >= 70:
            raise WireError("varint too long")


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _scalar(kind: str, value: int) -> int | bool:
    """A varint's value as its declared type reads it (int32 and enums keep the low 32 bits, signed)."""
    if kind in ("int32", "enum"):
        return _signed(value, 32)
    if kind == "int64":
        return _signed(value, 64)
    if kind == "uint32":
        return value & _MASK32
    if kind == "sint32":
        value &= _MASK32
        return (value >> 1) ^ -(value & 1)
    if kind == "sint64":
        return (value >> 1) ^ -(value & 1)
    if kind == "bool":
        return value != 0
    return value  # uint64


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(number, wire type, raw value) in order: an int for varints, bytes for the rest."""
    out: list[tuple[int, int, Any]] = []
    at, end = 0, len(data)
    while at < end:
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        if wire == VARINT:
            value, at = _varint(data, at)
            out.append((number, wire, value))
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if at + size > end:
                raise WireError("truncated fixed-size field")
            out.append((number, wire, data[at : at + size]))
            at += size
        elif wire == LENGTH:
            size, at = _varint(data, at)
            if at + size > end:
                raise WireError("truncated length-delimited field")
            out.append((number, wire, data[at : at + size]))
            at += size
        else:
            raise WireError(f"unsupported wire type {wire}")
    return out


def _values(kind: str, reference: str | None, wire: int, raw: Any) -> list[Any]:
    """The value(s) one occurrence carries: a packed run gives several."""
    expected = _WIRE_TYPE.get(kind, VARINT)
    if wire == LENGTH and expected != LENGTH:  # packed
        if expected == VARINT:
            values, at = [], 0
            while at < len(raw):
                value, at = _varint(raw, at)
                values.append(_one(kind, reference, value))
            return values
        size = 8 if expected == FIXED64 else 4
        if len(raw) % size:
            raise WireError("packed fixed-size field of a wrong length")
        return [_one(kind, reference, raw[at : at + size]) for at in range(0, len(raw), size)]
    if wire != expected:
        raise WireError(f"a {kind} field with wire type {wire}")
    return [_one(kind, reference, raw)]


def _one(kind: str, reference: str | None, raw: Any) -> Any:
    if kind in _FIXED:
        return struct.unpack(_FIXED[kind], raw)[0]
    if kind == "string":
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise WireError("a string field that is not UTF-8") from None
    if kind == "bytes":
        return base64.b64encode(raw).decode("ascii")  # as the JSON mapping writes bytes
    if kind == "message":
        return raw  # decoded once all pieces are in (a singular message merges)
    value = _scalar(kind, raw)
    if kind == "enum":
        assert reference is not None
        return ENUMS[reference].get(int(value), value)
    return value


_BY_NUMBER: dict[str, dict[int, tuple[Any, ...]]] = {}


def _message(name: str | None, data: bytes) -> dict[str, Any]:
    """``name`` is a field's reference: a message field always has one."""
    if name is None:
        raise WireError("a message field without its message type")
    schema = MESSAGES[name]
    by_number = _BY_NUMBER.get(name)
    if by_number is None:
        by_number = _BY_NUMBER[name] = {field[1]: field for field in schema}
    seen: dict[str, list[Any]] = {}
    chosen: dict[int, str] = {}  # a oneof's member set last
    for number, wire, raw in _fields(data):
        field = by_number.get(number)
        if field is None:
            continue  # unknown: skipped, as a parser keeps it aside and message_doc never shows it
        field_name, _, kind, label, reference, oneof = field
        values = _values(kind, reference, wire, raw)
        if label in ("repeated", "map"):
            seen.setdefault(field_name, []).extend(values)
        elif kind == "message":
            seen.setdefault(field_name, []).extend(values)  # merged: parsed as one concatenation
        else:
            seen[field_name] = values[-1:]
        if oneof is not None:
            if chosen.get(oneof, field_name) != field_name:
                seen.pop(chosen[oneof], None)
            chosen[oneof] = field_name
    doc: dict[str, Any] = {}
    for field_name, _, kind, label, reference, _oneof in schema:
        got = seen.get(field_name)
        if label == "map":
            entries = [_message(reference, raw) for raw in got or ()]
            doc[field_name] = dict(sorted(_entries(reference, entries).items()))
        elif label == "repeated":
            items = got or []
            doc[field_name] = [_message(reference, raw) for raw in items] if kind == "message" else items
        elif got is None:
            if label == "single":
                doc[field_name] = _default(kind, reference)
        elif kind == "message":
            doc[field_name] = _message(reference, b"".join(got))
        else:
            doc[field_name] = got[0]
    return doc


def _entries(entry: str | None, docs: list[dict[str, Any]]) -> dict[Any, Any]:
    """A map's entries, the last of a key winning; a missing value is its type's default."""
    value_field = next(field for field in MESSAGES[str(entry)] if field[0] == "value")
    out: dict[Any, Any] = {}
    for doc in docs:
        # A scalar value is always in the entry's document; a message value that did not arrive is empty.
        out[doc["key"]] = doc["value"] if "value" in doc else _message(value_field[4], b"")
    return out


def _default(kind: str, reference: str | None) -> Any:
    if kind == "enum":
        assert reference is not None
        values = ENUMS[reference]
        return values.get(0, 0)
    return _DEFAULT.get(kind, 0)
