"""The mirror: a :class:`NodeEmulator` holding the real kubelet's state, rebuilt from a snapshot.

Built in memory, never from or into the kubelet's directory: the emulator starts empty on the kubelet's
configuration and this host's probed topology, its managers' states are overwritten with the checkpoints'
contents (``defaultCpuSet``, CPU assignments and, with ``PodLevelResourceManagers``, the pods' CPU sets;
the memory manager's machine state, blocks and pods' blocks; the device allocations), and the container
manager is then cloned, which starts every manager on those states and so validates them exactly as the
kubelet validates its checkpoints when it restarts (a state that does not fit the configuration and
topology is refused with the kubelet's error). The reconstructed pods are registered in List order, and
the kubelet's stale-state sweep drops whatever the checkpoints hold for pods it no longer lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubeletemu.config import Config
from kubeletemu.cpumanager.policy_options import POD_LEVEL_RESOURCE_MANAGERS_GATE
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.podresources.view import CONTAINER_ISOLATION
from kubeletemu.registry import AdmittedPod
from kubeletemu.shadow.assignments import KubeletAssignments, from_checkpoints
from kubeletemu.shadow.config import mirror_config
from kubeletemu.shadow.errors import SourceInvalidError
from kubeletemu.shadow.pod_level import PodLevelHoldings
from kubeletemu.shadow.reconstruct import Reconstruction, reconstruct
from kubeletemu.shadow.sources import Checkpoints, KubeletSnapshot
from kubeletemu.shadow.start_machine import machine_at_kubelet_start
from kubeletemu.versions.behaviours import in_effect
from kubeletemu.versions.gates import effective_gates


@dataclass
class Mirror:
    emulator: NodeEmulator
    snapshot: KubeletSnapshot
    reconstruction: Reconstruction
    kubelet: KubeletAssignments
    warnings: list[str] = field(default_factory=list)


def _problem(err: Exception) -> str:
    return str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"


def _check_policies(snapshot: KubeletSnapshot, config: Config) -> None:
    """The kubelet refuses to start when a checkpoint's policy differs from its configuration; a mismatch
    here means the kubelet runs with other settings than its file says (command-line flags)."""
    paths, checkpoints, kubelet = snapshot.paths, snapshot.checkpoints, config.kubelet
    if checkpoints.cpu_policy != kubelet.cpu_manager_policy:
        raise SourceInvalidError(
            f"{paths.cpu_state} was written by CPU manager policy {checkpoints.cpu_policy!r} but "
            f"{paths.config} sets cpuManagerPolicy {kubelet.cpu_manager_policy!r}: does the kubelet's "
            "command line override its configuration file?"
        )
    if checkpoints.memory.policy_name != kubelet.memory_manager_policy:
        raise SourceInvalidError(
            f"{paths.memory_state} was written by memory manager policy {checkpoints.memory.policy_name!r} "
            f"but {paths.config} sets memoryManagerPolicy {kubelet.memory_manager_policy!r}: does the "
            "kubelet's command line override its configuration file?"
        )


def _seed(emulator: NodeEmulator, snapshot: KubeletSnapshot) -> None:
    checkpoints = snapshot.checkpoints
    cm = emulator.cm
    cm.cpus.state.set_default_cpu_set(checkpoints.default_cpu_set)
    cm.cpus.state.set_cpu_assignments(checkpoints.cpu_assignments)
    # The pods' CPU sets restored as the kubelet restores them (a V3/V4 file's; none from a V2 file).
    cm.cpus.state.set_pod_cpu_assignments(checkpoints.cpu_pod_sets)
    cm.memory.state.set_machine_state(checkpoints.memory.machine_state)
    cm.memory.state.set_memory_assignments(checkpoints.memory.entries)
    # And the pods' own memory blocks (a 1.36+ file's ``podEntries`` with PodLevelResourceManagers).
    cm.memory.state.set_pod_memory_assignments(checkpoints.memory.pod_entries or {})
    cm.devices.restore_checkpoint(checkpoints.devices)
    try:
        # Starting the managers on the seeded states validates them, as the kubelet's restart does.
        emulator.cm = cm.restarted(cm.config, active_pods=cm.active_pods)
    except Exception as err:
        raise SourceInvalidError(
            f"the kubelet's checkpoints ({snapshot.paths.cpu_state}, {snapshot.paths.memory_state}) do not "
            f"fit this node as kubeletemu sees it: {_problem(err)}"
        ) from None


def _consistency(mirror: Mirror) -> None:
    """What the kubelet reports as allocatable against what the mirror computes: a difference means the
    probed topology or the configuration is not the kubelet's."""
    cm = mirror.emulator.cm
    reported = mirror.snapshot.allocatable
    ours = cm.cpus.get_allocatable_cpus().list()
    if sorted(reported.cpu_ids) != ours:
        mirror.warnings.append(
            f"allocatable CPUs differ: the kubelet reports {sorted(reported.cpu_ids)}, kubeletemu computes "
            f"{ours} (reserved CPUs or the probed topology are not the kubelet's)"
        )
    theirs = sorted((m.memory_type, m.size, tuple(n.ID for n in m.topology.nodes)) for m in reported.memory)
    mine = sorted((b.type, b.size, tuple(b.numa_affinity)) for b in cm.memory.get_allocatable_memory())
    if theirs != mine:
        mirror.warnings.append(
            f"allocatable memory differs: the kubelet reports {theirs}, kubeletemu computes {mine} "
            "(reservedMemory or the probed memory are not the kubelet's)"
        )


