"""The shared checkpoint helpers: FNV-32a and atomic files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubeletemu.checkpointmanager import fnv32a, write_file_atomic


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
