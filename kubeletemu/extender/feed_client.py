"""The extender's side of the node feed: one stream per agent, each node's state applied to the mirrors.

For each agent address a task dials it with mutual TLS, calls ``NodeFeed.Watch`` and, for each update:

- a node's state: decoded and rebuilt into an in-memory node off the event loop
  (:func:`~kubeletemu.feed.state.to_emulator`), then ``mirrors.apply(node, generation, emulator,
  refused=...)`` with the pods the node refused most recently (closing the ledger's entries for them); a state
  that does not decode is logged and its node reported disconnected with the reason (failed closed);
- a heartbeat: ``mirrors.heartbeat(node)`` for each node it names.

When the stream ends or fails, every node that agent reported is ``mirrors.disconnected(node, reason)``, and
the task dials again after a backoff (doubling from ``backoff_initial`` to ``backoff_max``, with jitter;
back to the start after a stream that delivered something). The agent sends every node's full state first
on each new stream, so a reconnected agent, or a restarted extender, rebuilds its mirrors from the agents
alone.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import grpc

from kubeletemu._proto.kubeletemu.v1 import feed_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import feed_pb2_grpc as pb_grpc
from kubeletemu.emulator import NodeEmulator
from kubeletemu.extender.config import FeedConfig
from kubeletemu.feed.state import NodeStateError, to_emulator
from kubeletemu.feed.tls import read_tls_file
from kubeletemu.feed.wire import MAX_STATE_BYTES, state_from_message

log = logging.getLogger(__name__)


class MirrorSink(Protocol):
    """What the feed drives (``kubeletemu.scheduler.extender.mirrors.Mirrors``)."""

    def apply(
        self, node: str, generation: int, emulator: NodeEmulator, *, refused: Iterable[str] = ()
    ) -> bool: ...

    def heartbeat(self, node: str) -> None: ...

    def disconnected(self, node: str, reason: str) -> None: ...


@dataclass
class AgentFeed:
    """One agent's stream, as the extender sees it (for logs, health and tests)."""

    address: str
    nodes: set[str] = field(default_factory=set)
    connected: bool = False
    streams: int = 0  # streams opened that delivered at least one update
    last_error: str = ""
    incarnation: str = ""


@dataclass
class Feeds:
    """What :func:`start_feeds` started: a task and a record per agent."""

    agents: dict[str, AgentFeed]
    tasks: list[asyncio.Task[None]]

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def channel_credentials(config: FeedConfig) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=read_tls_file(config.ca_file, "ca_file"),
        private_key=read_tls_file(config.key_file, "key_file"),
        certificate_chain=read_tls_file(config.cert_file, "cert_file"),
    )


async def start_feeds(config: FeedConfig, mirrors: MirrorSink) -> Feeds:
    """Start one task per agent (they run until :meth:`Feeds.close`); raises
    :class:`~kubeletemu.feed.tls.TLSFileError` before starting any when a TLS file cannot be read."""
    credentials = channel_credentials(config)
    agents = {address: AgentFeed(address) for address in config.agents}
    tasks = [
        asyncio.create_task(_follow(config, credentials, agent, mirrors), name=f"feed {agent.address}")
        for agent in agents.values()
    ]
    return Feeds(agents, tasks)


async def _follow(
    config: FeedConfig, credentials: grpc.ChannelCredentials, agent: AgentFeed, mirrors: MirrorSink
) -> None:
    delay = config.backoff_initial
    options: list[tuple[str, int | str]] = [("grpc.max_receive_message_length", MAX_STATE_BYTES)]
    if config.server_name:
        options.append(("grpc.ssl_target_name_override", config.server_name))
    while True:
        delivered = False
        try:
            async with grpc.aio.secure_channel(agent.address, credentials, options=options) as channel:
                stream = pb_grpc.NodeFeedStub(channel).Watch(pb.WatchRequest(nodes=list(config.nodes)))
                async for update in stream:
                    if not delivered:
                        delivered, agent.connected = True, True
                        agent.streams += 1
                    await _take(update, agent, mirrors)
            reason = "the agent ended the feed stream"
        except grpc.aio.AioRpcError as err:
            reason = f"feed stream lost: {err.code().name}: {err.details()}"
        except (
            Exception
        ) as err:  # whatever else ends the stream, the agent's nodes fail closed and it redials
            log.exception("node feed from %s failed", agent.address)
            reason = f"feed stream failed: {type(err).__name__}: {err}"
        agent.connected, agent.last_error = False, reason
        _disconnect(agent, mirrors, reason)
        if delivered:
            delay = config.backoff_initial
        log.warning("node feed from %s lost, retrying in %.1fs: %s", agent.address, delay, reason)
        await asyncio.sleep(delay * random.uniform(0.8, 1.2))
        delay = min(delay * 2, config.backoff_max)


def _disconnect(agent: AgentFeed, mirrors: MirrorSink, reason: str) -> None:
    for node in sorted(agent.nodes):
        mirrors.disconnected(node, f"agent {agent.address}: {reason}")


async def _take(update: pb.NodeStateUpdate, agent: AgentFeed, mirrors: MirrorSink) -> None:
    if update.HasField("heartbeat"):
        agent.incarnation = update.heartbeat.incarnation
        for entry in update.heartbeat.nodes:
            agent.nodes.add(entry.node_name)
            mirrors.heartbeat(entry.node_name)
        return
    message = update.state
    agent.nodes.add(message.node_name)
    agent.incarnation = message.incarnation
    try:
        emulator = await asyncio.to_thread(_rebuild, message)
    except NodeStateError as err:
        log.error("node feed from %s: %s", agent.address, err)
        mirrors.disconnected(message.node_name, f"agent {agent.address}: its state does not decode: {err}")
        return
    mirrors.apply(message.node_name, message.generation, emulator, refused=message.refused_pods)


def _rebuild(message: pb.NodeState) -> NodeEmulator:
    try:
        return to_emulator(state_from_message(message))
    except NodeStateError:
        raise
    except Exception as err:  # the node's kubelet refuses its own state: the mirror cannot stand
        raise NodeStateError(f"node {message.node_name}: {type(err).__name__}: {err}") from None
