"""The ``memory_manager_state`` formats each kubelet version writes and reads (issue 16).

Registered as ``memorymanager.checkpoint-format`` (``versions/data/behaviours/checkpoints.json``):

* 1.33 … 1.35 have one struct, V1 (policyName, machineState, entries): written with its checksum and read
  with ``checksum.Verify`` — the dump must match, a zero checksum included (no "0 means none" exception;
  read at sanposhiho/kubernetes@059ce4e8a1d958959595b970acaf846259348518, unchanged until 1.36).
* 1.36 (kubernetes#134768, #137751): with ``PodLevelResourceManagers`` off it writes V1 as 1.35 does; on,
  V2, whose checksummed struct adds ``PodEntries`` (``podEntries`` is omitted from the JSON when empty,
  but the dump still carries ``PodEntries:(state.PodMemoryAssignments)map[]``). Both dumps are named
  ``MemoryManagerCheckpoint`` (kubernetes/kubernetes@1c4a3861932781013d4b842a50c1afc17270bd8c).
  How 1.36 *reads* (which layouts, fallbacks) was not read here; it stays the emulator's lenient reading
  (either layout, zero accepted).
* master: kubernetes#139626 (V3 with an embedded V1) could not be shown merged before the master date,
  so master behaves as 1.36.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

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
    unmarshal,
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
        """``GetCheckpoint`` as this kubelet does it. Raises ``CheckpointError``."""
        if self.step >= 1:
            return unmarshal(blob)
        try:
            document = json.loads(blob)
        except (ValueError, UnicodeDecodeError) as err:
            raise CheckpointError(f"invalid JSON in memory manager checkpoint: {err}") from None
        raw = normalise(document)
        classic = compute_checksum(raw, LAYOUT_CLASSIC)
        if raw["checksum"] != classic:
            raise CorruptCheckpointError(raw["checksum"], classic)
        return from_raw(raw)
