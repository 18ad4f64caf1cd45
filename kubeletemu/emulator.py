"""The emulated node: the kubelet's admission chain over the container manager, the admitted pods, and
side-effect-free what-if questions. Pure engine: the gRPC servicers and the CLI only convert and delegate.

The chain runs the kubelet's resource-related admit handlers in the kubelet's order; the first refusal
decides the reason. A refused pod holds nothing afterwards.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from kubeletemu.checkpointmanager import batched_writes, make_directories
from kubeletemu.config import Config
from kubeletemu.config.loader import check_feature_gates
from kubeletemu.containermanager import (
    AllocationResult,
    ContainerAllocation,
    ContainerManager,
    TopologyOverrides,
    held_summary,
    without_allocations,
)
from kubeletemu.lifecycle.pod_features import POD_LEVEL_RESOURCES_GATE, PodFeaturesAdmitHandler
from kubeletemu.lifecycle.predicate import PredicateAdmitHandler
from kubeletemu.machine import Machine
from kubeletemu.missing_checkpoints import check_checkpoints_present
from kubeletemu.node_allocatable import NodeAllocatable, capacity_from_host, compute_node_allocatable
from kubeletemu.node_topology import NodeTopologyReport, node_topology
from kubeletemu.pod import FIX_KUBELET_QOS_CLASS_GATE, Pod, QOSClass, compute_qos
from kubeletemu.registry import REGISTRY_DIR, AdmittedPod, PodRegistry
from kubeletemu.topologymanager import TopologyHint, TopologyManagerError
from kubeletemu.topologymanager.numa_scorer import TieBreakDecision
from kubeletemu.versions.gates import effective_gates
from kubeletemu.versions.version import parse_version

# How many refused pods' UIDs a node keeps for its feed (an extender's in-flight placements of them close).
REFUSALS_KEPT = 256
HANDLER_RESOURCE_ALLOCATOR = "resource-allocator"
HANDLER_PREDICATE = "predicate"
HANDLER_POD_FEATURES = "pod-features"


class EmulatorError(Exception):
    """Base of the errors a caller can act on; each maps to one gRPC status."""


class PodExistsError(EmulatorError):
    pass


class PodNotFoundError(EmulatorError):
    pass


# What start-up did to a pod it could not restore as saved (``StartupRepair.action``).
REPAIR_DROPPED = "dropped"  # a registered pod whose admission was never answered
REPAIR_RELEASED = "released"  # allocations of a UID no admitted pod has
REPAIR_REFUSED = "refused"  # a pod file whose pod this version's manifest checks refuse


@dataclass(frozen=True)
class StartupRepair:
    """One pod start-up did not restore as saved, and why; the daemon logs and counts each."""

    uid: str
    pod: str  # namespace/name, "" when only the checkpoints know the UID
    action: str
    reason: str


@dataclass(frozen=True)
class AdmissionReport:
    pod: Pod
    admitted: bool
    reason: str
    message: str
    decided_by: str  # which handler refused; "" when admitted
    containers: tuple[ContainerAllocation, ...]
    released: tuple[str, ...] = ()
    # Ties broken by a NUMA allocation strategy score (KEP-6007): which signal decided.
    numa_decisions: tuple[tuple[str, TieBreakDecision], ...] = field(default=())
    # Pods the kubelet evicted to admit this critical pod (``CriticalPodAdmissionHandler``); they end
    # Failed/Preempting and hold nothing afterwards.
    preempted: tuple[Pod, ...] = ()
    # The pod's QoS class as this kubelet computes it (its gates: pod-level resources and, from 1.37,
    # PodLevelResourcesFixKubeletQOSClass); None in reports made without a kubelet.
    qos_class: QOSClass | None = None


class NodeEmulator:
    """One node. ``state_dir`` None keeps everything in memory (tests, what-if tools)."""

    def __init__(
        self,
        config: Config,
        machine: Machine,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.config = config
        self.machine = machine
        self.state_dir = None if state_dir is None else Path(state_dir)
        if self.state_dir is not None:
            make_directories(self.state_dir)
        self.registry = PodRegistry(None if self.state_dir is None else self.state_dir / REGISTRY_DIR)
        if self.state_dir is not None:
            # Before the managers start: a missing checkpoint would start them empty, and the crash rule
            # below would then drop every pod that depended on it.
            check_checkpoints_present(self.state_dir, self.registry)
        self.cm = ContainerManager(config, machine, state_dir=self.state_dir, active_pods=self.registry.uids)
        # Pods whose containers exited (:meth:`terminate`), by UID, in phase Succeeded, until the API server
        # deletes them: no longer active, still in the pod manager (a 1.33 ``List`` returns them).
        self.ended: dict[str, Pod] = {}
        # Counts the changes made through admit/remove/restore_state: an answer computed at one count
        # (``would_admit``) holds until the count moves (the fleet's scheduler keeps answers by it).
        self.state_version = 0
        # The UIDs of the pods refused most recently, oldest first (the node feed reports them).
        self.refused: deque[str] = deque(maxlen=REFUSALS_KEPT)
        self.allocatable = self._node_allocatable()
        self.predicate = self._predicate_handler()
        self.pod_features = self._pod_features_handler()
        self.startup_repairs = self._reconcile()
        for entry in self.registry:
            for name, hint in entry.affinity.items():
                self.cm.restore_affinity(entry.pod, name, hint)

    @property
    def dropped_at_startup(self) -> list[str]:
        """UIDs of the registered pods start-up dropped."""
        return [r.uid for r in self.startup_repairs if r.action == REPAIR_DROPPED]

    def _reconcile(self) -> list[StartupRepair]:
        """After a crash: a registered pod whose checkpoints lack what its file records was never
        answered (its files were being written together) and is dropped; allocations of pods the
        registry does not name are stale and released, as the kubelet's stale-state removal releases
        them. Returns what was done, pod by pod."""
        repairs = [
            StartupRepair(
                r.uid,
                "",
                REPAIR_REFUSED,
                f"{r.path}: its pod is refused: {r.reason}"
                + (f" (set aside as {r.moved_to.name})" if r.moved_to is not None else ""),
            )
            for r in self.registry.refused
        ]
        for entry in self.registry:
            held = {
                c.name: allocation_record(self.cm.describe(entry.pod, c)) for c in entry.pod.all_containers()
            }
            if held != entry.allocations:
                self.registry.remove(entry.pod.uid)
                differing = sorted(
                    n
                    for n in held.keys() | entry.allocations.keys()
                    if held.get(n) != entry.allocations.get(n)
                )
                repairs.append(
                    StartupRepair(
                        entry.pod.uid,
                        f"{entry.pod.namespace}/{entry.pod.name}",
                        REPAIR_DROPPED,
                        "its admission was never answered: the checkpoints do not hold what its registry "
                        f"file records (container(s) {', '.join(differing)})",
                    )
                )
        registered = set(self.registry.uids())
        for uid, what in sorted(self.cm.pods_with_state().items()):
            if uid not in registered:
                reason = (
                    f"the {', '.join(what)} checkpoint(s) hold allocations for it but no admitted pod has "
                    "this UID (an admission interrupted before its answer, or a removal before its files)"
                )
                repairs.append(StartupRepair(uid, "", REPAIR_RELEASED, reason))
        self.cm.remove_stale_state(self.registry.pods())
        return repairs

    # ---- admission --------------------------------------------------------------------------------

    def admit(self, pod: Pod) -> AdmissionReport:
        """The kubelet's admission; an admitted pod keeps its allocation."""
        self._check_new(pod)
        self.state_version += 1  # a rejection releases what it took, but count every attempt
        # One batch: the checkpoints and the pod's registry file are written together when it ends.
        with batched_writes():
            try:
                report = self._run_chain(self.cm, pod)
                for victim in report.preempted:
                    self.registry.remove(victim.uid)
                if report.admitted:
                    affinity = {c.name: c.affinity for c in report.containers if c.affinity is not None}
                    records = {c.name: allocation_record(c) for c in report.containers}
                    self.registry.add(AdmittedPod(pod, affinity, allocations=records))
                else:
                    self.refused.append(pod.uid)
            except BaseException:
                # Whatever failed part-way (a value the manifest checks let through, a bug), the pod holds
                # nothing afterwards, as a refused pod holds nothing: no CPU stays taken by an answer
                # that was an error.
                self._forget(pod.uid)
                raise
        return report

    def _forget(self, uid: str) -> None:
        self.cm.release(uid)
        if uid in self.registry:
            self.registry.remove(uid)

    def would_admit(
        self,
        pod: Pod,
        overrides: TopologyOverrides | None = None,
        kubelet_version: str | None = None,
    ) -> AdmissionReport:
        """The same answer as ``admit`` on an in-memory copy of the node: nothing changes here.

        ``kubelet_version`` asks the kubelet of that version instead (see :meth:`at_version`); None or the
        node's own version is the node's kubelet.
        """
        self._check_new(pod)
        if (
            kubelet_version is not None
            and parse_version(kubelet_version) != self.config.emulator.kubelet_version
        ):
            upgraded = self.at_version(kubelet_version, overrides)
            return upgraded._run_chain(upgraded.cm, pod)
        return self._run_chain(self.cm.clone(overrides), pod)

    def at_version(self, kubelet_version: str, overrides: TopologyOverrides | None = None) -> NodeEmulator:
        """A fork of this node run by the kubelet of ``kubelet_version``: the same pods and managers' states,
        that version's gate defaults and policy-option maturity (an upgrade or downgrade what-if).

        The configuration is checked as that kubelet checks it at start-up: ``featureGates``
        (``ConfigError``), then the managers' options; a refusal is an :class:`EmulatorError`
        ``kubeletVersion V: <the kubelet's text>``. An unsupported version is a ``ValueError`` naming the
        supported range.
        """
        version = parse_version(kubelet_version)
        config = replace(self.config, emulator=replace(self.config.emulator, kubelet_version=version))
        check_feature_gates(config)
        try:
            return self.fork(overrides, config=config)
        except (ValueError, TopologyManagerError) as err:
            raise EmulatorError(f"kubeletVersion {version}: {err}") from None

    def fork(self, overrides: TopologyOverrides | None = None, config: Config | None = None) -> NodeEmulator:
        """An independent in-memory node holding what this one holds now: the admitted pods in order, the
        managers' states (``ContainerManager.clone``) and the Topology Manager's stored hints; ``overrides``
        replace Topology Manager settings, ``config`` the configuration (same machine and devices: another
        kubelet version, whose managers start on the states as that kubelet's would, with its start-up
        checks). Nothing done on either node shows on the other."""
        fork = NodeEmulator.__new__(NodeEmulator)
        fork.config, fork.machine, fork.state_dir = config or self.config, self.machine, None
        fork.registry = PodRegistry(None)
        fork.state_version = 0
        fork.refused = deque(maxlen=REFUSALS_KEPT)  # a fork refuses on its own
        for entry in self.registry:
            fork.registry.add(
                AdmittedPod(entry.pod, dict(entry.affinity), allocations=dict(entry.allocations))
            )
        # The managers' stale-state sweeps see the fork's pods, not the live ones. Another configuration
        # (another kubelet version) is a restart: its managers start on the states and check them as that
        # kubelet would; the same configuration only copies them (the kubelet checks nothing at admission).
        if config is None or config == self.config:
            fork.cm = self.cm.clone(overrides, active_pods=fork.registry.uids)
        else:
            fork.cm = self.cm.restarted(fork.config, overrides, active_pods=fork.registry.uids)
        for uid, hints in self.cm.topology.scope.pod_topology_hints.items():
            for name, hint in hints.items():
                fork.cm.topology.scope.set_topology_hints(uid, name, hint)
        fork.ended = dict(self.ended)
        fork.allocatable = self.allocatable
        fork.predicate = fork._predicate_handler()  # its own: the handler caches per-pod requests
        fork.pod_features = fork._pod_features_handler()
        fork.startup_repairs = []
        return fork

    def _check_new(self, pod: Pod) -> None:
        """One pod per UID and one per namespace/name, as the API server guarantees a kubelet."""
        existing = self.registry.get(pod.uid)
        if existing is not None:
            raise PodExistsError(
                f'pod UID "{pod.uid}" is already admitted (as {existing.pod.namespace}/{existing.pod.name})'
            )
        existing = self.registry.by_name(pod.namespace, pod.name)
        if existing is not None:
            raise PodExistsError(
                f'pod {pod.namespace}/{pod.name} is already admitted with UID "{existing.pod.uid}"; '
                f'this one has UID "{pod.uid}": remove the admitted pod first'
            )

    def _node_allocatable(self) -> NodeAllocatable:
        """``node.status.allocatable`` as the kubelet reports it for this machine and configuration."""
        if self.machine.host is None:
            raise EmulatorError("node allocatable needs a probed host")
        capacity = capacity_from_host(self.machine.host, self.cm.devices.all_devices)
        return compute_node_allocatable(capacity, self.config.kubelet)

    def _predicate_handler(self) -> PredicateAdmitHandler:
        kubelet = self.config.kubelet
        version = self.config.emulator.kubelet_version
        gates = effective_gates(version, kubelet.feature_gates)
        return PredicateAdmitHandler(
            self.allocatable.allocatable, kubelet.max_pods, feature_gates=gates, kubelet_version=version
        )

    def _pod_features_handler(self) -> PodFeaturesAdmitHandler:
        version = self.config.emulator.kubelet_version
        return PodFeaturesAdmitHandler(effective_gates(version, self.config.kubelet.feature_gates), version)

    def qos_class(self, pod: Pod) -> QOSClass:
        """``v1qos.GetPodQOS`` of this kubelet: the managers' and the preemption's class of ``pod``."""
        gates = effective_gates(self.config.emulator.kubelet_version, self.config.kubelet.feature_gates)
        return compute_qos(
            pod, gates.get(POD_LEVEL_RESOURCES_GATE, False), gates.get(FIX_KUBELET_QOS_CLASS_GATE, False)
        )

    def _run_chain(self, cm: ContainerManager, pod: Pod) -> AdmissionReport:
        return replace(self._chain(cm, pod), qos_class=self.qos_class(pod))

    def _chain(self, cm: ContainerManager, pod: Pod) -> AdmissionReport:
        """The resource allocator (Topology Manager and its providers), then the predicate handler's
        node fit, then the pod-features handler (pod-level resources with the gate off; from 1.34): the
        kubelet's order, so a pod refused by several reports the earliest handler's reason."""
        allocation = cm.allocate(pod)
        if not allocation.result.admit:
            return _report(pod, allocation, HANDLER_RESOURCE_ALLOCATOR)
        holds_devices = any(c.devices for c in allocation.containers)
        allocated = (
            {r: len(ids) for r, ids in cm.devices.allocated_devices.items()} if holds_devices else None
        )
        decision = self.predicate.decide(pod, self.registry.pods(), allocated_devices=allocated)
        result, preempted = decision.result, decision.preempted
        for victim in preempted:
            # killPodFunc: the victim's containers stop and the managers' stale-state removal frees them.
            cm.release(victim.uid)
        decided_by = HANDLER_PREDICATE
        if result.admit:
            result, decided_by = self.pod_features.admit(pod), HANDLER_POD_FEATURES
        if not result.admit:
            # The allocator already allocated: release it, as the kubelet's stale-state removal would.
            released = tuple(filter(None, (held_summary(c) for c in allocation.containers)))
            cm.release(pod.uid)
            containers = tuple(without_allocations(c) for c in allocation.containers)
            return AdmissionReport(
                pod,
                False,
                result.reason,
                result.message,
                decided_by,
                containers,
                released,
                preempted=preempted,
            )
        return replace(_report(pod, allocation, ""), preempted=preempted)

    # ---- bookkeeping ------------------------------------------------------------------------------

    def remove(self, uid: str) -> Pod:
        return self._unregister(uid, self.cm.release)

    def _unregister(self, uid: str, release: Callable[[str], None]) -> Pod:
        """Drop an admitted pod from the registry, ``release`` (what its managers give back) in the same
        batch of writes; returns the pod."""
        entry = self.registry.get(uid)
        if entry is None:
            raise PodNotFoundError(f'pod UID "{uid}" is not admitted here')
        self.state_version += 1
        with batched_writes():
            release(uid)
            self.registry.remove(uid)
        return entry.pod

    def terminate(self, uid: str) -> Pod:
        """The pod's containers exited (Succeeded): it leaves the active pods, and the Topology Manager
        forgets its hints (``PostStopContainer``), but the CPU, Memory and Device Managers keep what they hold
        until their stale-state sweeps: the next admission's hint or allocation calls, the CPU Manager's
        reconcile loop (:meth:`reconcile_cpus`), a podresources ``List`` for devices (kubernetes v1.37.2
        ``internal_container_lifecycle.go``, ``cpu_manager.go``, ``memory_manager.go``,
        ``devicemanager/manager.go``; the same at v1.33.3, v1.34.7, v1.35.4 and v1.36.3). Returns the pod as
        ended."""
        ended = replace(self._unregister(uid, self.cm.topology.remove_pod), phase="Succeeded")
        self.ended[uid] = ended
        return ended

    def reconcile_cpus(self) -> list[str]:
        """The CPU Manager's ``reconcileState`` as far as it changes a state: its ``removeStaleState``
        (the static policy only: under ``none`` the kubelet starts no loop). Returns the UIDs released."""
        if self.config.kubelet.cpu_manager_policy == "none":
            return []
        released = self.cm.cpus.remove_stale_state(self.registry.uids())
        if released:
            self.state_version += 1
        return released

    def stale_state(self) -> dict[str, list[str]]:
        """Pod UID -> the managers (``cpu``, ``memory``, ``devices``) still holding state for a pod that
        is not active."""
        active = set(self.registry.uids())
        return {uid: what for uid, what in self.cm.pods_with_state().items() if uid not in active}

    def swept(self) -> NodeEmulator:
        """The node as the next admission's stale-state sweeps leave it (what it allocates from): itself
        when no manager holds an inactive pod's state, else a fork that has swept."""
        if not self.stale_state():
            return self
        fork = self.fork()
        fork.cm.remove_stale_state(fork.registry.pods())
        return fork

    def forget_ended(self, uid: str) -> None:
        """The API server deleted the ended pod: the pod manager drops it (its stale state stays until a
        sweep)."""
        self.ended.pop(uid, None)

    # ---- the saved state --------------------------------------------------------------------------

    def state_files(self) -> list[Path]:
        """The files the saved state is made of, as they are on disk now: the managers' checkpoints and
        the registry's pod files (empty for a node in memory)."""
        return [*self.cm.checkpoint_files(), *self.registry.files()]

    def restore_state(self, files: Mapping[Path, bytes]) -> None:
        """Hold what ``files`` (path -> content, as ``state_files`` would read them) say, writing
        nothing: the pods, the managers' states and the stored hints a restart on these files would
        restore. The daemon undoes with it the calls whose files could not be made durable, going back to
        the last files that were."""
        self.state_version += 1
        directory = self.registry.directory
        self.registry.restore({p: body for p, body in files.items() if p.parent == directory})
        self.cm.restore_checkpoints(files, self.registry.uids())
        for entry in self.registry:
            for name, hint in entry.affinity.items():
                self.cm.restore_affinity(entry.pod, name, hint)

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        """The Store's ``GetAffinity``; an unknown pod or container is an error, not the zero hint."""
        entry = self.registry.get(pod_uid)
        if entry is None:
            raise PodNotFoundError(f'pod UID "{pod_uid}" is not admitted here')
        if entry.pod.container(container_name) is None:
            raise PodNotFoundError(
                f'pod "{entry.pod.namespace}/{entry.pod.name}" has no container "{container_name}"'
            )
        return self.cm.topology.get_affinity(pod_uid, container_name)

    def topology(self) -> NodeTopologyReport:
        return node_topology(self.cm)

    def pods(self) -> list[tuple[Pod, tuple[ContainerAllocation, ...]]]:
        """Admitted pods in admission order, with what each container holds now."""
        return [
            (entry.pod, tuple(self.cm.describe(entry.pod, c) for c in entry.pod.all_containers()))
            for entry in self.registry
        ]


def _report(pod: Pod, allocation: AllocationResult, decided_by: str) -> AdmissionReport:
    result = allocation.result
    return AdmissionReport(
        pod,
        result.admit,
        result.reason,
        result.message,
        decided_by,
        allocation.containers,
        allocation.released,
        allocation.numa_decisions,
    )


def allocation_record(container: ContainerAllocation) -> dict[str, object]:
    """What a container holds, as plain JSON values (the registry stores it; start-up compares it)."""
    return {
        "cpus": list(container.cpu_ids) if container.exclusive_cpus else [],
        "memory": [[b.memory_type, b.size, list(b.numa_nodes)] for b in container.memory],
        "devices": {res: sorted(ids) for res, ids in sorted(container.devices.items()) if ids},
    }
