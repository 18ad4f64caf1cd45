"""The agent's side of the feed: each node's newest state, and the streams of updates clients read.

The hub never waits on a client. A stream looks at its nodes every ``poll_interval`` seconds, on the event
loop where the nodes change (so a state is always taken between two changes), and sends a node's full state
when the node moved since the stream last sent it. A client that reads slowly holds back its own stream
only: when it reads again it gets each node's newest state, the ones in between coalesced away. What a node
moved is told by its emulator object (a reload or a shadow refresh swaps it) and its ``state_version``,
which every admit, removal and restore moves.

A state is taken once per node and change, whatever the number of streams, and given a generation by the
agent's :class:`~kubeletemu.feed.state.Incarnation`: the start time in Unix nanoseconds plus the changes
the hub has seen on that node.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass

from kubeletemu.emulator import NodeEmulator
from kubeletemu.feed.state import Incarnation, NodeState, snapshot

DEFAULT_POLL_INTERVAL = 0.05
DEFAULT_HEARTBEAT_PERIOD = 5.0


@dataclass(frozen=True)
class Heartbeat:
    incarnation: str
    # (node name, generation of its newest state) for the stream's nodes.
    generations: tuple[tuple[str, int], ...]


@dataclass
class _Node:
    emulator: NodeEmulator | None = None
    version: int = -1
    changes: int = 0
    state: NodeState | None = None


class FeedHub:
    """``nodes`` returns the agent's nodes by name now (a getter: the daemon swaps its emulator)."""

    def __init__(
        self,
        nodes: Callable[[], Mapping[str, NodeEmulator]],
        incarnation: Incarnation | None = None,
        *,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        heartbeat_period: float = DEFAULT_HEARTBEAT_PERIOD,
    ) -> None:
        self.nodes = nodes
        self.incarnation = incarnation or Incarnation()
        self.poll_interval = poll_interval
        self.heartbeat_period = heartbeat_period
        self._seen: dict[str, _Node] = {}

    def names(self) -> list[str]:
        return list(self.nodes())

    def state(self, name: str) -> NodeState:
        """The node's newest state (``KeyError`` for a node the agent does not run)."""
        emulator = self.nodes()[name]
        seen = self._seen.setdefault(name, _Node())
        if seen.state is None or seen.emulator is not emulator or seen.version != emulator.state_version:
            seen.changes += 1
            seen.emulator, seen.version = emulator, emulator.state_version
            generation = self.incarnation.generation(seen.changes)
            seen.state = snapshot(name, generation, emulator, self.incarnation.id)
        return seen.state

    async def watch(self, names: Sequence[str] = ()) -> AsyncIterator[NodeState | Heartbeat]:
        """Every node's state (``names``: those only), then a node's state after it changed, and a
        :class:`Heartbeat` every ``heartbeat_period``; for as long as the caller reads."""
        sent: dict[str, int] = {}
        beat_due = time.monotonic() + self.heartbeat_period
        while True:
            selected = list(names) or self.names()
            for name in selected:
                state = self.state(name)
                if sent.get(name) != state.generation:
                    sent[name] = state.generation
                    yield state
            if time.monotonic() >= beat_due:
                beat_due = time.monotonic() + self.heartbeat_period
                yield Heartbeat(self.incarnation.id, tuple((n, sent[n]) for n in selected if n in sent))
            await asyncio.sleep(self.poll_interval)
