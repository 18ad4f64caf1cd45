"""How each kubelet version *reads* the checkpoints (``cpumanager/state/formats.py``,
``memorymanager/state/formats.py``): hand-built files from the kubelet's own test table, files the
emulator writes, and corrupt files refused with the kubelet's text.

The memory files are the rows of master's ``memorymanager/state/state_checkpoint_test.go``
(``TestCheckpointStateRestore``, kubernetes#139626; code index id 54612244991): their checksums were
computed by the kubelet, so they check the emulator's dumps independently of the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubeletemu.cpumanager.errors import CheckpointError as CPUCheckpointError
from kubeletemu.cpumanager.state import formats as cpu
from kubeletemu.memorymanager.errors import MemoryManagerError
from kubeletemu.memorymanager.state import (
    Block,
    CheckpointError,
    CheckpointState,
    MemoryTable,
    NUMANodeState,
    compute_checksum,
)
from kubeletemu.memorymanager.state.checkpoint import LAYOUT_CLASSIC, LAYOUT_POD_ENTRIES, normalise
from kubeletemu.memorymanager.state.formats import MemoryCheckpointFormat

# ---- the upstream table's files ----------------------------------------------------------------------

MACHINE = (
    '{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,'
    '"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}}'
)
ENTRIES = '{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}}'
POD_ENTRIES = '{"pod":{"memoryBlocks":[{"numaAffinity":[0],"type":"memory","size":512}]}}'


def v1_file(checksum: int, entries: str = ENTRIES) -> str:
    return f'{{"policyName":"static","machineState":{MACHINE},"entries":{entries},"checksum":{checksum}}}'


def v2_file(checksum: int, pod_entries: str = POD_ENTRIES) -> str:
    return (
        f'{{"policyName":"static","machineState":{MACHINE},"entries":{ENTRIES},'
        f'"podEntries":{pod_entries},"checksum":{checksum}}}'
    )


V1_CHECKSUM = 4215593881  # "Restore checkpoint from v1 (migration)"
V2_CHECKSUM = 1278640530  # "Restore checkpoint from v2 with PodLevelResourceManagers enabled"
# "Fail to restore checkpoint from v1 with invalid checksum": an unknown key, a wrong checksum.
V1_BAD = v1_file(101010, ENTRIES.replace("numaAffinity", "affinity"))


def test_the_upstream_checksums_are_the_emulators() -> None:
    """The table's V1 and V2 checksums, and its V3 ``dataChecksum`` values (``checksum.New`` of the
    ``data`` string, the same function the CPU Manager's V4 uses)."""
    assert compute_checksum(normalise(json.loads(v1_file(0))), LAYOUT_CLASSIC) == V1_CHECKSUM
    assert compute_checksum(normalise(json.loads(v2_file(0))), LAYOUT_POD_ENTRIES) == V2_CHECKSUM
    data = f'{{"policyName":"static","machineState":{MACHINE},"entries":{ENTRIES}}}'
    assert cpu.data_checksum(data) == 1849615440
    assert cpu.data_checksum('{"unknownField":"value",' + data[1:]) == 2100279793
    assert cpu.data_checksum(data[:-1] + f',"podEntries":{POD_ENTRIES}}}') == 637296054


def v1_named_checksum() -> int:
    """``checksum.New`` of a ``MemoryManagerCheckpointV1`` (what 1.36 before the legacy-name fix
    wrote): the verified legacy dump with the type's own name."""
    raw = normalise(json.loads(v1_file(0)))
    return compute_checksum(raw, LAYOUT_CLASSIC, "MemoryManagerCheckpointV1")


OFF = MemoryCheckpointFormat.for_kubelet("1.36", {"PodLevelResourceManagers": False})
ON = MemoryCheckpointFormat.for_kubelet("1.36", {"PodLevelResourceManagers": True})
OLD = MemoryCheckpointFormat.for_kubelet("1.35")
CORRUPT = "checkpoint is corrupted"
POD_BLOCKS = {"pod": [Block((0,), "memory", 512)]}

