"""The real kubelet's state as shadow mode reads it: its configuration file, its three checkpoints and its
podresources API, read-only and as one consistent snapshot.

The files are the kubelet's own (``cpu_manager_state``, ``memory_manager_state``,
``device-plugins/kubelet_internal_checkpoint`` under the root directory; checksums verified as the kubelet
verifies them on restart). Nothing here opens a file for writing or creates anything.

The CPU and memory checkpoints are read in the format of the kubelet emulated (its version, detected from
its binary or configured, and the ``PodLevelResourceManagers`` gate of its own configuration file), with
that kubelet's fallbacks (``cpumanager/state/formats.py``, ``memorymanager/state/formats.py``): a 1.36
kubelet with the gate on keeps its pods' CPU sets in the V3 file's ``podEntries``, master in the V4 file's
``data``; reading either as a V2 file would lose them, and a V4 file whose ``data`` is corrupt would be
taken through its still valid embedded V2 where the kubelet refuses it.

A snapshot reads the files, asks the podresources API (``List``, ``GetAllocatableResources``), then reads
the files again: the kubelet writes its checkpoints while it admits, so when the two reads differ the round
is repeated (three times at most) and the answer is then marked as possibly torn.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.config import ConfigError, KubeletConfiguration, parse_config
from kubeletemu.config.kubelet_config import KIND as KUBELET_KIND
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CheckpointError as CPUCheckpointError
from kubeletemu.cpumanager.state import formats as cpu_formats
from kubeletemu.cpumanager.state.checkpoint import CPUManagerCheckpoint
from kubeletemu.cpumanager.state.state import ContainerCPUAssignments, PodCPUAssignments
from kubeletemu.cpumanager.state.state_checkpoint import checkpoint_to_state
from kubeletemu.devicemanager.checkpoint import DeviceCheckpointError, DeviceManagerCheckpoint
from kubeletemu.devicemanager.checkpoint import unmarshal as unmarshal_devices
from kubeletemu.memorymanager.state.checkpoint import CheckpointError as MemoryCheckpointError
from kubeletemu.memorymanager.state.checkpoint import MemoryManagerCheckpoint
from kubeletemu.memorymanager.state.formats import MemoryCheckpointFormat
from kubeletemu.shadow.access import explain
from kubeletemu.shadow.errors import SourceInvalidError, SourceUnreadableError
from kubeletemu.versions.gates import effective_gates
from kubeletemu.versions.version import DEFAULT_VERSION

CPU_MANAGER_STATE = "cpu_manager_state"
MEMORY_MANAGER_STATE = "memory_manager_state"
DEVICE_PLUGINS_DIR = "device-plugins"
DEVICE_CHECKPOINT = "kubelet_internal_checkpoint"
# kubeadm writes the kubelet's configuration here; other installers pass --kubelet-config.
KUBELET_CONFIG_NAME = "config.yaml"
# podresources.Socket + ".sock" in the kubelet's pod-resources directory.
PODRESOURCES_SOCKET = "pod-resources/kubelet.sock"
SNAPSHOT_ATTEMPTS = 3

WHAT_CONFIG = "the kubelet's configuration file"
WHAT_CPU = "the kubelet's CPU manager checkpoint"
WHAT_MEMORY = "the kubelet's memory manager checkpoint"
WHAT_DEVICES = "the kubelet's device manager checkpoint"
WHAT_SOCKET = "the kubelet's podresources socket"


@dataclass(frozen=True)
class KubeletPaths:
    """Where the real kubelet keeps what shadow mode reads."""

    root_dir: Path
    config: Path
    podresources_socket: Path

    @classmethod
    def resolve(
        cls,
        root_dir: str | os.PathLike[str],
        config: str | os.PathLike[str] | None = None,
        podresources_socket: str | os.PathLike[str] | None = None,
    ) -> KubeletPaths:
        root = Path(root_dir)
        return cls(
            root_dir=root,
            config=Path(config) if config else root / KUBELET_CONFIG_NAME,
            podresources_socket=Path(podresources_socket)
            if podresources_socket
            else root / PODRESOURCES_SOCKET,
        )

    @property
    def cpu_state(self) -> Path:
        return self.root_dir / CPU_MANAGER_STATE

    @property
    def memory_state(self) -> Path:
        return self.root_dir / MEMORY_MANAGER_STATE

    @property
    def device_checkpoint(self) -> Path:
        return self.root_dir / DEVICE_PLUGINS_DIR / DEVICE_CHECKPOINT

    def files(self) -> tuple[Path, ...]:
        """Every file a snapshot reads; a change to any of them calls for a refresh."""
        return (self.config, self.cpu_state, self.memory_state, self.device_checkpoint)

    def inside_root(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` lies in the kubelet's root directory (where we must never write)."""
        root = os.path.realpath(self.root_dir)
        target = os.path.realpath(path)
        return target == root or target.startswith(root.rstrip("/") + "/")


