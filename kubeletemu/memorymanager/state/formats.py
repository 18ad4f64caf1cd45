"""The ``memory_manager_state`` formats each kubelet version writes and reads (issue 16).

Registered as ``memorymanager.checkpoint-format`` (``versions/data/behaviours/checkpoints.json``):

* 1.33 … 1.35 have one struct, V1 (policyName, machineState, entries): written with its checksum and read
  with ``checksum.Verify`` — the dump must match, a zero checksum included (no "0 means none" exception;
  read at sanposhiho/kubernetes@059ce4e8a1d958959595b970acaf846259348518, unchanged until 1.36).
* 1.36 (kubernetes#134768, #137751) writes V1 as 1.35 does with ``PodLevelResourceManagers`` off; on, V2,
  whose checksummed struct adds ``PodEntries`` (``podEntries`` is omitted from the JSON when empty, but the
  dump still carries ``PodEntries:(state.PodMemoryAssignments)map[]``). Both dumps are named
  ``MemoryManagerCheckpoint`` (kubernetes/kubernetes@1c4a3861932781013d4b842a50c1afc17270bd8c
  ``checkpoint.go``, plus the fix that makes V1's ``MarshalCheckpoint`` hash under the legacy name).
  It reads (``restoreState`` of 1.36's ``state_checkpoint.go``, the copy whose ``storeState`` writes V1
  with the gate off and ``loadAndMigrateCheckpointV2`` with it on; ``VerifyChecksum`` of the
  1c4a3861 ``checkpoint.go``):

  - gate off: V1 only (``loadCheckpointV1``): ``podEntries`` is ignored (V1 has no such field); a zero
    checksum is accepted; otherwise the dump under ``MemoryManagerCheckpointV1``, then under the legacy
    ``MemoryManagerCheckpoint``, must match. A V2 file written with the gate on therefore fails
    ("checkpoint is corrupted"), the "Memory Manager (Higher Risk)" rollback of KEP-5526.
  - gate on: V2 first (``checksum.Verify`` of ``MemoryManagerCheckpoint`` with ``PodEntries``: no zero
    exception), else V1 (zero accepted; only the legacy name, the gate being on), migrated; the error
    reported is V1's. The V1→V2 migration copies policy, machine state and entries into the checkpoint
    the failed V2 attempt had already filled, so a V2 file that parsed but failed its checksum keeps its
    ``podEntries`` (kubernetes#139050 describes it; that fix was closed unmerged). All of this is as in
  v1.36.3's ``checkpoint.go`` / ``state_checkpoint.go`` (openshift/kubernetes vendored in
  openshift/microshift release-4.23 @ ab25d11482, ``deps/github.com/openshift/kubernetes``).
* master: kubernetes#139626 (V3: an embedded V1 with its legacy checksum, then ``data`` and
  ``dataChecksum``; read V3 → V2 → V1 with "could not load v3 checkpoint: …" when a V3 file fails) is
  shown as merged but its merge date could not be established; it was still in review on 2026-06-11 and
  described as pending on 2026-06-15 (KEP-5526 review, kubernetes/enhancements#6130), so whether the
  master snapshot (2026-06-21) has it is unknown and master keeps 1.36's behaviour. Its code was read
  (``checkpoint.go``, ``state_checkpoint.go`` and ``state_checkpoint_test.go`` copies in the code index
  with ``MemoryManagerCheckpointV3``, repository and commit not shown by the index); the table's vectors
  (V1 4215593881, V2 1278640530, data 1849615440 / 637296054) are checked in the tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeletemu.cpumanager.policy_options import POD_LEVEL_RESOURCE_MANAGERS_GATE, merged_gates
from kubeletemu.memorymanager.state.checkpoint import (
    LAYOUT_CLASSIC,
    LAYOUT_POD_ENTRIES,
    CheckpointError,
    CorruptCheckpointError,
    MemoryManagerCheckpoint,
    compute_checksum,
    from_raw,
    normalise,
)
from kubeletemu.versions.behaviours import step_at
from kubeletemu.versions.version import MASTER

CHECKPOINT_FORMAT = "memorymanager.checkpoint-format"


@dataclass(frozen=True)
class MemoryCheckpointFormat:
    """What the kubelet of one version, with ``PodLevelResourceManagers`` as given, writes and reads."""

    step: int = 0
    pod_level_resource_managers: bool = False

    @classmethod
    def for_kubelet(
        cls, kubelet_version: str = MASTER, feature_gates: Mapping[str, bool] | None = None
    ) -> MemoryCheckpointFormat:
        gate = merged_gates(feature_gates)[POD_LEVEL_RESOURCE_MANAGERS_GATE]
        return cls(step_at(CHECKPOINT_FORMAT, kubelet_version), gate)

    @property
    def layout(self) -> str:
        """The struct written: V2's (pod entries) only from 1.36 with the gate on."""
        return LAYOUT_POD_ENTRIES if self.step >= 1 and self.pod_level_resource_managers else LAYOUT_CLASSIC

    def unmarshal(self, blob: bytes | str) -> MemoryManagerCheckpoint:
        """``GetCheckpoint`` + ``restoreState``'s choice of format, as this kubelet does it. Raises
        ``CheckpointError`` with the kubelet's text (wrapped by the caller in "could not restore ...")."""
        document = _parse(blob)
        if self.step == 0:
            raw = normalise(_without_pod_entries(document))  # not a field of 1.35's struct
            _verify_strict(raw, LAYOUT_CLASSIC)
            return from_raw(raw)
        if not self.pod_level_resource_managers:
            return from_raw(_load_v1(document, (_V1_NAME, _LEGACY_NAME)))
        # loadAndMigrateCheckpointV2: V2, else V1 migrated into what the V2 attempt left.
        stale: dict[str, Any] | None = None
        try:
            raw = normalise(document)
            stale = raw["podEntries"]
            _verify_strict(raw, LAYOUT_POD_ENTRIES)
            return from_raw(raw)
        except CheckpointError:
            pass
        raw = _load_v1(document, (_LEGACY_NAME,))
        raw["podEntries"] = stale or {}
        return from_raw(raw)


_LEGACY_NAME = "MemoryManagerCheckpoint"
_V1_NAME = "MemoryManagerCheckpointV1"


def _parse(blob: bytes | str) -> Any:
    try:
        return json.loads(blob)
    except (ValueError, UnicodeDecodeError) as err:
        raise CheckpointError(f"invalid JSON in memory manager checkpoint: {err}") from None


def _without_pod_entries(document: Any) -> Any:
    """The document as a struct without ``PodEntries`` sees it: encoding/json skips unknown keys."""
    if isinstance(document, dict):
        return {k: v for k, v in document.items() if k.lower() != "podentries"}
    return document


def _verify_strict(raw: Mapping[str, Any], layout: str) -> None:
    """``checksum.Verify`` under the legacy name: the dump must match, 0 included."""
    actual = compute_checksum(raw, layout)
    if raw["checksum"] != actual:
        raise CorruptCheckpointError(raw["checksum"], actual)


def _load_v1(document: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """1.36's ``MemoryManagerCheckpointV1``: unmarshal (``podEntries`` is no field of it, so Go skips it
    whatever it holds), then ``VerifyChecksum``: 0 accepted, else the dump under one of ``names``."""
    raw = normalise(_without_pod_entries(document))
    expected = raw["checksum"]
    if expected != 0 and all(compute_checksum(raw, LAYOUT_CLASSIC, n) != expected for n in names):
        raise CorruptCheckpointError(expected, compute_checksum(raw, LAYOUT_CLASSIC))
    return raw
