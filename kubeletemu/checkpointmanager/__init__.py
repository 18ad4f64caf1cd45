"""What the kubelet's ``pkg/kubelet/checkpointmanager`` gives every checkpoint: atomic files and the
FNV-32a checksum over go-spew's dump of the checkpoint struct; plus the daemon's group-commit writer."""

from kubeletemu.checkpointmanager.checksum import fnv32a
from kubeletemu.checkpointmanager.files import (
    DISK_ERRNOS,
    PATH_ERRNOS,
    CheckpointWriteError,
    PendingWrites,
    WriteBatch,
    batched_writes,
    deferred_writes,
    make_directories,
    probe_writable,
    read_file,
    remove_file,
    remove_stale_temporaries,
    write_batch,
    write_file_atomic,
)
from kubeletemu.checkpointmanager.writer import CheckpointWriter, WriterClosedError

__all__ = [
    "DISK_ERRNOS",
    "PATH_ERRNOS",
    "CheckpointWriteError",
    "CheckpointWriter",
    "PendingWrites",
    "WriteBatch",
    "WriterClosedError",
    "batched_writes",
    "deferred_writes",
    "fnv32a",
    "make_directories",
    "probe_writable",
    "read_file",
    "remove_file",
    "remove_stale_temporaries",
    "write_batch",
    "write_file_atomic",
]
