"""``memory_manager_state`` at 1.37 against the kubelet's own code: k8s.io/kubernetes v1.37.2's
``pkg/kubelet/cm/memorymanager/state`` (kubernetes#139626's V3), run by ``tests/upstream/memorycheckpoint``.

* Writing: the same state stored through the kubelet's setters and through the emulator's
  ``CheckpointState`` at 1.37 gives the same file, byte for byte (each field compared first, so that a
  difference names itself), with ``PodLevelResourceManagers`` on and off.
* Reading: files of every version the emulator writes (1.35's V1, 1.36's V1 and V2, 1.37's V3) and broken
  ones are restored by both; the state restored, or the error text, must be the same.
* Downgrade: 1.33 … 1.36 read the real 1.37.2 file through its embedded V1 (the pod entries are lost).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubeletemu.memorymanager.errors import MemoryManagerError
from kubeletemu.memorymanager.state import (
    MEMORY_MANAGER_STATE_FILE,
    Block,
    CheckpointState,
    MemoryManagerCheckpoint,
    MemoryTable,
    NUMANodeState,
)
from kubeletemu.memorymanager.state.checkpoint import v3_data
from kubeletemu.memorymanager.state.formats import MemoryCheckpointFormat
from tests.upstream import exporters
from tests.upstream.pins import UPSTREAM_DIR

POLICY = "Static"
GATE = "PodLevelResourceManagers"

MEMORY_CHECKPOINT = exporters.ExporterPin(
    "memorycheckpoint",
    UPSTREAM_DIR / "memorycheckpoint",
    "kubeletemu.test/upstream/memorycheckpoint",
    "v1.37.2",  # the k8s.io/kubernetes release whose state package it runs
    ("-s", "-w"),
)


@pytest.fixture(scope="module")
def upstream() -> Path:
    return exporters.ensure_exporter(MEMORY_CHECKPOINT)


def _fmt(version: str, gate: bool) -> MemoryCheckpointFormat:
    return MemoryCheckpointFormat.for_kubelet(version, {GATE: gate})


def _go(binary: Path, command: str, state_dir: Path, gate: bool, stdin: str = "") -> str:
    args = [str(binary), command, "-dir", str(state_dir), "-policy", POLICY]
    if gate:
        args.append("-pod-level")
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _table(total: int, reserved: int) -> MemoryTable:
    return MemoryTable(total, 0, total, reserved, total - reserved)


STATES = {
    "empty": MemoryManagerCheckpoint(POLICY),
    "two-nodes": MemoryManagerCheckpoint(
        POLICY,
        {
            0: NUMANodeState(
                2, {"memory": _table(8 << 30, 1 << 30), "hugepages-2Mi": _table(1 << 30, 0)}, [0]
            ),
            1: NUMANodeState(0, {"memory": _table(8 << 30, 0)}, [1]),
        },
        {
            "uid-b": {"app": [Block((0,), "memory", 1 << 30)]},
            "uid-a": {"init": [Block((0, 1), "memory", 512 << 20)], "app": [Block((0,), "memory", 1 << 20)]},
        },
        {"uid-b": [Block((0,), "memory", 1 << 30), Block((0,), "hugepages-2Mi", 2 << 20)]},
    ),
    # NUMA ids and pod UIDs sort as strings in the JSON; HTML-significant and non-ASCII names escaped
    # (or not) as encoding/json does, twice over inside ``data``.
    "escapes-and-order": MemoryManagerCheckpoint(
        POLICY,
        {10: NUMANodeState(0, {"memory": _table(4096, 0)}, [10]), 2: NUMANodeState(1, {}, [2, 10])},
        {"pod<&>": {'c"é': [Block((2, 10), "memory", 4096)]}},
        {"pod<&>": [], "zz": [Block((10,), "memory", 1)]},
    ),
}


def _emulator_file(state_dir: Path, fmt: MemoryCheckpointFormat, cp: MemoryManagerCheckpoint) -> bytes:
    store = CheckpointState(state_dir, POLICY, checkpoint_format=fmt)
    store.set_machine_state(cp.machine_state)
    store.set_memory_assignments(cp.entries)
    store.set_pod_memory_assignments(cp.pod_entries or {})
    return (state_dir / MEMORY_MANAGER_STATE_FILE).read_bytes()


def _upstream_file(binary: Path, state_dir: Path, gate: bool, cp: MemoryManagerCheckpoint) -> bytes:
    _go(binary, "write", state_dir, gate, v3_data(cp, with_pod_entries=True))
    return (state_dir / MEMORY_MANAGER_STATE_FILE).read_bytes()


@pytest.mark.parametrize("gate", [False, True], ids=["gate-off", "gate-on"])
@pytest.mark.parametrize("name", list(STATES))
def test_137_writes_the_bytes_of_the_real_kubelet(
    upstream: Path, tmp_path: Path, name: str, gate: bool
) -> None:
    theirs = _upstream_file(upstream, tmp_path / "go", gate, STATES[name])
    ours = _emulator_file(tmp_path / "emu", _fmt("1.37", gate), STATES[name])
    go_doc, emu_doc = json.loads(theirs), json.loads(ours)
    assert list(emu_doc) == list(go_doc)  # the fields and their order
    for key in go_doc:
        if key == "data":
            assert json.loads(emu_doc[key]) == json.loads(go_doc[key]), key
        assert emu_doc[key] == go_doc[key], key
    assert ours == theirs
    # master, ordered after 1.37, writes the same.
    assert _emulator_file(tmp_path / "master", _fmt("master", gate), STATES[name]) == theirs


# ---- reading -----------------------------------------------------------------------------------------


def _restored_by_emulator(state_dir: Path, gate: bool) -> dict[str, Any]:
    try:
        store = CheckpointState(state_dir, POLICY, checkpoint_format=_fmt("1.37", gate))
    except MemoryManagerError as err:
        return {"error": str(err)}
    cp = MemoryManagerCheckpoint(
        POLICY,
        store.get_machine_state(),
        store.get_memory_assignments(),
        store.get_pod_memory_assignments(),
    )
    return {"state": json.loads(v3_data(cp, with_pod_entries=True))}


def _written_by(version: str, gate: bool) -> bytes:
    return _fmt(version, gate).marshal(STATES["two-nodes"])


def _edited(blob: bytes, **changes: Any) -> bytes:
    doc = json.loads(blob)
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return json.dumps(doc).encode()


def _v3(gate: bool = True) -> bytes:
    return _written_by("1.37", gate)


def _v2_with_bad_checksum() -> bytes:
    """A V2 file whose checksum fails but whose embedded fields V1 accepts (checksum 0): 1.36 keeps the
    failed V2 attempt's pod entries, 1.37 migrates into a fresh V2 and has none."""
    return _edited(_written_by("1.36", True), checksum=0)


