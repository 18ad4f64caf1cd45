"""Checkpoint formats that follow ``kubeletVersion`` (``data/behaviours/checkpoints.json``): the bytes each
version writes, each version reading the others' files, and corrupt files refused with the kubelet's text,
all through ``NodeEmulator`` with a state directory.

Checksums are recomputed here the way the kubelet computes them (FNV-32a over go-spew's ``%#v`` dump of
the struct, written out by hand below), not with the code under test.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
from fnv_hash_fast import fnv1a_32

from hostprobe.synthetic import SyntheticHost
from kubeletemu.config import parse_config
from kubeletemu.cpumanager.errors import StateError
from kubeletemu.cpumanager.state import formats as cpu_formats
from kubeletemu.cpumanager.state.formats import data_checksum
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.memorymanager.errors import MemoryManagerError
from kubeletemu.registry import REGISTRY_DIR
from kubeletemu.versions.behaviours import behaviours, step_at
from tests.nodes import probe_machine, static_managers
from tests.versions.helpers import pod_manifest, versioned_config

# 2 NUMA nodes of 2 cores x 2 threads: node 0 holds CPUs 0,1,4,5? (SyntheticHost numbering) - the tests
# read the sets from the files, not from this comment.
HOST = SyntheticHost(sockets=2, cores_per_socket=2, threads_per_core=2)

PLAIN_POD = pod_manifest("plain", 'cpu: "2", memory: 512Mi')


def pod_level_pod(container_cpu: str) -> str:
    """Pod-level resources: a 2-CPU bubble, ``container_cpu`` exclusive CPUs for the container, the rest
    shared in the pod."""
    return pod_manifest(
        "plr",
        f'cpu: "{container_cpu}", memory: 512Mi',
        'requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}',
    )


GATE_ON = {"PodLevelResourceManagers": True}
CPU_FILE = "cpu_manager_state"
MEMORY_FILE = "memory_manager_state"


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return probe_machine(tmp_path_factory.mktemp("host"), HOST)


def node(
    machine: Machine, state: Path, version: str, gates: Mapping[str, bool] | None = None
) -> NodeEmulator:
    """Pod scope, the static CPU and Memory Managers."""
    text = versioned_config(version, scope="pod", managers=static_managers(), gates=gates)
    return NodeEmulator(parse_config(text), machine, state)


def admit(emulator: NodeEmulator, manifest: str) -> None:
    (pod,) = parse_pods(manifest)
    report = emulator.admit(pod)
    assert report.admitted, report.reason


def cpu_doc(state: Path) -> dict[str, object]:
    doc: dict[str, object] = json.loads((state / CPU_FILE).read_bytes())
    return doc


# ---- the kubelet's checksums, written out -----------------------------------------------------------


def _spew_entries(entries: dict[str, dict[str, str]]) -> str:
    pods = " ".join(
        f"{pod}:map[" + " ".join(f"{c}:{cpus}" for c, cpus in sorted(ctrs.items())) + "]"
        for pod, ctrs in sorted(entries.items())
    )
    return f"map[{pods}]"


def v2_checksum(doc: dict[str, object]) -> int:
    """``CPUManagerCheckpointV2`` under its legacy name ``CPUManagerCheckpoint`` (what 1.35 verifies)."""
    entries = doc.get("entries", {})
    assert isinstance(entries, dict)
    dump = (
        f"(*state.CPUManagerCheckpoint){{PolicyName:(string){doc['policyName']} "
        f"DefaultCPUSet:(string){doc['defaultCpuSet']} "
        f"Entries:(map[string]map[string]string){_spew_entries(entries)} Checksum:(checksum.Checksum)0}}"
    )
    return fnv1a_32(dump.encode())


def _spew_cpuset(text: str) -> str:
    cpus: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return "(cpuset.CPUSet){elems:(map[int]struct {})map[" + " ".join(f"{c}:{{}}" for c in cpus) + "]}"


def v3_checksum(doc: dict[str, object]) -> int:
    """1.36's V3 (``CPUManagerCheckpoint`` with ``PodEntries``): each pod's ``cpuset.CPUSet`` dumped as
    its ``elems`` map."""
    entries = doc.get("entries", {})
    pods = doc.get("podEntries", {})
    assert isinstance(entries, dict) and isinstance(pods, dict)
    pod_dump = " ".join(f"{uid}:{{CPUSet:{_spew_cpuset(e['cpuSet'])}}}" for uid, e in sorted(pods.items()))
    dump = (
        f"(*state.CPUManagerCheckpoint){{PolicyName:(string){doc['policyName']} "
        f"DefaultCPUSet:(string){doc['defaultCpuSet']} "
        f"Entries:(map[string]map[string]string){_spew_entries(entries)} "
        f"PodEntries:(state.PodCPUAssignments)map[{pod_dump}] Checksum:(checksum.Checksum)0}}"
    )
    return fnv1a_32(dump.encode())


# ---- registry ----------------------------------------------------------------------------------------


def test_checkpoint_formats_registered_with_their_versions() -> None:
    cpu = behaviours()["cpumanager.checkpoint-format"]
    assert [(c.since, c.ref) for c in cpu.changes] == [
        ("1.36", "kubernetes#134768, kubernetes#137751"),
        ("1.37", "kubernetes#139102, kubernetes#139087"),
    ]
    versions = ("1.33", "1.34", "1.35", "1.36", "1.37", "master")
    steps = [step_at("cpumanager.checkpoint-format", v) for v in versions]
    assert steps == [0, 0, 0, 1, 2, 2]
    memory = [step_at("memorymanager.checkpoint-format", v) for v in ("1.35", "1.36", "1.37", "master")]
    assert memory == [0, 1, 2, 2]


def test_data_checksum_matches_the_upstream_vector() -> None:
    """The vector of kubernetes#137820's review: ``checksum.New`` of the data string."""
    assert data_checksum('{"policyName":"none","defaultCPUSet":"4-6"}') == 657950972


