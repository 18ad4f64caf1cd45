"""Reading the state directory at start-up (and on reload) without writing to it.

The kubelet rewrites some checkpoints as it starts (the device manager's whenever a plugin registers, the
CPU and Memory Managers' when their state is new or repaired); most of the time with the content they
already have. The node is restored here with every write collected instead of made, and what the
directory should hold is worked out from it: a valid saved state is read, not rewritten, so a full or
read-only disk does not stop a start-up. What does differ (a new checkpoint, a start-up repair) is left
to the daemon's writer, which can be refused without losing the node.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kubeletemu.checkpointmanager import deferred_writes, read_file
from kubeletemu.config import Config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine


@dataclass(frozen=True)
class OpenedState:
    emulator: NodeEmulator
    # What each file of the state should hold (content, mode): the node as restored, repairs included.
    files: dict[Path, tuple[bytes, int]]
    # Files the state should no longer have (pods a start-up repair dropped).
    removed: frozenset[Path]


def open_state(config: Config, machine: Machine, state_dir: str) -> OpenedState:
    """The node as the state directory holds it, writing nothing there (directories aside). Raises what
    restoring raises: a corrupt or unreadable file, named."""
    with deferred_writes() as writes:
        emulator = NodeEmulator(config, machine, state_dir)
    files = {path: op for path in emulator.state_files() if (op := read_file(path)) is not None}
    removed = set()
    for path, op in writes.freeze().ops.items():
        if op is None:
            files.pop(path, None)
            removed.add(path)
        else:
            files[path] = op
            removed.discard(path)
    return OpenedState(emulator, files, frozenset(removed))