FILES = {
    "v1-of-1.35": lambda: _written_by("1.35", False),
    "v1-of-1.36": lambda: _written_by("1.36", False),
    "v2-of-1.36": lambda: _written_by("1.36", True),
    "v2-failing-its-checksum": _v2_with_bad_checksum,
    "v1-zero-checksum": lambda: _edited(_written_by("1.35", False), checksum=0),
    "v1-bad-checksum": lambda: _edited(_written_by("1.35", False), checksum=12345),
    "v3-of-1.37": _v3,
    "v3-of-1.37-gate-off": lambda: _v3(False),
    "v3-data-checksum-wrong": lambda: _edited(_v3(), dataChecksum=1),
    "v3-data-checksum-missing": lambda: _edited(_v3(), dataChecksum=None),
    "v3-data-missing": lambda: _edited(_v3(), data=None),
    "v3-data-truncated": lambda: _edited(_v3(), data='{"policyName":"Static"'),
    "v3-data-empty-object": lambda: _edited(_v3(), data="{}", dataChecksum=1),
    # The embedded V1 broken, the data intact: 1.37 reads the data.
    "v3-embedded-checksum-wrong": lambda: _edited(_v3(), checksum=7),
    "v3-other-policy": lambda: _edited(_v3(), policyName="None"),
    "truncated-file": lambda: _v3()[:-1],
}


@pytest.mark.parametrize("gate", [False, True], ids=["gate-off", "gate-on"])
@pytest.mark.parametrize("name", list(FILES))
def test_137_reads_as_the_real_kubelet(upstream: Path, tmp_path: Path, name: str, gate: bool) -> None:
    blob = FILES[name]()
    results = []
    for side in ("go", "emu"):
        state_dir = tmp_path / "state"  # one path: the error text names the file
        state_dir.mkdir(exist_ok=True)
        (state_dir / MEMORY_MANAGER_STATE_FILE).write_bytes(blob)
        if side == "go":
            results.append(json.loads(_go(upstream, "read", state_dir, gate)))
        else:
            results.append(_restored_by_emulator(state_dir, gate))
    theirs, ours = results
    assert ours == theirs


def test_the_v3_failures_are_refused_without_fallback(upstream: Path, tmp_path: Path) -> None:
    """The cases above that must fail do, with 1.37's wrapping (and 1.36's reading of the same files
    differs: it falls back to the embedded V1)."""
    expected = {
        "v3-data-checksum-wrong": "could not load v3 checkpoint: checkpoint is corrupted",
        "v3-data-checksum-missing": "could not load v3 checkpoint: checkpoint is corrupted",
        "v3-data-truncated": "could not load v3 checkpoint: failed to deserialize memory manager checkpoint "
        "data: unexpected end of JSON input",
        "v3-data-empty-object": "could not load v3 checkpoint: checkpoint is corrupted",
    }
    for name, text in expected.items():
        state_dir = tmp_path / name
        state_dir.mkdir()
        (state_dir / MEMORY_MANAGER_STATE_FILE).write_bytes(FILES[name]())
        error = json.loads(_go(upstream, "read", state_dir, True)).get("error", "")
        assert error.startswith(f"could not restore state from checkpoint: {text}, please drain"), error
        restored = CheckpointState(state_dir, POLICY, checkpoint_format=_fmt("1.36", True))
        assert restored.get_memory_assignments() == STATES["two-nodes"].entries


@pytest.mark.parametrize("version", ["1.33", "1.35", "1.36"])
@pytest.mark.parametrize("gate", [False, True], ids=["gate-off", "gate-on"])
def test_older_kubelets_read_the_real_137_file_through_its_v1(
    upstream: Path, tmp_path: Path, version: str, gate: bool
) -> None:
    """A downgrade: the embedded V1 (its checksum byte-exact above) is what 1.33 … 1.36 read; the pod
    entries, only in ``data``, are lost."""
    cp = STATES["two-nodes"]
    _upstream_file(upstream, tmp_path, True, cp)
    restored = CheckpointState(tmp_path, POLICY, checkpoint_format=_fmt(version, gate))
    assert restored.get_memory_assignments() == cp.entries
    assert restored.get_machine_state() == cp.machine_state
    assert restored.get_pod_memory_assignments() == {}
    # An upgrade back: 1.37 reads the file the older kubelet wrote (now without pod entries).
    restored.set_memory_assignments(cp.entries)
    assert _restored_by_emulator(tmp_path, True) == json.loads(_go(upstream, "read", tmp_path, True))
