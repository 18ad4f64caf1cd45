"""Exceptions of the CPU manager. Where the kubelet has a text for the failure, ``str()`` is that text."""

from __future__ import annotations

from kubeletemu.admission import AdmissionError

ERROR_SMT_ALIGNMENT = "SMTAlignmentError"
ERROR_EMPTY_POD_SHARED_POOL = "EmptyPodSharedPoolError"


class CPUManagerError(ValueError):
    """Base class: construction or start-up failures (the kubelet refuses to start with these)."""


class CPUSetError(CPUManagerError):
    """A cpuset string that ``cpuset.Parse`` rejects; the text is the Go parser's."""


class TopologyError(CPUManagerError):
    """An inconsistent CPU topology (duplicate CPU ids, a core without threads, ...)."""


class PolicyOptionsError(CPUManagerError):
    """``NewStaticPolicyOptions`` / ``ValidateStaticPolicyOptions`` failures."""


class StateError(CPUManagerError):
    """``validateState`` failures and checkpoint restore failures ("drain node and remove state file")."""


class CheckpointError(StateError):
    """A checkpoint that cannot be read, parsed or migrated."""


class CorruptCheckpointError(CheckpointError):
    """``errors.ErrCorruptCheckpoint``: the checksum does not match the content."""

    def __init__(self) -> None:
        super().__init__("checkpoint is corrupted")


class CheckpointNotFoundError(CheckpointError):
    """``errors.ErrCheckpointNotFound``."""

    def __init__(self) -> None:
        super().__init__("checkpoint is not found")


class CPUAllocationError(Exception):
    """``takeByTopology*`` failures. Not an ``AdmissionError``: admission reports it as unexpected."""


class KubeletHangError(CPUAllocationError):
    """Where the kubelet's remainder loop in ``takeByTopologyNUMADistributed`` would never terminate."""


class SMTAlignmentError(AdmissionError):
    """``SMTAlignmentError`` of the static policy with ``full-pcpus-only``."""

    reason = ERROR_SMT_ALIGNMENT

    def __init__(
        self,
        requested_cpus: int,
        cpus_per_core: int,
        available_physical_cpus: int = 0,
        caused_by_physical_cpus: bool = False,
    ) -> None:
        self.requested_cpus = requested_cpus
        self.cpus_per_core = cpus_per_core
        self.available_physical_cpus = available_physical_cpus
        self.caused_by_physical_cpus = caused_by_physical_cpus
        if caused_by_physical_cpus:
            text = (
                "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = "
                f"{available_physical_cpus}, requested CPUs = {requested_cpus}, "
                f"CPUs per core = {cpus_per_core}"
            )
        else:
            text = (
                f"SMT Alignment Error: requested {requested_cpus} cpus not multiple cpus per core = "
                f"{cpus_per_core}"
            )
        super().__init__(text)


class EmptyPodSharedPoolError(AdmissionError):
    """``admission.EmptyPodSharedPoolError`` (pod-level resource managers)."""

    reason = ERROR_EMPTY_POD_SHARED_POOL
