"""The CPU manager behind the Topology Manager: sequences of pods, exact CPU ids, exact rejections.

Expectations are worked out by hand from the kubelet's algorithm; each test says how. Two conformance
topologies are used:

* ``topoDualSocketHT`` (12 CPUs): core c = CPUs {c, c+6}; socket = NUMA node = c % 2, so NUMA 0 holds
  CPUs 0,2,4,6,8,10 and NUMA 1 holds 1,3,5,7,9,11. Its header declares 0 NUMA nodes, so the allocator
  works NUMA-first (NumSockets 2 >= 0).
* ``topoDualSocketMultiNumaPerSocketHT`` (80 CPUs): core c = CPUs {c, c+40}; NUMA n = CPUs 10n..10n+9
  and their siblings; socket 0 = NUMA 0,1, socket 1 = NUMA 2,3. Socket-first (2 sockets < 4 NUMA).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from kubeletemu.admission import PodAdmitResult
from kubeletemu.bitmask import BitMask
from kubeletemu.cpumanager import CPUManager, CPUSet, CPUTopology, new_manager
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import ProviderHints, TopologyHint, TopologyManager
from kubeletemu.topologymanager import new_manager as new_topology_manager
from tests.cpumanager.helpers import conformance_topology, container, pod

AFFINITY_ERROR = PodAdmitResult(
    False, "TopologyAffinityError", "Resources cannot be allocated with Topology locality"
)


def dual_socket_ht() -> CPUTopology:
    return conformance_topology("cpu_assignment", "topoDualSocketHT")


def multi_numa() -> CPUTopology:
    return conformance_topology("cpu_assignment", "topoDualSocketMultiNumaPerSocketHT")


def build(
    topology: CPUTopology,
    tm_policy: str,
    scope: str = "container",
    *,
    cpu_policy: str = "static",
    options: dict[str, str] | None = None,
    reserved: str = "1",
    reserved_cpus: str | None = None,
    gates: dict[str, bool] | None = None,
    state_dir: Path | None = None,
    extra: Sequence[object] = (),
) -> tuple[TopologyManager, CPUManager]:
    numa_ids = topology.cpu_details.numa_nodes().list()
    tm = new_topology_manager([(n, None) for n in numa_ids], tm_policy, scope, None)
    cpu = new_manager(
        cpu_policy,
        options,
        topology,
        tm,
        node_allocatable_cpu_reservation=Quantity.parse(reserved),
        reserved_system_cpus=None if reserved_cpus is None else CPUSet.parse(reserved_cpus),
        state_dir=state_dir,
        feature_gates=gates,
    )
    tm.add_hint_provider(cpu)
    for provider in extra:
        tm.add_hint_provider(provider)  # type: ignore[arg-type]
    return tm, cpu


def guaranteed(uid: str, cpus: int, name: str = "c") -> Pod:
    return pod(uid, [container(name, cpus)])


def cpus_of(cpu: CPUManager, uid: str, name: str = "c") -> str:
    return str(cpu.get_exclusive_cpus(uid, name))


ADMITTED = PodAdmitResult(True)


# -- one sequence under every Topology Manager policy and scope ----------------------------------------

NOT_ENOUGH_3 = PodAdmitResult(
    False,
    "UnexpectedAdmissionError",
    "Allocate failed due to not enough cpus available to satisfy request: requested=4, available=3, "
    "which is unexpected",
)
NOT_ENOUGH_1 = PodAdmitResult(
    False,
    "UnexpectedAdmissionError",
    "Allocate failed due to not enough cpus available to satisfy request: requested=1, available=0, "
    "which is unexpected",
)


@pytest.mark.parametrize("scope", ["container", "pod"])
@pytest.mark.parametrize(
    ("tm_policy", "third"),
    [
        # No hints at all: Allocate sees a nil affinity and asks takeByTopology for 4 of the 3 free CPUs.
        ("none", NOT_ENOUGH_3),
        # The CPU hints are [] (3 free < 4): best-effort still admits with {0,1} non-preferred; Allocate
        # takes the 3 aligned CPUs, then fails to find the 4th among no CPUs at all.
        ("best-effort", NOT_ENOUGH_1),
        ("restricted", AFFINITY_ERROR),
        ("single-numa-node", AFFINITY_ERROR),
    ],
)
def test_sequence_of_four_cpu_pods(tm_policy: str, third: PodAdmitResult, scope: str) -> None:
    tm, cpu = build(dual_socket_ht(), tm_policy, scope)
    # 1 reserved CPU, taken by topology from all CPUs: the first CPU of the first core, CPU 0.
    assert str(cpu.get_reserved_cpus()) == "0"
    assert str(cpu.get_default_cpu_set()) == "0-11"

    # Pod 1 (4 CPUs). Free: NUMA 0 = {2,4,6,8,10}, NUMA 1 = all 6. Hints {0}P {1}P {0,1}N -> {0}; no
    # hint (policy none) gives the same CPUs. NUMA 0 is not whole (CPU 0 reserved), so whole cores in
    # order: core 0 has one free CPU (6), then cores 2 and 4 -> {2,8} and {4,10}.
    assert tm.admit(guaranteed("p1", 4)) == ADMITTED
    assert cpus_of(cpu, "p1") == "2,4,8,10"

    # Pod 2 (4 CPUs). NUMA 0 has only CPU 6 left, so {1} is the only single-node hint; NUMA 1 is whole
    # but bigger than 4, so whole cores 1 and 3.
    assert tm.admit(guaranteed("p2", 4)) == ADMITTED
    assert cpus_of(cpu, "p2") == "1,3,7,9"
    assert str(cpu.get_default_cpu_set()) == "0,5-6,11"

    # Pod 3 (4 CPUs): only 5, 6 and 11 are left besides the reserved CPU.
    assert tm.admit(guaranteed("p3", 4)) == third
    # No policy leaves a trace of the failed pod.
    assert cpus_of(cpu, "p3") == ""
    assert str(cpu.get_default_cpu_set()) == "0,5-6,11"

    # Pod 4 (2 CPUs): NUMA 1 holds the whole core 5 -> {5,11}.
    assert tm.admit(guaranteed("p4", 2)) == ADMITTED
    assert cpus_of(cpu, "p4") == "5,11"

    # Removing pod 2 returns its CPUs to the shared pool.
    cpu.remove_pod("p2")
    assert str(cpu.get_default_cpu_set()) == "0-1,3,6-7,9"
    assert cpu.exclusive_cpus_per_numa() == {0: 4, 1: 2}
    assert cpu.allocatable_cpus_per_numa() == {0: 5, 1: 6}


def test_shared_pool_containers_get_no_hints_and_no_cpus() -> None:
    tm, cpu = build(dual_socket_ht(), "single-numa-node")
    burstable = pod("b", [container("c", 2, limit_cpu=4)])
    fractional = pod("f", [container("c", "1500m")])
    no_requests = pod("be", [Container(name="c")])
    for shared in (burstable, fractional, no_requests):
        assert cpu.get_topology_hints(shared, shared.containers[0]) is None
        assert tm.admit(shared) == ADMITTED
        assert cpus_of(cpu, shared.uid) == ""
        assert str(cpu.get_cpu_affinity(shared.uid, "c")) == "0-11"
    assert cpu.get_assignments() == {}


def test_pod_spanning_both_numa_nodes() -> None:
    tm, cpu = build(dual_socket_ht(), "restricted")
    # 8 CPUs > 6 per NUMA node: the narrowest fit by capacity has 2 nodes, so {0,1} is preferred.
    hints = cpu.get_topology_hints(guaranteed("p", 8), container("c", 8))
    assert hints == {"cpu": [TopologyHint(BitMask.of(0, 1), True)]}
    assert tm.admit(guaranteed("p", 8)) == ADMITTED
    # NUMA 1 is whole and 6 <= 8: taken; then a whole core of NUMA 0 (core 0 is short of CPU 0, so core 2).
    assert cpus_of(cpu, "p") == "1-3,5,7-9,11"


# -- a second provider --------------------------------------------------------------------------------


class DeviceOnNUMA1:
    """A device provider whose only device sits on NUMA node 1."""

    def __init__(self) -> None:
        self.allocated: list[str] = []

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints:
        return {"example.com/dev": [TopologyHint(BitMask.of(1), True)]}

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints:
        return {"example.com/dev": [TopologyHint(BitMask.of(1), True)]}

    def allocate(self, pod: Pod, container: Container) -> None:
        self.allocated.append(container.name)


@pytest.mark.parametrize(
    ("tm_policy", "expected"),
    [
        # CPU offers only {0,1} (preferred), the device only {1}: the merge is {1}, not preferred
        # (the masks differ). best-effort admits it.
        ("best-effort", ADMITTED),
        ("restricted", AFFINITY_ERROR),
    ],
)
def test_cpu_remainder_comes_from_outside_the_merged_hint(tm_policy: str, expected: PodAdmitResult) -> None:
    device = DeviceOnNUMA1()
    tm, cpu = build(dual_socket_ht(), tm_policy, extra=[device])
    assert tm.admit(guaranteed("p", 8)) == expected
    if expected.admit:
        assert tm.get_affinity("p", "c") == TopologyHint(BitMask.of(1), False)
        # Aligned first: all 6 CPUs of NUMA 1 (a whole node); the other 2 from anywhere: core 2 of NUMA 0.
        assert cpus_of(cpu, "p") == "1-3,5,7-9,11"
        assert device.allocated == ["c"]
    else:
        assert cpu.get_assignments() == {}
        assert device.allocated == []


# -- init containers, sidecars, pod scope ----------------------------------------------------------------


def test_pod_scope_reuses_init_container_cpus() -> None:
    tm, cpu = build(dual_socket_ht(), "restricted", "pod")
    p = pod("p", [container("a", 2), container("b", 2)], [container("init", 4)])
    # Pod request = max(init 4, apps 2+2) = 4 -> {0}P {1}P {0,1}N; restricted picks {0} for every container.
    assert tm.admit(p) == ADMITTED
    # init: 4 of NUMA 0's {2,4,6,8,10}: whole cores 2 and 4.
    assert cpus_of(cpu, "p", "init") == "2,4,8,10"
    # a: the init CPUs are reusable; aligned = {2,4,6,8,10} again; core 0 (only CPU 6 free) is not whole,
    # so core 2. b: what is left reusable is {4,10}, plus CPU 6: core 4.
    assert cpus_of(cpu, "p", "a") == "2,8"
    assert cpus_of(cpu, "p", "b") == "4,10"
    # Reused CPUs never went back to the shared pool.
    assert str(cpu.get_default_cpu_set()) == "0-1,3,5-7,9,11"
    cpu.remove_pod("p")
    assert str(cpu.get_default_cpu_set()) == "0-11"


def test_sidecar_cpus_are_not_reused() -> None:
    tm, cpu = build(dual_socket_ht(), "single-numa-node")
    p = pod("p", [container("app", 2)], [container("sidecar", 2, restart_policy="Always")])
    assert tm.admit(p) == ADMITTED
    # sidecar: NUMA 0 -> whole core 2. app: the sidecar keeps running, so NUMA 0 now offers {4,6,10}:
    # core 0 has only CPU 6, so core 4.
    assert cpus_of(cpu, "p", "sidecar") == "2,8"
    assert cpus_of(cpu, "p", "app") == "4,10"


def test_regular_init_container_cpus_are_reused_in_container_scope() -> None:
    tm, cpu = build(dual_socket_ht(), "single-numa-node")
    p = pod("p", [container("app", 2)], [container("init", 2)])
    assert tm.admit(p) == ADMITTED
    # Same as above, but the init container has finished by the time the app starts: its core is reused.
    assert cpus_of(cpu, "p", "init") == "2,8"
    assert cpus_of(cpu, "p", "app") == "2,8"


# -- static policy options ---------------------------------------------------------------------------------


def test_full_pcpus_only_rejections() -> None:
    tm, cpu = build(dual_socket_ht(), "best-effort", options={"full-pcpus-only": "true"})
    # Reserved {0}: its sibling 6 is withheld from the physical-CPU count (not from allocation).
    assert tm.admit(guaranteed("p1", 2)) == ADMITTED
    assert cpus_of(cpu, "p1") == "2,8"
    odd = tm.admit(guaranteed("p2", 3))
    assert odd == PodAdmitResult(
        False, "SMTAlignmentError", "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
    )
    # Shared pool {0,1,3,4,5,6,7,9,10,11} minus {0,6}: 8 physical CPUs for a request of 10.
    too_many = tm.admit(guaranteed("p3", 10))
    assert too_many == PodAdmitResult(
        False,
        "SMTAlignmentError",
        "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 8, "
        "requested CPUs = 10, CPUs per core = 2",
    )
    assert set(cpu.get_assignments()) == {"p1"}


def test_distribute_cpus_across_numa() -> None:
    tm, cpu = build(
        multi_numa(), "best-effort", options={"distribute-cpus-across-numa": "true"}, reserved_cpus="0"
    )
    assert str(cpu.get_reserved_cpus()) == "0"
    # 26 CPUs > 20 per node: every 2-node mask is preferred; best-effort takes the smallest, {0,1}.
    # Distributed over NUMA 0 and 1: 13 each (balance 0.5). NUMA 0 (CPU 0 reserved): whole cores 1-6,
    # then the lone CPU 40 of core 0. NUMA 1: whole cores 10-15, then CPU 16.
    assert tm.admit(guaranteed("p", 26)) == ADMITTED
    assert cpus_of(cpu, "p") == "1-6,10-16,40-46,50-55"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # Aligned = NUMA 0-2 (59 CPUs). Socket-first: no whole socket; whole NUMA nodes 2 then 1
        # (socket 1 has fewer free CPUs in the aligned set); then the lone CPU 40.
        ({}, "10-29,40,50-69"),
        # align-by-socket widens the aligned set to both sockets: socket 1 is whole (40 CPUs) and taken,
        # then CPU 40.
        ({"align-by-socket": "true"}, "20-40,60-79"),
    ],
)
def test_align_by_socket(options: dict[str, str], expected: str) -> None:
    tm, cpu = build(
        multi_numa(),
        "best-effort",
        options=options,
        reserved_cpus="0",
        gates={"CPUManagerPolicyAlphaOptions": True},
    )
    # 41 CPUs need 3 nodes by capacity: {0,1,2} is the narrowest preferred hint.
    assert tm.admit(guaranteed("p", 41)) == ADMITTED
    assert tm.get_affinity("p", "c").affinity == BitMask.of(0, 1, 2)
    assert cpus_of(cpu, "p") == expected


def test_strict_cpu_reservation_keeps_reserved_cpus_out_of_the_shared_pool() -> None:
    tm, cpu = build(dual_socket_ht(), "single-numa-node", options={"strict-cpu-reservation": "true"})
    assert str(cpu.get_default_cpu_set()) == "1-11"
    assert str(cpu.get_cpu_affinity("burstable", "c")) == "1-11"
    assert tm.admit(guaranteed("p", 4)) == ADMITTED
    assert cpus_of(cpu, "p") == "2,4,8,10"
    assert str(cpu.get_default_cpu_set()) == "1,3,5-7,9,11"


def test_cpu_policy_none_assigns_nothing() -> None:
    tm, cpu = build(dual_socket_ht(), "single-numa-node", cpu_policy="none")
    p = guaranteed("p", 4)
    assert cpu.get_topology_hints(p, p.containers[0]) is None
    assert tm.admit(p) == ADMITTED
    assert cpu.get_assignments() == {}
    assert cpu.get_allocatable_cpus() == CPUSet()


# -- a kubelet restart ---------------------------------------------------------------------------------------


def test_restart_restores_assignments_from_the_checkpoint(tmp_path: Path) -> None:
    tm, cpu = build(dual_socket_ht(), "single-numa-node", state_dir=tmp_path)
    assert tm.admit(guaranteed("p1", 4)) == ADMITTED
    assert cpus_of(cpu, "p1") == "2,4,8,10"

    # A new kubelet on the same state directory.
    tm2, cpu2 = build(dual_socket_ht(), "single-numa-node", state_dir=tmp_path)
    assert cpus_of(cpu2, "p1") == "2,4,8,10"
    assert str(cpu2.get_default_cpu_set()) == "0-1,3,5-7,9,11"
    # Re-admitting the running pod regenerates its hints from the CPUs it holds ({2,4,8,10} on NUMA 0)
    # and keeps them.
    p1 = guaranteed("p1", 4)
    assert cpu2.get_topology_hints(p1, p1.containers[0]) == {
        "cpu": [TopologyHint(BitMask.of(0), True), TopologyHint(BitMask.of(0, 1), False)]
    }
    assert tm2.admit(p1) == ADMITTED
    assert cpus_of(cpu2, "p1") == "2,4,8,10"
    # The same pod with a different CPU count now: its hints are [] -> single-numa-node rejects.
    assert tm2.admit(guaranteed("p1", 2)) == AFFINITY_ERROR
    # A new pod continues from the restored shared pool.
    assert tm2.admit(guaranteed("p2", 4)) == ADMITTED
    assert cpus_of(cpu2, "p2") == "1,3,7,9"
