"""The device manager checkpoint ``kubelet_internal_checkpoint`` (``devicemanager/checkpoint``).

JSON: ``{"Data": {"PodDeviceEntries": [{"PodUID", "ContainerName", "ResourceName", "DeviceIDs":
{"<numa>": [ids]}, "AllocResp": base64}], "RegisteredDevices": {res: [ids]}}, "Checksum": n,
"BootID"?}``. The checksum is FNV-32a over the go-spew dump of ``Data`` only (BootID stays outside so
older files keep verifying). Entry and id order are kept as read, since the dump depends on them.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from kubeletemu.checkpointmanager import checksum as gd
from kubeletemu.devicemanager.errors import DeviceManagerError
from kubeletemu.devicemanager.pod_devices import PodDevicesEntry

KUBELET_DEVICE_MANAGER_CHECKPOINT = "kubelet_internal_checkpoint"


class DeviceCheckpointError(DeviceManagerError):
    pass


@dataclass
class DeviceManagerCheckpoint:
    entries: list[PodDevicesEntry] | None = field(default_factory=list)
    registered_devices: dict[str, list[str] | None] | None = field(default_factory=dict)
    checksum: int = 0
    boot_id: str = ""


def _entry_dump(e: PodDevicesEntry) -> str:
    return gd.struct(
        gd.field("PodUID", "string", e.pod_uid),
        gd.field("ContainerName", "string", e.container_name),
        gd.field("ResourceName", "string", e.resource_name),
        gd.field("DeviceIDs", "checkpoint.DevicesPerNUMA", gd.go_map(e.device_ids, gd.go_slice)),
        gd.field("AllocResp", "[]uint8", gd.go_slice(None if e.alloc_resp is None else list(e.alloc_resp))),
    )


def data_dump(cp: DeviceManagerCheckpoint) -> str:
    return "(checkpoint.checkpointData)" + gd.struct(
        gd.field("PodDeviceEntries", "[]checkpoint.PodDevicesEntry", gd.go_slice(cp.entries, _entry_dump)),
        gd.field("RegisteredDevices", "map[string][]string", gd.go_map(cp.registered_devices, gd.go_slice)),
    )


def compute_checksum(cp: DeviceManagerCheckpoint) -> int:
    return gd.checksum_of(data_dump(cp))


def _lookup(obj: dict[str, Any], name: str) -> tuple[bool, Any]:
    found, value = False, None
    for key, val in obj.items():
        if key.lower() == name.lower():
            found, value = True, val
    return found, value


def _str_list(value: Any, where: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DeviceCheckpointError(f"{where}: expected a list of strings")
    return list(value)


def _entry(raw: Any, where: str) -> PodDevicesEntry:
    if not isinstance(raw, dict):
        raise DeviceCheckpointError(f"{where}: expected an object")
    fields = {}
    for name in ("PodUID", "ContainerName", "ResourceName"):
        value = _lookup(raw, name)[1]
        if value is not None and not isinstance(value, str):
            raise DeviceCheckpointError(f"{where}.{name}: expected a string")
        fields[name] = value or ""
    ids_raw = _lookup(raw, "DeviceIDs")[1]
    if ids_raw is not None and not isinstance(ids_raw, dict):
        raise DeviceCheckpointError(f"{where}.DeviceIDs: expected an object (NUMA node -> ids)")
    device_ids: dict[int, list[str]] = {}
    for key, ids in (ids_raw or {}).items():
        try:
            node = int(key)
        except ValueError:
            raise DeviceCheckpointError(f"{where}.DeviceIDs: NUMA id {key!r} is not an integer") from None
        device_ids[node] = _str_list(ids, f"{where}.DeviceIDs[{key}]") or []
    resp_raw = _lookup(raw, "AllocResp")[1]
    if resp_raw is None:
        resp: bytes | None = None
    elif isinstance(resp_raw, str):
        try:
            resp = base64.b64decode(resp_raw, validate=True)
        except binascii.Error:
            raise DeviceCheckpointError(f"{where}.AllocResp: invalid base64") from None
    else:
        raise DeviceCheckpointError(f"{where}.AllocResp: expected a base64 string")
    return PodDevicesEntry(
        fields["PodUID"], fields["ContainerName"], fields["ResourceName"], device_ids, resp
    )


def unmarshal(blob: bytes | str, verify: bool = True) -> DeviceManagerCheckpoint:
    """Parse and (by default) verify the checksum; ``DeviceCheckpointError`` on any problem."""
    try:
        document = json.loads(blob)
    except (ValueError, UnicodeDecodeError) as err:
        raise DeviceCheckpointError(f"invalid JSON in device manager checkpoint: {err}") from None
    if not isinstance(document, dict):
        raise DeviceCheckpointError("device manager checkpoint: expected a JSON object")
    cp = DeviceManagerCheckpoint()
    found, data = _lookup(document, "Data")
    if data is not None:
        if not isinstance(data, dict):
            raise DeviceCheckpointError("Data: expected an object")
        found, entries = _lookup(data, "PodDeviceEntries")
        if found:
            if entries is not None and not isinstance(entries, list):
                raise DeviceCheckpointError("Data.PodDeviceEntries: expected a list")
            cp.entries = (
                None
                if entries is None
                else [_entry(e, f"PodDeviceEntries[{i}]") for i, e in enumerate(entries)]
            )
        found, registered = _lookup(data, "RegisteredDevices")
        if found:
            if registered is not None and not isinstance(registered, dict):
                raise DeviceCheckpointError("Data.RegisteredDevices: expected an object")
            cp.registered_devices = (
                None
                if registered is None
                else {r: _str_list(ids, f"RegisteredDevices[{r}]") for r, ids in registered.items()}
            )
    checksum = _lookup(document, "Checksum")[1]
    if checksum is None:
        checksum = 0
    if isinstance(checksum, bool) or not isinstance(checksum, int) or not 0 <= checksum < 2**64:
        raise DeviceCheckpointError("Checksum: expected an unsigned integer")
    cp.checksum = checksum
    boot_id = _lookup(document, "BootID")[1]
    cp.boot_id = boot_id if isinstance(boot_id, str) else ""
    if verify and compute_checksum(cp) != checksum:
        raise DeviceCheckpointError("checkpoint is corrupted")
    return cp


def marshal(cp: DeviceManagerCheckpoint) -> bytes:
    """``MarshalCheckpoint``: checksum of the data, then compact JSON in Go's field order."""
    cp.checksum = compute_checksum(cp)
    entries = [
        {
            "PodUID": e.pod_uid,
            "ContainerName": e.container_name,
            "ResourceName": e.resource_name,
            "DeviceIDs": {str(n): ids for n, ids in sorted(e.device_ids.items(), key=lambda kv: str(kv[0]))},
            "AllocResp": None if e.alloc_resp is None else base64.b64encode(e.alloc_resp).decode("ascii"),
        }
        for e in cp.entries or []
    ]
    document: dict[str, Any] = {
        "Data": {
            "PodDeviceEntries": None if cp.entries is None else entries,
            "RegisteredDevices": None
            if cp.registered_devices is None
            else dict(sorted(cp.registered_devices.items())),
        },
        "Checksum": cp.checksum,
    }
    if cp.boot_id:
        document["BootID"] = cp.boot_id
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text.encode("utf-8")
