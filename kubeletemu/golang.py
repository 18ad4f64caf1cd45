"""The few Go standard-library behaviours the kubelet's outputs and error texts depend on.

``strconv`` (``Quote``, ``Atoi``, ``ParseBool``), ``fmt``'s rendering of a string map and ``math.Round``:
each helper reproduces one exactly, so messages built with them are the kubelet's byte for byte.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

_SHORT_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """``strconv.Quote`` (what ``%q`` prints for a string): printable runes kept, the rest escaped."""
    out = ['"']
    for char in text:
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif _go_is_print(char):
            out.append(char)
        else:
            code = ord(char)
            if 0xD800 <= code <= 0xDFFF:
                # A lone surrogate stands for bytes that are not UTF-8; Go escapes those one by one.
                out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
            elif code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _go_is_print(char: str) -> bool:
    # unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
    if char == " ":
        return True
    return unicodedata.category(char)[0] in "LMNPS"


class GoSyntaxError(ValueError):
    """A ``strconv`` parse failure; ``str()`` is Go's ``*NumError`` text."""


def go_atoi(text: str) -> int:
    """``strconv.Atoi``: an optional sign, ASCII digits, and the int64 range."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        raise GoSyntaxError(f"strconv.Atoi: parsing {go_quote(text)}: invalid syntax")
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise GoSyntaxError(f"strconv.Atoi: parsing {go_quote(text)}: value out of range")
    return value


def go_parse_bool(text: str) -> bool:
    """``strconv.ParseBool``."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise GoSyntaxError(f"strconv.ParseBool: parsing {go_quote(text)}: invalid syntax")


def go_round(value: float) -> float:
    """``math.Round``: half away from zero (Python's ``round`` rounds half to even)."""
    if value >= 0:
        # x - floor(x) is exact for a non-negative float, so this is Go's result bit for bit.
        floor = float(int(value))
        return floor + 1.0 if value - floor >= 0.5 else floor
    truncated = math.trunc(value)
    if abs(value - truncated) >= 0.5:
        truncated += int(math.copysign(1, value))
    return float(truncated)


def go_format_string_map(values: Mapping[str, str]) -> str:
    """``fmt`` ``%v`` of a ``map[string]string``: ``map[k1:v1 k2:v2]`` with keys sorted."""
    return "map[" + " ".join(f"{k}:{values[k]}" for k in sorted(values)) + "]"


def go_string_order(text: str) -> bytes:
    """The key that sorts strings as Go compares them: bytewise in UTF-8 (which differs from Python's
    code-point order only for surrogates)."""
    return text.encode("utf-8", "surrogatepass")


def json_kind(value: object) -> str:
    """The JSON type of a decoded value as ``encoding/json``'s ``UnmarshalTypeError`` names it."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
