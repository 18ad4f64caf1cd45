"""The Go behaviours the CPU manager reproduces: strconv texts, math.Round, and slice aliasing."""

from __future__ import annotations

import pytest

from kubeletemu.cpumanager import (
    CPUInfo,
    CPUTopology,
    KubeletHangError,
    take_by_topology_numa_distributed,
)
from kubeletemu.cpumanager.go_semantics import SliceView, iterate_combinations_go
from kubeletemu.golang import (
    GoSyntaxError,
    go_atoi,
    go_format_string_map,
    go_parse_bool,
    go_quote,
    go_round,
)
from tests.cpumanager.helpers import conformance_topology


@pytest.mark.parametrize(
    ("text", "quoted"),
    [("abc", '"abc"'), ('a"b', '"a\\"b"'), ("tab\there", '"tab\\there"'), ("\x01", '"\\x01"'), ("é", '"é"')],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


def test_atoi_and_parse_bool() -> None:
    assert go_atoi("+7") == 7
    assert go_atoi("-3") == -3
    for bad in ("", " 1", "1.0", "0x1", "1_000"):
        with pytest.raises(GoSyntaxError, match="invalid syntax"):
            go_atoi(bad)
    with pytest.raises(GoSyntaxError) as err:
        go_atoi("99999999999999999999")
    assert str(err.value) == 'strconv.Atoi: parsing "99999999999999999999": value out of range'
    assert go_parse_bool("T") is True
    assert go_parse_bool("False") is False
    with pytest.raises(GoSyntaxError) as err:
        go_parse_bool("yes")
    assert str(err.value) == 'strconv.ParseBool: parsing "yes": invalid syntax'


def test_round_half_away_from_zero() -> None:
    assert go_round(0.5) == 1.0
    assert go_round(2.5) == 3.0  # Python's round gives 2
    assert go_round(-2.5) == -3.0
    assert go_round(2.4999) == 2.0


def test_format_string_map_sorts_keys() -> None:
    assert go_format_string_map({"b": "2", "a": "1"}) == "map[a:1 b:2]"


def _collect(items: list[int], size: int) -> tuple[list[list[int]], list[SliceView]]:
    seen: list[list[int]] = []
    views: list[SliceView] = []

    def visit(view: SliceView) -> bool:
        seen.append(view.values())
        views.append(view)
        return False

    iterate_combinations_go(items, size, visit)
    return seen, views


def test_combinations_order_and_break() -> None:
    seen, _ = _collect([0, 1, 2], 2)
    assert seen == [[0, 1], [0, 2], [1, 2]]
    stopped: list[list[int]] = []

    def stop_at_second(view: SliceView) -> bool:
        stopped.append(view.values())
        return len(stopped) == 2

    iterate_combinations_go([0, 1, 2, 3], 1, stop_at_second)
    assert stopped == [[0], [1]]
    assert _collect([0, 1], 0) == ([], [])


def test_stored_combinations_alias_like_go_slices() -> None:
    # Size 4: combinations sharing their first 3 elements share one backing array (capacity 4), so a
    # stored one reads whatever its last sibling wrote.
    seen, views = _collect([0, 1, 2, 3, 4], 4)
    assert seen == [[0, 1, 2, 3], [0, 1, 2, 4], [0, 1, 3, 4], [0, 2, 3, 4], [1, 2, 3, 4]]
    assert [v.values() for v in views] == [
        [0, 1, 2, 4],
        [0, 1, 2, 4],
        [0, 1, 3, 4],
        [0, 2, 3, 4],
        [1, 2, 3, 4],
    ]
    # Size 5 gets a fresh array (capacity 8) for every combination: nothing aliases.
    seen, views = _collect(list(range(7)), 5)
    assert [v.values() for v in views] == seen
    # Size 6: the capacity-8 array is shared by combinations with the same first 5 elements.
    seen, views = _collect(list(range(7)), 6)
    assert views[0].values() == [0, 1, 2, 3, 4, 6]
    assert seen[0] == [0, 1, 2, 3, 4, 5]


def test_distributed_allocation_reads_the_overwritten_best_combination() -> None:
    # 8 NUMA nodes x 32 CPUs (NUMA n = CPUs 16n..16n+15 and their siblings +128). 100 CPUs need 4 nodes;
    # every 4-combination balances equally, so the first, [0,1,2,3], stays best - but its backing array
    # is shared with [0,1,2,4] .. [0,1,2,7], so by the time the kubelet reads it, it says [0,1,2,7].
    # Each chosen node gives 25 CPUs: 12 whole cores, then one more thread.
    topo = conformance_topology("cpu_assignment", "topoDualSocketMultiNumaPerSocketHTLarge")
    got = take_by_topology_numa_distributed(topo, range(256), 100, 1)
    expected = set()
    for numa in (0, 1, 2, 7):
        expected |= set(range(16 * numa, 16 * numa + 13)) | set(range(128 + 16 * numa, 128 + 16 * numa + 12))
    assert got == sorted(expected)
    assert not set(got) & set(range(48, 64))  # NUMA 3 untouched


def test_distributed_allocation_where_the_kubelet_would_hang() -> None:
    # 4 NUMA nodes x 3 cores x 2 threads (core c = CPUs c and c+12); one thread of the first core of each
    # node is taken, so every node has 5 free. 14 CPUs in groups of 2 need 4 nodes: 2 each, then 6 more
    # as a remainder. Scoring the subset {0,1} (3 + 3 free, enough in sum) hands out one group each and
    # then finds no node with 2 free: the kubelet's loop never ends.
    cpus = [CPUInfo(c + t * 12, c, 0, c // 3) for c in range(12) for t in range(2)]
    topo = CPUTopology(cpus, num_sockets=1)
    available = [c for c in range(24) if c not in (0, 3, 6, 9)]
    with pytest.raises(KubeletHangError, match="loop forever"):
        take_by_topology_numa_distributed(topo, available, 14, 2)
