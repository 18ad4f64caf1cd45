"""NUMA node bitmasks, mirroring the kubelet's ``topologymanager/bitmask`` package.

A mask is one unsigned 64-bit integer; bit *i* stands for NUMA node *i*. The kubelet passes masks by
pointer and distinguishes a nil mask from an empty one; here ``None`` plays the nil role (see
``TopologyHint``) and ``BitMask()`` is the empty mask.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence

MAX_BITS = 64
_FULL = (1 << MAX_BITS) - 1


class BitMaskError(ValueError):
    """A bit outside 0..63, as the kubelet's ``NewBitMask`` refuses it."""

    def __init__(self) -> None:
        super().__init__("bit number must be in range 0-63")


def _check_bits(bits: Iterable[int]) -> int:
    value = 0
    for bit in bits:
        if not 0 <= bit < MAX_BITS:
            raise BitMaskError()
        value |= 1 << bit
    return value


class BitMask:
    """Immutable NUMA node mask. Operations return new masks.

    Ordering follows the kubelet: ``is_less_than`` compares the raw integers (so the *highest* differing
    bit decides), ``is_narrower_than`` compares popcounts first and falls back to ``is_less_than``.
    """

    __slots__ = ("_value",)

    def __init__(self, value: int = 0) -> None:
        if not 0 <= value <= _FULL:
            raise ValueError(f"bitmask value {value} does not fit in 64 bits")
        self._value = value

    @classmethod
    def of(cls, *bits: int) -> BitMask:
        """``NewBitMask(bits...)``: raises ``BitMaskError`` for a bit outside 0..63."""
        return cls(_check_bits(bits))

    @classmethod
    def full(cls) -> BitMask:
        """The kubelet's ``Fill()``: all 64 bits set."""
        return cls(_FULL)

    @property
    def value(self) -> int:
        return self._value

    def add(self, *bits: int) -> BitMask:
        """``Add``: all bits valid or the mask stays as it was (the error is raised)."""
        return BitMask(self._value | _check_bits(bits))

    def remove(self, *bits: int) -> BitMask:
        """``Remove``: all bits valid or nothing is removed (the error is raised)."""
        return BitMask(self._value & ~_check_bits(bits) & _FULL)

    def bits(self) -> list[int]:
        """Set bits in ascending order (``GetBits``; the kubelet returns nil for an empty mask)."""
        value = self._value
        out = []
        while value:
            low = value & -value
            out.append(low.bit_length() - 1)
            value ^= low
        return out

    def count(self) -> int:
        return self._value.bit_count()

    def is_set(self, bit: int) -> bool:
        """``IsSet``: false for a bit outside 0..63."""
        return 0 <= bit < MAX_BITS and bool(self._value >> bit & 1)

    def any_set(self, bits: Iterable[int]) -> bool:
        return any(self.is_set(bit) for bit in bits)

    def is_empty(self) -> bool:
        return self._value == 0

    def is_equal(self, other: BitMask) -> bool:
        return self._value == other._value

    def is_less_than(self, other: BitMask) -> bool:
        """Raw integer comparison, as ``IsLessThan`` does ({1,2}=6 is less than {0,3}=9)."""
        return self._value < other._value

    def is_greater_than(self, other: BitMask) -> bool:
        return self._value > other._value

    def is_narrower_than(self, other: BitMask) -> bool:
        """Fewer bits set; with equal counts, the smaller integer. Strict: never narrower than itself."""
        mine, theirs = self._value.bit_count(), other._value.bit_count()
        if mine == theirs:
            return self._value < other._value
        return mine < theirs

    def __and__(self, other: BitMask) -> BitMask:
        return BitMask(self._value & other._value)

    def __or__(self, other: BitMask) -> BitMask:
        return BitMask(self._value | other._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BitMask) and self._value == other._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"BitMask.of({', '.join(map(str, self.bits()))})"

    def __str__(self) -> str:
        """The kubelet's binary rendering, quirks included.

        For shift 62, 60, … 2 the first ``value > 2**shift`` prints the value zero-padded to ``shift + 2``
        digits; otherwise width 2. The strict ``>`` makes 4 render as ``100`` (odd width).
        """
        for shift in range(MAX_BITS - 2, 0, -2):
            if self._value > 1 << shift:
                return format(self._value, f"0{shift + 2}b")
        return format(self._value, "02b")


def and_masks(first: BitMask, *masks: BitMask) -> BitMask:
    """Package-level ``And(first, masks...)``."""
    value = first.value
    for mask in masks:
        value &= mask.value
    return BitMask(value)


def or_masks(first: BitMask, *masks: BitMask) -> BitMask:
    """Package-level ``Or(first, masks...)``."""
    value = first.value
    for mask in masks:
        value |= mask.value
    return BitMask(value)


def iterate_bitmasks(bits: Sequence[int]) -> Iterator[BitMask]:
    """Every non-empty subset of ``bits``, in the kubelet's ``IterateBitMasks`` order.

    By subset size 1..n, and within a size lexicographically by position in ``bits`` (the same order as
    ``itertools.combinations``). Hint providers rely on this order for the hints they emit.
    """
    for size in range(1, len(bits) + 1):
        for combo in itertools.combinations(bits, size):
            yield BitMask.of(*combo)


@functools.cache
def bitmask_table(bits: tuple[int, ...]) -> tuple[tuple[BitMask, tuple[int, ...]], ...]:
    """:func:`iterate_bitmasks` of ``bits`` with each mask's set bits (ascending), built once per ``bits``:
    the hint providers walk the same 2^n − 1 masks for every pod, and the masks are immutable."""
    return tuple((mask, tuple(mask.bits())) for mask in iterate_bitmasks(bits))


@functools.cache
def _sum_plan(bits: tuple[int, ...]) -> tuple[tuple[int, int], ...] | None:
    """Per mask of ``bitmask_table(bits)``: the position of the mask without its lowest bit (-1: none)
    and that bit. None when ``bits`` repeats a bit (then sums are taken mask by mask)."""
    if len(set(bits)) != len(bits):
        return None
    table = bitmask_table(bits)
    position = {mask.value: index for index, (mask, _) in enumerate(table)}
    plan = []
    for mask, _ in table:
        low = mask.value & -mask.value
        plan.append((position.get(mask.value ^ low, -1), low.bit_length() - 1))
    return tuple(plan)


def subset_sums(bits: tuple[int, ...], per_bit: Mapping[int, int]) -> list[int]:
    """``sum(per_bit.get(b, 0) for b in mask_bits)`` for every mask of ``bitmask_table(bits)``, in its
    order: each sum is a smaller mask's (one bit fewer, enumerated before it) plus one term — the same
    integers as summing each mask's bits."""
    plan = _sum_plan(bits)
    if plan is None:
        return [sum(per_bit.get(b, 0) for b in mask_bits) for _, mask_bits in bitmask_table(bits)]
    out = [0] * len(plan)
    for index, (parent, low) in enumerate(plan):
        out[index] = (out[parent] if parent >= 0 else 0) + per_bit.get(low, 0)
    return out
