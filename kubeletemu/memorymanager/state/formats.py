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
* 1.37 (kubernetes#139626; k8s.io/kubernetes v1.37.2 ``memorymanager/state/checkpoint.go`` and
  ``state_checkpoint.go``; v1.36.3 has no V3) writes **V3** whatever the gate: the embedded V1 (policyName,
  machineState, entries, and V1's checksum over the dump under the legacy name, so 1.33 … 1.36 read it as
  V1, losing ``podEntries``), then ``data``, the JSON of ``{policyName, machineState, entries?,
  podEntries?}`` as a string (``podEntries`` only with the gate on), and ``dataChecksum``,
  ``checksum.New(data)``. It reads (``loadAndMigrateCheckpointV3``):

  - V3: the outer struct (the V1 fields, ``data``, ``dataChecksum``; ``podEntries`` is no field of it),
    then ``data`` into ``MemoryManagerCheckpointData``, then ``dataChecksum`` (authoritative, no zero
    accepted). Once ``data`` or ``dataChecksum`` is set, a failure is refused as "could not load v3
    checkpoint: …", without falling back;
  - else V2 (as 1.36 with the gate on: the legacy-named dump with ``PodEntries``, no zero), else V1 (zero
    accepted, the legacy name only), migrated into a fresh V2: unlike 1.36, a V2 file that failed its
    checksum does not keep its ``podEntries``; the error reported is V1's;
  - ``restoreState`` takes the pod entries only with the gate on.

  master, ordered after 1.37, does the same (its rows carry 1.37's changes).

The texts of Go's JSON errors are not reproduced (the emulator names the field and the problem); the
wrapping and the checksum texts are the kubelet's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeletemu.cpumanager.policy_options import POD_LEVEL_RESOURCE_MANAGERS_GATE, merged_gates
from kubeletemu.cpumanager.state.formats import data_checksum
from kubeletemu.memorymanager.state.checkpoint import (
    LAYOUT_CLASSIC,
    LAYOUT_POD_ENTRIES,
    CheckpointError,
    CorruptCheckpointError,
    MemoryManagerCheckpoint,
    _lookup,
    compute_checksum,
    from_raw,
    marshal,
    marshal_v3,
    normalise,
)
from kubeletemu.versions.behaviours import step_at
from kubeletemu.versions.version import MASTER

CHECKPOINT_FORMAT = "memorymanager.checkpoint-format"


@dataclass(frozen=True)
class MemoryCheckpointFormat:
    """What the kubelet of one version, with ``PodLevelResourceManagers`` as given, writes and reads.

    ``step``: how many of ``memorymanager.checkpoint-format``'s changes the version carries (0 = 1.33 …
    1.35, 1 = 1.36, 2 = 1.37 and master)."""

    step: int = 0
    pod_level_resource_managers: bool = False

    @classmethod
    def for_kubelet(
        cls, kubelet_version: str = MASTER, feature_gates: Mapping[str, bool] | None = None
    ) -> MemoryCheckpointFormat:
        gate = merged_gates(feature_gates)[POD_LEVEL_RESOURCE_MANAGERS_GATE]
        return cls(step_at(CHECKPOINT_FORMAT, kubelet_version), gate)

    @property
    def writes_v3(self) -> bool:
        return self.step >= 2

    @property
    def layout(self) -> str:
        """The struct whose checksum is written at the top: V2's (pod entries) only in 1.36 with the gate
        on; V1's otherwise (1.37's V3 embeds it)."""
        return LAYOUT_POD_ENTRIES if self.step == 1 and self.pod_level_resource_managers else LAYOUT_CLASSIC

    def marshal(self, checkpoint: MemoryManagerCheckpoint) -> bytes:
        """``storeState``: the file this kubelet writes for ``checkpoint``."""
        if self.writes_v3:
            return marshal_v3(checkpoint, with_pod_entries=self.pod_level_resource_managers)
        return marshal(checkpoint, self.layout)

    def unmarshal(self, blob: bytes | str) -> MemoryManagerCheckpoint:
        """``GetCheckpoint`` + ``restoreState``'s choice of format, as this kubelet does it. Raises
        ``CheckpointError`` with the kubelet's text (wrapped by the caller in "could not restore ...")."""
        document = _parse(blob)
        if self.step == 0:
            raw = normalise(_without_pod_entries(document))  # not a field of 1.35's struct
            _verify_strict(raw, LAYOUT_CLASSIC)
            return from_raw(raw)
        if self.step >= 2:
            raw = _load_v3_chain(document)
            if not self.pod_level_resource_managers:
                raw["podEntries"] = {}  # restoreState takes them only with the gate on
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


V3_LOAD_ERROR = "could not load v3 checkpoint: "


def _load_v3_chain(document: Any) -> dict[str, Any]:
    """1.37's ``loadAndMigrateCheckpointV3``: V3; a V3 file (``data`` or ``dataChecksum`` set) that fails
    is refused; otherwise V2, else V1 (its error kept) migrated into a fresh V2 (no ``podEntries``)."""
    try:
        return _load_v3(document)
    except _V3Error as err:
        if err.data or err.data_checksum:
            raise CheckpointError(V3_LOAD_ERROR + str(err)) from None
    try:
        raw = normalise(document)
        _verify_strict(raw, LAYOUT_POD_ENTRIES)
        return raw
    except CheckpointError:
        pass
    raw = _load_v1(document, (_LEGACY_NAME,))
    raw["podEntries"] = {}
    return raw


class _V3Error(CheckpointError):
    """A V3 read that failed, with the ``data`` and ``dataChecksum`` the outer struct got: encoding/json
    keeps decoding after a type error, so they are known even when another field failed, and they decide
    whether the kubelet falls back."""

    def __init__(self, text: str, data: str, data_checksum: int) -> None:
        super().__init__(text)
        self.data = data
        self.data_checksum = data_checksum


def _load_v3(document: Any) -> dict[str, Any]:
    """``GetCheckpoint`` into a ``MemoryManagerCheckpointV3``: ``UnmarshalCheckpoint`` (the outer struct,
    then ``data``), then ``VerifyChecksum`` (``dataChecksum`` against ``data``). Returns the data as raw."""
    top = document if isinstance(document, dict) else {}
    data, data_checksum_value, errors = "", 0, []
    found, value = _lookup(top, "data")
    if found and value is not None:
        if isinstance(value, str):
            data = value
        else:
            errors.append(f"data: expected a string, got {type(value).__name__}")
    found, value = _lookup(top, "dataChecksum")
    if found and value is not None:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64:
            data_checksum_value = value
        else:
            errors.append(f"dataChecksum: expected an unsigned integer, got {value!r}")
    try:
        normalise(_without_pod_entries(document))  # the embedded V1's fields, for their type errors
    except CheckpointError as err:
        errors.insert(0, str(err))
    if errors:
        raise _V3Error(
            f"failed to deserialize memory manager checkpoint: {errors[0]}", data, data_checksum_value
        )
    try:
        if not data:
            raise CheckpointError("unexpected end of JSON input")
        inner = _parse(data)
        raw = normalise(_without_checksum(inner))
    except CheckpointError as err:
        raise _V3Error(
            f"failed to deserialize memory manager checkpoint data: {err}", data, data_checksum_value
        ) from None
    if data_checksum_value != data_checksum(data):
        raise _V3Error(str(CorruptCheckpointError(data_checksum_value, 0)), data, data_checksum_value)
    return raw


_LEGACY_NAME = "MemoryManagerCheckpoint"
_V1_NAME = "MemoryManagerCheckpointV1"


def _parse(blob: bytes | str) -> Any:
    try:
        return json.loads(blob)
    except json.JSONDecodeError as err:
        if err.pos >= len(err.doc.rstrip()):  # cut short: Go's own text
            raise CheckpointError("unexpected end of JSON input") from None
        raise CheckpointError(f"invalid JSON in memory manager checkpoint: {err}") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise CheckpointError(f"invalid JSON in memory manager checkpoint: {err}") from None


def _without_pod_entries(document: Any) -> Any:
    """The document as a struct without ``PodEntries`` sees it: encoding/json skips unknown keys."""
    if isinstance(document, dict):
        return {k: v for k, v in document.items() if k.lower() != "podentries"}
    return document


def _without_checksum(document: Any) -> Any:
    """``MemoryManagerCheckpointData`` has no checksum field: a ``checksum`` key in ``data`` is skipped."""
    if isinstance(document, dict):
        return {k: v for k, v in document.items() if k.lower() != "checksum"}
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
