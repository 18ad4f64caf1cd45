"""The static policy on its own: construction, reserved CPUs, state validation, removal, pod level."""

from __future__ import annotations

import pytest

from kubeletemu.admission import PodAdmitResult
from kubeletemu.cpumanager import (
    CPUManager,
    CPUManagerError,
    CPUSet,
    CPUTopology,
    NonePolicy,
    PolicyOptionsError,
    StateError,
    StaticPolicy,
    new_manager,
)
from kubeletemu.cpumanager.state import MemoryState
from kubeletemu.pod import Container, Pod, ResourceRequirements
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import TopologyManager
from kubeletemu.topologymanager import new_manager as new_topology_manager
from tests.cpumanager.helpers import FixedStore, conformance_topology, container, pod


def single_socket_ht() -> CPUTopology:
    # 8 CPUs, core c = {c, c+4}.
    return conformance_topology("cpu_assignment", "topoSingleSocketHT")


def dual_socket_ht() -> CPUTopology:
    return conformance_topology("cpu_assignment", "topoDualSocketHT")


@pytest.mark.parametrize(
    ("topology", "count", "options", "gates", "expected"),
    [
        # The kubelet's own example: 2 CPUs on an 8-CPU HT box -> a whole core, {0,4}.
        ("single", 2, {}, None, "0,4"),
        # 3 on topoDualSocketHT: core 0 {0,6}, then the first thread of the next core in order (2).
        ("dual", 3, {}, None, "0,2,6"),
        # Spread over cores: no whole cores, CPUs by socket in id order.
        (
            "single",
            2,
            {"distribute-cpus-across-cores": "true"},
            {"CPUManagerPolicyAlphaOptions": True},
            "0-1",
        ),
        ("single", 0, {}, None, ""),
    ],
)
def test_reserved_cpus_taken_by_topology(
    topology: str, count: int, options: dict[str, str], gates: dict[str, bool] | None, expected: str
) -> None:
    topo = single_socket_ht() if topology == "single" else dual_socket_ht()
    policy = StaticPolicy(topo, count, None, FixedStore(), options, gates)
    assert str(policy.reserved_cpus) == expected


def test_reserved_physical_cpus_are_the_cores_of_reserved_cpus() -> None:
    policy = StaticPolicy(single_socket_ht(), 2, CPUSet.parse("0-1"), FixedStore())
    assert str(policy.reserved_cpus) == "0-1"
    assert str(policy.reserved_physical_cpus) == "0-1,4-5"


@pytest.mark.parametrize(
    ("count", "reserved", "message"),
    [
        (
            3,
            "0-1",
            "[cpumanager] unable to reserve the required amount of CPUs (size of 0-1 did not equal 3)",
        ),
        (9, None, "[cpumanager] unable to reserve the required amount of CPUs (size of  did not equal 9)"),
        (
            1,
            "99",
            "[cpumanager] unable to build the reserved physical CPUs from the reserved set: "
            "unknown CPU ID: 99",
        ),
    ],
)
def test_construction_errors(count: int, reserved: str | None, message: str) -> None:
    with pytest.raises(CPUManagerError) as err:
        StaticPolicy(
            single_socket_ht(), count, None if reserved is None else CPUSet.parse(reserved), FixedStore()
        )
    assert str(err.value) == message


def test_option_errors_come_first() -> None:
    with pytest.raises(PolicyOptionsError, match="unknown CPU Manager Policy option"):
        StaticPolicy(single_socket_ht(), 99, None, FixedStore(), {"nope": "true"})


def _state(default: str, assignments: dict[str, dict[str, str]] | None = None) -> MemoryState:
    state = MemoryState()
    state.set_default_cpu_set(CPUSet.parse(default))
    state.set_cpu_assignments(
        {p: {c: CPUSet.parse(s) for c, s in cs.items()} for p, cs in (assignments or {}).items()}
    )
    return state


