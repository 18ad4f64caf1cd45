"""``state_mem.go``: the in-memory State."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.state.state import ContainerCPUAssignments, PodCPUAssignments, clone_assignments


class MemoryState:
    """Thread-safe; readers get copies, so callers cannot change the state behind its back."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._assignments: ContainerCPUAssignments = {}
        self._pod_assignments: PodCPUAssignments = {}
        self._default = CPUSet()

    def get_cpu_set(self, pod_uid: str, container_name: str) -> CPUSet | None:
        with self._lock:
            return self._assignments.get(pod_uid, {}).get(container_name)

    def get_default_cpu_set(self) -> CPUSet:
        with self._lock:
            return self._default

    def get_cpu_set_or_default(self, pod_uid: str, container_name: str) -> CPUSet:
        cpus = self.get_cpu_set(pod_uid, container_name)
        return self.get_default_cpu_set() if cpus is None else cpus

    def get_cpu_assignments(self) -> ContainerCPUAssignments:
        with self._lock:
            return clone_assignments(self._assignments)

    def get_pod_cpu_set(self, pod_uid: str) -> CPUSet | None:
        with self._lock:
            return self._pod_assignments.get(pod_uid)

    def get_pod_cpu_assignments(self) -> PodCPUAssignments:
        with self._lock:
            return dict(self._pod_assignments)

    def set_cpu_set(self, pod_uid: str, container_name: str, cpus: CPUSet) -> None:
        with self._lock:
            self._assignments.setdefault(pod_uid, {})[container_name] = cpus

    def set_default_cpu_set(self, cpus: CPUSet) -> None:
        with self._lock:
            self._default = cpus

    def set_cpu_assignments(self, assignments: Mapping[str, Mapping[str, CPUSet]]) -> None:
        with self._lock:
            self._assignments = clone_assignments(assignments)

    def set_pod_cpu_set(self, pod_uid: str, cpus: CPUSet) -> None:
        with self._lock:
            self._pod_assignments[pod_uid] = cpus

    def set_pod_cpu_assignments(self, assignments: Mapping[str, CPUSet]) -> None:
        with self._lock:
            self._pod_assignments = dict(assignments)

    def delete(self, pod_uid: str, container_name: str) -> None:
        with self._lock:
            containers = self._assignments.get(pod_uid)
            if containers is None:
                return
            containers.pop(container_name, None)
            if not containers:
                del self._assignments[pod_uid]

    def delete_pod(self, pod_uid: str) -> None:
        with self._lock:
            self._pod_assignments.pop(pod_uid, None)

    def clear_state(self) -> None:
        with self._lock:
            self._default = CPUSet()
            self._assignments = {}
            self._pod_assignments = {}