# ---- bytes written ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "gates"), [("1.33", None), ("1.34", None), ("1.35", None), ("1.36", None)]
)
def test_v2_written_up_to_136_without_the_gate(
    machine: Machine, tmp_path: Path, version: str, gates: Mapping[str, bool] | None
) -> None:
    admit(node(machine, tmp_path, version, gates), PLAIN_POD)
    doc = cpu_doc(tmp_path)
    assert list(doc) == ["policyName", "defaultCpuSet", "entries", "checksum"]
    assert doc["entries"] == {"uid-plain": {"c": doc["entries"]["uid-plain"]["c"]}}  # type: ignore[index]
    assert doc["checksum"] == v2_checksum(doc)


def test_136_without_the_gate_writes_the_bytes_135_writes(machine: Machine, tmp_path: Path) -> None:
    admit(node(machine, tmp_path / "a", "1.35"), PLAIN_POD)
    admit(node(machine, tmp_path / "b", "1.36"), PLAIN_POD)
    assert (tmp_path / "a" / CPU_FILE).read_bytes() == (tmp_path / "b" / CPU_FILE).read_bytes()
    assert (tmp_path / "a" / MEMORY_FILE).read_bytes() == (tmp_path / "b" / MEMORY_FILE).read_bytes()


def test_136_with_the_gate_writes_v3_with_pod_entries(machine: Machine, tmp_path: Path) -> None:
    admit(node(machine, tmp_path, "1.36", GATE_ON), pod_level_pod("1"))
    doc = cpu_doc(tmp_path)
    assert list(doc) == ["policyName", "defaultCpuSet", "entries", "podEntries", "checksum"]
    pods = doc["podEntries"]
    assert isinstance(pods, dict) and list(pods) == ["uid-plr"]
    assert list(pods["uid-plr"]) == ["cpuSet"]
    assert doc["checksum"] == v3_checksum(doc)
    # Not the V2 checksum of the same fields: a 1.35 kubelet cannot verify it.
    assert doc["checksum"] != v2_checksum(doc)


@pytest.mark.parametrize("gates", [None, GATE_ON])
def test_master_writes_v4_with_an_embedded_v2(
    machine: Machine, tmp_path: Path, gates: Mapping[str, bool] | None
) -> None:
    manifest = pod_level_pod("1") if gates else PLAIN_POD
    admit(node(machine, tmp_path, "master", gates), manifest)
    doc = cpu_doc(tmp_path)
    assert list(doc) == ["policyName", "defaultCpuSet", "entries", "checksum", "data", "dataChecksum"]
    assert "podEntries" not in doc
    # The embedded V2 keeps the checksum a 1.35 kubelet verifies; dataChecksum covers the data string.
    assert doc["checksum"] == v2_checksum(doc)
    data = doc["data"]
    assert isinstance(data, str)
    assert doc["dataChecksum"] == fnv1a_32(("(string)" + data).encode())
    inner = json.loads(data)
    assert {k: inner[k] for k in ("policyName", "defaultCpuSet", "entries")} == {
        k: doc[k] for k in ("policyName", "defaultCpuSet", "entries")
    }
    if gates:
        assert list(inner) == ["policyName", "defaultCpuSet", "entries", "podEntries"]
        assert list(inner["podEntries"]) == ["uid-plr"]
    else:
        assert "podEntries" not in inner


