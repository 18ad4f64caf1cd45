"""Memory manager errors. The texts are the kubelet's (``memory_manager.go``, ``policy_static.go``)."""

from __future__ import annotations


class MemoryManagerError(ValueError):
    """Construction and start-up errors (bad ``reservedMemory``, invalid state): the kubelet won't start."""


class MemoryAllocationError(Exception):
    """``Allocate`` refused. Untyped in the kubelet, so admission reports ``UnexpectedAdmissionError``."""
