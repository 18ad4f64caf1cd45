"""The admitted pods, in admission order, persisted beside the kubelet-format checkpoints.

The kubelet learns its pods from the API server; the emulator keeps them in ``pods.json`` so a restart
brings every admitted pod back. The file is written after the managers' checkpoints, so after a crash
the registry never names a pod the checkpoints lack; allocations of pods it does not name are stale and
are dropped at start-up, as the kubelet's stale-state removal does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeletemu.bitmask import BitMask
from kubeletemu.checkpointmanager import write_file_atomic
from kubeletemu.manifest import ManifestError, pod_from_manifest, pod_to_manifest
from kubeletemu.pod import Pod
from kubeletemu.topologymanager import TopologyHint

REGISTRY_FILE = "pods.json"
_VERSION = 1


class RegistryError(Exception):
    """A registry file that cannot be read; start-up stops rather than forget admitted pods."""


@dataclass
class AdmittedPod:
    pod: Pod
    # The Topology Manager's stored hint per container (its Store does not survive a kubelet restart;
    # ours does, so GetAffinity answers the same after a restart).
    affinity: dict[str, TopologyHint] = field(default_factory=dict)


class PodRegistry:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._pods: dict[str, AdmittedPod] = {}
        if path is not None and path.exists():
            self._load(path)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def __iter__(self) -> Iterator[AdmittedPod]:
        return iter(list(self._pods.values()))

    def get(self, uid: str) -> AdmittedPod | None:
        return self._pods.get(uid)

    def uids(self) -> list[str]:
        return list(self._pods)

    def pods(self) -> list[Pod]:
        return [entry.pod for entry in self._pods.values()]

    def add(self, entry: AdmittedPod) -> None:
        self._pods[entry.pod.uid] = entry
        self._save()

    def remove(self, uid: str) -> AdmittedPod:
        entry = self._pods.pop(uid)
        self._save()
        return entry

    # ---- persistence ------------------------------------------------------------------------------

    def _save(self) -> None:
        if self.path is None:
            return
        doc = {"version": _VERSION, "pods": [_encode(entry) for entry in self._pods.values()]}
        write_file_atomic(self.path, json.dumps(doc, indent=1, sort_keys=True).encode(), mode=0o600)

    def _load(self, path: Path) -> None:
        try:
            doc = json.loads(path.read_bytes())
            if not isinstance(doc, dict) or doc.get("version") != _VERSION:
                raise ValueError(f"unsupported registry version {doc.get('version')!r}")
            for raw in doc["pods"]:
                entry = _decode(raw)
                self._pods[entry.pod.uid] = entry
        except (OSError, ValueError, KeyError, TypeError, ManifestError) as err:
            raise RegistryError(f"{path}: corrupt pod registry: {err}") from None


def _encode(entry: AdmittedPod) -> dict[str, Any]:
    return {
        "manifest": pod_to_manifest(entry.pod),
        "affinity": {
            name: {
                "numaNodes": None if hint.affinity is None else hint.affinity.bits(),
                "preferred": hint.preferred,
            }
            for name, hint in entry.affinity.items()
        },
    }


def _decode(raw: Mapping[str, Any]) -> AdmittedPod:
    pod = pod_from_manifest(raw["manifest"])
    affinity = {}
    for name, hint in raw.get("affinity", {}).items():
        nodes = hint["numaNodes"]
        affinity[name] = TopologyHint(None if nodes is None else BitMask.of(*nodes), bool(hint["preferred"]))
    return AdmittedPod(pod, affinity)
