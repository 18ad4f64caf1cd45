"""The ``cpu_manager_state`` formats each kubelet version writes and reads (issue 16).

Registered as ``cpumanager.checkpoint-format`` (``versions/data/behaviours/checkpoints.json``):

* 1.33 … 1.35 write **V2** (``checkpoint.py``) and read **V1 first** (migrated), else V2; a file neither
  reads as gets V2's error, a V1 container id the kubelet does not know "error migrating v1 checkpoint
  state to v2 checkpoint state: …" (registered as ``cpumanager.checkpoint-read-order``: 1.36's
  ``loadAndMigrateCheckpointV2``, kubernetes#134768, turned the order round, V1's error last and "failed
  to migrate checkpoint from v1 to v2: …"). Read in ``restoreState`` of v1.33.13 … v1.35.6 and v1.36.3
  (openshift/kubernetes as vendored in openshift/microshift release-4.20 @ 78a3953430 … release-4.23 @
  ab25d11482): the same outcome either way except these texts, since a file that reads as both carries
  the same content.
* 1.36 (kubernetes#134768, #137751) depends on ``PodLevelResourceManagers``: off, it writes V2 byte for byte
  as 1.35 (checksum over the dump named ``CPUManagerCheckpoint``) and reads V2 (checksum tried under the
  ``CPUManagerCheckpointV2`` name, then the legacy one), else V1; on, it writes **V3** — V2 plus
  ``podEntries`` (``{"<podUID>":{"cpuSet":"0-3"}}``), checksum over ``(*state.CPUManagerCheckpoint){...
  PodEntries:(state.PodCPUAssignments)map[uid:{CPUSet:(cpuset.CPUSet){elems:(map[int]struct {})map[0:{}
  ...]}}] Checksum:(checksum.Checksum)0}``, a zero checksum not accepted — and reads V3, else V2/V1
  migrated (a V2 file never verifies as V3: its dump lacks ``PodEntries``).
* master (kubernetes#139102, merged by 2026-05-15: #139087's description of that day says so) writes
  **V4** whatever the gate: the V2 fields at the top (so 1.33 … 1.36 read it as V2, losing ``podEntries``)
  with their legacy V2 checksum, then ``"data"``, the JSON of ``{policyName, defaultCpuSet, entries?,
  podEntries?}`` as a string (``podEntries`` only with the gate on), and ``"dataChecksum"``, FNV-32a of
  ``(string)<data>``. It reads V4 (``dataChecksum`` authoritative, no zero accepted); a V4 file that
  fails with ``data`` or ``dataChecksum`` set is refused, without falling back, as "could not load v4
  checkpoint: <error>" (the wrapping of kubernetes#139087); otherwise V3, then V2/V1, migrated.
* 1.37 (k8s.io/kubernetes v1.37.2, ``state/checkpoint.go`` and ``state_checkpoint.go``) writes and reads V4
  as master's row says, but its ``loadCheckpointV2`` is the last step: a V1 file is no longer read (V2's
  error is returned). master, ordered after 1.37, reads likewise. Not emulated: V4's ``baselines`` (only
  with the alpha gate InPlacePodVerticalScalingExclusiveCPUs).

Read: 1.36 ``state_checkpoint.go`` at kubernetes/kubernetes@008b3652959ca58af8be3fb5b6ecfe9ae7638282 and the
V2/V3 ``checkpoint.go`` of the same line (weizhoublue/kubernetes@76a45e86d7f98a471664b6aeae3290d7b26e98da,
master of 2026-05-14), confirmed by v1.36.3's ``state_checkpoint.go`` (restore V3 → V2 with the gate on,
V2 → V1 off; store V3 / V2 likewise: openshift/kubernetes vendored in openshift/microshift release-4.23 @
ab25d11482); V4's struct in kubernetes/enhancements@64765b4b KEP-5554 (``CPUManagerCheckpointV2
`json:",inline"` ``, ``Data``, ``DataChecksum``); the data checksum's vector 657950972 in #137820's review.
master's ``loadAndMigrateCheckpointV4`` (the "could not load v4 checkpoint: %w" error, no fallback once
``Data`` or ``DataChecksum`` is set) in a KEP-5554 fork's ``state_checkpoint.go`` built on master (code
index id 54675463210; repository and commit not shown by the index). That fork also drops the V1
fallback ("V2 is the oldest supported version"); no PR doing so on master could be dated, so V1 is still
read here. The error wrapping is dated by kubernetes#139626 (2026-06-10), which copies the same
function, error and log text for the Memory Manager's V3.

The embedded V2 checksum: #139102's ``checkpoint.go`` is not in the code index (only the unmerged
alternative #139103, V4 over an embedded *V3*, whose ``MarshalCheckpoint`` zeroes the legacy checksum so
that older kubelets read it as V2). For #139102 the checksum is kept: KEP-5526's rollback text
(kubernetes/enhancements@587f1f366, #6130 review of 2026-06-15: "the Kubelet can parse the embedded V2
payload and verify its checksum"); the v1.37 documentation (kubernetes/website#56828: "Older kubelet
versions can read V4 checkpoints without corruption errors"); and #139626, the same author's Memory
Manager port "similar to V4 embedding V2", which computes the embedded V1's checksum under the legacy
name and tests that 1.35 would compute the same (``TestMemoryManagerCheckpoint_MarshalCheckpoint_
HashCompatibility``, V3 case added on review 2026-06-11). Either way 1.33 … 1.36 read the file (V2
accepts 0); the difference shows only in the bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.checkpointmanager import fnv32a
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CheckpointError, CorruptCheckpointError, CPUSetError
from kubeletemu.cpumanager.policy_options import POD_LEVEL_RESOURCE_MANAGERS_GATE, merged_gates
from kubeletemu.cpumanager.state.checkpoint import (
    LEGACY_MIGRATION_ERROR,
    ContainerRefLookup,
    CPUManagerCheckpoint,
    CPUManagerCheckpointV1,
    _decode_checksum,
    _decode_document,
    _decode_string,
    _decode_string_map,
    _field,
    _go_json_object,
    _go_json_string_map,
    _go_string_key,
    _spew_string_map,
    _type_error,
    go_json_string,
    migrate_v1_to_v2,
)
from kubeletemu.versions.behaviours import step_at
from kubeletemu.versions.version import MASTER

CHECKPOINT_FORMAT = "cpumanager.checkpoint-format"
READ_ORDER = "cpumanager.checkpoint-read-order"

V2 = "V2"
V3 = "V3"
V4 = "V4"

_LEGACY_NAME = "CPUManagerCheckpoint"
_V2_NAME = "CPUManagerCheckpointV2"
_V3_NAME = "CPUManagerCheckpointV3"
_V4_STRUCT = "CPUManagerCheckpoint"
_DATA_STRUCT = "CPUManagerCheckpointData"


@dataclass(frozen=True)
class CPUCheckpointFormat:
    """What the kubelet of one version, with ``PodLevelResourceManagers`` as given, writes and reads.

    ``step``: how many of ``cpumanager.checkpoint-format``'s changes the version carries (0 = 1.33);
    ``read_step`` likewise for ``cpumanager.checkpoint-read-order``."""

    step: int = 0
    pod_level_resource_managers: bool = False
    read_step: int = 0

    @classmethod
    def for_kubelet(
        cls, kubelet_version: str = MASTER, feature_gates: Mapping[str, bool] | None = None
    ) -> CPUCheckpointFormat:
        gate = merged_gates(feature_gates)[POD_LEVEL_RESOURCE_MANAGERS_GATE]
        return cls(step_at(CHECKPOINT_FORMAT, kubelet_version), gate, step_at(READ_ORDER, kubelet_version))

    @property
    def writes(self) -> str:
        if self.step >= 2:
            return V4
        if self.step == 1 and self.pod_level_resource_managers:
            return V3
        return V2


@dataclass
class CPUCheckpointContent:
    """What a checkpoint holds, whatever its format: pod-level sets as their cpuset strings."""

    policy_name: str = ""
    default_cpu_set: str = ""
    entries: dict[str, dict[str, str] | None] | None = field(default_factory=dict)
    pod_entries: dict[str, str] | None = field(default_factory=dict)
    # Which format it was read from (V1 files are migrated, so they read as "V1").
    read_as: str = V2


# -- go-spew dumps ---------------------------------------------------------------------------------


def _entries_dump(entries: Mapping[str, Mapping[str, str] | None] | None) -> str:
    if entries is None:
        return "<nil>"
    pods = sorted(entries, key=_go_string_key)
    return "map[" + " ".join(f"{pod}:{_spew_string_map(entries[pod])}" for pod in pods) + "]"


def _cpuset_dump(text: str) -> str:
    """A ``cpuset.CPUSet`` value: its one unexported field, the ``map[int]struct{}`` of its CPUs."""
    cpus = CPUSet.parse(text).list()
    return "(cpuset.CPUSet){elems:(map[int]struct {})map[" + " ".join(f"{c}:{{}}" for c in cpus) + "]}"


def _pod_entries_dump(pod_entries: Mapping[str, str] | None) -> str:
    if pod_entries is None:
        return "<nil>"
    pods = sorted(pod_entries, key=_go_string_key)
    return "map[" + " ".join(f"{p}:{{CPUSet:{_cpuset_dump(pod_entries[p])}}}" for p in pods) + "]"


def spew_dump_v2(
    policy_name: str,
    default_cpu_set: str,
    entries: Mapping[str, Mapping[str, str] | None] | None,
    type_name: str = _LEGACY_NAME,
) -> str:
    return (
        f"(*state.{type_name}){{PolicyName:(string){policy_name} DefaultCPUSet:(string){default_cpu_set} "
        f"Entries:(map[string]map[string]string){_entries_dump(entries)} Checksum:(checksum.Checksum)0}}"
    )


def spew_dump_v3(content: CPUCheckpointContent, type_name: str = _LEGACY_NAME) -> str:
    return (
        f"(*state.{type_name}){{PolicyName:(string){content.policy_name} "
        f"DefaultCPUSet:(string){content.default_cpu_set} "
        f"Entries:(map[string]map[string]string){_entries_dump(content.entries)} "
        f"PodEntries:(state.PodCPUAssignments){_pod_entries_dump(content.pod_entries)} "
        "Checksum:(checksum.Checksum)0}"
    )


def _hash(dump: str) -> int:
    return fnv32a(dump.encode("utf-8", "surrogatepass"))


def data_checksum(data: str) -> int:
    """``checksum.New(cp.Data)``: go-spew prints a string as ``(string)`` and its bytes, unquoted."""
    return _hash("(string)" + data)


# -- writing -------------------------------------------------------------------------------------------


def _entries_json(entries: Mapping[str, Mapping[str, str] | None]) -> str:
    pods = []
    for pod in sorted(entries, key=_go_string_key):
        containers = entries[pod]
        pods.append((pod, "null" if containers is None else _go_json_string_map(containers)))
    return _go_json_object(pods)


def _pod_entries_json(pod_entries: Mapping[str, str]) -> str:
    # PodEntry.MarshalJSON: {"cpuSet": "<list>"}, the string omitted when empty.
    items = []
    for pod in sorted(pod_entries, key=_go_string_key):
        text = pod_entries[pod]
        items.append((pod, _go_json_object([("cpuSet", go_json_string(text))] if text else [])))
    return _go_json_object(items)


def _content_items(content: CPUCheckpointContent, with_pods: bool) -> list[tuple[str, str]]:
    items = [
        ("policyName", go_json_string(content.policy_name)),
        ("defaultCpuSet", go_json_string(content.default_cpu_set)),
    ]
    if content.entries:
        items.append(("entries", _entries_json(content.entries)))
    if with_pods and content.pod_entries:
        items.append(("podEntries", _pod_entries_json(content.pod_entries)))
    return items


def marshal_v3(content: CPUCheckpointContent) -> bytes:
    """1.36 with ``PodLevelResourceManagers``: V2's fields, ``podEntries``, then the checksum."""
    items = _content_items(content, with_pods=True)
    items.append(("checksum", str(_hash(spew_dump_v3(content)))))
    return _go_json_object(items).encode("utf-8")