class PodResourcesSource(Protocol):
    """The kubelet's podresources v1 API as a client sees it. Failures raise :class:`ShadowError`."""

    def list(self) -> v1.ListPodResourcesResponse: ...

    def allocatable(self) -> v1.AllocatableResourcesResponse: ...


@dataclass(frozen=True)
class KubeletFiles:
    config: bytes
    cpu_state: bytes
    memory_state: bytes
    # None: no device checkpoint yet. The kubelet writes it only once a device plugin registers or a
    # device is allocated, and reads a missing one as "no allocations" (``readCheckpoint``).
    device_checkpoint: bytes | None


@dataclass(frozen=True)
class CheckpointFormats:
    """How the kubelet emulated reads its CPU and memory checkpoints: its version and the feature gates in
    effect (the version's defaults under its configuration file's ``featureGates``)."""

    kubelet_version: str
    cpu: cpu_formats.CPUCheckpointFormat
    memory: MemoryCheckpointFormat

    @classmethod
    def for_kubelet(cls, kubelet_version: str, feature_gates: Mapping[str, bool]) -> CheckpointFormats:
        gates = effective_gates(kubelet_version, feature_gates)
        return cls(
            kubelet_version,
            cpu_formats.CPUCheckpointFormat.for_kubelet(kubelet_version, gates),
            MemoryCheckpointFormat.for_kubelet(kubelet_version, gates),
        )


@dataclass(frozen=True)
class Checkpoints:
    """The three checkpoints, parsed and verified."""

    cpu_policy: str
    default_cpu_set: CPUSet
    cpu_assignments: ContainerCPUAssignments
    memory: MemoryManagerCheckpoint
    devices: DeviceManagerCheckpoint
    # PodLevelResourceManagers: each pod's CPU set, from a V3 file's ``podEntries`` or a V4 file's data
    # (empty when the file was read as V2/V1, as the kubelet then has none either).
    cpu_pod_sets: PodCPUAssignments = field(default_factory=dict)
    # The format the CPU file was read as: V1 (migrated), V2, V3 or V4.
    cpu_format: str = cpu_formats.V2


@dataclass(frozen=True)
class KubeletSnapshot:
    paths: KubeletPaths
    files: KubeletFiles
    # The kubelet's configuration file, parsed (its feature gates pick the checkpoint formats).
    kubelet_config: KubeletConfiguration
    # The kubelet version whose formats the checkpoints were read in.
    formats: CheckpointFormats
    checkpoints: Checkpoints
    listing: v1.ListPodResourcesResponse
    allocatable: v1.AllocatableResourcesResponse
    warnings: tuple[str, ...]
    # Equal digests: nothing the mirror depends on changed (List order, which is random, aside).
    digest: str


