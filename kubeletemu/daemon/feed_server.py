"""The ``kubeletemu.v1.NodeFeed`` service on its own TCP listener with mutual TLS: the servicer converts the
hub's updates (:mod:`kubeletemu.feed.hub`) to messages; the daemon and ``kubeletemu nodes`` start it.

Mutual TLS only: ``grpc.ssl_server_credentials(..., require_client_auth=True)``, so a client without a
certificate signed by the configured CA never gets past the handshake. Each node's message is encoded
once per change and shared by every stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc

from kubeletemu._proto.kubeletemu.v1 import feed_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import feed_pb2_grpc as pb_grpc
from kubeletemu.config.emulator_config import EmulatorConfiguration
from kubeletemu.feed.hub import FeedHub, Heartbeat
from kubeletemu.feed.tls import TLSFileError, read_tls_file
from kubeletemu.feed.wire import MAX_STATE_BYTES, state_message


class FeedSetupError(Exception):
    """A feed listener that cannot start: which setting, and why (one line for the CLI)."""


@dataclass(frozen=True)
class FeedListen:
    address: str
    cert_file: str
    key_file: str
    client_ca_file: str
    heartbeat_period: float = 5.0

    @classmethod
    def from_config(
        cls,
        emulator: EmulatorConfiguration,
        address: str | None = None,
        cert_file: str | None = None,
        key_file: str | None = None,
        client_ca_file: str | None = None,
    ) -> FeedListen | None:
        """Flags (the arguments) win over the EmulatorConfiguration; None when no address is set."""
        chosen = address or emulator.feed_address
        if not chosen:
            return None
        files = {
            "--feed-cert": cert_file or emulator.feed_cert_file,
            "--feed-key": key_file or emulator.feed_key_file,
            "--feed-client-ca": client_ca_file or emulator.feed_client_ca_file,
        }
        for flag, value in files.items():
            if not value:
                raise FeedSetupError(
                    f"{flag} (or its EmulatorConfiguration field) is required with a feed address"
                )
        return cls(
            chosen,
            str(files["--feed-cert"]),
            str(files["--feed-key"]),
            str(files["--feed-client-ca"]),
            emulator.feed_heartbeat_period,
        )


class NodeFeedServicer(pb_grpc.NodeFeedServicer):
    def __init__(self, hub: FeedHub) -> None:
        self.hub = hub
        self._encoded: dict[str, tuple[int, pb.NodeStateUpdate]] = {}

    async def Watch(
        self, request: pb.WatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.NodeStateUpdate]:
        known = set(self.hub.names())
        unknown = [name for name in request.nodes if name not in known]
        if unknown:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"nodes: unknown node {unknown[0]!r}; this agent runs {', '.join(sorted(known))}",
            )
        async for update in self.hub.watch(list(request.nodes)):
            if isinstance(update, Heartbeat):
                yield pb.NodeStateUpdate(
                    heartbeat=pb.Heartbeat(
                        incarnation=update.incarnation,
                        nodes=[pb.NodeGeneration(node_name=n, generation=g) for n, g in update.generations],
                    )
                )
                continue
            cached = self._encoded.get(update.node_name)
            if cached is None or cached[0] != update.generation:
                cached = (update.generation, pb.NodeStateUpdate(state=state_message(update)))
                self._encoded[update.node_name] = cached
            yield cached[1]


def server_credentials(listen: FeedListen) -> grpc.ServerCredentials:
    try:
        return grpc.ssl_server_credentials(
            [(read_tls_file(listen.key_file, "--feed-key"), read_tls_file(listen.cert_file, "--feed-cert"))],
            root_certificates=read_tls_file(listen.client_ca_file, "--feed-client-ca"),
            require_client_auth=True,
        )
    except TLSFileError as err:
        raise FeedSetupError(str(err)) from None


async def start_feed_server(hub: FeedHub, listen: FeedListen) -> tuple[grpc.aio.Server, int]:
    """The feed served on ``listen.address``; returns the server and the bound port (an address with
    port 0 picks a free one)."""
    hub.heartbeat_period = listen.heartbeat_period
    server = grpc.aio.server(
        options=[
            ("grpc.max_send_message_length", MAX_STATE_BYTES),
            ("grpc.max_receive_message_length", MAX_STATE_BYTES),
            # One agent per port: a second process binding it too would split the clients between them.
            ("grpc.so_reuseport", 0),
        ]
    )
    pb_grpc.add_NodeFeedServicer_to_server(NodeFeedServicer(hub), server)
    credentials = server_credentials(listen)
    try:
        port = server.add_secure_port(listen.address, credentials)
    except RuntimeError as err:
        # gRPC's text goes on with advice on its debug logging: the first clause is the reason.
        reason = str(err).split(";")[0]
        raise FeedSetupError(f"--feed-address {listen.address}: cannot listen: {reason}") from None
    if port == 0:
        raise FeedSetupError(f"--feed-address {listen.address}: cannot listen (in use, or not host:port)")
    await server.start()
    return server, port