def marshal_v4(content: CPUCheckpointContent) -> bytes:
    """master: the embedded V2 (its legacy checksum), then ``data`` and ``dataChecksum``."""
    data = _go_json_object(_content_items(content, with_pods=True))
    items = _content_items(content, with_pods=False)
    v2 = spew_dump_v2(content.policy_name, content.default_cpu_set, content.entries)
    items.append(("checksum", str(_hash(v2))))
    items.append(("data", go_json_string(data)))
    items.append(("dataChecksum", str(data_checksum(data))))
    return _go_json_object(items).encode("utf-8")


def marshal(content: CPUCheckpointContent, fmt: CPUCheckpointFormat) -> bytes:
    """The file the kubelet of ``fmt`` writes for ``content``."""
    written = fmt.writes
    if written == V4:
        return marshal_v4(content)
    if written == V3:
        return marshal_v3(content)
    return CPUManagerCheckpoint(content.policy_name, content.default_cpu_set, content.entries).marshal()


# -- reading -------------------------------------------------------------------------------------------


def _decode_entries(doc: Mapping[str, Any], struct: str) -> dict[str, dict[str, str] | None] | None:
    entries: dict[str, dict[str, str] | None] | None = {}
    found, raw = _field(doc, "entries")
    if found:
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise _type_error(raw, struct, "entries", "map[string]map[string]string")
        entries = {pod: _decode_string_map(c, struct, "entries") for pod, c in raw.items()}
    return entries


