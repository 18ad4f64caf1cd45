"""``state.State``: the CPU manager's bookkeeping (shared pool plus exclusive assignments)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from kubeletemu.cpumanager.cpuset import CPUSet

# podUID -> container name -> CPUs.
ContainerCPUAssignments = dict[str, dict[str, CPUSet]]
# podUID -> the pod's CPU "bubble" (PodLevelResourceManagers).
PodCPUAssignments = dict[str, CPUSet]


def clone_assignments(assignments: Mapping[str, Mapping[str, CPUSet]]) -> ContainerCPUAssignments:
    return {pod: dict(containers) for pod, containers in assignments.items()}


class Reader(Protocol):
    def get_cpu_set(self, pod_uid: str, container_name: str) -> CPUSet | None:
        """The container's exclusive CPUs, or None when it has no entry (Go's ``ok == false``)."""
        ...

    def get_default_cpu_set(self) -> CPUSet: ...

    def get_cpu_set_or_default(self, pod_uid: str, container_name: str) -> CPUSet: ...

    def get_cpu_assignments(self) -> ContainerCPUAssignments:
        """A copy of every container assignment."""
        ...

    def get_pod_cpu_set(self, pod_uid: str) -> CPUSet | None: ...

    def get_pod_cpu_assignments(self) -> PodCPUAssignments: ...


class Writer(Protocol):
    def set_cpu_set(self, pod_uid: str, container_name: str, cpus: CPUSet) -> None: ...

    def set_default_cpu_set(self, cpus: CPUSet) -> None: ...

    def set_cpu_assignments(self, assignments: Mapping[str, Mapping[str, CPUSet]]) -> None: ...

    def set_pod_cpu_set(self, pod_uid: str, cpus: CPUSet) -> None: ...

    def set_pod_cpu_assignments(self, assignments: Mapping[str, CPUSet]) -> None: ...

    def delete(self, pod_uid: str, container_name: str) -> None:
        """Drop one container; the pod's entry goes with its last container."""
        ...

    def delete_pod(self, pod_uid: str) -> None:
        """Drop the pod-level set only (container entries are untouched)."""
        ...

    def clear_state(self) -> None: ...


class State(Reader, Writer, Protocol):
    """Both halves, as ``state.State``."""