@pytest.mark.parametrize(
    ("strict", "default", "assignments", "message"),
    [
        (False, "", {"p": {"c": "1"}}, "default cpuset cannot be empty"),
        (False, "1-3,5-7", {}, 'not all reserved cpus: "0,4" are present in defaultCpuSet: "1-3,5-7"'),
        (True, "0-7", {}, 'some of strictly reserved cpus: "0,4" are present in defaultCpuSet: "0-7"'),
        (
            False,
            "0-7",
            {"p": {"c": "1"}},
            'pod: p, container: c cpuset: "1" overlaps with default cpuset "0-7"',
        ),
        (False, "0-5", {}, 'current set of available CPUs "0-7" doesn\'t match with CPUs in state "0-5"'),
        # Strict: the reserved CPUs 0 and 4 are outside the shared pool; CPU 7 is missing from the state.
        (
            True,
            "1-3",
            {"p": {"c": "5-6"}},
            'current set of available CPUs "1-3,5-7" doesn\'t match with CPUs in state "1-3,5-6"',
        ),
    ],
)
def test_validate_state_errors(
    strict: bool, default: str, assignments: dict[str, dict[str, str]], message: str
) -> None:
    options = {"strict-cpu-reservation": "true"} if strict else {}
    policy = StaticPolicy(single_socket_ht(), 2, None, FixedStore(), options)
    with pytest.raises(StateError) as err:
        policy.start(_state(default, assignments))
    assert str(err.value) == message


def test_validate_state_initialises_and_accepts_a_consistent_state() -> None:
    policy = StaticPolicy(single_socket_ht(), 2, None, FixedStore())
    empty = MemoryState()
    policy.start(empty)
    assert str(empty.get_default_cpu_set()) == "0-7"
    restored = _state("0,2-4,6-7", {"p": {"a": "1", "b": "5"}})
    policy.start(restored)
    assert str(restored.get_default_cpu_set()) == "0,2-4,6-7"
    strict = StaticPolicy(single_socket_ht(), 2, None, FixedStore(), {"strict-cpu-reservation": "true"})
    fresh = MemoryState()
    strict.start(fresh)
    assert str(fresh.get_default_cpu_set()) == "1-3,5-7"


def test_remove_container_keeps_cpus_of_siblings() -> None:
    policy = StaticPolicy(single_socket_ht(), 2, None, FixedStore())
    # An init container's CPUs reused by the app container: both entries hold 1 and 5.
    state = _state("0,2-4,6-7", {"p": {"init": "1,5", "app": "1,5"}})
    policy.remove_container(state, "p", "init")
    assert str(state.get_default_cpu_set()) == "0,2-4,6-7"
    policy.remove_container(state, "p", "app")
    assert str(state.get_default_cpu_set()) == "0-7"
    assert state.get_cpu_assignments() == {}
    policy.remove_container(state, "p", "gone")  # unknown: nothing happens
    assert str(state.get_default_cpu_set()) == "0-7"


def test_allocate_reuses_a_restored_assignment() -> None:
    store = FixedStore()
    policy = StaticPolicy(single_socket_ht(), 2, None, store)
    state = _state("0,2-4,6-7", {"p": {"c": "1,5"}})
    p = pod("p", [container("c", 2)])
    policy.allocate(state, p, p.containers[0])
    assert str(state.get_cpu_set("p", "c")) == "1,5"
    assert str(state.get_default_cpu_set()) == "0,2-4,6-7"


def test_allocate_follows_the_stored_hint() -> None:
    store = FixedStore()
    topo = dual_socket_ht()
    policy = StaticPolicy(topo, 1, None, store)
    state = MemoryState()
    policy.start(state)
    p = pod("p", [container("c", 2)])
    store.set("p", "c", [1])
    policy.allocate(state, p, p.containers[0])
    # NUMA 1 = {1,3,5,7,9,11}, whole cores in order: core 1.
    assert str(state.get_cpu_set("p", "c")) == "1,7"


def test_none_policy() -> None:
    policy = NonePolicy()
    assert policy.name == "none"
    with pytest.raises(PolicyOptionsError) as err:
        NonePolicy({"b": "1", "a": "2"})
    assert str(err.value) == "None policy: received unsupported options=map[a:2 b:1]"


# -- pod-level resource managers (alpha) --------------------------------------------------------------------

PLRM = {"PodLevelResourceManagers": True}


