"""The ``cpu_manager_state`` checkpoint: checksum, format, restore errors, V1 migration, atomic writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeletemu.cpumanager import (
    CheckpointError,
    CorruptCheckpointError,
    CPUSet,
    CPUTopology,
    StateError,
    new_manager,
)
from kubeletemu.cpumanager.state import (
    CPU_MANAGER_STATE_FILE,
    CheckpointState,
    CPUManagerCheckpoint,
    CPUManagerCheckpointV1,
    load_checkpoint,
)
from kubeletemu.cpumanager.state.checkpoint import go_json_string, go_json_string_escaped
from kubeletemu.cpumanager.state.formats import CPUCheckpointFormat
from kubeletemu.quantity import Quantity
from tests.cpumanager.helpers import FixedStore

# Two files written by real kubelets, quoted in kubernetes issues (ecosystem.md §6.2).
K8S_109562 = (
    '{"policyName":"static","defaultCpuSet":"0-2,4-7","entries":{"499a37ae-89a8-4e73-a090-f86ea22a9f4c":'
    '{"cpu-qos2":"3"}},"checksum":1515081781}'
)
K8S_123816 = (
    '{"policyName":"static","defaultCpuSet":"1,3,15-31,47-63","entries":{"69aa6124-4e0e-4c66-94ea-feae7df25b68":'
    '{"init-container":"35"},"e49ac32c-22a3-4c8c-8be3-721bd1fd9eaa":{"centos":"0,2,4-14,32,34,36-46",'
    '"init-container":"33"}},"checksum":3748757820}'
)


@pytest.mark.parametrize(("blob", "checksum"), [(K8S_109562, 1515081781), (K8S_123816, 3748757820)])
def test_real_kubelet_files_verify_and_reencode_byte_identically(blob: str, checksum: int) -> None:
    checkpoint = load_checkpoint(blob.encode())
    assert checkpoint.checksum == checksum
    assert checkpoint.compute_checksum() == checksum
    # Go's json.Marshal output: same bytes as the kubelet wrote.
    assert checkpoint.marshal() == blob.encode()


def test_checksum_dump_layout() -> None:
    checkpoint = CPUManagerCheckpoint("static", "0-2,4-7", {"pod": {"b": "1", "a": "3"}})
    assert checkpoint.dump() == (
        "(*state.CPUManagerCheckpoint){PolicyName:(string)static DefaultCPUSet:(string)0-2,4-7 "
        "Entries:(map[string]map[string]string)map[pod:map[a:3 b:1]] Checksum:(checksum.Checksum)0}"
    )
    nil_entries = CPUManagerCheckpoint("none", "", None)
    assert "Entries:(map[string]map[string]string)<nil>" in nil_entries.dump()


def test_marshal_omits_empty_entries_and_escapes_like_go() -> None:
    empty = CPUManagerCheckpoint("static", "0-3")
    blob = empty.marshal()
    assert blob == f'{{"policyName":"static","defaultCpuSet":"0-3","checksum":{empty.checksum}}}'.encode()
    odd = CPUManagerCheckpoint("static", "", {"<uid>": {"a&b": "1"}})
    assert b'"\\u003cuid\\u003e":{"a\\u0026b":"1"}' in odd.marshal()


def test_checksum_zero_is_accepted() -> None:
    blob = b'{"policyName":"static","defaultCpuSet":"0-3","entries":{"p":{"c":"4"}},"checksum":0}'
    assert load_checkpoint(blob).entries == {"p": {"c": "4"}}


def test_go_json_decoding_rules() -> None:
    # Keys match case-insensitively, unknown keys are ignored, "entries": null is a nil map.
    blob = b'{"POLICYNAME":"static","defaultcpuset":"1","extra":[1],"entries":null,"checksum":0}'
    checkpoint = CPUManagerCheckpoint.unmarshal(blob)
    assert (checkpoint.policy_name, checkpoint.default_cpu_set, checkpoint.entries) == ("static", "1", None)
    with pytest.raises(CheckpointError) as err:
        CPUManagerCheckpoint.unmarshal(b'{"policyName":3}')
    assert str(err.value) == (
        "json: cannot unmarshal number into Go struct field CPUManagerCheckpoint.policyName of type string"
    )
    with pytest.raises(CheckpointError, match="unexpected end of JSON input"):
        CPUManagerCheckpoint.unmarshal(b'{"policyName":')


def test_tampered_files() -> None:
    # Changed content, old checksum. With entries, the V1 fallback fails on their shape and its error is
    # the one reported (the kubelet returns the last error).
    tampered = K8S_109562.replace("0-2,4-7", "0-2,4-6")
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(tampered.encode())
    assert str(err.value) == (
        "json: cannot unmarshal object into Go struct field CPUManagerCheckpointV1.entries of type string"
    )
    # Without entries the V1 reading succeeds, and its checksum fails too.
    with pytest.raises(CorruptCheckpointError) as corrupt:
        load_checkpoint(b'{"policyName":"static","defaultCpuSet":"0-3","checksum":12345}')
    assert str(corrupt.value) == "checkpoint is corrupted"


def test_v1_files_are_migrated_with_the_container_map() -> None:
    v1 = CPUManagerCheckpointV1("static", "0-1", {"cid-1": "2-3"})
    blob = v1.marshal()
    assert blob.startswith(b'{"policyName":"static","defaultCpuSet":"0-1","entries":{"cid-1":"2-3"}')
    migrated = load_checkpoint(blob, {"cid-1": ("pod-uid", "ctr")}.get)
    assert migrated.entries == {"pod-uid": {"ctr": "2-3"}}
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(blob)
    assert str(err.value) == (
        "failed to migrate checkpoint from v1 to v2: containerID 'cid-1' not found in initial containers list"
    )


def _write(directory: Path, text: str) -> Path:
    path = directory / CPU_MANAGER_STATE_FILE
    path.write_text(text)
    return path


def test_restore_real_file_into_a_manager(tmp_path: Path) -> None:
    _write(tmp_path, K8S_123816)
    topology = CPUTopology.from_rows([[c, c % 32, c // 32, c // 32, 0] for c in range(64)])
    manager = new_manager(
        "static",
        None,
        topology,
        FixedStore(),
        node_allocatable_cpu_reservation=Quantity(1),
        reserved_system_cpus=CPUSet.of(1),
        state_dir=tmp_path,
    )
    assert str(manager.get_reserved_cpus()) == "1"
    assert str(manager.get_default_cpu_set()) == "1,3,15-31,47-63"
    assert str(manager.get_exclusive_cpus("e49ac32c-22a3-4c8c-8be3-721bd1fd9eaa", "centos")) == (
        "0,2,4-14,32,34,36-46"
    )
    manager.remove_container_by_ref("69aa6124-4e0e-4c66-94ea-feae7df25b68", "init-container")
    saved = json.loads((tmp_path / CPU_MANAGER_STATE_FILE).read_text())
    assert saved["defaultCpuSet"] == "1,3,15-31,35,47-63"
    assert set(saved["entries"]) == {"e49ac32c-22a3-4c8c-8be3-721bd1fd9eaa"}
    load_checkpoint((tmp_path / CPU_MANAGER_STATE_FILE).read_bytes())


def _restore_error(tmp_path: Path, policy: str = "static") -> str:
    with pytest.raises(StateError) as err:
        CheckpointState(tmp_path, policy)
    return str(err.value)


def test_restore_errors_carry_the_kubelet_text(tmp_path: Path) -> None:
    path = _write(tmp_path, K8S_109562)
    suffix = f', please drain this node and delete the CPU manager checkpoint file "{path}" '
    suffix += "before restarting Kubelet"
    assert _restore_error(tmp_path, "none") == (
        'could not restore state from checkpoint: configured policy "none" differs from state checkpoint '
        f'policy "static"{suffix}'
    )
    _write(tmp_path, CPUManagerCheckpoint("static", "0-x").marshal().decode())
    assert _restore_error(tmp_path) == (
        'could not restore state from checkpoint: could not parse default cpu set "0-x": '
        f'strconv.Atoi: parsing "x": invalid syntax{suffix}'
    )
    _write(tmp_path, CPUManagerCheckpoint("static", "0", {"p": {"c": "3-1"}}).marshal().decode())
    assert _restore_error(tmp_path) == (
        'could not restore state from checkpoint: could not parse cpuset "3-1" for container "c" in pod "p": '
        f'invalid range "3-1" (3 > 1){suffix}'
    )
    # Neither format reads it: 1.33 … 1.35 (the default format) try V1, then V2 (an alias of
    # CPUManagerCheckpoint there), and return V2's error; 1.36 on return V1's.
    _write(tmp_path, "[]")
    assert _restore_error(tmp_path) == (
        "could not restore state from checkpoint: json: cannot unmarshal array into Go value of type "
        f"state.CPUManagerCheckpoint{suffix}"
    )
    with pytest.raises(StateError) as newer:
        CheckpointState(tmp_path, "static", checkpoint_format=CPUCheckpointFormat.for_kubelet("1.36"))
    assert str(newer.value) == (
        "could not restore state from checkpoint: json: cannot unmarshal array into Go value of type "
        f"state.CPUManagerCheckpointV1{suffix}"
    )


def test_missing_file_is_created_and_writes_are_atomic(tmp_path: Path) -> None:
    state = CheckpointState(tmp_path, "static")
    path = tmp_path / CPU_MANAGER_STATE_FILE
    first = load_checkpoint(path.read_bytes())
    assert (first.policy_name, first.default_cpu_set, first.entries) == ("static", "", {})
    state.set_default_cpu_set(CPUSet.parse("0-3"))
    state.set_cpu_set("p", "c", CPUSet.parse("4-5"))
    assert json.loads(path.read_text())["entries"] == {"p": {"c": "4-5"}}
    state.delete("p", "c")
    assert "entries" not in json.loads(path.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == [CPU_MANAGER_STATE_FILE]
    # A second state on the same directory reads what the first wrote.
    again = CheckpointState(tmp_path, "static")
    assert str(again.get_default_cpu_set()) == "0-3"


def test_validate_state_failure_after_restore(tmp_path: Path) -> None:
    # The real file's CPUs (0-7) do not match a 4-CPU machine: Start refuses, as the kubelet does.
    _write(tmp_path, K8S_109562)
    topology = CPUTopology.from_rows([[c, c, 0, 0, 0] for c in range(4)])
    with pytest.raises(StateError) as err:
        new_manager(
            "static",
            None,
            topology,
            FixedStore(),
            node_allocatable_cpu_reservation=Quantity(1),
            state_dir=tmp_path,
        )
    assert str(err.value) == 'current set of available CPUs "0-3" doesn\'t match with CPUs in state "0-7"'


def test_state_directory_is_created(tmp_path: Path) -> None:
    CheckpointState(tmp_path / "a" / "b", "none")
    assert load_checkpoint((tmp_path / "a" / "b" / CPU_MANAGER_STATE_FILE).read_bytes()).policy_name == "none"
    (tmp_path / "file").write_text("")
    with pytest.raises(StateError, match="failed to initialize checkpoint manager"):
        CheckpointState(tmp_path / "file" / "sub", "none")


@given(st.text(alphabet=st.characters(exclude_categories=()), max_size=40))
@settings(max_examples=400, deadline=None)
def test_go_json_string_fast_path_agrees_with_the_escaper(text: str) -> None:
    # Verbatim copying is only a shortcut: every string encodes as the character-by-character escaper does.
    assert go_json_string(text) == go_json_string_escaped(text)


def test_go_json_string_escapes_like_encoding_json() -> None:
    assert go_json_string("uid-1") == '"uid-1"'
    assert go_json_string('a"b\\c') == '"a\\"b\\\\c"'
    assert go_json_string("<&>\u2028\x01\t") == '"\\u003c\\u0026\\u003e\\u2028\\u0001\\t"'
    assert go_json_string("\ud800") == '"\\ufffd"'
