"""Audit of the CPU Manager, Topology Manager and admission code between the release trees (v1.33.13,
v1.34.9, v1.35.6, v1.36.3: openshift/kubernetes as vendored in openshift/microshift release-4.20 … 4.23):
the one behaviour change found there that the emulator did not follow, ``cpumanager.checkpoint-read-order``.

1.33 … 1.35's ``restoreState`` reads ``cpu_manager_state`` as V1 first (migrated), else as V2, and returns
V2's error when both fail; 1.36's ``loadAndMigrateCheckpointV2`` (kubernetes#134768) reads V2 first, else
V1, and returns V1's error; the migration failure is worded differently too. Each side is checked through
``NodeEmulator`` with a state directory, the files written here by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hostprobe.synthetic import SyntheticHost
from kubeletemu.config import parse_config
from kubeletemu.cpumanager.errors import CheckpointError, StateError
from kubeletemu.cpumanager.state import formats
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import parse_pods
from kubeletemu.versions.behaviours import behaviours, step_at
from tests.nodes import probe_machine
from tests.versions.helpers import pod_manifest, versioned_config

HOST = SyntheticHost(sockets=2, cores_per_socket=2, threads_per_core=2)
CPU_FILE = "cpu_manager_state"
OLD_ORDER = ("1.33", "1.34", "1.35")
NEW_ORDER = ("1.36",)
# 1.37 (k8s.io/kubernetes v1.37.2 loadCheckpointV2) and master, ordered after it: V1 is no longer read.
V2_ONLY = ("1.37", "master")
V1_SHAPE_ERROR = (
    "json: cannot unmarshal object into Go struct field CPUManagerCheckpointV1.entries of type string"
)
# A V1 file (container ids as keys), checksum 0 (accepted by every version), its container unknown.
V1_FILE = b'{"policyName":"static","defaultCpuSet":"0-3,6-7","entries":{"cid-1":"4-5"},"checksum":0}'


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return probe_machine(tmp_path_factory.mktemp("host"), HOST)


def node(machine: Machine, state: Path, version: str) -> NodeEmulator:
    """The static CPU Manager (CPU 0 reserved), container scope, the kubelet of ``version``."""
    return NodeEmulator(parse_config(versioned_config(version)), machine, state)


def refusal(state: Path, problem: str) -> str:
    return (
        f"could not restore state from checkpoint: {problem}, please drain this node and delete the CPU "
        f'manager checkpoint file "{state / CPU_FILE}" before restarting Kubelet'
    )


def test_the_read_order_is_registered_at_136() -> None:
    row = behaviours()[formats.READ_ORDER]
    assert [(c.since, c.ref) for c in row.changes] == [("1.36", "kubernetes#134768"), ("1.37", "v1.37.2")]
    assert [step_at(formats.READ_ORDER, v) for v in OLD_ORDER + NEW_ORDER + V2_ONLY] == [0, 0, 0, 1, 2, 2]


def written_then_tampered(machine: Machine, state: Path, version: str) -> None:
    """The file the kubelet of ``version`` writes with one exclusive allocation, its default set then
    changed (the checksum no longer matches; the entries keep V2's shape)."""
    emulator = node(machine, state, version)
    (pod,) = parse_pods(pod_manifest("p", 'cpu: "2", memory: 256Mi'))
    assert emulator.admit(pod).admitted
    path = state / CPU_FILE
    text = path.read_text()
    assert '"entries":{"uid-p":{"c":' in text
    start = text.index('"defaultCpuSet":"') + len('"defaultCpuSet":"')
    path.write_text(text[:start] + "9," + text[start:])


@pytest.mark.parametrize("version", OLD_ORDER)
def test_a_corrupt_v2_file_gets_v2s_error_up_to_135(machine: Machine, tmp_path: Path, version: str) -> None:
    """V1 fails on the entries' shape, V2 on its checksum; V2's error is the one returned."""
    written_then_tampered(machine, tmp_path, version)
    with pytest.raises(StateError) as caught:
        node(machine, tmp_path, version)
    assert str(caught.value) == refusal(tmp_path, "checkpoint is corrupted")


def test_a_corrupt_v2_file_gets_v1s_error_from_136(machine: Machine, tmp_path: Path) -> None:
    """V2 fails on its checksum, then V1 on the entries' shape: the last error, V1's."""
    written_then_tampered(machine, tmp_path, "1.36")
    with pytest.raises(StateError) as caught:
        node(machine, tmp_path, "1.36")
    assert str(caught.value) == refusal(tmp_path, V1_SHAPE_ERROR)


@pytest.mark.parametrize(
    ("version", "wrap"),
    [(v, "error migrating v1 checkpoint state to v2 checkpoint state") for v in OLD_ORDER]
    + [(v, "failed to migrate checkpoint from v1 to v2") for v in NEW_ORDER],
)
def test_an_unknown_v1_container_is_worded_per_version(
    machine: Machine, tmp_path: Path, version: str, wrap: str
) -> None:
    (tmp_path / CPU_FILE).write_bytes(V1_FILE)
    with pytest.raises(StateError) as caught:
        node(machine, tmp_path, version)
    problem = f"{wrap}: containerID 'cid-1' not found in initial containers list"
    assert str(caught.value) == refusal(tmp_path, problem)


@pytest.mark.parametrize("version", V2_ONLY)
def test_from_137_a_v1_file_is_not_read(machine: Machine, tmp_path: Path, version: str) -> None:
    """V4, V3, then V2 only: a V1 file gets V2's JSON type error, naming 1.37's own V2 struct."""
    (tmp_path / CPU_FILE).write_bytes(V1_FILE)
    with pytest.raises(StateError) as caught:
        node(machine, tmp_path, version)
    problem = (
        "json: cannot unmarshal string into Go struct field CPUManagerCheckpointV2.entries of type "
        "map[string]string"
    )
    assert str(caught.value) == refusal(tmp_path, problem)
    # The same file is still migrated by 1.36, whose container it knows.
    content = formats.load(
        V1_FILE, formats.CPUCheckpointFormat.for_kubelet("1.36"), {"cid-1": ("u", "c")}.get
    )
    assert content.read_as == "V1"


@pytest.mark.parametrize("version", (*OLD_ORDER, "1.36"))
def test_a_known_v1_container_is_migrated_alike(version: str) -> None:
    """Reading V1 first or last changes no content: the same migrated entries either way."""
    fmt = formats.CPUCheckpointFormat.for_kubelet(version)
    content = formats.load(V1_FILE, fmt, {"cid-1": ("uid-a", "c")}.get)
    assert (content.policy_name, content.default_cpu_set, content.entries) == (
        "static",
        "0-3,6-7",
        {"uid-a": {"c": "4-5"}},
    )
    assert content.read_as == "V1"


@pytest.mark.parametrize("version", (*OLD_ORDER, "1.36"))
def test_a_file_both_formats_read_keeps_its_content(version: str) -> None:
    """No entries and checksum 0: 1.33 … 1.35 take it as V1, 1.36 as V2, the same state."""
    blob = b'{"policyName":"static","defaultCpuSet":"0-7","checksum":0}'
    content = formats.load(blob, formats.CPUCheckpointFormat.for_kubelet(version))
    assert (content.policy_name, content.default_cpu_set, content.entries) == ("static", "0-7", {})
    assert content.read_as == ("V1" if version in OLD_ORDER else "V2")


@pytest.mark.parametrize("version", ("1.35", "1.36"))
def test_a_truncated_file_is_refused_alike(version: str) -> None:
    """A syntax error is the same text whichever struct fails last."""
    with pytest.raises(CheckpointError) as caught:
        formats.load(V1_FILE[:-1], formats.CPUCheckpointFormat.for_kubelet(version))
    assert str(caught.value) == "unexpected end of JSON input"


# Two rows of TestCheckpointStateRestore (state_checkpoint_test.go), the same at v1.35.6 and v1.36.3: with
# empty entries both structs unmarshal and both checksums fail, so the order does not show.
UPSTREAM_ROWS = [
    (
        "Restore checkpoint with invalid checksum",
        b'{"policyName": "none", "defaultCPUSet": "4-6", "entries": {}, "checksum": 1337}',
        "checkpoint is corrupted",
    ),
    ("Restore checkpoint with invalid JSON", b"{", "unexpected end of JSON input"),
]


@pytest.mark.parametrize("version", ("1.35", "1.36"))
@pytest.mark.parametrize(("name", "blob", "problem"), UPSTREAM_ROWS, ids=[r[0] for r in UPSTREAM_ROWS])
def test_upstream_restore_rows(version: str, name: str, blob: bytes, problem: str) -> None:
    with pytest.raises(CheckpointError) as caught:
        formats.load(blob, formats.CPUCheckpointFormat.for_kubelet(version))
    assert str(caught.value) == problem, name
