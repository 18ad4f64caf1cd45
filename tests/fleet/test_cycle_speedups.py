"""The exact speed-ups the exact setups rely on in the node's hint providers (``kubeletemu.bitmask``'s
``bitmask_table`` and ``subset_sums``): the same masks in the same order, the same sums, for any NUMA ids.
The providers' own conformance tables (``tests/cpumanager``, ``tests/memorymanager``) run on them too."""

from __future__ import annotations

import random

import pytest

from kubeletemu.bitmask import bitmask_table, iterate_bitmasks, subset_sums


@pytest.mark.parametrize(
    "bits", [(0,), (0, 1), (1, 0), (0, 1, 2, 3, 4, 5, 6, 7), (3, 7, 12), (5, 2, 9, 0), (1, 1, 2), (63, 0)]
)
def test_table_and_sums_match_the_mask_by_mask_walk(bits: tuple[int, ...]) -> None:
    table = bitmask_table(bits)
    assert [mask for mask, _ in table] == list(iterate_bitmasks(bits))
    assert all(list(mask_bits) == mask.bits() for mask, mask_bits in table)
    rng = random.Random(len(bits))
    for _ in range(20):
        per_bit = {b: rng.randrange(0, 10**12) for b in set(bits) if rng.random() < 0.9}
        direct = [sum(per_bit.get(b, 0) for b in mask.bits()) for mask in iterate_bitmasks(bits)]
        assert subset_sums(bits, per_bit) == direct
