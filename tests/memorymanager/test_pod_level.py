"""The Memory Manager at pod level (``PodLevelResourceManagers``, KEP-5526) through ``NodeEmulator``:
admission, the ``memory_manager_state`` it writes, removal and a restart from the state directory; and the
other side: the gate off (or a 1.35 kubelet, which has no such gate) leaves a pod with ``spec.resources``
to the shared pool, a 1.33 kubelet serves it per container.

Expected figures are worked out by hand from the kubelet's rules (pod module docstring of
``kubeletemu.memorymanager.pod_level``), not computed with the code under test.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from hostprobe.synthetic import SyntheticHost
from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.memorymanager import MemoryManagerMetrics
from kubeletemu.pod import Pod
from tests.nodes import probe_machine, static_managers
from tests.versions.helpers import versioned_config

HOST = SyntheticHost(sockets=2, cores_per_socket=4, threads_per_core=2)
GATE_ON = {"PodLevelResourceManagers": True}
MIB = 1 << 20
STATE_FILE = "memory_manager_state"

# A 2Gi pod: a regular init container (512Mi, exclusive), a sidecar (256Mi, exclusive), an exclusive app
# container (1Gi) and one without requests (the shared pool: 2048 - 256 - 1024 = 768Mi).
MIXED = """apiVersion: v1
kind: Pod
metadata: {name: plr, namespace: default, uid: uid-plr}
spec:
  resources: {requests: {cpu: "4", memory: 2Gi}, limits: {cpu: "4", memory: 2Gi}}
  initContainers:
  - name: init
    resources: {limits: {cpu: "1", memory: 512Mi}}
  - name: side
    restartPolicy: Always
    resources: {limits: {cpu: "1", memory: 256Mi}}
  containers:
  - name: app
    resources: {limits: {cpu: "1", memory: 1Gi}}
  - name: shared
"""

# The sidecar and the app container take the whole 1Gi budget while a container needs the shared pool.
EMPTY_POOL = """apiVersion: v1
kind: Pod
metadata: {name: full, namespace: default, uid: uid-full}
spec:
  resources: {requests: {cpu: "4", memory: 1Gi}, limits: {cpu: "4", memory: 1Gi}}
  initContainers:
  - name: side
    restartPolicy: Always
    resources: {limits: {cpu: "1", memory: 512Mi}}
  containers:
  - name: app
    resources: {limits: {cpu: "1", memory: 512Mi}}
  - name: shared
