"""The pure parsers, on strings (shared/spec/hostprobe.md §1.1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostprobe import parse


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0-3,8-11\n", (0, 1, 2, 3, 8, 9, 10, 11)),
        ("0,4,8\n", (0, 4, 8)),
        ("1\n", (1,)),
        ("\n", ()),
        ("", ()),
        ("(null)\n", ()),
    ],
)
def test_parse_cpulist(text: str, expected: tuple[int, ...]) -> None:
    assert parse.parse_cpulist(text) == expected


@pytest.mark.parametrize("text", ["abc", "3-1", "1,,2", "-1", "0-"])
def test_parse_cpulist_rejects_malformed(text: str) -> None:
    with pytest.raises(ValueError):
        parse.parse_cpulist(text)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("managed_irq,0-4,11-15", (0, 1, 2, 3, 4, 11, 12, 13, 14, 15)),
        ("managed_irq,domain,2,5", (2, 5)),
        ("0-15:2/4", (0, 1, 4, 5, 8, 9, 12, 13)),
        ("nohz,domain,N", ()),
        ("1-3,bogus,x-y,7", (1, 2, 3, 7)),
    ],
)
def test_parse_cmdline_cpulist(value: str, expected: tuple[int, ...]) -> None:
    assert parse.parse_cmdline_cpulist(value) == expected


def test_parse_cpumask_most_significant_word_first() -> None:
    assert parse.parse_cpumask("00000000,003f0000,0000003f\n") == (0, 1, 2, 3, 4, 5, 48, 49, 50, 51, 52, 53)
    assert parse.parse_cpumask("ff") == tuple(range(8))
    assert parse.parse_cpumask("00000000\n") == ()
    with pytest.raises(ValueError):
        parse.parse_cpumask("0000zz00")


@given(st.sets(st.integers(min_value=0, max_value=300), max_size=60))
def test_cpulist_and_cpumask_round_trip(ids: set[int]) -> None:
    assert parse.parse_cpulist(parse.format_cpulist(ids)) == tuple(sorted(ids))
    assert parse.parse_cpumask(parse.format_cpumask(ids, 301)) == tuple(sorted(ids))


def test_format_cpumask_width_follows_nr_cpus() -> None:
    assert (
        parse.format_cpumask([0, 1, 2, 3, 4, 5, 48, 49, 50, 51, 52, 53], 96) == "00000000,003f0000,0000003f"
    )


def test_parse_node_meminfo_units_and_padding() -> None:
    text = (
        "Node 0 MemTotal:       97557100 kB\n"
        "Node 0 MemFree:        94431276 kB\n"
        "Node 0 Active(anon):       1512 kB\n"
        "Node 0 HugePages_Total:     0\n"
        "Node 0 HugePages_Free:      0\n"
        "garbage line\n"
    )
    values = parse.parse_node_meminfo(text)
    assert values == {
        "MemTotal": 97557100,
        "MemFree": 94431276,
        "Active(anon)": 1512,
        "HugePages_Total": 0,
        "HugePages_Free": 0,
    }


def test_parse_meminfo() -> None:
    text = "MemTotal:       196633688 kB\nHugePages_Total:       0\nHugepagesize:    1048576 kB\n"
    assert parse.parse_meminfo(text) == {"MemTotal": 196633688, "HugePages_Total": 0, "Hugepagesize": 1048576}


def test_parse_distance_row_maps_columns_through_online_ids() -> None:
    # POWER9: the third column is node 250, not node 2.
    row = parse.parse_int_row("10 40 80 80 80 80 80 80\n")
    mapped = parse.parse_distance_row(row, [0, 8, 250, 251, 252, 253, 254, 255])
    assert mapped[8] == 40 and mapped[250] == 80 and 2 not in mapped
    with pytest.raises(ValueError, match="2 entries for 1"):
        parse.parse_distance_row((21, 10), [1])


def test_hugepage_dir_and_cache_size() -> None:
    assert parse.hugepage_size_from_dirname("hugepages-2048kB") == 2048
    assert parse.hugepage_size_from_dirname("hugepages-1048576kB") == 1048576
    assert parse.hugepage_size_from_dirname("nr_hugepages") is None
    assert parse.parse_cache_size_kib("28160K\n") == 28160
    assert parse.parse_cache_size_kib("32M") == 32768
    with pytest.raises(ValueError):
        parse.parse_cache_size_kib("big")


def test_pci_addresses_any_domain_width() -> None:
    assert parse.parse_pci_address("0000:3b:00.1") == (0, 0x3B, 0, 1)
    assert parse.parse_pci_address("10000:01:00.0") == (0x10000, 1, 0, 0)
    assert parse.parse_pci_address("virtio2") is None
    assert not parse.is_pci_address("pci0000:00") and not parse.is_pci_address("0000:00:00.8")


def test_cmdline_and_cpuinfo() -> None:
    params = parse.parse_cmdline("ro isolcpus=managed_irq,0-4 nohz_full=1-3 quiet -- --init-arg=5")
    assert params == {"ro": "", "isolcpus": "managed_irq,0-4", "nohz_full": "1-3", "quiet": ""}
    cpuinfo = (
        "processor\t: 0\ncore id\t\t: 0\nphysical id\t: 0\n\n"
        "processor\t: 1\ncore id\t\t: 0\nphysical id\t: 1\n"
    )
    assert parse.count_cpuinfo_distinct(cpuinfo, "core id") == 1
    assert parse.count_cpuinfo_distinct(cpuinfo, "physical id") == 2
