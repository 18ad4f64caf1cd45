"""The admitted pods, in admission order, persisted beside the kubelet-format checkpoints.

The kubelet learns its pods from the API server; the emulator keeps them in ``pods/``, one small JSON file
per pod (so an admission costs one write whatever the number of pods, a removal one unlink), with an
admission sequence number that restores the order and what each container held. A pod's file is written
in the same batch as the managers' checkpoints, and the answer goes out only when all are durable; after
a crash, start-up keeps a registered pod only if the checkpoints hold what its file records (otherwise it
was never answered), and allocations of pods the registry does not name are stale and are dropped, as
the kubelet's stale-state removal does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeletemu.bitmask import BitMask
from kubeletemu.checkpointmanager import remove_file, write_file_atomic
from kubeletemu.manifest import ManifestError, pod_from_manifest, pod_to_manifest
from kubeletemu.pod import Pod
from kubeletemu.topologymanager import TopologyHint

REGISTRY_DIR = "pods"
# What a pod file this version refuses is renamed to, beside it.
REFUSED_SUFFIX = ".refused"
_VERSION = 1
# A UID that is its own file name (UUIDs, and any other UID of these characters); others are hashed.
_PLAIN_UID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# Hashed names start with a character no plain UID starts with, so the two kinds never meet.
_HASHED_PREFIX = "%uid-"


@dataclass(frozen=True)
class RefusedEntry:
    """A pod file read but not restored: its pod is refused by the manifest checks of this version."""

    path: Path
    uid: str  # as the file spells it, backslash-escaped where it is not text ("" when it has none)
    reason: str
    moved_to: Path | None  # where it was set aside, None when it stays (a restore, or a failed rename)


class RegistryError(Exception):
    """A registry file that cannot be read; start-up stops rather than forget admitted pods."""


@dataclass
class AdmittedPod:
    pod: Pod
    # The Topology Manager's stored hint per container (its Store does not survive a kubelet restart;
    # ours does, so GetAffinity answers the same after a restart).
    affinity: dict[str, TopologyHint] = field(default_factory=dict)
    sequence: int = 0
    # What each container held when admitted (exclusive CPUs, memory blocks, devices), in a comparable
    # form: start-up checks it against the checkpoints (see ``allocation_record``).
    allocations: dict[str, Any] = field(default_factory=dict)


class PodRegistry:
    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._pods: dict[str, AdmittedPod] = {}
        # namespace/name -> UID: a node holds one pod per namespace/name, as the API server guarantees.
        self._names: dict[tuple[str, str], str] = {}
        # namespace/name held by more than one restored pod (state written by an earlier version).
        self.duplicate_names: list[str] = []
        # The file each restored pod was read from, where an earlier version named it otherwise.
        self._paths: dict[str, Path] = {}
        # Files whose pod this version refuses: set aside, not served.
        self.refused: list[RefusedEntry] = []
        self._next = 1
        if directory is not None and directory.exists():
            self._load(directory)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def __iter__(self) -> Iterator[AdmittedPod]:
        return iter(list(self._pods.values()))

    def get(self, uid: str) -> AdmittedPod | None:
        return self._pods.get(uid)

    def by_name(self, namespace: str, name: str) -> AdmittedPod | None:
        uid = self._names.get((namespace, name))
        return None if uid is None else self._pods[uid]

    def uids(self) -> list[str]:
        return list(self._pods)

    def pods(self) -> list[Pod]:
        return [entry.pod for entry in self._pods.values()]

    def add(self, entry: AdmittedPod) -> None:
        entry.sequence = self._next
        self._next += 1
        if self.directory is not None:
            write_file_atomic(self.path_of(entry.pod.uid), encode_entry(entry), mode=0o600)
        self._pods[entry.pod.uid] = entry
        self._names[(entry.pod.namespace, entry.pod.name)] = entry.pod.uid

    def remove(self, uid: str) -> AdmittedPod:
        entry = self._pods.pop(uid)
        key = (entry.pod.namespace, entry.pod.name)
        if self._names.get(key) == uid:
            del self._names[key]
        if self.directory is not None:
            remove_file(self.path_of(uid))
            self._paths.pop(uid, None)
        return entry

    # ---- persistence ------------------------------------------------------------------------------

    def path_of(self, uid: str) -> Path:
        """The pod's file: where it was read from, else :func:`file_name`."""
        assert self.directory is not None
        return self._paths.get(uid) or self.directory / file_name(uid)

    def files(self) -> list[Path]:
        """The registry files on disk now (none when the registry is in memory)."""
        if self.directory is None or not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.glob("*.json") if p.is_file())

    def restore(self, files: Mapping[Path, bytes]) -> None:
        """Hold what registry files' content says (path -> bytes), writing nothing: the daemon goes back
        to the last durable files when later ones could not be written."""
        self._pods.clear()
        self._names.clear()
        self._paths.clear()
        self.duplicate_names = []
        self.refused = []
        self._take(sorted(files.items()))

    def _load(self, directory: Path) -> None:
        read = []
        for path in sorted(directory.glob("*.json")):
            if not path.is_file():  # nothing this registry wrote (a directory someone made)
                continue
            try:
                read.append((path, path.read_bytes()))
            except OSError as err:
                raise RegistryError(f"{path}: corrupt pod registry entry: {err}") from None
        self._take(read, quarantine=True)

    def _take(self, files: list[tuple[Path, bytes]], *, quarantine: bool = False) -> None:
        entries = []
        for path, body in files:
            try:
                raw = json.loads(body)
                entry = _decode(raw)
            except ManifestError as err:
                # A whole entry whose pod today's checks refuse (saved by an earlier version that let
                # it through): kept aside, not served, since no call could name or list it.
                self._refuse(path, raw, str(err), quarantine)
                continue
            except (ValueError, KeyError, TypeError) as err:
                raise RegistryError(f"{path}: corrupt pod registry entry: {err}") from None
            entries.append(entry)
            if self.directory is not None and path != self.directory / file_name(entry.pod.uid):
                self._paths[entry.pod.uid] = path
        for entry in sorted(entries, key=lambda e: e.sequence):
            self._pods[entry.pod.uid] = entry
            key = (entry.pod.namespace, entry.pod.name)
            if key in self._names:
                # Written before pods without a UID got a derived one: both hold allocations, so both
                # stay; the name answers for the earlier one.
                self.duplicate_names.append(f"{key[0]}/{key[1]}")
            else:
                self._names[key] = entry.pod.uid
        self._next = max((e.sequence for e in entries), default=0) + 1

    def _refuse(self, path: Path, raw: Any, reason: str, quarantine: bool) -> None:
        """Set a refused entry aside: renamed ``<name>.refused`` on start-up (out of the ``*.json`` the
        registry reads, kept for the operator), and reported in :attr:`refused`."""
        manifest = raw.get("manifest") if isinstance(raw, Mapping) else None
        metadata = manifest.get("metadata") if isinstance(manifest, Mapping) else None
        uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
        moved = None
        if quarantine:
            moved = path.with_name(path.name + REFUSED_SUFFIX)
            try:
                os.replace(path, moved)
            except OSError as err:
                moved = None
                reason = f"{reason}; it could not be set aside: {err.strerror or err}"
        # Printable whatever it holds (a lone surrogate cannot be written to a UTF-8 log).
        shown = uid.encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(uid, str) else ""
        self.refused.append(RefusedEntry(path, shown, reason, moved))