"""


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return probe_machine(tmp_path_factory.mktemp("host"), HOST)


def node(
    machine: Machine,
    state: Path | None,
    version: str = "master",
    gates: Mapping[str, bool] | None = GATE_ON,
    scope: str = "pod",
) -> NodeEmulator:
    text = versioned_config(version, scope=scope, managers=static_managers(), gates=gates)
    return NodeEmulator(parse_config(text), machine, state)


def parse(manifest: str) -> Pod:
    (pod,) = parse_pods(manifest)
    return pod


def memory_of(emulator: NodeEmulator, pod: Pod) -> dict[str, list[tuple[str, int, tuple[int, ...]]]]:
    return {
        c.name: [(b.type, b.size, b.numa_affinity) for b in emulator.cm.memory.get_memory(pod.uid, c.name)]
        for c in pod.all_containers()
    }


def state_doc(state: Path) -> dict[str, Any]:
    """The checkpoint's content: the file (1.36's V2), or the ``data`` of 1.37's V3, which holds the pod
    entries (its top-level fields are the embedded V1's)."""
    doc: dict[str, Any] = json.loads((state / STATE_FILE).read_bytes())
    if "data" in doc:
        data: dict[str, Any] = json.loads(doc["data"])
        return data
    return doc


def reserved(doc: Mapping[str, Any], node_id: int) -> int:
    value: int = doc["machineState"][str(node_id)]["memoryMap"]["memory"]["reserved"]
    return value


@pytest.mark.parametrize("version", ["1.36", "1.37", "master"])
def test_pod_is_allocated_once_and_partitioned(machine: Machine, tmp_path: Path, version: str) -> None:
    emulator = node(machine, tmp_path, version)
    pod = parse(MIXED)
    report = emulator.admit(pod)
    assert report.admitted, report.message
    # Every container on the pod's NUMA node (0: the narrowest preferred mask, lowest first).
    assert memory_of(emulator, pod) == {
        "init": [("memory", 512 * MIB, (0,))],
        "side": [("memory", 256 * MIB, (0,))],
        "app": [("memory", 1024 * MIB, (0,))],
        "shared": [("memory", 768 * MIB, (0,))],
    }
    assert [(b.type, b.size, b.numa_affinity) for b in emulator.cm.memory.get_pod_memory(pod.uid)] == [
        ("memory", 2048 * MIB, (0,))
    ]
    doc = state_doc(tmp_path)
    # The node is charged the pod's 2Gi once (not 512 + 256 + 1024 + 768), one assignment per resource.
    assert reserved(doc, 0) == 2048 * MIB
    assert doc["machineState"]["0"]["numberOfAssignments"] == 1
    assert doc["podEntries"] == {
        "uid-plr": {"memoryBlocks": [{"numaAffinity": [0], "type": "memory", "size": 2048 * MIB}]}
    }
    assert doc["entries"]["uid-plr"]["shared"] == [{"numaAffinity": [0], "type": "memory", "size": 768 * MIB}]
    # One request for the pod, one per init container, one per app container with requests.
    assert emulator.cm.memory.metrics().pinning_requests == 1 + 2 + 1


def test_removal_releases_the_pod_memory(machine: Machine, tmp_path: Path) -> None:
    emulator = node(machine, tmp_path)
    pod = parse(MIXED)
    assert emulator.admit(pod).admitted
    emulator.remove(pod.uid)
    doc = state_doc(tmp_path)
    assert reserved(doc, 0) == 0
    assert doc["machineState"]["0"]["numberOfAssignments"] == 0
    assert "podEntries" not in doc and "entries" not in doc


def test_last_container_releases_the_pod(machine: Machine) -> None:
    """Containers go one by one: nothing is released until the pod's last container is gone."""
    emulator = node(machine, None)
    pod = parse(MIXED)
    assert emulator.admit(pod).admitted
    memory = emulator.cm.memory
    for name in ("init", "side", "app"):
        memory.remove_container_by_ref(pod.uid, name)
        assert memory.assigned_per_numa()[0]["memory"] == 2048 * MIB
        assert memory.get_pod_memory(pod.uid)
    memory.remove_container_by_ref(pod.uid, "shared")
    assert memory.assigned_per_numa()[0]["memory"] == 0
    assert memory.get_pod_memory(pod.uid) == []


def test_restart_restores_the_pod_entry(machine: Machine, tmp_path: Path) -> None:
    first = node(machine, tmp_path)
    pod = parse(MIXED)
    assert first.admit(pod).admitted
    before = memory_of(first, pod)
    restarted = node(machine, tmp_path)
    assert restarted.dropped_at_startup == []
    assert memory_of(restarted, pod) == before
    assert [b.size for b in restarted.cm.memory.get_pod_memory(pod.uid)] == [2048 * MIB]
    assert restarted.cm.memory.assigned_per_numa()[0]["memory"] == 2048 * MIB
    # Released after the restart, the pod gives back exactly what it held.
    restarted.remove(pod.uid)
    assert reserved(state_doc(tmp_path), 0) == 0


@pytest.mark.parametrize(
    ("version", "refusal"),
    [
        # The CPU Manager starts first: its V3 file fails 1.36's V2 and V1 readings without the gate.
        ("1.36", "could not restore state from checkpoint: json: cannot unmarshal object"),
        ("1.37", "the expected machine state is different from the real one"),
        ("master", "the expected machine state is different from the real one"),
    ],
)
def test_restart_with_the_gate_off_refuses_the_pod_level_state(
    machine: Machine, tmp_path: Path, version: str, refusal: str
) -> None:
    """1.36 without the gate refuses the files it wrote with the gate on (the memory file's case, V2
    failing V1's checksum, the rollback KEP-5526 calls higher risk, is in test_checkpoint_reads.py). 1.37
    reads its V3 file whatever the gate, but takes the pod entries only with it on: the pod's memory,
    still reserved in the machine state, belongs to no assignment, and the Memory Manager's state
    validation refuses to start."""
    assert node(machine, tmp_path, version).admit(parse(MIXED)).admitted
    with pytest.raises(Exception, match=refusal):
        node(machine, tmp_path, version, gates=None)


def test_empty_shared_pool_is_rejected(machine: Machine) -> None:
    emulator = node(machine, None)
    report = emulator.admit(parse(EMPTY_POOL))
    assert not report.admitted
    memory_hints = [h for n, h in report.containers[0].provider_hints if n == "memorymanager"]
    # Empty hints for the pod's memory; best-effort admits anyway, then AllocatePod refuses.
    assert memory_hints == [{"memory": []}]
    assert (report.reason, report.message) == (
        "EmptyPodSharedPoolError",
        "pod rejected, sum of exclusive container memory requests equals pod budget, leaving no memory for "
        "shared containers",
    )
    assert emulator.cm.memory.metrics() == MemoryManagerMetrics(pinning_requests=1, pinning_errors=1)


def test_empty_shared_pool_fails_the_topology_manager_when_restricted(machine: Machine) -> None:
    text = versioned_config("master", "restricted", "pod", managers=static_managers(), gates=GATE_ON)
    report = NodeEmulator(parse_config(text), machine).admit(parse(EMPTY_POOL))
    assert (report.admitted, report.reason) == (False, "TopologyAffinityError")


def test_hints_are_for_the_pod_budget(machine: Machine) -> None:
    """A 20Gi pod does not fit one NUMA node (16Gi each, node 0 less its reservation): the pod's own
    request, not its containers' 1Gi, decides the hints."""
    manifest = MIXED.replace("memory: 2Gi}", "memory: 20Gi}")
    emulator = node(machine, None)
    pod = parse(manifest)
    report = emulator.admit(pod)
    assert report.admitted, report.message
    (hints,) = [h for n, h in report.containers[0].provider_hints if n == "memorymanager"]
    assert hints is not None
    assert [(h.affinity.bits() if h.affinity else None, h.preferred) for h in hints["memory"]] == [
        ([0, 1], True)
    ]
    assert [(b.size, b.numa_affinity) for b in emulator.cm.memory.get_pod_memory(pod.uid)] == [
        (20480 * MIB, (0, 1))
    ]


@pytest.mark.parametrize(
    ("version", "gates"), [("1.36", None), ("master", None), ("1.35", None), ("1.34", None)]
)
def test_without_the_gate_the_pod_is_left_to_the_shared_pool(
    machine: Machine, version: str, gates: Mapping[str, bool] | None
) -> None:
    """Gate off (1.36, master) or no gate at all (1.34, 1.35): kubernetes#133279's skip, nothing pinned."""
    emulator = node(machine, None, version, gates)
    pod = parse(MIXED)
    report = emulator.admit(pod)
    assert report.admitted
    assert memory_of(emulator, pod) == {c: [] for c in ("init", "side", "app", "shared")}
    assert emulator.cm.memory.get_pod_memory(pod.uid) == []


def test_133_serves_the_containers(machine: Machine) -> None:
    """A 1.33 kubelet has no pod-level check: each container with requests is pinned on its own."""
    emulator = node(machine, None, "1.33", {"PodLevelResources": True})
    pod = parse(MIXED)
    assert emulator.admit(pod).admitted
    held = memory_of(emulator, pod)
    assert held["app"] == [("memory", 1024 * MIB, (0,))]
    assert held["shared"] == []
    assert emulator.cm.memory.get_pod_memory(pod.uid) == []


SHARED_FIRST = """apiVersion: v1
kind: Pod
metadata: {name: first, namespace: default, uid: uid-first}
spec:
  resources: {requests: {cpu: "4", memory: 2Gi}, limits: {cpu: "4", memory: 2Gi}}
  containers:
  - name: shared
  - name: app
    resources: {limits: {cpu: "1", memory: 1Gi}}
"""


def test_container_scope_pins_equivalent_guaranteed_containers_only(machine: Machine) -> None:
    """Gate on, container scope: no pod entry; a container whose requests equal its limits gets its own
    memory from the node, one that is not asks for nothing (an empty block list)."""
    emulator = node(machine, None, scope="container")
    pod = parse(SHARED_FIRST)
    report = emulator.admit(pod)
    assert report.admitted, report.message
    assert memory_of(emulator, pod) == {"shared": [], "app": [("memory", 1024 * MIB, (0,))]}
    assert emulator.cm.memory.get_pod_memory(pod.uid) == []
    assert emulator.cm.memory.assigned_per_numa()[0]["memory"] == 1024 * MIB


def test_container_scope_refuses_a_shared_container_after_a_pinned_one(machine: Machine) -> None:
    """The kubelet's quirk, kept: a container asking for nothing gets no hints, so the merged hint spans
    every NUMA node, and that mask "violates" node 0, which already holds a single-NUMA allocation of the
    same pod's earlier container."""
    report = node(machine, None, scope="container").admit(parse(MIXED))
    assert (report.admitted, report.reason, report.message) == (
        False,
        "UnexpectedAdmissionError",
        "Allocate failed due to [memorymanager] preferred hint violates NUMA node allocation, which is "
        "unexpected",
    )