def pod_level(uid: str, cpus: int, containers: list[Container]) -> Pod:
    budget = {"cpu": Quantity(cpus), "memory": Quantity.parse("8Gi")}
    return Pod(
        name=uid,
        namespace="default",
        uid=uid,
        containers=tuple(containers),
        resources=ResourceRequirements(requests=budget, limits=budget),
    )


def _pod_level_managers(tm_policy: str, gates: dict[str, bool]) -> tuple[TopologyManager, CPUManager]:
    tm = new_topology_manager([(0, None), (1, None)], tm_policy, "pod", None, gates)
    cpu = new_manager(
        "static",
        None,
        dual_socket_ht(),
        tm,
        node_allocatable_cpu_reservation=Quantity(1),
        feature_gates=gates,
    )
    tm.add_hint_provider(cpu)
    return tm, cpu


def test_pod_level_bubble() -> None:
    tm, cpu = _pod_level_managers("restricted", PLRM)
    # Budget 6: only NUMA 1 has 6 free -> {1}. The bubble is all of NUMA 1; "a" (2, request == limit)
    # gets whole core 1; "b" (500m) runs on the rest of the bubble.
    p = pod_level("p", 6, [container("a", 2), container("b", "500m")])
    assert tm.admit(p) == PodAdmitResult(True)
    assert str(cpu.state.get_pod_cpu_set("p")) == "1,3,5,7,9,11"
    assert str(cpu.get_exclusive_cpus("p", "a")) == "1,7"
    assert str(cpu.get_exclusive_cpus("p", "b")) == "3,5,9,11"
    assert str(cpu.get_default_cpu_set()) == "0,2,4,6,8,10"
    cpu.remove_container_by_ref("p", "a")
    assert str(cpu.get_default_cpu_set()) == "0,2,4,6,8,10"
    cpu.remove_container_by_ref("p", "b")
    assert str(cpu.get_default_cpu_set()) == "0-11"
    assert cpu.state.get_pod_cpu_set("p") is None


@pytest.mark.parametrize(
    ("tm_policy", "expected"),
    [
        (
            "restricted",
            # The pod-level flow's refusal (PodLevelTopologyAffinityError, 1.36+).
            PodAdmitResult(
                False,
                "TopologyAffinityError",
                "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager",
            ),
        ),
        (
            "best-effort",
            PodAdmitResult(
                False,
                "EmptyPodSharedPoolError",
                "pod rejected, sum of exclusive container cpu requests equals pod budget, "
                "leaving no cpus for shared containers",
            ),
        ),
    ],
)
def test_pod_level_empty_shared_pool(tm_policy: str, expected: PodAdmitResult) -> None:
    tm, cpu = _pod_level_managers(tm_policy, PLRM)
    p = pod_level("p", 2, [container("a", 2), container("b", "500m")])
    assert tm.admit(p) == expected
    assert cpu.get_assignments() == {}


def test_pod_level_resources_without_the_gate_are_left_alone() -> None:
    tm, cpu = _pod_level_managers("restricted", {})
    p = pod_level("p", 6, [container("a", 2), container("b", "500m")])
    assert cpu.get_pod_topology_hints(p) is None
    assert tm.admit(p) == PodAdmitResult(True)
    assert cpu.get_assignments() == {}


def test_a_failed_bubble_partition_gives_every_cpu_back() -> None:
    """Budget 3 for two 2-CPU exclusive containers: the 3-CPU bubble is taken, the second slice cannot be
    carved. Master rolls the bubble back to the shared pool (kubernetes#141261); before, it leaked."""
    tm, cpu = _pod_level_managers("best-effort", PLRM)
    before = str(cpu.get_default_cpu_set())
    p = pod_level("p", 3, [container("a", 2), container("b", 2)])
    assert not tm.admit(p).admit
    assert str(cpu.get_default_cpu_set()) == before == "0-11"
    assert cpu.state.get_pod_cpu_set("p") is None
    assert cpu.get_assignments() == {}
    # The CPUs are usable: a pod that needs all eleven allocatable CPUs still gets them.
    whole = pod_level("w", 11, [container("a", 11)])
    assert tm.admit(whole).admit
