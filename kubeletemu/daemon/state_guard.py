"""The state directory watched as the node's own: it, its lock file, the directories the files live in and
the managers' checkpoints must stay the ones the daemon locked and wrote.

A cleanup script's ``rm -rf``, or a disk re-provisioned under a running daemon, takes the checkpoints, the
pod files and the lock file with it. Left alone, the daemon would answer as before and write only the
files later calls touch: a kill -9 then loses every pod whose file went, and a second daemon could lock
the new, empty directory. So each Admit and RemovePod first asks :meth:`StateDirGuard.problem` (a few
``stat`` calls, no write), the writer asks it again after each pass (files renamed into a directory that
was removed meanwhile went with it: the pass fails and its calls are undone), and the daemon's periodic
check asks it every few seconds. On a problem the daemon re-creates the directory, locks it again and
writes the whole node from memory (:mod:`kubeletemu.daemon.state_disk`) before it acknowledges anything
more.

A checkpoint deleted on its own (``cpu_manager_state``, ``memory_manager_state``, the device manager's)
is as much a loss: the writer skips files whose content it already wrote, so later admissions would not
bring it back, and the next start refuses a node whose pods hold CPUs, memory or devices with no
checkpoint. The checkpoints the daemon wrote are watched with the directories (a ``stat`` each; pod files
are not, one per pod would be a ``stat`` per pod on every call) and rewritten the same way.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from kubeletemu.daemon.state_lock import StateDirLock

Identity = tuple[int, int]


class StateDirGuard:
    def __init__(self, lock: StateDirLock, holder: str) -> None:
        self.lock = lock
        self.holder = holder
        # Every directory holding a file of the state (the state directory, pods/, device-plugins/) and
        # its (device, inode) when last written whole; None for one not made yet (pods/ before the first
        # admission), which is adopted when it appears.
        self._directories: dict[Path, Identity | None] = {}
        # The checkpoints (files outside those pod directories) as of the last whole write.
        self._files: tuple[Path, ...] = ()
        # How often the directory was found gone or replaced (counted by the daemon's metric too).
        self.rebuilds = 0

    def remember(self, files: Iterable[Path], directories: Iterable[Path] = ()) -> None:
        """The directories of ``files`` (and ``directories``, which may not exist yet) as they are now: the
        state was just written whole into them."""
        files = list(files)
        pods = set(directories)
        watched = {self.lock.state_dir, *pods, *(path.parent for path in files)}
        self._directories = {directory: _identity(directory) for directory in watched}
        self._files = tuple(path for path in files if path.parent not in pods)

    def problem(self) -> str | None:
        """Why the state directory is not the one the daemon holds, None when it is."""
        lost = self.lock.lost()
        if lost is not None:
            return lost
        for directory, identity in list(self._directories.items()):
            now = _identity(directory)
            if now == _NOT_A_DIRECTORY:
                # Writes there fail (ENOTDIR) and the writer's failure handling takes over: degraded until
                # the path is a directory again, then every file is written back.
                continue
            if identity is None:
                if now is not None:  # made by the writer since: this daemon's from now on
                    self._directories[directory] = now
                continue
            if now is None:
                return f"{directory} is gone"
            if now != identity:
                return f"{directory} was replaced by another directory"
        for path in self._files:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                return f"the checkpoint {path} is gone"
            except OSError:
                continue  # its directory is not one (above): the writer's failure handling has it
            if not stat.S_ISREG(st.st_mode):
                return f"the checkpoint {path} is not a file"
        return None

    def retake(self) -> None:
        """Make the state directory again if it is gone and lock it anew if its lock file went (see
        :meth:`StateDirLock.retake`); a lock file still in place is still this daemon's lock."""
        if self.lock.lost() is not None:
            self.lock.retake(self.holder)
        # Until the node is written whole again (``remember``), the directories below are not known.
        self._directories = {}
        self._files = ()


_NOT_A_DIRECTORY: Identity = (-1, -1)


def _identity(directory: Path) -> Identity | None:
    """(device, inode) of the directory; None when nothing is there; ``_NOT_A_DIRECTORY`` for another
    kind of file."""
    try:
        st = os.stat(directory)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return _NOT_A_DIRECTORY
    return (st.st_dev, st.st_ino)
