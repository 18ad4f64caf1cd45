"""The shared checkpoint helpers: FNV-32a, atomic files, batches and the group-commit writer."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from kubeletemu.checkpointmanager import (
    CheckpointWriteError,
    CheckpointWriter,
    WriteBatch,
    WriterClosedError,
    batched_writes,
    deferred_writes,
    files,
    fnv32a,
    remove_file,
    remove_stale_temporaries,
    write_batch,
    write_file_atomic,
)


def test_fnv32a_reference_values() -> None:
    # hash/fnv New32a: the offset basis for no input, and the published value for "a".
    assert fnv32a(b"") == 0x811C9DC5
    assert fnv32a(b"a") == 0xE40C292C
    assert fnv32a(b"foobar") == 0xBF9CF968


def test_atomic_write_replaces_and_leaves_no_temporaries(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "state"
    write_file_atomic(target, b"one")
    write_file_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["state"]
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o644)


def test_failed_write_keeps_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "state"
    write_file_atomic(target, b"old")

    with pytest.raises(TypeError):
        write_file_atomic(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]


def test_fnv32a_matches_go_hash_fnv_on_long_input() -> None:
    # The C implementation against the definition (offset basis, xor then multiply, mod 2^32).
    data = bytes(range(256)) * 9 + "naïve café".encode()
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    assert fnv32a(data) == value


def test_deferred_writes_collect_last_operations_in_order(tmp_path: Path) -> None:
    (tmp_path / "gone").write_bytes(b"x")
    serialized = []

    def content() -> bytes:
        serialized.append(1)
        return b"lazy"

    with deferred_writes() as pending:
        write_file_atomic(tmp_path / "a", b"first")
        with batched_writes():  # nested blocks join the deferred one
            write_file_atomic(tmp_path / "b", content)
            remove_file(tmp_path / "gone")
        write_file_atomic(tmp_path / "a", b"second")
    # Nothing written yet, nothing serialized yet.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone"]
    assert serialized == []
    batch = pending.freeze()
    assert list(batch.ops) == [tmp_path / "a", tmp_path / "b", tmp_path / "gone"]
    assert batch.ops[tmp_path / "a"] == (b"second", 0o644)
    assert batch.ops[tmp_path / "gone"] is None
    write_batch(batch)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
    assert (tmp_path / "b").read_bytes() == b"lazy"
    with deferred_writes(), pytest.raises(RuntimeError, match="cannot be nested"), deferred_writes():
        pass


def test_write_errors_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "pods").write_bytes(b"not a directory")
    with pytest.raises(CheckpointWriteError) as info:
        write_file_atomic(tmp_path / "pods" / "uid.json", b"{}")
    assert str(info.value) == f"cannot write {tmp_path / 'pods' / 'uid.json'}: Not a directory"


def test_writer_keeps_order_and_merges_what_queues_behind_a_pass(tmp_path: Path) -> None:
    # The first pass is held open until three more batches are queued: they must go to disk together,
    # each file once with its last operation, after the first pass.
    release = threading.Event()
    passes: list[WriteBatch] = []

    def gated_write(batch: WriteBatch) -> None:
        passes.append(batch)
        if len(passes) == 1:
            assert release.wait(10)
        write_batch(batch)

    writer = CheckpointWriter(write=gated_write)
    try:
        first = writer.submit(WriteBatch({tmp_path / "state": (b"1", 0o644)}))
        while not passes:
            time.sleep(0.001)
        queued = [
            writer.submit(WriteBatch({tmp_path / "state": (b"2", 0o644), tmp_path / "pod-a": (b"a", 0o600)})),
            writer.submit(WriteBatch({tmp_path / "state": (b"3", 0o644), tmp_path / "pod-a": None})),
            writer.submit(WriteBatch({tmp_path / "pod-b": (b"b", 0o600)})),
        ]
        assert not first.done()
        release.set()
        for future in [first, *queued]:
            future.result(timeout=10)
        assert len(passes) == 2 and writer.passes == 2 and writer.batches_written == 4
        assert passes[1].ops == {
            tmp_path / "state": (b"3", 0o644),
            tmp_path / "pod-a": None,
            tmp_path / "pod-b": (b"b", 0o600),
        }
        assert (tmp_path / "state").read_bytes() == b"3"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["pod-b", "state"]
        assert oct(os.stat(tmp_path / "pod-b").st_mode & 0o777) == oct(0o600)
    finally:
        writer.close()


def test_a_failed_pass_fails_what_queued_behind_it_until_a_sync_restores_the_files(tmp_path: Path) -> None:
    # Pass 1 succeeds. Pass 2 (two merged batches) fails part-way: "state" is written, "pods/b" is not.
    # The batch queued behind it was decided on top of it: it fails too, unwritten. Nothing is written
    # until sync() has put back what pass 1 left, and the writer then goes on.
    state, pods = tmp_path / "state", tmp_path / "pods"
    pods.mkdir()
    release, broken = threading.Event(), threading.Event()
    passes: list[WriteBatch] = []

    def flaky_write(batch: WriteBatch) -> None:
        passes.append(batch)
        if len(passes) == 2:
            assert release.wait(10)
        for path, op in batch.ops.items():
            if broken.is_set() and path.parent == pods:
                raise CheckpointWriteError(28, f"cannot write {path}: No space left on device")
            write_batch(WriteBatch({path: op}))

    writer = CheckpointWriter(write=flaky_write)
    try:
        writer.submit(WriteBatch({state: (b"1", 0o644), pods / "a": (b"a", 0o600)})).result(timeout=10)
        assert writer.committed() == {state: b"1", pods / "a": b"a"}
        broken.set()
        failing = [
            writer.submit(WriteBatch({state: (b"2", 0o644)})),
            writer.submit(WriteBatch({state: (b"3", 0o644), pods / "b": (b"b", 0o600)})),
        ]
        while len(passes) < 2:
            time.sleep(0.001)
        # Held open: queued behind the failing pass.
        later = writer.submit(WriteBatch({state: (b"4", 0o644), pods / "a": None}))
        release.set()
        for future in [*failing, later]:
            with pytest.raises(CheckpointWriteError, match="No space left on device"):
                future.result(timeout=10)
        assert len(passes) == 2 and writer.failed_passes == 1
        assert state.read_bytes() == b"3" and not (pods / "b").exists() and (pods / "a").exists()
        assert writer.committed() == {state: b"1", pods / "a": b"a"}
        assert isinstance(writer.failure, CheckpointWriteError)
        # Refused without a pass while failed.
        with pytest.raises(CheckpointWriteError):
            writer.submit(WriteBatch({state: (b"5", 0o644)})).result(timeout=10)
        assert len(passes) == 2
        # A sync that fails keeps it failed; one that succeeds writes back what differs, and only that.
        (pods / "b").write_bytes(b"left by the failed pass")
        with pytest.raises(CheckpointWriteError):
            writer.sync().result(timeout=10)
        broken.clear()
        assert writer.sync().result(timeout=10) == [pods / "b", state]
        assert writer.failure is None and writer.failed_passes == 1
        assert state.read_bytes() == b"1" and sorted(p.name for p in pods.iterdir()) == ["a"]
        writer.submit(WriteBatch({state: (b"6", 0o644)})).result(timeout=10)
        assert state.read_bytes() == b"6"
    finally:
        writer.close()
    with pytest.raises(WriterClosedError):
        writer.submit(WriteBatch())


def test_writer_skips_files_that_already_hold_the_content(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.write_bytes(b"same")
    os.chmod(state, 0o644)
    inode = state.stat().st_ino
    written: list[WriteBatch] = []

    def recording(batch: WriteBatch) -> None:
        written.append(batch)
        write_batch(batch)

    writer = CheckpointWriter(write=recording)
    try:
        # A start-up baseline read from disk: nothing differs, nothing is written.
        assert writer.sync({state: (b"same", 0o644)}).result(timeout=10) == []
        writer.submit(WriteBatch({state: (b"same", 0o644)})).result(timeout=10)
        assert written == [] and state.stat().st_ino == inode
        writer.submit(WriteBatch({state: (b"new", 0o644)})).result(timeout=10)
        assert [list(b.ops) for b in written] == [[state]] and state.read_bytes() == b"new"
        assert writer.passes == 2
    finally:
        writer.close()


def test_probe_names_the_directory_that_takes_no_write(tmp_path: Path) -> None:
    files.probe_writable(tmp_path)
    assert list(tmp_path.iterdir()) == []
    blocked = tmp_path / "blocked"
    blocked.write_bytes(b"a file where a directory should be")
    with pytest.raises(CheckpointWriteError) as info:
        files.probe_writable(blocked / "pods")
    assert str(info.value) == f"cannot write in {blocked / 'pods'}: Not a directory"


def test_writer_close_writes_what_is_queued(tmp_path: Path) -> None:
    writer = CheckpointWriter()
    futures = [writer.submit(WriteBatch({tmp_path / f"f{i}": (b"%d" % i, 0o644)})) for i in range(20)]
    writer.close()
    assert all(f.done() and f.exception() is None for f in futures)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"f{i}" for i in range(20))


def test_stale_temporaries_are_removed_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "pods").mkdir()
    stale = [tmp_path / ".cpu_manager_state.4242.7.tmp", tmp_path / "pods" / ".uid-a.json.4242.8.tmp"]
    kept = [tmp_path / "cpu_manager_state", tmp_path / "pods" / "uid-a.json", tmp_path / ".notes.tmp"]
    for path in stale + kept:
        path.write_bytes(b"x")
    assert remove_stale_temporaries(tmp_path) == sorted(stale)
    assert all(p.exists() for p in kept) and not any(p.exists() for p in stale)
    assert remove_stale_temporaries(tmp_path / "missing") == []


def test_a_leftover_temporary_with_our_pid_does_not_block_writes(tmp_path: Path) -> None:
    # A killed process whose pid we now have left the names our next writes would take.
    upcoming = next(files._sequence) + 1
    leftovers = [tmp_path / f".state.{os.getpid()}.{n}.tmp" for n in range(upcoming, upcoming + 3)]
    for path in leftovers:
        path.write_bytes(b"torn")
    write_file_atomic(tmp_path / "state", b"whole")
    assert (tmp_path / "state").read_bytes() == b"whole"
    assert all(p.read_bytes() == b"torn" for p in leftovers)
