"""JSON as Go's ``encoding/json`` writes and reads it, for the extender's wire (:mod:`.protocol`).

Writing (``json.Marshal``, Go 1.22 and later, read in ``src/encoding/json/encode.go`` of go1.26.8):

* a struct's fields in declaration order, a map's keys sorted bytewise in UTF-8, no spaces, no trailing
  newline;
* nil pointers, slices and maps are ``null``; empty non-nil ones ``[]`` and ``{}``: callers model Go's nil
  as ``None`` and an empty value as an empty list or dict;
* strings with ``"`` and ``\\`` escaped, ``\\b \\f \\n \\r \\t`` short, other bytes below 0x20 as ``\\u00XX``,
  ``<``, ``>`` and ``&`` as ``\\u003c \\u003e \\u0026`` (``escapeHTML``), U+2028 and U+2029 as ``\\u2028``
  and ``\\u2029``, invalid UTF-8 (here a lone surrogate, which no UTF-8 can hold) as ``\\ufffd``; every other
  character as itself in UTF-8. (``cpumanager.state.checkpoint.go_json_string`` writes ``\\b`` and ``\\f`` as
  ``\\u0008`` and ``\\u000c``, as Go did before 1.22.)

Reading (``json.Unmarshal`` into a struct): a key names a field exactly, else case-insensitively
(``bytes.EqualFold``: ASCII case, and the Kelvin sign and long s, which fold to ``k`` and ``s``); keys
naming no field are ignored; ``null`` leaves a pointer, slice or map nil and a string ``""``. We are
stricter in one place: a field named by two keys that differ in case is refused (Go lets the later one win,
merging a struct given twice); the same key twice keeps the later value, as Python's decoder does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kubeletemu.golang import go_string_order

# Characters Go's encoder does not write as themselves.
_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\<>&\u2028\u2029\ud800-\udfff]')
_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# bytes.EqualFold's only non-ASCII characters that fold onto an ASCII letter.
_FOLD = str.maketrans({"\u212a": "k", "\u017f": "s"})

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class Struct:
    """A Go struct value: its fields in declaration order (a ``dict`` is a Go map, its keys sorted)."""

    __slots__ = ("fields",)

    def __init__(self, *fields: tuple[str, Any]) -> None:
        self.fields = fields


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    if "\ud800" <= char <= "\udfff":
        return "\\ufffd"
    return f"\\u{ord(char):04x}"


def go_string(text: str) -> str:
    """``text`` as Go's encoder quotes it."""
    if _NEEDS_ESCAPE.search(text) is None:
        return f'"{text}"'
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def marshal(value: Any) -> bytes:
    """``json.Marshal`` of ``value``: ``None``, ``bool``, ``int``, ``str``, a sequence (a slice), a mapping
    with string keys (a map) or a :class:`Struct`; UTF-8 bytes."""
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts).encode("utf-8", "surrogatepass")


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(go_string(value))
    elif isinstance(value, Struct):
        out.append("{")
        for index, (key, field) in enumerate(value.fields):
            if index:
                out.append(",")
            out.append(go_string(key))
            out.append(":")
            _write(field, out)
        out.append("}")
    elif isinstance(value, Mapping):
        out.append("{")
        for index, key in enumerate(sorted(value, key=go_string_order)):
            if index:
                out.append(",")
            out.append(go_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, Sequence):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"no Go JSON form for {type(value).__name__}")


def fold(name: str) -> str:
    """The key as ``bytes.EqualFold`` compares it with an ASCII field name."""
    return name.translate(_FOLD).lower()


def struct_fields(obj: Mapping[str, Any], names: Sequence[str]) -> tuple[dict[str, Any], str | None]:
    """The values of ``obj``'s keys that name the struct fields ``names`` (exactly, else case-insensitively),
    by field name; and the first field named twice (None when none is)."""
    folded = {fold(n): n for n in names}
    found: dict[str, Any] = {}
    for key, value in obj.items():
        name = key if key in names else folded.get(fold(key))
        if name is None:
            continue
        if name in found:
            return found, name
        found[name] = value
    return found, None
