"""Protobuf messages as plain documents for ``-o json`` and ``-o yaml``: exact integers, typed map keys, the
message's own field order.

``json_format.MessageToDict`` follows the proto3 JSON mapping, written for JavaScript readers: 64-bit
integers become strings (``"size": "1073741824"``), map keys strings (``distances: {'0': 10}``), and fields
left at their default come after the set ones. Our outputs promise exact integers, which Python's ``json``
and YAML carry at any size, so this walks the descriptor instead: every integer stays an ``int``, a map
keeps its key type (YAML prints ``0: 10``; JSON, whose keys are strings, ``"0": 10``), fields come in
declaration order. Presence is ``MessageToDict(always_print_fields_with_no_presence=True)``'s: a field
without presence is always written, one with presence (``optional``, a message, a oneof member) only when
set. Names are the proto field names (snake_case), as the CLI has always printed them.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

# A field's descriptor: the pure-Python class or the upb one, which the stubs type apart.
Field = Any


def message_doc(message: Message) -> dict[str, Any]:
    """``message`` as a dict of plain Python values (see the module docstring)."""
    doc: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        if field.has_presence and not message.HasField(field.name):
            continue
        value = getattr(message, field.name)
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            value_field = entry.fields_by_name["value"]
            doc[field.name] = {key: _value(value_field, item) for key, item in sorted(value.items())}
        elif field.is_repeated:
            doc[field.name] = [_value(field, item) for item in value]
        else:
            doc[field.name] = _value(field, value)
    return doc


def _value(field: Field, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return message_doc(value)
    if field.type == FieldDescriptor.TYPE_ENUM:
        named = field.enum_type.values_by_number.get(value)
        return value if named is None else named.name
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")  # as the JSON mapping writes bytes
    return value
