"""One feed listener for several nodes (what ``kubeletemu nodes`` serves): the real gRPC server with mutual
TLS in this process, a real client; a stream asked for some nodes gets those only, and an agent's next run
numbers its states above the previous run's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import feed_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import feed_pb2_grpc as pb_grpc
from kubeletemu.config import parse_config
from kubeletemu.daemon.feed_server import FeedListen, FeedSetupError, start_feed_server
from kubeletemu.emulator import NodeEmulator
from kubeletemu.feed.hub import FeedHub
from kubeletemu.feed.state import Incarnation, to_emulator
from kubeletemu.feed.wire import state_from_message
from kubeletemu.manifest import parse_pods
from tests.nodes import kubelet_config, probe_machine
from tests.upstream.certs import Credentials, generate


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    return generate(tmp_path_factory.mktemp("pki"), service_ip="10.96.0.1")


def listen(pki: Credentials) -> FeedListen:
    return FeedListen("127.0.0.1:0", str(pki.serving_cert), str(pki.serving_key), str(pki.ca_cert), 0.3)


def credentials(pki: Credentials) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        pki.ca_cert.read_bytes(), pki.admin_key.read_bytes(), pki.admin_cert.read_bytes()
    )


def pod(name: str, cpu: str = "2") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: uid-{name}}}\n"
        f'spec:\n  containers:\n  - name: app\n    resources:\n      limits: {{cpu: "{cpu}", memory: 1Gi}}\n'
    )


@pytest.fixture
def nodes(tmp_path: Path) -> dict[str, NodeEmulator]:
    machine = probe_machine(tmp_path)
    config = parse_config(kubelet_config())
    return {name: NodeEmulator(config, machine) for name in ("a", "b")}


async def _read_states(stream: grpc.aio.UnaryStreamCall, count: int) -> list[pb.NodeState]:  # type: ignore[type-arg]
    states: list[pb.NodeState] = []
    async for update in stream:
        if update.HasField("state"):
            states.append(update.state)
            if len(states) == count:
                break
    return states


def test_one_listener_streams_each_node(nodes: dict[str, NodeEmulator], pki: Credentials) -> None:
    async def scenario() -> None:
        hub = FeedHub(lambda: nodes, poll_interval=0.02)
        server, port = await start_feed_server(hub, listen(pki))
        try:
            async with grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials(pki)) as channel:
                stub = pb_grpc.NodeFeedStub(channel)
                everything = stub.Watch(pb.WatchRequest())
                only_b = stub.Watch(pb.WatchRequest(nodes=["b"]))
                first = await _read_states(everything, 2)
                assert sorted(s.node_name for s in first) == ["a", "b"]
                assert [s.node_name for s in await _read_states(only_b, 1)] == ["b"]
                [admitted] = parse_pods(pod("on-a"))
                assert nodes["a"].admit(admitted).admitted
                [update] = await _read_states(everything, 1)
                assert update.node_name == "a"
                assert [p.uid for p, _ in to_emulator(state_from_message(update)).pods()] == ["uid-on-a"]
                # The stream for b alone goes on with heartbeats naming b only: a's change is not its own.
                async for message in only_b:
                    assert message.HasField("heartbeat"), message
                    assert [n.node_name for n in message.heartbeat.nodes] == ["b"]
                    break
                everything.cancel()
                only_b.cancel()
        finally:
            await server.stop(0)

    asyncio.run(scenario())


def test_next_run_generations_are_larger(nodes: dict[str, NodeEmulator], pki: Credentials) -> None:
    first_run = FeedHub(lambda: nodes)
    [admitted] = parse_pods(pod("x"))
    before = first_run.state("a").generation
    nodes["a"].admit(admitted)
    after = first_run.state("a").generation
    assert after == before + 1
    # The same state asked again: no new generation.
    assert first_run.state("a").generation == after
    second_run = FeedHub(lambda: nodes, Incarnation())
    again = second_run.state("a")
    assert again.generation > after and again.incarnation != first_run.incarnation.id


def test_unreadable_tls_file_is_one_line(nodes: dict[str, NodeEmulator], tmp_path: Path) -> None:
    missing = FeedListen(
        "127.0.0.1:0", str(tmp_path / "no.crt"), str(tmp_path / "no.key"), str(tmp_path / "ca")
    )

    async def scenario() -> None:
        await start_feed_server(FeedHub(lambda: nodes), missing)

    with pytest.raises(
        FeedSetupError, match=r"^--feed-key .*no\.key: cannot read: No such file or directory$"
    ):
        asyncio.run(scenario())
