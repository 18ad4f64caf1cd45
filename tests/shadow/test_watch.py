"""Noticing the kubelet's writes: inotify on the directories (renames included), else polling."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from kubeletemu.shadow.watch import MODE_INOTIFY, MODE_POLL, FileWatcher
from tests.shadow.kubelet_double import write_like_kubelet


async def _changes(watcher: FileWatcher, seen: asyncio.Queue[Path], timeout: float = 5.0) -> set[Path]:
    first = await asyncio.wait_for(seen.get(), timeout)
    await asyncio.sleep(0.1)
    out = {first}
    while not seen.empty():
        out.add(seen.get_nowait())
    return out


def _watcher(files: list[Path], seen: asyncio.Queue[Path], **kw: object) -> FileWatcher:
    return FileWatcher(files, seen.put_nowait, **kw)  # type: ignore[arg-type]


async def test_inotify_sees_renames_writes_and_chmods(tmp_path: Path) -> None:
    (tmp_path / "device-plugins").mkdir()
    state = tmp_path / "cpu_manager_state"
    checkpoint = tmp_path / "device-plugins" / "kubelet_internal_checkpoint"
    config = tmp_path / "config.yaml"
    for path in (state, checkpoint, config):
        path.write_text("{}")
    seen: asyncio.Queue[Path] = asyncio.Queue()
    watcher = _watcher([config, state, checkpoint], seen)
    assert watcher.start(asyncio.get_running_loop()) == MODE_INOTIFY
    try:
        write_like_kubelet(state, b'{"a": 1}')  # temporary file + rename, as the kubelet writes
        assert await _changes(watcher, seen) == {state}
        write_like_kubelet(checkpoint, b'{"b": 1}')
        assert await _changes(watcher, seen) == {checkpoint}
        config.write_text("edited in place")
        assert await _changes(watcher, seen) == {config}
        os.chmod(state, 0o600)  # permissions decide whether we can read it: a change
        assert await _changes(watcher, seen) == {state}
        # Other files in the watched directories are none of our business.
        (tmp_path / "unrelated").write_text("x")
        await asyncio.sleep(0.2)
        assert seen.empty()
    finally:
        watcher.close()


async def test_polling_when_inotify_is_not_used(tmp_path: Path) -> None:
    state = tmp_path / "cpu_manager_state"
    state.write_text("{}")
    seen: asyncio.Queue[Path] = asyncio.Queue()
    watcher = _watcher([state], seen, use_inotify=False, poll_interval=0.05)
    assert watcher.start(asyncio.get_running_loop()) == MODE_POLL
    try:
        write_like_kubelet(state, b'{"a": 1}')
        assert await _changes(watcher, seen) == {state}
        state.unlink()
        assert await _changes(watcher, seen) == {state}
    finally:
        watcher.close()


async def test_falls_back_to_polling_when_a_directory_cannot_be_watched(tmp_path: Path) -> None:
    missing = tmp_path / "device-plugins" / "kubelet_internal_checkpoint"
    seen: asyncio.Queue[Path] = asyncio.Queue()
    watcher = _watcher([missing], seen, poll_interval=0.05)
    assert watcher.start(asyncio.get_running_loop()) == MODE_POLL
    try:
        assert "inotify_add_watch" in watcher.problem and "No such file or directory" in watcher.problem
        missing.parent.mkdir()
        write_like_kubelet(missing, b"{}")
        assert await _changes(watcher, seen) == {missing}
    finally:
        watcher.close()