def _decode_pod_entries(doc: Mapping[str, Any], struct: str) -> dict[str, str] | None:
    """``PodCPUAssignments`` via ``PodEntry.UnmarshalJSON`` (each ``cpuSet`` parsed as a cpuset). The
    kubelet's text for an unparsable one was not read; this one names the pod and the parser's reason."""
    found, raw = _field(doc, "podEntries")
    if not found:
        return {}
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _type_error(raw, struct, "podEntries", "state.PodCPUAssignments")
    out: dict[str, str] = {}
    for pod, entry in raw.items():
        if entry is None:
            out[pod] = ""
            continue
        if not isinstance(entry, dict):
            raise _type_error(entry, struct, "podEntries", "state.PodEntry")
        _, text = _field(entry, "cpuSet")
        if text is not None and not isinstance(text, str):
            raise _type_error(text, "podEntryJSON", "cpuSet", "string")
        try:
            out[pod] = str(CPUSet.parse(text or ""))
        except CPUSetError as err:
            raise CheckpointError(f"podEntries[{pod}].cpuSet {text!r}: {err}") from None
    return out


def _decode_content(doc: Mapping[str, Any], struct: str, read_as: str) -> CPUCheckpointContent:
    """The fields V3 and V4's data share, decoded as into the Go struct ``struct``."""
    return CPUCheckpointContent(
        policy_name=_decode_string(doc, "policyName", struct),
        default_cpu_set=_decode_string(doc, "defaultCpuSet", struct),
        entries=_decode_entries(doc, struct),
        pod_entries=_decode_pod_entries(doc, struct),
        read_as=read_as,
    )


