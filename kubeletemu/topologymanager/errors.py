"""The topology manager's admission error (``topology_manager.go``)."""

from __future__ import annotations

from kubeletemu.admission import AdmissionError

ERROR_TOPOLOGY_AFFINITY = "TopologyAffinityError"


class TopologyAffinityError(AdmissionError):
    reason = ERROR_TOPOLOGY_AFFINITY

    def __init__(self) -> None:
        super().__init__("Resources cannot be allocated with Topology locality")


class TopologyManagerError(ValueError):
    """Construction errors; the kubelet fails to start with these."""
