"""Requests encoded in protobuf's binary format without the protobuf runtime: the counterpart of
:mod:`kubeletemu.cli.wire.protodoc`, from the same generated schema (``kubeletemu/_proto/wireschema.py``).

A request is given as the document ``-o json`` would print for it (:func:`kubeletemu.cli.protojson.
message_doc`'s form): field names, plain Python values, a nested message as a dict, a map as a dict, enum
values by name or number, bytes as ``bytes`` or base64 text. ``encode(name, decode(name, data))`` gives the
bytes back. The output is what the runtime's ``SerializeToString`` writes: fields in number order, a field
without presence left out at its default (``-0.0`` is not the default: its bits differ), one with presence
written when the document has it, repeated numbers packed (proto3's default), map entries with both key and
value. ``tests/cli/test_wire_protoenc.py`` compares the two on random messages of every message type.

The CLI builds its requests with it, so a command that sends a pod (``admit``, ``would-admit``) or asks a
question loads neither the runtime nor the generated classes, whose import alone costs more than Python's
start-up (``benchmarks/bench_cli.py``).
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Mapping
from typing import Any

from kubeletemu._proto.wireschema import ENUMS, MESSAGES
from kubeletemu.cli.wire.protodoc import FIXED32, FIXED64, LENGTH, VARINT, WireError

_MASK64 = (1 << 64) - 1
_FIXED = {"double": "<d", "fixed64": "<Q", "sfixed64": "<q", "float": "<f", "fixed32": "<I", "sfixed32": "<i"}
_WIRE_TYPE = {"string": LENGTH, "bytes": LENGTH, "message": LENGTH} | {
    kind: FIXED64 if fmt[1] in "dQq" else FIXED32 for kind, fmt in _FIXED.items()
}

# Each message's fields in number order, the order the runtime writes them in.
_BY_NUMBER: dict[str, tuple[tuple[Any, ...], ...]] = {}


def encode(message: str, doc: Mapping[str, Any]) -> bytes:
    """``doc`` as an encoded message of full name ``message`` (``kubeletemu.v1.AdmitRequest``)."""
    if message not in MESSAGES:
        raise WireError(f"no message {message} in the schema")
    out = bytearray()
    _message(out, message, doc)
    return bytes(out)


def _varint(out: bytearray, value: int) -> None:
    value &= _MASK64  # a negative int32/int64 is its 64-bit two's complement: ten bytes
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


def _key(out: bytearray, number: int, wire: int) -> None:
    _varint(out, number << 3 | wire)


def _is_default(kind: str, reference: str | None, value: Any) -> bool:
    """Left out when the field has no presence: zero bits (so -0.0 is written), empty text or bytes."""
    if kind in ("double", "float"):
        return bool(value == 0 and math.copysign(1.0, value) > 0)
    if kind == "enum":
        return _number(kind, reference, value) == 0
    return not value


def _enum_names(reference: str | None) -> dict[str, int]:
    if reference is None:
        return {}
    return {name: number for number, name in ENUMS[reference].items()}


def _number(kind: str, reference: str | None, value: Any) -> int:
    """A varint field's value as written: enums by name or number, zigzag for sint32/sint64."""
    if kind == "enum":
        if isinstance(value, str):
            try:
                return _enum_names(reference)[value]
            except KeyError:
                raise WireError(f"{value!r} is no value of {reference}") from None
        return int(value)
    if kind == "bool":
        return 1 if value else 0
    if kind in ("sint32", "sint64"):
        bits = 32 if kind == "sint32" else 64
        signed = int(value)
        return ((signed << 1) ^ (signed >> (bits - 1))) & ((1 << bits) - 1)
    return int(value)


def _scalar_bytes(kind: str, value: Any) -> bytes:
    if kind == "string":
        return str(value).encode("utf-8")
    if isinstance(value, str):  # bytes given as the JSON mapping writes them
        return base64.b64decode(value)
    return bytes(value)


def _field(out: bytearray, number: int, kind: str, reference: str | None, value: Any) -> None:
    """One occurrence of a singular field, or one item of a repeated field that is not packed."""
    wire = LENGTH if kind == "map entry" else _WIRE_TYPE.get(kind, VARINT)
    _key(out, number, wire)
    if wire == VARINT:
        _varint(out, _number(kind, reference, value))
    elif wire == LENGTH:
        if kind == "message":
            body = bytearray()
            _message(body, str(reference), value)
        elif kind == "map entry":
            body = bytearray()
            for entry_field, item in zip(_fields(str(reference)), value, strict=True):
                _field(body, entry_field[1], entry_field[2], entry_field[4], item)
        else:
            body = bytearray(_scalar_bytes(kind, value))
        _varint(out, len(body))
        out += body
    else:
        out += struct.pack(_FIXED[kind], value)


def _fields(name: str) -> tuple[tuple[Any, ...], ...]:
    fields = _BY_NUMBER.get(name)
    if fields is None:
        fields = _BY_NUMBER[name] = tuple(sorted(MESSAGES[name], key=lambda field: field[1]))
    return fields


def _message(out: bytearray, name: str, doc: Mapping[str, Any]) -> None:
    fields = _fields(name)
    known = {field[0] for field in fields}
    unknown = [key for key in doc if key not in known]
    if unknown:
        raise WireError(f"{name} has no field {unknown[0]!r}")
    for field_name, number, kind, label, reference, _oneof in fields:
        value = doc.get(field_name)
        if value is None:
            continue
        if label == "map":
            for entry in value.items():  # key and value both written, defaults too, as the runtime does
                _field(out, number, "map entry", reference, entry)
        elif label == "repeated":
            if not value:
                continue
            if _WIRE_TYPE.get(kind, VARINT) != LENGTH:  # packed: one run of every value
                run = bytearray()
                for item in value:
                    if kind in _FIXED:
                        run += struct.pack(_FIXED[kind], item)
                    else:
                        _varint(run, _number(kind, reference, item))
                _key(out, number, LENGTH)
                _varint(out, len(run))
                out += run
            else:
                for item in value:
                    _field(out, number, kind, reference, item)
        elif label == "present" or not _is_default(kind, reference, value):
            _field(out, number, kind, reference, value)
