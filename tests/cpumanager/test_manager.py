"""NewManager and the reserved-CPU configuration, container bookkeeping and per-NUMA queries."""

from __future__ import annotations

import pytest

from kubeletemu.cpumanager import (
    CPUManagerError,
    CPUSet,
    CPUTopology,
    PolicyOptionsError,
    new_manager,
    node_allocatable_cpu_reservation,
    num_reserved_cpus,
    parse_reserved_system_cpus,
)
from kubeletemu.quantity import Quantity
from tests.cpumanager.helpers import FixedStore, conformance_topology, container, pod


def topo() -> CPUTopology:
    return conformance_topology("cpu_assignment", "topoDualSocketHT")


@pytest.mark.parametrize(
    ("kube", "system", "reserved", "expected"),
    [
        ({"cpu": "500m"}, {"cpu": "1"}, None, Quantity.parse("1500m")),
        ({"memory": "1Gi"}, None, None, None),  # no cpu at all: left out of the map
        ({"cpu": "0"}, {"cpu": "0"}, None, None),  # a zero sum is left out too
        # reservedSystemCPUs: system-reserved cpu := its size, kube-reserved cpu dropped.
        ({"cpu": "3"}, {"cpu": "1"}, CPUSet.parse("0-1"), Quantity(2)),
    ],
)
def test_node_allocatable_cpu_reservation(
    kube: dict[str, str], system: dict[str, str] | None, reserved: CPUSet | None, expected: Quantity | None
) -> None:
    assert node_allocatable_cpu_reservation(kube, system, reserved) == expected


def test_reservation_errors() -> None:
    with pytest.raises(CPUManagerError, match='cannot reserve "gpu" resource'):
        node_allocatable_cpu_reservation({"gpu": "1"}, None)
    with pytest.raises(CPUManagerError, match='resource quantity for "cpu" cannot be negative: -1'):
        node_allocatable_cpu_reservation({"cpu": "-1"}, None)
    with pytest.raises(CPUManagerError, match="quantities must match the regular expression"):
        node_allocatable_cpu_reservation({"cpu": "one"}, None)
    assert num_reserved_cpus(Quantity.parse("1500m")) == 2
    assert num_reserved_cpus(Quantity.parse("1")) == 1
    with pytest.raises(CPUManagerError) as err:
        num_reserved_cpus(None)
    assert str(err.value) == "[cpumanager] unable to determine reserved CPU resources for static policy"
    with pytest.raises(CPUManagerError) as err:
        num_reserved_cpus(Quantity(0))
    assert str(err.value) == (
        "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu "
        "to be greater than zero"
    )


def test_parse_reserved_system_cpus() -> None:
    assert str(parse_reserved_system_cpus(topo(), "0,6")) == "0,6"
    assert parse_reserved_system_cpus(topo(), "") == CPUSet()
    with pytest.raises(CPUManagerError) as err:
        parse_reserved_system_cpus(topo(), "0-x")
    assert str(err.value) == 'unable to parse reserved-cpus list: strconv.Atoi: parsing "x": invalid syntax'
    with pytest.raises(CPUManagerError) as err:
        parse_reserved_system_cpus(topo(), "10-12")
    assert str(err.value) == "reserved-cpus: 10-12 is not a subset of online-cpus: 0-11"


@pytest.mark.parametrize(
    ("policy", "options", "reservation", "error_type", "message"),
    [
        ("dynamic", None, None, CPUManagerError, 'unknown policy: "dynamic"'),
        (
            "none",
            {"full-pcpus-only": "true"},
            None,
            PolicyOptionsError,
            "new none policy error: None policy: received unsupported options=map[full-pcpus-only:true]",
        ),
        ("static", None, None, CPUManagerError, "[cpumanager] unable to determine reserved CPU resources"),
        (
            "static",
            {"x": "1"},
            Quantity(1),
            PolicyOptionsError,
            'new static policy error: unknown CPU Manager Policy option: "x"',
        ),
        (
            "static",
            None,
            Quantity(13),
            CPUManagerError,
            "new static policy error: [cpumanager] unable to reserve the required amount of CPUs "
            "(size of  did not equal 13)",
        ),
    ],
)
def test_new_manager_errors(
    policy: str,
    options: dict[str, str] | None,
    reservation: Quantity | None,
    error_type: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error_type) as err:
        new_manager(policy, options, topo(), FixedStore(), node_allocatable_cpu_reservation=reservation)
    assert message in str(err.value)


def test_container_ids_and_stale_state() -> None:
    store = FixedStore()
    manager = new_manager("static", None, topo(), store, node_allocatable_cpu_reservation=Quantity(1))
    keep, gone = pod("keep", [container("c", 2)]), pod("gone", [container("c", 2)])
    for p in (keep, gone):
        manager.allocate(p, p.containers[0])
        manager.add_container(p, p.containers[0], f"cid-{p.uid}")
    # No hint stored: nil affinity; whole cores in order: core 2 (core 0 lacks reserved CPU 0), then 4.
    assert str(manager.get_exclusive_cpus("keep", "c")) == "2,8"
    assert str(manager.get_exclusive_cpus("gone", "c")) == "4,10"
    manager.remove_container("cid-unknown")
    manager.remove_stale_state([keep])
    assert set(manager.get_assignments()) == {"keep"}
    assert set(manager.container_map) == {"cid-keep"}
    manager.remove_container("cid-keep")
    assert manager.get_assignments() == {}
    assert str(manager.get_default_cpu_set()) == "0-11"


def test_per_numa_queries() -> None:
    store = FixedStore()
    manager = new_manager("static", None, topo(), store, node_allocatable_cpu_reservation=Quantity(1))
    assert manager.allocatable_cpus_per_numa() == {0: 5, 1: 6}
    assert manager.exclusive_cpus_per_numa() == {0: 0, 1: 0}
    p = pod("p", [container("c", 3)])
    store.set("p", "c", [1])
    manager.allocate(p, p.containers[0])
    assert str(manager.get_exclusive_cpus("p", "c")) == "1,3,7"
    assert manager.exclusive_cpus_per_numa() == {0: 0, 1: 3}
    assert manager.numa_utilization_score([1]) == 50
    assert manager.numa_utilization_score([0]) == 1
    assert manager.numa_utilization_score([0, 1]) == 27
    none = new_manager("none", None, topo(), store)
    assert none.numa_utilization_score([0]) == 0
