"""bitmask.json: the kubelet's bitmask package tests (and derived ordering/rendering rows)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.bitmask import BitMask, BitMaskError, and_masks, iterate_bitmasks, or_masks
from tests.conformance.loader import versioned_rows


def _add_or_remove(start: BitMask, bits: list[int], add: bool) -> BitMask:
    # The kubelet's Add/Remove return an error and leave the mask unchanged on an invalid bit.
    try:
        return start.add(*bits) if add else start.remove(*bits)
    except BitMaskError:
        return start


def evaluate(row: dict[str, Any]) -> Any:
    op = row["op"]
    if op == "NewEmptyBitMask.String":
        return str(BitMask())
    if op in ("NewBitMask.String", "String"):
        return str(BitMask.of(*row["bits"]))
    if op == "Add.String":
        return str(_add_or_remove(BitMask.of(*row["start"]), row["bits"], add=True))
    if op == "Remove.String":
        return str(_add_or_remove(BitMask.of(*row["start"]), row["bits"], add=False))
    if op in ("And.String", "Or.String"):
        masks = [BitMask.of(*m) for m in row["masks"]]
        combine = and_masks if op == "And.String" else or_masks
        return str(combine(masks[0], *masks))
    if op == "Clear.String":
        BitMask.of(*row["bits"])  # the mask being cleared must itself be valid
        return str(BitMask())
    if op == "Fill.String":
        BitMask.of(*row["bits"])
        return str(BitMask.full())
    mask = BitMask.of(*row.get("bits", []))
    if op == "IsEmpty":
        return mask.is_empty()
    if op == "IsSet":
        return mask.is_set(row["check"])
    if op == "AnySet":
        return mask.any_set(row["check"])
    if op == "Count":
        return mask.count()
    if op == "GetBits":
        return mask.bits() or None  # the kubelet returns nil for an empty mask
    if op in ("IsEqual", "IsNarrowerThan", "IsLessThan", "IsGreaterThan"):
        first, second = BitMask.of(*row["first"]), BitMask.of(*row["second"])
        method = {
            "IsEqual": first.is_equal,
            "IsNarrowerThan": first.is_narrower_than,
            "IsLessThan": first.is_less_than,
            "IsGreaterThan": first.is_greater_than,
        }[op]
        return method(second)
    if op == "IterateBitMasks.count":
        return sum(1 for _ in iterate_bitmasks(row["bits"]))
    if op == "IterateBitMasks.order":
        return [m.bits() for m in iterate_bitmasks(row["bits"])]
    raise AssertionError(f"unhandled op {op}")


@pytest.mark.parametrize(("row", "version"), versioned_rows("bitmask", "cases"))
def test_bitmask(row: dict[str, Any], version: str) -> None:
    assert evaluate(row) == row["expected"]


def test_new_bitmask_rejects_out_of_range_bits() -> None:
    with pytest.raises(BitMaskError, match="bit number must be in range 0-63"):
        BitMask.of(64)
    with pytest.raises(BitMaskError):
        BitMask.of(-1)


def test_failed_add_leaves_mask_unchanged() -> None:
    mask = BitMask.of(1)
    with pytest.raises(BitMaskError):
        mask.add(2, 64)
    assert mask.bits() == [1]