# ---- reading another version's file ----------------------------------------------------------------


def test_136_reads_a_master_file_through_its_v2_losing_pod_entries(machine: Machine, tmp_path: Path) -> None:
    """Downgrade: the bubble is the container's own 2 CPUs, so the V2 part alone is a consistent state.

    The memory file is not: master (1.37's V3) keeps the pod's memory in ``data`` only, and 1.36 reads the
    embedded V1, where the pod's reservation belongs to no assignment — the Memory Manager refuses to start
    (KEP-5526's "higher risk" rollback). The CPU file alone shows the CPU Manager's reading."""
    writer = node(machine, tmp_path, "master", GATE_ON)
    admit(writer, pod_level_pod("2"))
    assert writer.cm.cpus.state.get_pod_cpu_assignments()
    container_cpus = writer.cm.cpus.state.get_cpu_assignments()["uid-plr"]["c"]
    with pytest.raises(MemoryManagerError, match="the expected machine state is different from the real one"):
        node(machine, tmp_path, "1.36", GATE_ON)
    read = cpu_formats.load(
        (tmp_path / CPU_FILE).read_bytes(), cpu_formats.CPUCheckpointFormat.for_kubelet("1.36", GATE_ON)
    )
    assert (read.read_as, read.pod_entries) == (cpu_formats.V2, {})
    assert read.entries is not None and read.entries["uid-plr"] == {"c": str(container_cpus)}


def test_135_reads_a_master_file(machine: Machine, tmp_path: Path) -> None:
    writer = node(machine, tmp_path, "master")
    admit(writer, PLAIN_POD)
    expected = writer.cm.cpus.state.get_cpu_assignments()
    assert node(machine, tmp_path, "1.35").cm.cpus.state.get_cpu_assignments() == expected


def test_master_reads_a_135_file_and_rewrites_it_as_v4(machine: Machine, tmp_path: Path) -> None:
    writer = node(machine, tmp_path, "1.35")
    admit(writer, PLAIN_POD)
    expected = writer.cm.cpus.state.get_cpu_assignments()
    upgraded = node(machine, tmp_path, "master")
    assert upgraded.cm.cpus.state.get_cpu_assignments() == expected
    upgraded.remove("uid-plain")
    assert "dataChecksum" in cpu_doc(tmp_path)


def test_master_reads_a_136_v3_file_keeping_pod_entries(machine: Machine, tmp_path: Path) -> None:
    writer = node(machine, tmp_path, "1.36", GATE_ON)
    admit(writer, pod_level_pod("1"))
    pods = writer.cm.cpus.state.get_pod_cpu_assignments()
    assert pods
    assert node(machine, tmp_path, "master", GATE_ON).cm.cpus.state.get_pod_cpu_assignments() == pods


V1_SHAPE_ERROR = (
    "json: cannot unmarshal object into Go struct field CPUManagerCheckpointV1.entries of type string"
)


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        # V1 first, failing on the entries' shape; then V2, whose checksum fails: V2's error is returned
        # (cpumanager.checkpoint-read-order).
        ("1.35", "checkpoint is corrupted"),
        # The gate off: V2's checksum fails, then the V1 fallback on the entries' shape, the last error.
        ("1.36", V1_SHAPE_ERROR),
    ],
)
def test_a_v3_file_is_refused_without_v3(
    machine: Machine, tmp_path: Path, version: str, problem: str
) -> None:
    admit(node(machine, tmp_path, "1.36", GATE_ON), pod_level_pod("1"))
    with pytest.raises(StateError) as caught:
        node(machine, tmp_path, version, None)
    assert str(caught.value) == (
        f"could not restore state from checkpoint: {problem}, please drain this node and delete the CPU "
        f'manager checkpoint file "{tmp_path / CPU_FILE}" before restarting Kubelet'
    )


# ---- corrupt files ---------------------------------------------------------------------------------