def file_name(uid: str) -> str:
    """The name of a pod's file: ``<uid>.json`` for a UID of letters, digits, '.', '_' and '-' (every
    UID the API server gives), else a hash of the UID: whatever a valid pod's UID holds (see
    ``manifest._check_uid``), its name is one short path component that any filesystem takes."""
    if _PLAIN_UID.fullmatch(uid):
        return f"{uid}.json"
    return f"{_HASHED_PREFIX}{hashlib.sha256(uid.encode('utf-8', 'surrogatepass')).hexdigest()}.json"


def encode_entry(entry: AdmittedPod) -> bytes:
    """A pod's registry file content: what :meth:`PodRegistry.restore` takes back (the node feed sends it)."""
    return json.dumps(_encode(entry), sort_keys=True).encode()


def _encode(entry: AdmittedPod) -> dict[str, Any]:
    return {
        "version": _VERSION,
        "sequence": entry.sequence,
        "manifest": pod_to_manifest(entry.pod),
        "affinity": {
            name: {
                "numaNodes": None if hint.affinity is None else hint.affinity.bits(),
                "preferred": hint.preferred,
            }
            for name, hint in entry.affinity.items()
        },
        "allocations": entry.allocations,
    }


def _decode(raw: Mapping[str, Any]) -> AdmittedPod:
    if raw.get("version") != _VERSION:
        raise ValueError(f"unsupported registry version {raw.get('version')!r}")
    pod = pod_from_manifest(raw["manifest"])
    affinity = {}
    for name, hint in raw.get("affinity", {}).items():
        nodes = hint["numaNodes"]
        affinity[name] = TopologyHint(None if nodes is None else BitMask.of(*nodes), bool(hint["preferred"]))
    return AdmittedPod(pod, affinity, int(raw["sequence"]), dict(raw.get("allocations", {})))