# (file, what 1.35 / 1.36 gate off / 1.36 gate on read: the pod-level blocks, or the error text)
ROWS = [
    pytest.param(v1_file(V1_CHECKSUM), None, None, None, id="v1"),
    pytest.param(v1_file(0), CORRUPT, None, None, id="v1-zero-checksum"),
    pytest.param(V1_BAD, CORRUPT, CORRUPT, CORRUPT, id="v1-bad-checksum"),
    pytest.param(v1_file(v1_named_checksum()), CORRUPT, None, CORRUPT, id="v1-checksum-under-v1-name"),
    pytest.param(v2_file(V2_CHECKSUM), CORRUPT, CORRUPT, POD_BLOCKS, id="v2"),
    # Gate on: V2 takes no zero, V1 does, and the V2 attempt's podEntries stay (kubernetes#139050).
    pytest.param(v2_file(0), CORRUPT, None, POD_BLOCKS, id="v2-zero-checksum"),
    pytest.param(v2_file(101010), CORRUPT, CORRUPT, CORRUPT, id="v2-bad-checksum"),
    # 1.35's struct and 1.36's V1 have no podEntries field, whatever it holds; 1.36's V2 fails on it and
    # V1 then reads the file.
    pytest.param(v2_file(V1_CHECKSUM, "5"), None, None, None, id="v1-with-bad-pod-entries"),
]


@pytest.mark.parametrize(("blob", "old", "off", "on"), ROWS)
def test_memory_reads_per_version(blob: str, old: object, off: object, on: object) -> None:
    for fmt, expected in ((OLD, old), (OFF, off), (ON, on)):
        if isinstance(expected, str):
            with pytest.raises(CheckpointError) as caught:
                fmt.unmarshal(blob)
            assert str(caught.value) == expected, fmt
            continue
        checkpoint = fmt.unmarshal(blob)
        assert checkpoint.policy_name == "static"
        assert checkpoint.entries == {"pod": {"container1": [Block((0,), "memory", 512)]}}
        assert checkpoint.machine_state[0].memory_map["memory"].free == 1024
        assert checkpoint.pod_entries == expected, fmt


def test_master_reads_memory_as_137() -> None:
    """kubernetes#139626 (V3) is in v1.37.2; master, ordered after 1.37, reads and writes as 1.37."""
    for gate in (False, True):
        gates = {"PodLevelResourceManagers": gate}
        master = MemoryCheckpointFormat.for_kubelet("master", gates)
        assert master == MemoryCheckpointFormat.for_kubelet("1.37", gates)
        assert master.writes_v3
        assert not MemoryCheckpointFormat.for_kubelet("1.36", gates).writes_v3


# ---- files the emulator writes -----------------------------------------------------------------------


def write_state(state: Path, fmt: MemoryCheckpointFormat, pod_blocks: bool) -> None:
    store = CheckpointState(state, "Static", checkpoint_format=fmt)
    table = MemoryTable(total=2048, system_reserved=512, allocatable=1536, reserved=512, free=1024)
    store.set_machine_state({0: NUMANodeState(1, {"memory": table}, [0])})
    store.set_memory_blocks("uid-a", "c", [Block((0,), "memory", 512)])
    if pod_blocks:
        store.set_pod_memory_blocks("uid-a", [Block((0,), "memory", 512)])


def test_a_gate_on_file_stops_136_without_the_gate(tmp_path: Path) -> None:
    """KEP-5526's "Memory Manager (Higher Risk)" rollback: the V2 file fails V1's checksum."""
    write_state(tmp_path, ON, pod_blocks=True)
    assert CheckpointState(tmp_path, "Static", checkpoint_format=ON).get_pod_memory_blocks("uid-a")
    with pytest.raises(MemoryManagerError) as caught:
        CheckpointState(tmp_path, "Static", checkpoint_format=OFF)
    assert str(caught.value) == (
        f"could not restore state from checkpoint: {CORRUPT}, please drain this node and delete the "
        f'memory manager checkpoint file "{tmp_path / "memory_manager_state"}" before restarting Kubelet'
    )


