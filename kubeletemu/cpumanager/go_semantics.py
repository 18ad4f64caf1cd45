"""The few Go runtime and standard-library behaviours the CPU manager's outputs depend on.

The kubelet's results and error texts are shaped by ``strconv`` (``Atoi``, ``ParseBool``, ``Quote``),
``math.Round`` and, in ``takeByTopologyNUMADistributed``, by how ``append`` shares a slice's backing array.
Each helper reproduces one of those exactly, so the modules that use them can read like the algorithm.
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from collections.abc import Callable, Mapping, Sequence

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
            if code < 0x80:
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


class SliceView:
    """A Go slice header kept after the call that produced it: (backing array, length).

    ``values()`` reads the backing array *now*, so later writes through another slice sharing the array
    show through, exactly as in Go.
    """

    __slots__ = ("_backing", "_length")

    def __init__(self, backing: list[int], length: int) -> None:
        self._backing = backing
        self._length = length

    def __len__(self) -> int:
        return self._length

    def values(self) -> list[int]:
        return self._backing[: self._length]


def _last_fresh_index(size: int) -> int:
    """The highest index at which building a ``size``-element slice by appends allocated a new array.

    Appending to a full slice allocates: at lengths 0, 1, 2, 4, 8, ... (``growslice`` doubles 8-byte
    elements below capacity 256, and every doubled byte size is a malloc size class).
    """
    if size > 256:
        raise ValueError("slices beyond 256 elements grow differently; no machine has that many NUMA nodes")
    last = size - 1
    return 0 if last < 1 else 1 << (last.bit_length() - 1)


def iterate_combinations_go(items: Sequence[int], size: int, visit: Callable[[SliceView], bool]) -> None:
    """``cpuAccumulator.iterateCombinations``: every ``size``-subset in lexicographic position order.

    ``visit`` returns True to stop (Go's ``Break``). Go builds the subsets with ``append(accum, n[i])`` on
    one recursive accumulator, so a subset shares its backing array with every sibling that has the same
    elements up to the last index where ``append`` had to allocate (see ``_last_fresh_index``): for size
    4 the first 3 elements, for sizes 6-8 the first 5; sizes 1, 2, 3, 5 and 9 never share. Each visit
    writes its elements into that shared array, so a ``SliceView`` kept by the caller and read later shows
    the most recently visited sibling - the kubelet's distributed allocator does exactly that.
    """
    if size < 1 or size > len(items):
        return
    fresh = _last_fresh_index(size)
    backing: list[int] = []
    prefix: tuple[int, ...] | None = None
    for combo in itertools.combinations(items, size):
        head = combo[: fresh + 1]
        if head != prefix:
            # Siblings are contiguous in lexicographic order: a new prefix means a new array.
            prefix = head
            backing = list(combo)
        else:
            backing[fresh + 1 : size] = combo[fresh + 1 :]
        if visit(SliceView(backing, size)):
            return


def final_combination_positions(positions: Sequence[int], count: int) -> tuple[int, ...]:
    """What the slice of ``positions`` (a subset of 0..count-1) holds after ``iterateCombinations`` has
    visited every subset: its own elements up to the last fresh index, then the last sibling's tail,
    i.e. the highest positions."""
    size = len(positions)
    fresh = _last_fresh_index(size)
    tail = size - fresh - 1
    return tuple(positions[: fresh + 1]) + tuple(range(count - tail, count))
