"""A node's state class: nodes in one class answer every admission alike, so an answer computed on one
holds for all of them (:class:`~kubeletemu.scheduler.exact.WouldAdmit` shares its kept answers by class).

The kubelet's admission reads its machine, its configuration (with the kubelet version) and what it holds:
the admitted pods, the CPU, Memory and Device Managers' states and the Topology Manager's stored hints
(``NodeEmulator.would_admit`` runs on a clone of exactly these; the node's name and labels are not read,
``PredicateAdmitHandler`` takes allocatable and ``maxPods`` only). Two nodes are in one class when all of
these are equal once pod identities are left out:

- the machine and the configuration, by value, leaving out the emulator's settings that name or place the
  node rather than decide its admissions (its node name, sockets, directories, feed, logging: each node of
  a ``kubeletemu nodes`` group or a fleet of daemons has its own); the devices it offers and the kubelet
  version stay in;
- the admitted pods in admission order, each by its shape (``pod_shape``: every field but name, UID, node
  and phase) with its stored hints and allocation records;
- the managers' states as the node feed sends them (:func:`kubeletemu.feed.state.manager_states`), each
  pod UID replaced by its pod's place in that order (an ended pod's by its place among the ended ones),
  and the checkpoints' checksums (which cover the UIDs) left out.

A UID the states hold for no pod the node knows stays as it is, so such a node shares with nobody. The
one answer that reads identity, "already admitted" (``PodExistsError``), is asked of the node itself
(:meth:`WouldAdmit.verdict` checks the node holds neither the pod's UID nor its namespace/name first).
"""

from __future__ import annotations

import dataclasses
import json
import re
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from kubeletemu.config import Config
from kubeletemu.config.emulator_config import EmulatorConfiguration
from kubeletemu.emulator import NodeEmulator
from kubeletemu.feed.state import manager_states
from kubeletemu.scheduler.pod_shape import pod_shape

_CHECKSUM = re.compile(rb'"[Cc]hecksum":\s*-?\d+')
# repr() of a machine or configuration -> a small number (few distinct values in a cluster).
_VALUES: dict[str, int] = {}
# id(object) -> (a weak reference to it, its number): repr of a machine costs ~0.5 ms, and every mirror the
# feed rebuilds has its own objects of equal value.
_BY_ID: dict[int, tuple[weakref.ref[object], int]] = {}


def state_class(emulator: NodeEmulator) -> Hashable | None:
    """The class of ``emulator``'s state now; None when it cannot be told (a machine without its probed
    host: it then shares with no node)."""
    if emulator.machine.host is None:  # as a mirror needs it (kubeletemu.feed.state.snapshot)
        return None
    state = manager_states(emulator)  # what the feed sends of the managers, without the pods' manifests
    places: dict[str, str] = {}
    pods = []
    for index, entry in enumerate(emulator.registry):
        places[entry.pod.uid] = f"#{index}"
        affinity = {name: (hint.affinity.bits() if hint.affinity else None, hint.preferred)
                    for name, hint in entry.affinity.items()}  # fmt: skip
        pods.append((pod_shape(entry.pod), repr(sorted(affinity.items())), _canonical(entry.allocations)))
    ended = []
    for index, (uid, pod) in enumerate(emulator.ended.items()):
        places.setdefault(uid, f"#e{index}")
        ended.append(pod_shape(pod))
    hints = sorted(
        (places.get(h.pod_uid, h.pod_uid), h.container, h.hint.affinity.bits() if h.hint.affinity else None,
         h.hint.preferred)
        for h in state.hints
    )  # fmt: skip
    # The checkpoints' checksums cover the UIDs: left out, what they check is compared itself.
    blob = _CHECKSUM.sub(b"", b"\0".join((state.cpu_state, state.memory_state, state.device_state)))
    managers = _replace_uids(blob, places)
    return (
        _value_number(emulator.machine),
        _value_number(emulator.config, _admission_view),
        tuple(pods),
        tuple(ended),
        repr(hints),
        managers,
    )


def _admission_view(config: Config) -> Config:
    """``config`` with only the emulator settings an admission reads (see the module docstring)."""
    emulator = config.emulator
    kept = EmulatorConfiguration(devices=emulator.devices, kubelet_version=emulator.kubelet_version)
    return dataclasses.replace(config, emulator=kept)


def _value_number(obj: Any, view: Callable[[Any], object] = lambda value: value) -> int:
    kept = _BY_ID.get(id(obj))
    if kept is not None and kept[0]() is obj:
        return kept[1]
    number = _VALUES.setdefault(repr(view(obj)), len(_VALUES))
    key = id(obj)

    def forget(_: weakref.ref[object]) -> None:
        _BY_ID.pop(key, None)

    _BY_ID[key] = (weakref.ref(obj, forget), number)
    return number


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _replace_uids(blob: bytes, places: dict[str, str]) -> bytes:
    if not places:
        return blob
    # Longest first, so that a UID that is a prefix of another is not replaced inside it.
    pattern = re.compile(b"|".join(re.escape(uid.encode()) for uid in sorted(places, key=len, reverse=True)))
    return pattern.sub(lambda match: places[match.group().decode()].encode(), blob)
