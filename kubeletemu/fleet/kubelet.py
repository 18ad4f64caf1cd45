"""A fleet node's kubelet: the exact admission (:class:`~kubeletemu.emulator.NodeEmulator`), the pods its
pod manager still knows after they ended, and when its resource managers release an ended pod's resources.

The kubelet admits a pod when it sees it bound (``HandlePodAdditions``); a rejected pod is Failed at once
and, like a pod whose containers exited (Succeeded), stays in the pod manager until the API server deletes
the pod object — a 1.33 kubelet's podresources ``List`` still returns it (see
:mod:`kubeletemu.fleet.exporters.listing`). ``state_version`` grows with every change an exporter's scan
could see, so a scan of an unchanged node is answered from the last one.

**Release.** A pod whose containers exited is no longer active, but no manager releases it then: the kubelet's
container exit reaches only the Topology Manager (``PostStopContainer``). The CPU Manager and the Memory
Manager drop a pod that is not active in ``removeStaleState``, which runs first in every hint and allocation
call of an admission (any pod's), and, for the static CPU Manager only, in its ``reconcileState`` loop every
``cpuManagerReconcilePeriod`` (``wait.Until`` from the kubelet's start: a fixed ticker whose phase is the
node's own); the Memory Manager has no loop (kubernetes v1.37.2 ``pkg/kubelet/cm/cpumanager/cpu_manager.go``,
``pkg/kubelet/cm/memorymanager/memory_manager.go``, ``pkg/kubelet/cm/internal_container_lifecycle.go``; the
same at v1.33.3, v1.34.7, v1.35.4 and v1.36.3). So an admission always sees the ended pod's CPUs and memory
free, while ``List`` at 1.33 (which returns ended pods) and the state files show them held until that sweep.
The Device Manager's ``UpdateAllocatedDevices`` likewise runs at admission and at every ``List``.
:meth:`KubeletNode.releases` records each CPU and memory release with its cause and how long after the exit it
came.

What the kubelet writes to its state files on the way (``cpu_manager_state``, ``memory_manager_state``,
``kubelet_internal_checkpoint``: what nfd-topology-updater watches) is told by :func:`holds_exclusive` at
admission and by the sweeps that released something.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kubeletemu.emulator import AdmissionReport, NodeEmulator
from kubeletemu.pod import Pod
from kubeletemu.podresources.fingerprint import PodInfo

FAILED = "Failed"
SUCCEEDED = "Succeeded"
RUNNING = "Running"
PENDING = "Pending"
TERMINAL_PHASES = frozenset({FAILED, SUCCEEDED})

# What released a stale pod's state (``Release.cause``).
AT_RECONCILE = "reconcile"
AT_ADMISSION = "admission"
# The managers whose releases are recorded (devices are also swept by every List, which is not tracked).
TRACKED = ("cpu", "memory")


def is_terminated(phase: str) -> bool:
    """kube-scheduler's rule (``pkg/scheduler/eventhandlers.go``: the scheduler's pod informer selects
    ``status.phase!=Succeeded,status.phase!=Failed``, so a terminated pod leaves the scheduler's cache and
    NodeInfo): a Succeeded or Failed pod counts on no node."""
    return phase in TERMINAL_PHASES


def holds_exclusive(report: AdmissionReport) -> bool:
    """Whether the admission wrote a state file: exclusive CPUs, memory blocks or devices allocated."""
    return any((c.exclusive_cpus and c.cpu_ids) or c.memory or c.devices for c in report.containers)


@dataclass(frozen=True)
class Release:
    """One manager released an ended pod's state: ``cause`` (``reconcile`` or ``admission``), ``held_s``
    seconds after its containers exited."""

    manager: str
    cause: str
    held_s: float


@dataclass
class KubeletNode:
    index: int
    name: str
    emulator: NodeEmulator
    # Where in its period the CPU Manager's reconcile ticker fires, in [0, period).
    reconcile_phase: float = 0.0
    # namespace/name -> a rejected pod as a List entry (no resources), until the API server deletes it.
    terminal: dict[str, PodInfo] = field(default_factory=dict)
    state_version: int = 0
    # Ended pods some tracked manager still holds: UID -> (exit time, those managers).
    stale: dict[str, tuple[float, frozenset[str]]] = field(default_factory=dict)
    releases: list[Release] = field(default_factory=list)
    reconcile_due: bool = False  # a reconcile tick is scheduled (the engine's)

    def admit(self, pod: Pod, now: float = 0.0) -> tuple[AdmissionReport, bool]:
        """The admission, and whether its stale-state sweeps released an ended pod's state."""
        report = self.emulator.admit(pod)
        if not report.admitted:
            self.terminal[_key(pod)] = PodInfo(pod.namespace, pod.name, FAILED, False)
        self.state_version += 1
        return report, self._settle(now, AT_ADMISSION)

    def complete(self, pod: Pod, now: float = 0.0) -> bool:
        """The pod's containers exited: it is Succeeded, no longer active; its resources stay with the
        managers until their sweeps. Returns whether the CPU Manager holds some (a reconcile will free
        them)."""
        self.emulator.terminate(pod.uid)
        self.state_version += 1
        held = frozenset(self.emulator.stale_state().get(pod.uid, ())) & frozenset(TRACKED)
        if held:
            self.stale[pod.uid] = (now, held)
        return "cpu" in held

    def next_reconcile(self, now: float) -> float:
        """The CPU Manager's next reconcile after ``now``: its ticker fires at ``reconcile_phase`` plus
        whole periods."""
        period = self.emulator.config.kubelet.cpu_manager_reconcile_period_s
        return self.reconcile_phase + (math.floor((now - self.reconcile_phase) / period) + 1) * period

    def reconcile(self, now: float) -> bool:
        """The CPU Manager's ``reconcileState``: its ``removeStaleState``. Returns whether it released."""
        if not self.emulator.reconcile_cpus():
            return False
        self.state_version += 1
        self._settle(now, AT_RECONCILE)
        return True

    def _settle(self, now: float, cause: str) -> bool:
        """Record what the tracked managers released since the last look."""
        if not self.stale:
            return False
        held_now = self.emulator.stale_state()
        released = False
        for uid, (exited, held) in list(self.stale.items()):
            still = held & frozenset(held_now.get(uid, ()))
            for manager in sorted(held - still):
                self.releases.append(Release(manager, cause, now - exited))
                released = True
            if still:
                self.stale[uid] = (exited, still)
            else:
                del self.stale[uid]
        return released

    def forget(self, pod: Pod) -> None:
        """The API server deleted the ended pod: the pod manager drops it."""
        known = self.terminal.pop(_key(pod), None) is not None or pod.uid in self.emulator.ended
        self.emulator.forget_ended(pod.uid)
        if known:
            self.state_version += 1

    def terminal_pods(self) -> list[PodInfo]:
        """The rejected pods the pod manager still holds (ended ones are the emulator's ``ended``)."""
        return list(self.terminal.values())


def _key(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"
