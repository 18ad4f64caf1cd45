"""The ``memory_manager_state`` checkpoint: the kubelet's checksum, file-backed state, restart checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.memorymanager import Block, MemoryManagerError, new_manager
from kubeletemu.memorymanager.state import CheckpointError, CorruptCheckpointError, marshal, unmarshal
from kubeletemu.memorymanager.state.checkpoint import normalise
from kubeletemu.topologymanager import TopologyHint
from tests.memorymanager.fixtures import (
    EVICTION,
    KUBE_RESERVED,
    MACHINE,
    RESERVED,
    Gi,
    StoreStub,
    guaranteed,
    pod,
)

# From the kubelet's state_checkpoint_test.go ("Restore valid checkpoint"): a checksum the kubelet computed.
UPSTREAM = """{
    "policyName":"static",
    "machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,
    "allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
    "entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
    "checksum": 4215593881
}"""


def test_upstream_checkpoint_verifies() -> None:
    cp = unmarshal(UPSTREAM)
    assert cp.policy_name == "static"
    assert cp.entries == {"pod": {"container1": [Block((0,), "memory", 512)]}}
    assert cp.machine_state[0].memory_map["memory"].free == 1024
    assert cp.machine_state[0].cells == []


def test_tampered_checkpoint_is_corrupt() -> None:
    with pytest.raises(CorruptCheckpointError, match=r"^checkpoint is corrupted$"):
        unmarshal(UPSTREAM.replace('"size":512', '"size":513'))


def test_zero_checksum_is_accepted_and_bad_json_is_clear() -> None:
    assert unmarshal('{"policyName":"None","machineState":{},"checksum":0}').policy_name == "None"
    with pytest.raises(CheckpointError, match="invalid JSON"):
        unmarshal("{not json")
    with pytest.raises(CheckpointError, match=r"machineState\[0\]\.numberOfAssignments"):
        unmarshal('{"machineState":{"0":{"numberOfAssignments":"x"}},"checksum":0}')


def test_marshal_round_trip_and_nil_vs_empty() -> None:
    cp = unmarshal(UPSTREAM)
    blob = marshal(cp)
    assert json.loads(blob)["checksum"] == 4215593881
    assert unmarshal(blob).entries == cp.entries
    # A null "entries" hashes differently from a missing one (nil map vs the pre-allocated empty map).
    raw_missing = normalise({"policyName": "Static", "machineState": {}})
    raw_null = normalise({"policyName": "Static", "machineState": {}, "entries": None})
    assert raw_missing["entries"] == {} and raw_null["entries"] is None


def _manager(state_dir: Path, store: StoreStub) -> object:
    return new_manager(
        "Static",
        MACHINE,
        store,
        reserved_memory=RESERVED,
        kube_reserved=KUBE_RESERVED,
        eviction_hard_memory_available=EVICTION,
        state_dir=state_dir,
    )


def test_file_state_survives_a_restart(tmp_path: Path) -> None:
    store = StoreStub()
    mm = _manager(tmp_path, store)
    p = pod("p", guaranteed("c", memory="2Gi"))
    store.hints[("p", "c")] = TopologyHint(BitMask.of(1), True)
    mm.allocate(p, p.containers[0])  # type: ignore[attr-defined]
    path = tmp_path / "memory_manager_state"
    written = json.loads(path.read_text())
    assert written["policyName"] == "Static"
    assert written["entries"] == {"p": {"c": [{"numaAffinity": [1], "type": "memory", "size": 2 * Gi}]}}
    again = _manager(tmp_path, StoreStub())
    assert again.get_memory("p", "c") == [Block((1,), "memory", 2 * Gi)]  # type: ignore[attr-defined]
    assert again.assigned_per_numa()[1]["memory"] == 2 * Gi  # type: ignore[attr-defined]


def test_restart_with_inconsistent_state_fails(tmp_path: Path) -> None:
    _manager(tmp_path, StoreStub())
    path = tmp_path / "memory_manager_state"
    cp = unmarshal(path.read_bytes())
    cp.machine_state[0].memory_map["memory"].reserved = Gi
    path.write_bytes(marshal(cp))
    with pytest.raises(MemoryManagerError, match="the expected machine state is different from the real one"):
        _manager(tmp_path, StoreStub())


def test_policy_mismatch_and_corruption_name_the_file(tmp_path: Path) -> None:
    new_manager("None", MACHINE, StoreStub(), state_dir=tmp_path)
    with pytest.raises(MemoryManagerError) as exc:
        _manager(tmp_path, StoreStub())
    assert str(exc.value) == (
        "could not restore state from checkpoint: [memorymanager] configured policy "
        '"Static" differs from state checkpoint policy "None", please drain this node and delete the '
        "memory manager checkpoint file "
        f'"{tmp_path / "memory_manager_state"}" before restarting Kubelet'
    )
    (tmp_path / "memory_manager_state").write_text(UPSTREAM.replace("4215593881", "1"))
    with pytest.raises(MemoryManagerError, match="checkpoint is corrupted, please drain this node"):
        _manager(tmp_path, StoreStub())
