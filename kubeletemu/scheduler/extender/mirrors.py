"""The extender's mirror of every node: one exact :class:`~kubeletemu.emulator.NodeEmulator` per node, as its
agent (the node's kubeletemu) last reported it, applied by generation.

A node is asked about only while its mirror is fresh. It fails closed, with the reason, when:

* its agent never reported (no mirror yet);
* its agent has not been heard from for ``stale_after`` seconds (an :meth:`Mirrors.apply` or a
  :meth:`Mirrors.heartbeat` is hearing from it);
* its agent disconnected (:meth:`Mirrors.disconnected`): the mirror is dropped at once, so that the full
  state the agent resends when it reconnects is applied whatever its generation (an agent that restarted
  may count generations from the start again).

Generations order one agent's reports: a report replaces the mirror when its generation is newer than the
mirror's, or when the node has no mirror; an older or equal one only counts as hearing from the agent.
Listeners (the ledger) are told of every mirror applied. The clock is injectable for tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kubeletemu.emulator import NodeEmulator

DEFAULT_STALE_AFTER_S = 30.0

# Why a node fails closed (the ``state`` of a :class:`Lookup`, and a metric label).
FRESH = "fresh"
NEVER_REPORTED = "never-reported"
STALE = "stale"
DISCONNECTED = "disconnected"
STATES = (FRESH, NEVER_REPORTED, STALE, DISCONNECTED)


@dataclass(frozen=True)
class Mirror:
    """One node's exact state as its agent reported it: the emulator, its generation, and the UIDs of pods
    the node refused (so an in-flight placement the kubelet turned down closes too)."""

    node: str
    generation: int
    emulator: NodeEmulator
    refused: frozenset[str] = frozenset()

    def holds(self, uid: str) -> bool:
        return uid in self.emulator.registry

    def reported(self, uid: str) -> bool:
        """The agent has answered for the pod: admitted (held) or refused."""
        return uid in self.refused or self.holds(uid)


@dataclass(frozen=True)
class Lookup:
    """A node's mirror when fresh (``mirror`` set, ``state`` FRESH); else None, the state and the reason
    (one line, the node named) it fails closed."""

    node: str
    state: str
    reason: str = ""
    mirror: Mirror | None = None

    @property
    def emulator(self) -> NodeEmulator | None:
        return None if self.mirror is None else self.mirror.emulator


@dataclass
class _Node:
    mirror: Mirror | None = None
    heard: float | None = None
    disconnect_reason: str | None = None


@dataclass
class Mirrors:
    """Every node's mirror. ``expected``: nodes readiness waits for, beside those that ever reported."""

    stale_after: float = DEFAULT_STALE_AFTER_S
    clock: Callable[[], float] = time.monotonic
    expected: Collection[str] = ()
    _nodes: dict[str, _Node] = field(default_factory=dict)
    _emulators: dict[str, NodeEmulator] = field(default_factory=dict)
    _listeners: list[Callable[[Mirror], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name in self.expected:
            self._nodes.setdefault(name, _Node())

    # ---- fed by the agents -----------------------------------------------------------------------------

    def apply(
        self, node: str, generation: int, emulator: NodeEmulator, *, refused: Iterable[str] = ()
    ) -> bool:
        """The agent's state at ``generation``: replaces the mirror when newer, or when the node has none
        (never reported, or disconnected since); False when it was kept. Hearing from the agent either way."""
        entry = self._nodes.setdefault(node, _Node())
        entry.heard = self.clock()
        if entry.mirror is not None and generation <= entry.mirror.generation:
            return False
        mirror = Mirror(node, generation, emulator, frozenset(refused))
        entry.mirror = mirror
        entry.disconnect_reason = None
        self._emulators[node] = emulator
        for listener in self._listeners:
            listener(mirror)
        return True

    def heartbeat(self, node: str) -> None:
        """The node's agent is alive (its mirror, if any, stays fresh)."""
        self._nodes.setdefault(node, _Node()).heard = self.clock()

    def disconnected(self, node: str, reason: str) -> None:
        """The node's agent went away: the node fails closed now, until it reports its full state again."""
        entry = self._nodes.setdefault(node, _Node())
        entry.mirror = None
        entry.disconnect_reason = reason
        self._emulators.pop(node, None)

    def on_apply(self, listener: Callable[[Mirror], None]) -> None:
        """Call ``listener`` with every mirror applied."""
        self._listeners.append(listener)

    # ---- read by the verbs -----------------------------------------------------------------------------

    def lookup(self, node: str) -> Lookup:
        """The node's fresh mirror, or why it fails closed."""
        entry = self._nodes.get(node)
        if entry is None or (entry.mirror is None and entry.disconnect_reason is None):
            return Lookup(node, NEVER_REPORTED, f"node {node!r} fails closed: its agent never reported")
        if entry.mirror is None:
            return Lookup(
                node,
                DISCONNECTED,
                f"node {node!r} fails closed: its agent disconnected: {entry.disconnect_reason}",
            )
        assert entry.heard is not None
        silent = self.clock() - entry.heard
        if silent > self.stale_after:
            return Lookup(
                node,
                STALE,
                f"node {node!r} fails closed: its agent was last heard {silent:.1f}s ago "
                f"(staleAfter {self.stale_after:g}s)",
            )
        return Lookup(node, FRESH, mirror=entry.mirror)

    def generation(self, node: str) -> int | None:
        """The generation of the node's mirror, fresh or stale; None when it has none."""
        entry = self._nodes.get(node)
        return None if entry is None or entry.mirror is None else entry.mirror.generation

    @property
    def emulators(self) -> Mapping[str, NodeEmulator]:
        """Every node's current mirror emulator, fresh or not (the verbs look a node up first)."""
        return MappingProxyType(self._emulators)

    def names(self) -> list[str]:
        """Every node known: expected, or ever heard from."""
        return sorted(self._nodes)

    def counts(self) -> dict[str, int]:
        """How many known nodes are in each state."""
        counts = dict.fromkeys(STATES, 0)
        for name in self._nodes:
            counts[self.lookup(name).state] += 1
        return counts

    def all_fresh(self) -> bool:
        """Every known node has a fresh mirror (and at least one node is known)."""
        return bool(self._nodes) and all(self.lookup(n).state == FRESH for n in self._nodes)

    def any_fresh(self) -> bool:
        return any(self.lookup(n).state == FRESH for n in self._nodes)