def _unmarshal_v3(blob: bytes) -> tuple[CPUCheckpointContent, int]:
    doc = _decode_document(blob, _V3_NAME)
    return _decode_content(doc, _V3_NAME, V3), _decode_checksum(doc, _V3_NAME)


def load_v3(blob: bytes, names: tuple[str, ...]) -> CPUCheckpointContent:
    """V3 unmarshal + ``VerifyChecksum``: the dump under each of ``names`` in turn; 0 is no exception."""
    content, checksum = _unmarshal_v3(blob)
    if not any(checksum == _hash(spew_dump_v3(content, name)) for name in names):
        raise CorruptCheckpointError()
    return content


def _v2_verifies(checkpoint: CPUManagerCheckpoint, names: tuple[str, ...]) -> bool:
    if checkpoint.checksum == 0:
        return True
    dumps = (
        spew_dump_v2(checkpoint.policy_name, checkpoint.default_cpu_set, checkpoint.entries, n) for n in names
    )
    return any(checkpoint.checksum == _hash(d) for d in dumps)


def load_v1_first(blob: bytes, lookup: ContainerRefLookup) -> CPUCheckpointContent:
    """1.33 … 1.35's ``restoreState``: V1 (checksum and all), migrated; else V2, whose error is the one
    returned when both fail (a V2 file with entries fails V1 on their shape, so a corrupt one is
    "checkpoint is corrupted" here where 1.36 reports V1's type error)."""
    try:
        v1 = CPUManagerCheckpointV1.unmarshal(blob)
        v1.verify_checksum()
    except CheckpointError:
        v2 = CPUManagerCheckpoint.unmarshal(blob)
        if not _v2_verifies(v2, (_LEGACY_NAME,)):
            raise CorruptCheckpointError() from None
        return CPUCheckpointContent(v2.policy_name, v2.default_cpu_set, v2.entries, {}, V2)
    migrated = migrate_v1_to_v2(v1, lookup, LEGACY_MIGRATION_ERROR)
    return CPUCheckpointContent(migrated.policy_name, migrated.default_cpu_set, migrated.entries, {}, "V1")


