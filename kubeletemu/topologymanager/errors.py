"""The topology manager's admission error (``topology_manager.go``)."""

from __future__ import annotations

from kubeletemu.admission import AdmissionError

ERROR_TOPOLOGY_AFFINITY = "TopologyAffinityError"


class TopologyAffinityError(AdmissionError):
    reason = ERROR_TOPOLOGY_AFFINITY

    def __init__(self) -> None:
        super().__init__("Resources cannot be allocated with Topology locality")


class PodLevelTopologyAffinityError(AdmissionError):
    """``PodLevelTopologyAffinityError`` (1.36+, with ``PodLevelResourceManagers``): the same reason, its
    message prefixed "Pod Scope " (read at v1.36.3, ``topology_manager.go``: openshift/kubernetes vendored
    in openshift/microshift release-4.23 @ ab25d11482; the same at master)."""

    reason = ERROR_TOPOLOGY_AFFINITY

    def __init__(self, message: str = "") -> None:
        super().__init__("Pod Scope " + (message or "Resources cannot be allocated with Topology locality"))


# The two messages the scopes give a refused pod with pod-level resources under PodLevelResourceManagers.
POD_SCOPE_POD_LEVEL_REFUSAL = "pod with pod-level resources failed admission under pod-scope topology manager"
CONTAINER_SCOPE_POD_LEVEL_REFUSAL = (
    "pod with pod-level resources failed admission with a container-level topology manager"
)


class TopologyManagerError(ValueError):
    """Construction errors; the kubelet fails to start with these."""