def pod_level_holdings(checkpoints: Checkpoints) -> dict[str, PodLevelHoldings]:
    """Per pod UID, the pod-level CPU set and memory blocks the checkpoints hold
    (PodLevelResourceManagers)."""
    memory = checkpoints.memory.pod_entries or {}
    return {
        uid: PodLevelHoldings(
            tuple(checkpoints.cpu_pod_sets[uid].list()) if uid in checkpoints.cpu_pod_sets else (),
            tuple(sorted((b.type, b.size, tuple(b.numa_affinity)) for b in memory.get(uid, []))),
        )
        for uid in sorted(checkpoints.cpu_pod_sets.keys() | memory.keys())
    }


def hides_pod_pool(kubelet_version: str, config: Config) -> bool:
    """Whether that kubelet lists no CPUs or memory for the containers sharing a pod-level pod's pool
    (1.37 with PodLevelResourceManagers on: ``view.CONTAINER_ISOLATION``)."""
    gates = effective_gates(kubelet_version, config.kubelet.feature_gates)
    return in_effect(CONTAINER_ISOLATION, kubelet_version) and gates.get(
        POD_LEVEL_RESOURCE_MANAGERS_GATE, False
    )


def build_mirror(own: Config, machine: Machine, snapshot: KubeletSnapshot) -> Mirror:
    """The kubelet's node as a :class:`NodeEmulator`; raises :class:`SourceInvalidError`."""
    paths = snapshot.paths
    if own.emulator.kubelet_version != snapshot.formats.kubelet_version:
        # The checkpoints were read as another kubelet reads them: the mirror would not be that kubelet.
        raise ValueError(
            f"the snapshot was read as kubelet {snapshot.formats.kubelet_version} but the mirror emulates "
            f"{own.emulator.kubelet_version}: take the snapshot with kubelet_version="
            f"{own.emulator.kubelet_version!r}"
        )
    config = mirror_config(own, paths, snapshot.kubelet_config, snapshot.allocatable)
    _check_policies(snapshot, config)
    # The kubelet's memory totals are those of its start, which the probe may no longer see.
    machine, machine_notes = machine_at_kubelet_start(machine, snapshot.checkpoints.memory.machine_state)
    try:
        emulator = NodeEmulator(config, machine)
    except Exception as err:
        raise SourceInvalidError(
            f"the kubelet's configuration {paths.config} does not start on this node as kubeletemu sees it: "
            f"{_problem(err)}"
        ) from None
    _seed(emulator, snapshot)
    kubelet = from_checkpoints(snapshot.checkpoints)
    checkpoints = snapshot.checkpoints
    reconstruction = reconstruct(
        snapshot.listing,
        kubelet,
        pod_level_holdings(checkpoints),
        hides_pod_pool=hides_pod_pool(snapshot.formats.kubelet_version, config),
    )
    for mirrored in reconstruction.pods:
        emulator.registry.add(AdmittedPod(mirrored.pod))
    # The kubelet's removeStaleState: checkpoint entries of pods it does not list are dropped.
    emulator.cm.remove_stale_state(emulator.registry.pods())
    mirror = Mirror(emulator, snapshot, reconstruction, kubelet, [*snapshot.warnings, *machine_notes])
    _consistency(mirror)
    if reconstruction.unmatched:
        mirror.warnings.append(
            "listed with exclusive resources the checkpoints do not record (read while the kubelet wrote?): "
            + ", ".join(reconstruction.unmatched)
        )
    mirror.warnings.extend(reconstruction.notes)
    return mirror