def load_v2(blob: bytes, names: tuple[str, ...], go_struct: str = _LEGACY_NAME) -> CPUCheckpointContent:
    """V2 (checksum under ``names``, 0 accepted); alone, 1.37's ``loadCheckpointV2``, V1 no longer read,
    whose errors name its own struct, ``CPUManagerCheckpointV2``."""
    v2 = CPUManagerCheckpoint.unmarshal(blob, go_struct)
    if not _v2_verifies(v2, names):
        raise CorruptCheckpointError()
    return CPUCheckpointContent(v2.policy_name, v2.default_cpu_set, v2.entries, {}, V2)


def load_v2_chain(blob: bytes, lookup: ContainerRefLookup, names: tuple[str, ...]) -> CPUCheckpointContent:
    """``loadAndMigrateCheckpointV2``: V2 (checksum under ``names``), else V1 migrated, else V1's error."""
    try:
        return load_v2(blob, names)
    except CheckpointError:
        pass
    v1 = CPUManagerCheckpointV1.unmarshal(blob)
    v1.verify_checksum()
    migrated = migrate_v1_to_v2(v1, lookup)
    return CPUCheckpointContent(migrated.policy_name, migrated.default_cpu_set, migrated.entries, {}, "V1")


@dataclass
class _V4File:
    data: str
    data_checksum: int


def _decode_uint(doc: Mapping[str, Any], name: str, struct: str) -> int:
    """A ``checksum.Checksum`` field other than ``checksum`` (Go's error names the field)."""
    found, value = _field(doc, name)
    try:
        return _decode_checksum({"checksum": value} if found else {}, struct)
    except CheckpointError as err:
        raise CheckpointError(str(err).replace(f"{struct}.checksum", f"{struct}.{name}")) from None


