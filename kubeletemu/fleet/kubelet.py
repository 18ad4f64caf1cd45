"""A fleet node's kubelet: the exact admission (:class:`~kubeletemu.emulator.NodeEmulator`), and the pods
its pod manager still knows after they ended.

The kubelet admits a pod when it sees it bound (``HandlePodAdditions``); a rejected pod is Failed at once
and, like a pod whose containers exited (Succeeded), stays in the pod manager until the API server deletes
the pod object — a 1.33 kubelet's podresources ``List`` still returns it (see
:mod:`kubeletemu.fleet.exporters.listing`). ``state_version`` grows with every change an exporter's scan
could see, so a scan of an unchanged node is answered from the last one.

What the kubelet writes to its state files on the way (``cpu_manager_state``, ``memory_manager_state``,
``kubelet_internal_checkpoint``: what nfd-topology-updater watches) is told by :func:`holds_exclusive`: an
allocation of exclusive CPUs, memory blocks or devices is written at admission and removed at release.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubeletemu.emulator import AdmissionReport, NodeEmulator
from kubeletemu.pod import Pod
from kubeletemu.podresources.fingerprint import PodInfo

FAILED = "Failed"
SUCCEEDED = "Succeeded"
RUNNING = "Running"
PENDING = "Pending"
TERMINAL_PHASES = frozenset({FAILED, SUCCEEDED})


def is_terminated(phase: str) -> bool:
    """kube-scheduler's rule (``pkg/scheduler/eventhandlers.go``: the scheduler's pod informer selects
    ``status.phase!=Succeeded,status.phase!=Failed``, so a terminated pod leaves the scheduler's cache and
    NodeInfo): a Succeeded or Failed pod counts on no node."""
    return phase in TERMINAL_PHASES


def holds_exclusive(report: AdmissionReport) -> bool:
    """Whether the admission wrote a state file: exclusive CPUs, memory blocks or devices allocated."""
    return any((c.exclusive_cpus and c.cpu_ids) or c.memory or c.devices for c in report.containers)


@dataclass
class KubeletNode:
    index: int
    name: str
    emulator: NodeEmulator
    # namespace/name -> the ended pod as a List entry (no resources), until the API server deletes it.
    terminal: dict[str, PodInfo] = field(default_factory=dict)
    state_version: int = 0

    def admit(self, pod: Pod) -> AdmissionReport:
        report = self.emulator.admit(pod)
        if not report.admitted:
            self.terminal[_key(pod)] = PodInfo(pod.namespace, pod.name, FAILED, False)
        self.state_version += 1
        return report

    def complete(self, pod: Pod) -> None:
        """The pod's containers exited: it is Succeeded and its resources are released."""
        self.emulator.remove(pod.uid)
        self.terminal[_key(pod)] = PodInfo(pod.namespace, pod.name, SUCCEEDED, False)
        self.state_version += 1

    def forget(self, pod: Pod) -> None:
        """The API server deleted the ended pod: the pod manager drops it."""
        if self.terminal.pop(_key(pod), None) is not None:
            self.state_version += 1

    def terminal_pods(self) -> list[PodInfo]:
        return list(self.terminal.values())


def _key(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"
