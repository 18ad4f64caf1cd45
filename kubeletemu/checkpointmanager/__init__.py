"""What the kubelet's ``pkg/kubelet/checkpointmanager`` gives every checkpoint: atomic files and the
FNV-32a checksum over go-spew's dump of the checkpoint struct."""

from kubeletemu.checkpointmanager.checksum import fnv32a
from kubeletemu.checkpointmanager.files import batched_writes, write_file_atomic

__all__ = ["batched_writes", "fnv32a", "write_file_atomic"]
