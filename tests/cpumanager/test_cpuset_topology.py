"""cpuset syntax and the topology model."""

from __future__ import annotations

import pytest

from kubeletemu.cpumanager import (
    CPUInfo,
    CPUManagerError,
    CPUSet,
    CPUSetError,
    CPUTopology,
    DiscoveredCore,
    TopologyError,
    format_cpu_list,
    take_by_topology_numa_packed,
)
from tests.cpumanager.helpers import conformance_topology


@pytest.mark.parametrize(
    ("text", "cpus", "printed"),
    [
        ("", [], ""),
        ("5", [5], "5"),
        ("0-3,8-11", [0, 1, 2, 3, 8, 9, 10, 11], "0-3,8-11"),
        ("4-5", [4, 5], "4-5"),
        ("3,1,2", [1, 2, 3], "1-3"),
        ("1-1", [1], "1"),
        ("0-2,4-7", [0, 1, 2, 4, 5, 6, 7], "0-2,4-7"),
        ("+2", [2], "2"),
        ("0-1,1-2", [0, 1, 2], "0-2"),
        ("1,3,15-31,47-63", [1, 3, *range(15, 32), *range(47, 64)], "1,3,15-31,47-63"),
    ],
)
def test_parse_and_print(text: str, cpus: list[int], printed: str) -> None:
    parsed = CPUSet.parse(text)
    assert parsed.list() == cpus
    assert str(parsed) == printed
    assert format_cpu_list(cpus) == printed
    assert CPUSet.parse(str(parsed)) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a", 'strconv.Atoi: parsing "a": invalid syntax'),
        ("1,", 'strconv.Atoi: parsing "": invalid syntax'),
        (" 1", 'strconv.Atoi: parsing " 1": invalid syntax'),
        ("-1", 'strconv.Atoi: parsing "": invalid syntax'),
        ("5-3", 'invalid range "5-3" (5 > 3)'),
        ("1-x", 'strconv.Atoi: parsing "x": invalid syntax'),
        ("1--3", 'invalid range "1--3" (1 > -3)'),
        ("0-99999999999", "beyond any real machine"),
    ],
)
def test_malformed_cpusets(text: str, message: str) -> None:
    with pytest.raises(CPUSetError) as err:
        CPUSet.parse(text)
    assert message in str(err.value)


def test_set_operations() -> None:
    a, b = CPUSet.of(1, 2, 3), CPUSet.parse("3-5")
    assert str(a | b) == "1-5"
    assert str(a & b) == "3"
    assert str(a - b) == "1-2"
    assert a.union(b, CPUSet.of(9)).list() == [1, 2, 3, 4, 5, 9]
    assert CPUSet.of(3).is_subset_of(a)
    assert list(CPUSet.of(3, 1)) == [1, 3]
    assert CPUSet().is_empty() and not CPUSet()


def test_header_counts_verbatim_or_derived() -> None:
    rows = [[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [2, 2, 1, 1, 1], [3, 2, 1, 1, 1]]
    derived = CPUTopology.from_rows(rows)
    assert (derived.num_cpus, derived.num_cores, derived.num_sockets, derived.num_numa_nodes) == (4, 2, 2, 2)
    assert derived.num_uncore_cache == 2
    assert derived.cpus_per_core() == 2
    declared = CPUTopology.from_rows(rows, num_numa_nodes=0, num_cores=0)
    assert declared.num_numa_nodes == 0
    assert declared.cpus_per_core() == 0
    assert declared.to_rows() == rows


def test_details_queries() -> None:
    topo = conformance_topology("cpu_assignment", "topoDualSocketMultiNumaPerSocketHT")
    d = topo.cpu_details
    assert str(d.cpus()) == "0-79"
    assert str(d.numa_nodes()) == "0-3"
    assert str(d.cpus_in_numa_nodes(1)) == "10-19,50-59"
    assert str(d.cpus_in_numa_nodes(1, 2)) == "10-29,50-69"
    assert str(d.sockets_in_numa_nodes(1, 2)) == "0-1"
    assert str(d.numa_nodes_in_sockets(1)) == "2-3"
    assert str(d.cpus_in_cores(7)) == "7,47"
    assert str(d.cores_in_numa_nodes(3)) == "30-39"
    assert str(d.cores_in_sockets(0)) == "0-19"
    assert d.are_numa_nodes_in_same_socket([0, 1])
    assert not d.are_numa_nodes_in_same_socket([1, 2])
    assert not d.are_numa_nodes_in_same_socket([0, 9])
    kept = d.keep_only(CPUSet.parse("0-4"))
    assert str(kept.cpus()) == "0-4" and str(kept.numa_nodes()) == "0"
    assert str(d.cores_needed_in_uncore_cache(3, 0)) == "0-2"
    assert topo.cpu_core_id(47) == 7
    with pytest.raises(TopologyError, match="unknown CPU ID: 99"):
        topo.cpu_core_id(99)


def test_discover_like_the_kubelet() -> None:
    cores = [
        DiscoveredCore(numa_node_id=0, socket_id=0, threads=[4, 0], uncore_cache_ids=[7]),
        DiscoveredCore(numa_node_id=1, socket_id=1, threads=[1, 5]),
    ]
    topo = CPUTopology.discover(cores, num_cpus=4, num_sockets=2)
    # Core id = lowest thread; uncore = first uncore cache, else the socket id.
    assert topo.cpu_details[4] == CPUInfo(4, 0, 0, 0, 7)
    assert topo.cpu_details[5] == CPUInfo(5, 1, 1, 1, 1)
    assert (topo.num_cpus, topo.num_cores, topo.num_sockets, topo.num_numa_nodes) == (4, 2, 2, 2)
    with pytest.raises(TopologyError, match="could not detect number of cpus"):
        CPUTopology.discover(cores, num_cpus=0, num_sockets=2)
    with pytest.raises(TopologyError, match="no cpus provided"):
        CPUTopology.discover([DiscoveredCore(0, 0, [])], num_cpus=1, num_sockets=1)
    with pytest.raises(TopologyError, match="cpus provided are not unique"):
        CPUTopology.discover([DiscoveredCore(0, 0, [1, 1])], num_cpus=1, num_sockets=1)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([[0, 0, 0, 0], [0, 1, 0, 0]], "CPU 0 is listed twice"),
        ([[0, 0, 0]], "a CPU row is"),
        ([[0, 0, 0, -1]], "negative id"),
    ],
)
def test_bad_topologies(rows: list[list[int]], message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        CPUTopology.from_rows(rows)


def test_unknown_sorting_strategy_is_refused() -> None:
    topo = conformance_topology("cpu_assignment", "topoSingleSocketHT")
    with pytest.raises(CPUManagerError, match="unknown CPU sorting strategy 'dense'"):
        take_by_topology_numa_packed(topo, range(8), 2, "dense")