def _unmarshal_v4(blob: bytes) -> tuple[_V4File, CPUCheckpointContent]:
    """``UnmarshalCheckpoint`` of V4: the outer struct (the embedded V2's fields, ``data``,
    ``dataChecksum``), then ``data`` into ``CPUManagerCheckpointData``.

    encoding/json keeps decoding after a type error, so ``data`` and ``dataChecksum`` are known even when
    another field failed; they come with the error (``_V4Error``) because they decide whether the kubelet
    falls back. A syntax error sets nothing: plain ``CheckpointError``, and the caller falls back."""
    doc = _decode_document(blob, _V4_STRUCT)
    outer = _V4File("", 0)
    errors: list[str] = []
    for name in ("data", "dataChecksum"):
        try:
            if name == "data":
                outer.data = _decode_string(doc, "data", _V4_STRUCT)
            else:
                outer.data_checksum = _decode_uint(doc, "dataChecksum", _V4_STRUCT)
        except CheckpointError as err:
            errors.append(str(err))
    try:
        CPUManagerCheckpoint.unmarshal(blob)  # the embedded V2's fields, for their type errors
    except CheckpointError as err:
        errors.insert(0, str(err))
    if errors:
        # Go reports the earliest type error in the document; the kubelet writes the V2 fields first.
        raise _V4Error(outer, f"failed to deserialize cpu manager checkpoint: {errors[0]}")
    try:
        if not outer.data:
            raise CheckpointError("unexpected end of JSON input")
        inner = _decode_document(outer.data.encode("utf-8", "surrogatepass"), _DATA_STRUCT)
        content = _decode_content(inner, _DATA_STRUCT, V4)
    except CheckpointError as err:
        raise _V4Error(outer, f"failed to deserialize cpu manager checkpoint data: {err}") from None
    return outer, content


class _V4Error(CheckpointError):
    def __init__(self, outer: _V4File, text: str) -> None:
        super().__init__(text)
        self.outer = outer


# The error of a V4 file that fails (kubernetes#139087, on master by 2026-06-10: #139626 of that day
# copies it for the Memory Manager's V3 as "could not load v3 checkpoint: %w").
V4_LOAD_ERROR = "could not load v4 checkpoint: "


def load(
    blob: bytes, fmt: CPUCheckpointFormat, lookup: ContainerRefLookup | None = None
) -> CPUCheckpointContent:
    """Read a checkpoint as the kubelet of ``fmt`` does (``restoreState``'s loading and migration).

    Raises ``CheckpointError`` with the text the kubelet would wrap in "could not restore state ..."."""
    find: ContainerRefLookup = lookup or (lambda _cid: None)
    if fmt.step == 0:
        if fmt.read_step == 0:
            return load_v1_first(blob, find)
        return load_v2_chain(blob, find, (_LEGACY_NAME,))
    if fmt.step == 1:
        if not fmt.pod_level_resource_managers:
            return load_v2_chain(blob, find, (_V2_NAME, _LEGACY_NAME))
        try:
            return load_v3(blob, (_LEGACY_NAME,))
        except CheckpointError:
            return load_v2_chain(blob, find, (_LEGACY_NAME,))
    content = _load_master(blob, fmt, find)
    if not fmt.pod_level_resource_managers:
        # restoreState takes CheckpointData.PodEntries only with the gate on.
        content.pod_entries = {}
    return content


def _load_master(blob: bytes, fmt: CPUCheckpointFormat, find: ContainerRefLookup) -> CPUCheckpointContent:
    """``loadAndMigrateCheckpointV4``. V2 is verified as 1.36 does (the gate picks the names)."""
    v2_names = (_LEGACY_NAME,) if fmt.pod_level_resource_managers else (_V2_NAME, _LEGACY_NAME)
    try:
        outer, content = _unmarshal_v4(blob)
    except _V4Error as err:
        if err.outer.data or err.outer.data_checksum:
            raise CheckpointError(V4_LOAD_ERROR + str(err)) from None
    except CheckpointError:
        pass  # not even the outer struct parses: no V4 data, fall back
    else:
        if outer.data_checksum == data_checksum(outer.data):
            return content
        # A V4 file whose data does not match: refused, no fallback (kubernetes#139102).
        raise CheckpointError(V4_LOAD_ERROR + str(CorruptCheckpointError()))
    try:
        return load_v3(blob, (_V3_NAME, _LEGACY_NAME))
    except CheckpointError:
        if fmt.read_step >= 2:  # 1.37: "V2 is the oldest supported version", no V1 fallback
            return load_v2(blob, v2_names, _V2_NAME)
        return load_v2_chain(blob, find, v2_names)