def read_source(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise SourceUnreadableError(str(path), explain(path, err, what)) from None


def read_files(paths: KubeletPaths) -> KubeletFiles:
    try:
        devices: bytes | None = paths.device_checkpoint.read_bytes()
    except FileNotFoundError:
        devices = None
    except OSError as err:
        raise SourceUnreadableError(
            str(paths.device_checkpoint), explain(paths.device_checkpoint, err, WHAT_DEVICES)
        ) from None
    return KubeletFiles(
        config=read_source(paths.config, WHAT_CONFIG),
        cpu_state=read_source(paths.cpu_state, WHAT_CPU),
        memory_state=read_source(paths.memory_state, WHAT_MEMORY),
        device_checkpoint=devices,
    )


def parse_kubelet_config(paths: KubeletPaths, blob: bytes) -> KubeletConfiguration:
    """The kubelet's own configuration file (``paths.config``); raises :class:`SourceInvalidError`."""
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SourceInvalidError(
            f"{paths.config}: not UTF-8 text: {err.reason} at byte {err.start}"
        ) from None
    try:
        parsed = parse_config(text, str(paths.config))
    except ConfigError as err:
        raise SourceInvalidError(str(err)) from None
    if KUBELET_KIND not in parsed.origins:
        raise SourceInvalidError(
            f"{paths.config}: holds no KubeletConfiguration (kind: KubeletConfiguration, apiVersion: "
            "kubelet.config.k8s.io/v1beta1); point kubeletConfig at the file the kubelet's --config names"
        )
    return parsed.kubelet


def _pod_cpu_sets(content: cpu_formats.CPUCheckpointContent) -> PodCPUAssignments:
    # Each cpuSet was parsed when the file was read (PodEntry.UnmarshalJSON), so it parses again.
    return {uid: CPUSet.parse(text) for uid, text in (content.pod_entries or {}).items()}


def parse_checkpoints(
    paths: KubeletPaths, files: KubeletFiles, formats: CheckpointFormats | None = None
) -> Checkpoints:
    """Parse and verify the checkpoints as the kubelet of ``formats`` does when it restarts (its
    ``restoreState``: the format it reads, with its fallbacks; default: the default version, gates off).

    Mirrors ``restoreState`` of 1.36's ``state_checkpoint.go``
    (kubernetes/kubernetes@008b3652959ca58af8be3fb5b6ecfe9ae7638282) and master's V4 reading, as
    ``cpumanager/state/formats.py`` records them: pod sets come only from a file read as V3 or V4."""
    fmt = formats or CheckpointFormats.for_kubelet(DEFAULT_VERSION, {})
    try:
        content = cpu_formats.load(files.cpu_state, fmt.cpu)
        default, assignments = checkpoint_to_state(
            CPUManagerCheckpoint(content.policy_name, content.default_cpu_set, content.entries)
        )
        pod_sets = _pod_cpu_sets(content) if content.read_as in (cpu_formats.V3, cpu_formats.V4) else {}
    except CPUCheckpointError as err:
        raise SourceInvalidError(f"{WHAT_CPU} {paths.cpu_state} is not usable: {err}") from None
    try:
        memory = fmt.memory.unmarshal(files.memory_state)
    except MemoryCheckpointError as err:
        raise SourceInvalidError(f"{WHAT_MEMORY} {paths.memory_state} is not usable: {err}") from None
    try:
        devices = (
            DeviceManagerCheckpoint()
            if files.device_checkpoint is None
            else unmarshal_devices(files.device_checkpoint)
        )
    except DeviceCheckpointError as err:
        raise SourceInvalidError(f"{WHAT_DEVICES} {paths.device_checkpoint} is not usable: {err}") from None
    return Checkpoints(content.policy_name, default, assignments, memory, devices, pod_sets, content.read_as)


def take_snapshot(
    paths: KubeletPaths,
    podresources: PodResourcesSource,
    attempts: int = SNAPSHOT_ATTEMPTS,
    *,
    kubelet_version: str = DEFAULT_VERSION,
) -> KubeletSnapshot:
    """Files, podresources, files again; repeated while the kubelet writes in between. The checkpoints
    are read as the kubelet of ``kubelet_version``, with its configuration file's feature gates, reads
    them."""
    warnings: list[str] = []
    files = read_files(paths)
    for attempt in range(1, attempts + 1):
        listing = podresources.list()
        allocatable = podresources.allocatable()
        again = read_files(paths)
        if again == files:
            break
        files = again
        if attempt == attempts:
            warnings.append(
                f"the kubelet's checkpoints changed during each of {attempts} reads; the pods listed may "
                "not match the checkpoints exactly until the next refresh"
            )
    kubelet_config = parse_kubelet_config(paths, files.config)
    formats = CheckpointFormats.for_kubelet(kubelet_version, kubelet_config.feature_gates)
    checkpoints = parse_checkpoints(paths, files, formats)
    return KubeletSnapshot(
        paths=paths,
        files=files,
        kubelet_config=kubelet_config,
        formats=formats,
        checkpoints=checkpoints,
        listing=listing,
        allocatable=allocatable,
        warnings=tuple(warnings),
        digest=digest(files, listing, allocatable),
    )


# ---- change detection -----------------------------------------------------------------------------------


def _devices_key(
    devices: Iterable[v1.ContainerDevices],
) -> list[tuple[str, tuple[str, ...], tuple[int, ...]]]:
    return sorted(
        (d.resource_name, tuple(d.device_ids), tuple(n.ID for n in d.topology.nodes)) for d in devices
    )


def _memory_key(memory: Iterable[v1.ContainerMemory]) -> list[tuple[str, int, tuple[int, ...]]]:
    return sorted((m.memory_type, m.size, tuple(n.ID for n in m.topology.nodes)) for m in memory)


def digest(
    files: KubeletFiles, listing: v1.ListPodResourcesResponse, allocatable: v1.AllocatableResourcesResponse
) -> str:
    """A hash of everything a mirror is built from, blind to the kubelet's map-iteration orders (pods in
    List, devices in both answers), which change from call to call."""
    pods = sorted(
        (
            pod.namespace,
            pod.name,
            tuple(
                (c.name, tuple(sorted(c.cpu_ids)), _memory_key(c.memory), _devices_key(c.devices))
                for c in pod.containers
            ),
        )
        for pod in listing.pod_resources
    )
    node = (sorted(allocatable.cpu_ids), _memory_key(allocatable.memory), _devices_key(allocatable.devices))
    h = hashlib.sha256()
    for blob in (files.config, files.cpu_state, files.memory_state, files.device_checkpoint):
        if blob is None:
            h.update(b"\xff" * 8)
            continue
        h.update(len(blob).to_bytes(8, "little"))
        h.update(blob)
    h.update(repr((pods, node)).encode())
    return h.hexdigest()
