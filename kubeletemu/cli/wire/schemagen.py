"""The messages of ``protos/`` as plain data, for :mod:`kubeletemu.cli.wire.protodoc` to decode answers
without the protobuf runtime (whose import alone would cost the CLI more than Python's start-up).

:mod:`kubeletemu.protogen` writes ``kubeletemu/_proto/wireschema.py`` with the stubs, from the same protoc
run (its ``--descriptor_set_out``), so ``tests/test_protogen.py`` holds it to the .proto sources as it
holds the stubs. Each message is a tuple of fields in declaration order (the order
:func:`kubeletemu.cli.protojson.message_doc` writes them):
``(name, number, type, label, reference, oneof)`` where ``type`` is the descriptor's type name in lower
case (``uint64``, ``message``…), ``label`` is ``single`` (no presence: always written), ``present``
(written only when set: a message, ``optional``, a oneof member), ``repeated`` or ``map``, ``reference`` the
full name of the message, map entry or enum, and ``oneof`` the index of the field's oneof or ``None``.
"""

from __future__ import annotations

from typing import Any


def schema_source(descriptor_set: bytes) -> str:
    """The module's text for a serialized ``FileDescriptorSet`` (imports included), after the header line
    protogen puts on every file it generates."""
    from google.protobuf import descriptor_pb2

    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set).file
    messages: dict[str, list[tuple[Any, ...]]] = {}
    enums: dict[str, dict[int, str]] = {}
    type_names = {
        number: name.removeprefix("TYPE_").lower()
        for name, number in descriptor_pb2.FieldDescriptorProto.Type.items()
    }
    repeated = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    message_type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE

    def joined(prefix: str, name: str) -> str:
        return f"{prefix}.{name}" if prefix else name

    def visit_enum(prefix: str, enum: Any) -> None:
        values: dict[int, str] = {}
        for value in enum.value:
            values.setdefault(value.number, value.name)  # an alias (allow_alias): its first name
        enums[joined(prefix, enum.name)] = values

    def visit(prefix: str, message: Any) -> None:
        name = joined(prefix, message.name)
        maps = {f"{name}.{m.name}" for m in message.nested_type if m.options.map_entry}
        fields = []
        for field in message.field:
            reference = field.type_name.removeprefix(".") or None
            oneof = field.oneof_index if field.HasField("oneof_index") else None
            if field.label == repeated:
                label = "map" if reference in maps else "repeated"
            elif field.type == message_type or field.proto3_optional or oneof is not None:
                label = "present"
            else:
                label = "single"
            if field.proto3_optional:
                oneof = None  # its synthetic oneof holds it alone: presence says everything
            fields.append((field.name, field.number, type_names[field.type], label, reference, oneof))
        messages[name] = fields
        for nested in message.nested_type:
            visit(name, nested)
        for enum in message.enum_type:
            visit_enum(name, enum)

    for file in files:
        for message in file.message_type:
            visit(file.package, message)
        for enum in file.enum_type:
            visit_enum(file.package, enum)

    lines = ["\n", "MESSAGES = {\n"]
    for name in sorted(messages):
        lines.append(f"    {name!r}: (\n")
        lines.extend(f"        {field!r},\n" for field in messages[name])
        lines.append("    ),\n")
    lines.append("}\n\nENUMS = {\n")
    for name in sorted(enums):
        lines.append(f"    {name!r}: {enums[name]!r},\n")
    lines.append("}\n")
    return "".join(lines)