@pytest.mark.parametrize("version", ["1.33", "1.35", "1.36"])
def test_a_gate_off_file_is_read_by_every_version(tmp_path: Path, version: str) -> None:
    """1.36 with the gate off writes the bytes 1.35 writes; 1.36 with the gate on reads them through V1."""
    write_state(tmp_path, OFF, pod_blocks=False)
    for gate in (False, True):
        fmt = MemoryCheckpointFormat.for_kubelet(version, {"PodLevelResourceManagers": gate})
        restored = CheckpointState(tmp_path, "Static", checkpoint_format=fmt)
        assert restored.get_memory_blocks("uid-a", "c") == [Block((0,), "memory", 512)]
        assert restored.get_pod_memory_assignments() == {}


# ---- CPU Manager V4 on master: refused files ---------------------------------------------------------

MASTER_ON = cpu.CPUCheckpointFormat.for_kubelet("master", {"PodLevelResourceManagers": True})
MASTER_OFF = cpu.CPUCheckpointFormat.for_kubelet("master", {"PodLevelResourceManagers": False})
CONTENT = cpu.CPUCheckpointContent("static", "0,2-7", {"uid-a": {"c": "1"}}, {"uid-a": "1"})


def v4_doc() -> dict[str, object]:
    doc: dict[str, object] = json.loads(cpu.marshal_v4(CONTENT))
    return doc


def test_v4_pod_entries_need_the_gate_on_master() -> None:
    blob = cpu.marshal_v4(CONTENT)
    assert cpu.load(blob, MASTER_ON).pod_entries == {"uid-a": "1"}
    off = cpu.load(blob, MASTER_OFF)
    assert (off.read_as, off.entries, off.pod_entries) == (cpu.V4, {"uid-a": {"c": "1"}}, {})


DATA_ERROR = "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: "


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param({"data": "{"}, DATA_ERROR + "unexpected end of JSON input", id="data-truncated"),
        pytest.param({"data": None}, DATA_ERROR + "unexpected end of JSON input", id="data-missing"),
        pytest.param(
            {"dataChecksum": None}, "could not load v4 checkpoint: checkpoint is corrupted", id="no-checksum"
        ),
        pytest.param(
            {"policyName": 5},
            "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint: json: cannot "
            "unmarshal number into Go struct field CPUManagerCheckpoint.policyName of type string",
            id="outer-type-error",
        ),
    ],
)
def test_a_failing_v4_file_is_refused_without_fallback(change: dict[str, object], expected: str) -> None:
    doc = v4_doc()
    for key, value in change.items():
        if value is None:
            del doc[key]
        else:
            doc[key] = value
    blob = json.dumps(doc).encode()
    for fmt in (MASTER_ON, MASTER_OFF):
        with pytest.raises(CPUCheckpointError) as caught:
            cpu.load(blob, fmt)
        assert str(caught.value) == expected
    # 1.36 reads the same file through its embedded V2 unless that part is what broke.
    if "policyName" not in change:
        assert cpu.load(blob, cpu.CPUCheckpointFormat.for_kubelet("1.36")).entries == {"uid-a": {"c": "1"}}


def test_a_v4_file_that_does_not_parse_falls_back_to_v1s_error() -> None:
    """A syntax error sets no field, so nothing says V4: V3, V2 and V1 are tried; V1's error is kept."""
    with pytest.raises(CPUCheckpointError) as caught:
        cpu.load(cpu.marshal_v4(CONTENT)[:-1], MASTER_ON)
    assert str(caught.value) == "unexpected end of JSON input"
