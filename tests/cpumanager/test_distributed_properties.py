"""The fast NUMA-distributed allocator against a literal transcription of the kubelet's loops."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeletemu.cpumanager import (
    CPUAllocationError,
    CPUInfo,
    CPUTopology,
    KubeletHangError,
    take_by_topology_numa_distributed,
)
from kubeletemu.cpumanager.go_semantics import SliceView, final_combination_positions, iterate_combinations_go
from tests.cpumanager.distributed_oracle import (
    GoSlice,
    iterate_combinations_literal,
    take_distributed_literal,
)


def _keep(store: list[tuple[list[int], Any]], view: Any) -> bool:
    """Record what a visit saw and the slice itself (read again after the iteration)."""
    store.append((view.values(), view))
    return False


def test_iterative_combinations_match_the_recursive_append_simulation() -> None:
    for count in range(0, 10):
        items = list(range(100, 100 + count))
        for size in range(0, count + 2):
            literal: list[tuple[list[int], GoSlice]] = []
            fast: list[tuple[list[int], SliceView]] = []
            iterate_combinations_literal(items, size, functools.partial(_keep, literal))
            iterate_combinations_go(items, size, functools.partial(_keep, fast))
            literal_seen = [seen for seen, _ in literal]
            fast_seen = [seen for seen, _ in fast]
            expected = [list(c) for c in itertools.combinations(items, size)] if size >= 1 else []
            assert fast_seen == literal_seen == expected
            # What stored slices read once the iteration is over.
            assert [view.values() for _, view in fast] == [view.values() for _, view in literal]
            if size >= 1:
                assert [
                    [items[p] for p in final_combination_positions(positions, count)]
                    for positions in itertools.combinations(range(count), size)
                ] == [view.values() for _, view in literal]


@st.composite
def machines(draw: st.DrawFn) -> tuple[CPUTopology, list[int], int, int, str, bool]:
    numas = draw(st.integers(2, 8))
    sockets = draw(st.sampled_from([s for s in (1, 2, 4) if s <= numas]))
    threads = draw(st.sampled_from([1, 2]))
    cores_per_numa = draw(st.integers(1, 5))
    total_cores = numas * cores_per_numa
    cpus = [
        CPUInfo(
            core + thread * total_cores,
            core,
            (core // cores_per_numa) * sockets // numas,
            core // cores_per_numa,
        )
        for core in range(total_cores)
        for thread in range(threads)
    ]
    topo = CPUTopology(cpus)
    all_cpus = sorted(c.cpu_id for c in cpus)
    available = draw(st.lists(st.sampled_from(all_cpus), min_size=1, unique=True))
    group = draw(st.sampled_from([1, 2]))
    num_cpus = draw(st.integers(0, len(available) + 1))
    strategy = draw(st.sampled_from(["packed", "spread"]))
    align = draw(st.booleans())
    return topo, sorted(available), num_cpus, group, strategy, align


def _outcome(fn: Callable[..., list[int]], *args: object) -> list[int] | str:
    try:
        return fn(*args)
    except KubeletHangError:
        return "hang"
    except CPUAllocationError as err:
        return str(err)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machines())
def test_fast_distributed_equals_literal(case: tuple[CPUTopology, list[int], int, int, str, bool]) -> None:
    topo, available, num_cpus, group, strategy, align = case
    fast = _outcome(take_by_topology_numa_distributed, topo, available, num_cpus, group, strategy, align)
    literal = _outcome(take_distributed_literal, topo, available, num_cpus, group, strategy, align)
    assert fast == literal