def test_master_refuses_a_v4_file_whose_data_does_not_match(machine: Machine, tmp_path: Path) -> None:
    """No fallback to the (still valid) embedded V2 once ``data`` is there (kubernetes#139102), the error
    wrapped as kubernetes#139087 does."""
    admit(node(machine, tmp_path, "master"), PLAIN_POD)
    doc = cpu_doc(tmp_path)
    doc["dataChecksum"] = int(doc["dataChecksum"]) ^ 1  # type: ignore[call-overload]
    (tmp_path / CPU_FILE).write_text(json.dumps(doc, separators=(",", ":")))
    with pytest.raises(StateError) as caught:
        node(machine, tmp_path, "master")
    assert str(caught.value) == (
        "could not restore state from checkpoint: could not load v4 checkpoint: checkpoint is corrupted, "
        f'please drain this node and delete the CPU manager checkpoint file "{tmp_path / CPU_FILE}" before '
        "restarting Kubelet"
    )
    # A 1.35 kubelet reads the same file: only the embedded V2 is checked.
    assert node(machine, tmp_path, "1.35").cm.cpus.state.get_cpu_assignments()["uid-plain"]


def test_136_with_the_gate_reads_a_zero_v3_checksum_as_v2(machine: Machine, tmp_path: Path) -> None:
    """V3 takes no zero checksum, V2 does: the file is read as V2, its ``podEntries`` dropped, and the
    pod's shared CPU is then in no set, which the static policy's ``validateState`` refuses."""
    admit(node(machine, tmp_path, "1.36", GATE_ON), pod_level_pod("1"))
    doc = cpu_doc(tmp_path)
    pods, entries = doc["podEntries"], doc["entries"]
    assert isinstance(pods, dict) and isinstance(entries, dict)
    assert pods["uid-plr"]["cpuSet"] != entries["uid-plr"]["c"]  # the bubble holds a CPU no container owns
    doc["checksum"] = 0
    (tmp_path / CPU_FILE).write_text(json.dumps(doc, separators=(",", ":")))
    with pytest.raises(
        StateError, match=r"^current set of available CPUs .* doesn't match with CPUs in state"
    ):
        node(machine, tmp_path, "1.36", GATE_ON)


# ---- Memory Manager ---------------------------------------------------------------------------------


def test_memory_136_with_the_gate_checksums_pod_entries(machine: Machine, tmp_path: Path) -> None:
    """Same JSON (``podEntries`` empty, omitted), another checksum: the dump carries ``PodEntries``."""
    admit(node(machine, tmp_path / "a", "1.35"), PLAIN_POD)
    admit(node(machine, tmp_path / "b", "1.36", GATE_ON), PLAIN_POD)
    old = json.loads((tmp_path / "a" / MEMORY_FILE).read_bytes())
    new = json.loads((tmp_path / "b" / MEMORY_FILE).read_bytes())
    assert "podEntries" not in new
    assert {k: v for k, v in old.items() if k != "checksum"} == {
        k: v for k, v in new.items() if k != "checksum"
    }
    assert old["checksum"] != new["checksum"]


def test_memory_135_refuses_a_136_gate_on_file(machine: Machine, tmp_path: Path) -> None:
    admit(node(machine, tmp_path, "1.36", GATE_ON), PLAIN_POD)
    (tmp_path / CPU_FILE).unlink()  # the CPU Manager's V3 would be refused first
    # Without its pod's file too: a pod holding CPUs the (now missing) CPU checkpoint recorded stops the
    # start-up before any manager reads its file (missing_checkpoints).
    shutil.rmtree(tmp_path / REGISTRY_DIR)
    with pytest.raises(MemoryManagerError) as caught:
        node(machine, tmp_path, "1.35")
    assert str(caught.value) == (
        "could not restore state from checkpoint: checkpoint is corrupted, please drain this node and "
        f'delete the memory manager checkpoint file "{tmp_path / MEMORY_FILE}" before restarting Kubelet'
    )


def test_memory_zero_checksum_refused_by_135_accepted_by_136(machine: Machine, tmp_path: Path) -> None:
    admit(node(machine, tmp_path, "1.35"), PLAIN_POD)
    doc = json.loads((tmp_path / MEMORY_FILE).read_bytes())
    doc["checksum"] = 0
    (tmp_path / MEMORY_FILE).write_text(json.dumps(doc, separators=(",", ":")))
    with pytest.raises(MemoryManagerError, match="checkpoint is corrupted"):
        node(machine, tmp_path, "1.35")
    assert node(machine, tmp_path, "1.36").cm.memory.state.get_memory_assignments()["uid-plain"]
