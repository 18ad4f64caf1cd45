"""Pod-level allocation at 1.36 against master, through ``NodeEmulator`` admission (pod scope,
``PodLevelResourceManagers`` on, ``spec.resources`` set), and the CPU Manager's gauges at both.

Read in v1.36.3 (openshift/kubernetes as vendored in openshift/microshift release-4.23 @ ab25d11482),
``pkg/kubelet/cm/cpumanager/{policy_static,cpu_manager}.go`` and
``pkg/kubelet/cm/memorymanager/policy_static.go``; master as the emulator's pod-level modules cite it.
Three behaviours (``managers.json``), all after v1.36.3:

* ``cpumemorymanager.pod-level-init-pool-check``: master's ``validatePodScopeResources`` refuses a regular
  init container whose exclusive request exceeds the budget minus the sidecars started before it; v1.36.3
  does not check it. The CPU Manager then fails carving the pod's CPUs (``takeByTopology``'s error, wrapped
  as ``UnexpectedAdmissionError``); the Memory Manager records the init container's own request and admits.
* ``cpumanager.pod-allocation-rollback`` (kubernetes#141261): at v1.36.3 the failed carve leaves the pod's
  CPUs out of the shared pool, held by the pod's entry alone; the stale-state sweep walks container
  assignments only, so nothing frees them.
* ``cpumanager.metrics-from-state`` (kubernetes#141261): v1.36.3 moves the gauges by each allocation's and
  release's size; the per-NUMA gauge is set only for nodes holding container-assigned CPUs.

A pod the API server validated cannot exceed the sidecar pool (its requests must cover every init container
plus the sidecars before it), so the pods here are built as objects, as a kubelet fed unvalidated pods would
see them. two_nodes: NUMA node 0 holds CPUs 0-3 and 8-11 (core n: n and n+8), node 1 4-7 and 12-15; CPU 0
is reserved (kube-reserved 1 CPU), 15 CPUs allocatable. Expected values are worked out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletemu.config import parse_config
from kubeletemu.cpumanager import CPUManagerGauges, CPUSet
from kubeletemu.emulator import AdmissionReport, NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.pod import Container, Pod, ResourceRequirements
from kubeletemu.quantity import Quantity
from kubeletemu.versions.behaviours import behaviours, in_effect, step_at
from tests.cpumanager.helpers import container
from tests.nodes import static_managers
from tests.versions.helpers import pod, versioned_config

GATE_ON = {"PodLevelResourceManagers": True}
MIB = 1 << 20
KEYS = (
    "cpumemorymanager.pod-level-init-pool-check",
    "cpumanager.pod-allocation-rollback",
    "cpumanager.metrics-from-state",
)


def pod_level(uid: str, cpu: str, memory: str, init: list[Container], apps: list[Container]) -> Pod:
    budget = {"cpu": Quantity.parse(cpu), "memory": Quantity.parse(memory)}
    return Pod(
        name=uid,
        namespace="default",
        uid=uid,
        containers=tuple(apps),
        init_containers=tuple(init),
        resources=ResourceRequirements(requests=budget, limits=budget),
    )


# Budget 4 CPUs: a 2-CPU sidecar leaves 2 for the regular init container that follows it, which asks for 3.
CPU_OVER = pod_level(
    "cpu-over",
    "4",
    "2Gi",
    [container("side", 2, "256Mi", restart_policy="Always"), container("init", 3, "256Mi")],
    [Container(name="app")],
)
# Budget 1Gi: a 512Mi sidecar leaves 512Mi for the init container that follows it, which asks for 768Mi
# (its 2 CPUs fit the 3 the 1-CPU sidecar leaves).
MEMORY_OVER = pod_level(
    "mem-over",
    "4",
    "1Gi",
    [container("side", 1, "512Mi", restart_policy="Always"), container("init", 2, "768Mi")],
    [Container(name="app")],
)


def node(machine: Machine, version: str, scope: str = "pod", state: Path | None = None) -> NodeEmulator:
    text = versioned_config(version, scope=scope, managers=static_managers(), gates=GATE_ON)
    return NodeEmulator(parse_config(text), machine, state)


def hints_of(report: AdmissionReport, provider: str) -> object:
    (hints,) = [h for name, h in report.containers[0].provider_hints if name == provider]
    return hints


def gauges(shared: int, exclusive: int, *per_numa: tuple[int, int]) -> CPUManagerGauges:
    return CPUManagerGauges(shared, exclusive, tuple(per_numa))


IDLE_MASTER = gauges(15000, 0, (0, 0), (1, 0))


def test_the_three_behaviours_land_after_136() -> None:
    for key in KEYS:
        assert [c.since for c in behaviours()[key].changes] == ["master"]
        assert [step_at(key, v) for v in ("1.33", "1.34", "1.35", "1.36")] == [0, 0, 0, 0]
        assert in_effect(key, "master")


# ---- CPU Manager: an init container larger than the sidecars' leftover -------------------------------


def test_master_refuses_the_pod_before_taking_any_cpu(two_nodes: Machine) -> None:
    emulator = node(two_nodes, "master")
    report = emulator.admit(CPU_OVER)
    assert (report.admitted, report.reason, report.message) == (
        False,
        "EmptyPodSharedPoolError",
        "pod rejected, largest exclusive init container requests 3 cpus, but only 2 available",
    )
    # GetPodTopologyHints validates too: no CPU hint (best-effort admits anyway, AllocatePod refuses).
    assert hints_of(report, "cpumanager") == {"cpu": []}
    cpus = emulator.cm.cpus
    assert str(cpus.get_default_cpu_set()) == "0-15"
    assert cpus.state.get_pod_cpu_assignments() == {} and cpus.get_assignments() == {}
    metrics = cpus.metrics()
    # Refused before any container was carved: no pinning request, one error; the gauges stay idle.
    assert (metrics.pinning_requests, metrics.pinning_errors, metrics.aligned_uncore_cache) == (0, 1, 0)
    assert metrics.gauges == IDLE_MASTER
    # The CPU Manager failed first: the Memory Manager's AllocatePod never ran.
    assert emulator.cm.memory.metrics().pinning_requests == 0


def test_136_fails_carving_and_keeps_the_pods_cpus(two_nodes: Machine) -> None:
    emulator = node(two_nodes, "1.36")
    report = emulator.admit(CPU_OVER)
    assert (report.admitted, report.reason, report.message) == (
        False,
        "UnexpectedAdmissionError",
        "Allocate failed due to not enough cpus available to satisfy request: requested=3, available=2, "
        "which is unexpected",
    )
    cpu_hints = hints_of(report, "cpumanager")
    assert isinstance(cpu_hints, dict) and cpu_hints["cpu"]  # validation passes: ordinary hints
    cpus = emulator.cm.cpus
    # The 4-CPU bubble (cores 1 and 2 of node 0) stays out of the shared pool, held by the pod's entry
    # alone: the sidecar's slice was carved but never stored, the init container's could not be.
    bubble = CPUSet.parse("1-2,9-10")
    assert cpus.state.get_pod_cpu_assignments() == {"cpu-over": bubble}
    assert cpus.get_assignments() == {}
    assert str(cpus.get_default_cpu_set()) == "0,3-8,11-15"
    # The stale-state sweep walks container assignments: it does not free the bubble.
    emulator.cm.remove_stale_state([])
    assert cpus.state.get_pod_cpu_assignments() == {"cpu-over": bubble}
    metrics = cpus.metrics()
    # A pinning request per exclusive container reached (sidecar, init), one error; the bubble counted as
    # allocated (one uncore cache) and in the moved gauges, but no NUMA series: no container holds a CPU.
    assert (metrics.pinning_requests, metrics.pinning_errors, metrics.aligned_uncore_cache) == (2, 1, 1)
    assert metrics.gauges == gauges(11000, 4)
    assert emulator.cm.memory.metrics().pinning_requests == 0


@pytest.mark.parametrize(("version", "admitted"), [("1.36", False), ("master", True)])
def test_the_kept_cpus_are_lost_to_later_pods(two_nodes: Machine, version: str, admitted: bool) -> None:
    """After the failure a 12-CPU pod fits the node's 15 allocatable CPUs, but at 1.36 only 11 are free: no
    CPU hint fits, best-effort admits on the Memory Manager's node 0, whose 3 free CPUs are taken first;
    the other 9 are then asked of the 8 left."""
    emulator = node(two_nodes, version)
    assert not emulator.admit(CPU_OVER).admitted
    report = emulator.admit(pod("big", 'cpu: "12", memory: 1Gi'))
    assert report.admitted is admitted
    if not admitted:
        assert (report.reason, report.message) == (
            "UnexpectedAdmissionError",
            "Allocate failed due to not enough cpus available to satisfy request: requested=9, available=8, "
            "which is unexpected",
        )


# ---- Memory Manager: the same over its budget ------------------------------------------------------


def test_master_refuses_the_memory_over_the_sidecar_pool(two_nodes: Machine) -> None:
    emulator = node(two_nodes, "master")
    report = emulator.admit(MEMORY_OVER)
    assert (report.admitted, report.reason, report.message) == (
        False,
        "EmptyPodSharedPoolError",
        f"pod rejected, largest exclusive init container requests {768 * MIB} of memory, but only "
        f"{512 * MIB} available",
    )
    assert hints_of(report, "memorymanager") == {"memory": []}
    memory = emulator.cm.memory
    assert memory.get_pod_memory(MEMORY_OVER.uid) == []
    assert memory.assigned_per_numa()[0]["memory"] == 0
    assert (memory.metrics().pinning_requests, memory.metrics().pinning_errors) == (1, 1)


def test_136_admits_the_memory_over_the_sidecar_pool(two_nodes: Machine) -> None:
    emulator = node(two_nodes, "1.36")
    report = emulator.admit(MEMORY_OVER)
    assert report.admitted, report.message
    memory = emulator.cm.memory
    blocks = {
        c.name: [(b.type, b.size, b.numa_affinity) for b in memory.get_memory(MEMORY_OVER.uid, c.name)]
        for c in MEMORY_OVER.all_containers()
    }
    # The init container gets its own 768Mi though only 512Mi are left beside the sidecar; the app container
    # (no requests) gets the pool after the sidecar: 1024 - 512 Mi. The node is charged the pod's 1Gi once.
    assert blocks == {
        "side": [("memory", 512 * MIB, (0,))],
        "init": [("memory", 768 * MIB, (0,))],
        "app": [("memory", 512 * MIB, (0,))],
    }
    assert [(b.type, b.size) for b in memory.get_pod_memory(MEMORY_OVER.uid)] == [("memory", 1024 * MIB)]
    assert memory.assigned_per_numa()[0]["memory"] == 1024 * MIB
    # One request for the pod and one per init container (the app container has none).
    assert (memory.metrics().pinning_requests, memory.metrics().pinning_errors) == (3, 0)


# ---- CPU Manager gauges: moved (1.36) or derived (master) ------------------------------------------------

# Container scope: the init container takes cores 1 and 2 of node 0; the app container reuses core 1.
REUSE = Pod(
    name="reuse",
    namespace="default",
    uid="reuse",
    containers=(container("app", 2),),
    init_containers=(container("init", 4),),
)


@pytest.mark.parametrize(
    ("version", "idle", "admitted", "removed"),
    [
        # 1.36: the reused CPUs count twice (4 + 2) and leave the shared pool twice. Removal releases the
        # app container first (nothing: the init container still holds its CPUs), then the init container's
        # 4: a residue of 2 stays, and node 0's series keeps its last value.
        ("1.36", gauges(15000, 0), gauges(9000, 6, (0, 4)), gauges(13000, 2, (0, 4))),
        ("master", IDLE_MASTER, gauges(11000, 4, (0, 4), (1, 0)), IDLE_MASTER),
    ],
)
def test_gauges_through_a_reused_init_container(
    two_nodes: Machine,
    version: str,
    idle: CPUManagerGauges,
    admitted: CPUManagerGauges,
    removed: CPUManagerGauges,
) -> None:
    emulator = node(two_nodes, version, scope="container")
    cpus = emulator.cm.cpus
    assert cpus.metrics().gauges == idle
    assert emulator.admit(REUSE).admitted
    assignments = cpus.get_assignments()["reuse"]
    assert (str(assignments["init"]), str(assignments["app"])) == ("1-2,9-10", "1,9")
    assert cpus.metrics().gauges == admitted
    emulator.remove(REUSE.uid)
    assert cpus.metrics().gauges == removed


def test_a_136_restart_recomputes_what_the_running_kubelet_moved(two_nodes: Machine, tmp_path: Path) -> None:
    """``initializeMetrics`` at start counts the union of the container assignments: 4, not the 6 the
    running kubelet reached; the per-NUMA gauge only for node 0."""
    first = node(two_nodes, "1.36", scope="container", state=tmp_path)
    assert first.admit(REUSE).admitted
    assert first.cm.cpus.metrics().gauges == gauges(9000, 6, (0, 4))
    restarted = node(two_nodes, "1.36", scope="container", state=tmp_path)
    assert restarted.cm.cpus.metrics().gauges == gauges(11000, 4, (0, 4))


def test_a_136_pod_level_allocation_has_no_numa_series(two_nodes: Machine) -> None:
    """At 1.36 AllocatePod moves the gauges when it takes the bubble, before any container holds a CPU: the
    per-NUMA gauge is set from the (still empty) container assignments; 1.37 (v1.37.2's policy_static.go
    has the same metrics code) too. Master counts the bubble on its node."""
    by_version = {}
    for version in ("1.36", "1.37", "master"):
        emulator = node(two_nodes, version)
        assert emulator.admit(MEMORY_OVER if version != "master" else _fits(MEMORY_OVER)).admitted
        by_version[version] = emulator.cm.cpus.metrics().gauges
    assert by_version == {
        "1.36": gauges(11000, 4),
        "1.37": gauges(11000, 4),
        "master": gauges(11000, 4, (0, 4), (1, 0)),
    }


def _fits(subject: Pod) -> Pod:
    """``subject`` with its init container's memory cut to what the sidecar leaves (512Mi): master admits it
    and carves the CPUs as 1.36 does for ``subject``."""
    side = subject.init_containers[0]
    return Pod(
        name=subject.name,
        namespace=subject.namespace,
        uid=subject.uid,
        containers=subject.containers,
        init_containers=(side, container("init", 2, "512Mi")),
        resources=subject.resources,
    )


@pytest.mark.parametrize("version", ["1.36", "1.37", "master"])
def test_an_unreadable_memory_request_is_the_refusal(two_nodes: Machine, version: str) -> None:
    """A container memory request that is not a whole number of bytes: ``validatePodScopeResources`` returns
    ``getContainerRequestedResources``' error, so no memory hint, then ``EmptyPodSharedPoolError`` carrying
    that text (the same at v1.36.3 and master)."""
    budget = {"cpu": Quantity.parse("4"), "memory": Quantity.parse("1Gi")}
    subject = Pod(
        name="frac",
        namespace="default",
        uid="frac",
        containers=(container("a", 1, "1500m"), Container(name="b")),
        resources=ResourceRequirements(requests=budget, limits=budget),
    )
    emulator = node(two_nodes, version)
    report = emulator.admit(subject)
    assert (report.admitted, report.reason, report.message) == (
        False,
        "EmptyPodSharedPoolError",
        "[memorymanager] failed to represent quantity as int64",
    )
    assert hints_of(report, "memorymanager") == {"memory": []}
    memory = emulator.cm.memory.metrics()
    assert (memory.pinning_requests, memory.pinning_errors) == (1, 1)
