"""Where a simulated node's topology comes from: the host, a captured sysfs tree, or a synthetic shape.

Each source is probed with ``hostprobe`` like a live host, so the node is what a kubelet would see there.
A capture may be a directory pair (sysfs root, procfs root) or a ``<name>.tar.gz`` as in
``tests/fixtures/sysfs`` (one top-level directory holding ``sys/`` and ``proc/``), extracted to a
temporary directory for the probe only.

A synthetic shape or a capture archive probes to the same machine every time, so each is probed once per
process (:data:`_PROBED`): a fleet runs every configuration of its matrix on the same node groups, and a
probe writes or extracts a whole sysfs tree. The live host and capture directories are probed each time
(they can change under us).
"""

from __future__ import annotations

import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hostprobe
from hostprobe.errors import ProbeError
from hostprobe.synthetic import GIB_KIB, SyntheticHost, write_tree
from kubeletemu.machine import Machine
from kubeletemu.simulate.errors import SimulationError

HOST = "host"
CAPTURE = "capture"
SYNTHETIC = "synthetic"
# Machines probed from sources that cannot change: by the shape's repr, or the archive's path, size and
# mtime. A Machine is immutable; every node of a node group already shares one.
_PROBED: dict[tuple[object, ...], Machine] = {}
_PROBED_LIMIT = 64


@dataclass(frozen=True)
class TopologySource:
    """One of: ``host`` (``sysfs_root``/``procfs_root``, default the live roots), ``capture`` (``archive``
    or the two roots) or ``synthetic`` (``synthetic``)."""

    kind: str
    sysfs_root: str | None = None
    procfs_root: str | None = None
    archive: str | None = None
    synthetic: SyntheticHost | None = None
    # A short, stable description for reports (no absolute paths: golden outputs stay portable).
    name: str = field(default="")

    @classmethod
    def host(cls, sysfs_root: str = "/sys", procfs_root: str = "/proc") -> TopologySource:
        return cls(HOST, sysfs_root, procfs_root, name="host")

    @classmethod
    def capture_dirs(cls, sysfs_root: str, procfs_root: str, name: str | None = None) -> TopologySource:
        return cls(CAPTURE, sysfs_root, procfs_root, name=name or Path(sysfs_root).parent.name)

    @classmethod
    def capture_archive(cls, archive: str) -> TopologySource:
        base = Path(archive).name
        return cls(CAPTURE, archive=archive, name=base.removesuffix(".tar.gz").removesuffix(".tgz"))

    @classmethod
    def synthetic_host(cls, host: SyntheticHost, name: str = "synthetic") -> TopologySource:
        return cls(SYNTHETIC, synthetic=host, name=name)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name}

    def machine(self) -> Machine:
        """Probe the source; a missing or malformed tree is a :class:`SimulationError`."""
        key = self._stable_key()
        if key is None:
            return self._probe()
        machine = _PROBED.get(key)
        if machine is None:
            machine = self._probe()
            if len(_PROBED) >= _PROBED_LIMIT:
                _PROBED.clear()
            _PROBED[key] = machine
        return machine

    def _stable_key(self) -> tuple[object, ...] | None:
        if self.kind == SYNTHETIC and self.synthetic is not None:
            return (SYNTHETIC, repr(self.synthetic))
        if self.kind == CAPTURE and self.archive is not None:
            try:
                stat = Path(self.archive).stat()
            except OSError:
                return None  # the probe reports it
            return (CAPTURE, str(Path(self.archive).resolve()), stat.st_size, stat.st_mtime_ns)
        return None

    def _probe(self) -> Machine:
        try:
            if self.kind == SYNTHETIC:
                if self.synthetic is None:
                    raise SimulationError("a synthetic topology needs its shape")
                with tempfile.TemporaryDirectory(prefix="kubeletemu-sim-") as tmp:
                    sys_root, proc_root = write_tree(tmp, self.synthetic)
                    return _probe(str(sys_root), str(proc_root))
            if self.kind == CAPTURE and self.archive is not None:
                return _probe_archive(self.archive)
            if self.kind in (HOST, CAPTURE) and self.sysfs_root is not None:
                return _probe(self.sysfs_root, self.procfs_root or "/proc")
        except (ProbeError, OSError) as err:
            raise SimulationError(f"topology {self.name or self.kind}: {err}") from None
        raise SimulationError(f"topology: unknown or incomplete source {self.kind!r}")


def _probe(sysfs_root: str, procfs_root: str) -> Machine:
    if not Path(sysfs_root).is_dir():
        raise SimulationError(f"topology: sysfs root {sysfs_root} is not a directory")
    return Machine.from_host(hostprobe.probe(sysfs_root, procfs_root))


def _probe_archive(archive: str) -> Machine:
    """A capture tarball: exactly one top-level directory with ``sys/`` (and usually ``proc/``)."""
    with tempfile.TemporaryDirectory(prefix="kubeletemu-sim-") as tmp:
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(tmp, filter="data")
        except (tarfile.TarError, OSError) as err:
            raise SimulationError(f"topology {archive}: cannot extract: {err}") from None
        tops = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if len(tops) != 1 or not (tops[0] / "sys").is_dir():
            raise SimulationError(
                f"topology {archive}: expected one top-level directory holding sys/ (a sysfs capture)"
            )
        return _probe(str(tops[0] / "sys"), str(tops[0] / "proc"))


def synthetic_shape(
    *,
    sockets: int = 2,
    cores_per_socket: int = 4,
    threads_per_core: int = 2,
    nodes_per_socket: int = 1,
    memory_gib_per_node: int = 16,
    hugepages_2mi_per_node: int = 0,
    hugepages_1gi_per_node: int = 0,
) -> SyntheticHost:
    """A synthetic host from the few numbers a simulation usually varies (any NUMA shape)."""
    for label, value in (
        ("sockets", sockets),
        ("coresPerSocket", cores_per_socket),
        ("threadsPerCore", threads_per_core),
        ("nodesPerSocket", nodes_per_socket),
        ("memoryGiBPerNode", memory_gib_per_node),
    ):
        if value < 1:
            raise SimulationError(f"synthetic topology: {label} must be at least 1, got {value}")
    if cores_per_socket % nodes_per_socket:
        raise SimulationError(
            f"synthetic topology: coresPerSocket ({cores_per_socket}) must be a multiple of nodesPerSocket "
            f"({nodes_per_socket})"
        )
    nodes = sockets * nodes_per_socket
    pages: dict[int, tuple[int, int]] = {}
    if hugepages_2mi_per_node:
        pages[2048] = (hugepages_2mi_per_node, hugepages_2mi_per_node)
    if hugepages_1gi_per_node:
        pages[1048576] = (hugepages_1gi_per_node, hugepages_1gi_per_node)
    return SyntheticHost(
        sockets=sockets,
        cores_per_socket=cores_per_socket,
        threads_per_core=threads_per_core,
        nodes_per_socket=nodes_per_socket,
        node_memory_kib=memory_gib_per_node * GIB_KIB,
        hugepages={node: pages for node in range(nodes)} if pages else {},
    )
