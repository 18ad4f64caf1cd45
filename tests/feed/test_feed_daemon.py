"""The node feed of the real daemon (``kubeletemu serve``) on a real TCP port with real mutual TLS, read by
a real gRPC client and by the extender's feed client."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as apb
from kubeletemu._proto.kubeletemu.v1 import feed_pb2 as pb
from kubeletemu._proto.kubeletemu.v1 import feed_pb2_grpc as pb_grpc
from kubeletemu.emulator import NodeEmulator
from kubeletemu.extender.feed_client import FeedConfig, start_feeds
from kubeletemu.feed.state import to_emulator
from kubeletemu.feed.wire import state_from_message
from kubeletemu.manifest import parse_pods
from kubeletemu.scheduler.extender.engine import Engine
from kubeletemu.scheduler.extender.ledger import CLOSED_BY_AGENT, OPENED_BY_PRIORITIZE, Ledger
from kubeletemu.scheduler.extender.mirrors import Mirrors
from tests.daemon.conftest import DEVICES
from tests.daemon.daemon_process import DaemonProcess
from tests.nodes import kubelet_config
from tests.upstream.certs import Credentials, generate

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

NODE = "feed-node"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    return generate(tmp_path_factory.mktemp("pki"), service_ip="10.96.0.1")


@pytest.fixture(scope="module")
def other_pki(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    """Credentials of another CA: the agent trusts none of them."""
    return generate(tmp_path_factory.mktemp("other-pki"), service_ip="10.96.0.1")


def feed_config(pki: Credentials, heartbeat: str = "1s") -> str:
    return kubelet_config(
        emulator=DEVICES
        + f"nodeName: {NODE}\n"
        + f"feedCertFile: {pki.serving_cert}\nfeedKeyFile: {pki.serving_key}\n"
        + f"feedClientCAFile: {pki.ca_cert}\n"
        + f"feedHeartbeatPeriod: {heartbeat}\n"
    )


@dataclass
class FeedDaemon:
    daemon: DaemonProcess
    port: int

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
def feed_daemon(tmp_path: Path, sample_tree: tuple[Path, Path], pki: Credentials) -> Iterator[FeedDaemon]:
    port = free_port()
    daemon = DaemonProcess.in_dir(
        tmp_path, feed_config(pki), sample_tree, extra_args=["--feed-address", f"127.0.0.1:{port}"]
    )
    yield FeedDaemon(daemon.start(), port)
    daemon.stop()


def client_channel(address: str, pki: Credentials, *, with_cert: bool = True) -> grpc.Channel:
    credentials = grpc.ssl_channel_credentials(
        root_certificates=pki.ca_cert.read_bytes(),
        private_key=pki.admin_key.read_bytes() if with_cert else None,
        certificate_chain=pki.admin_cert.read_bytes() if with_cert else None,
    )
    return grpc.secure_channel(address, credentials, options=[("grpc.http2.bdp_probe", 0)])


def pod_yaml(name: str, cpu: str = "2") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: uid-{name}}}\n"
        f'spec:\n  containers:\n  - name: app\n    resources:\n      limits: {{cpu: "{cpu}", memory: 1Gi}}\n'
    )


def admit(daemon: DaemonProcess, name: str, cpu: str = "2") -> apb.AdmitResponse:
    return daemon.stub().Admit(apb.AdmitRequest(pod=apb.PodSource(manifest=pod_yaml(name, cpu))), timeout=10)


def remove(daemon: DaemonProcess, name: str) -> None:
    daemon.stub().RemovePod(apb.RemovePodRequest(uid=f"uid-{name}"), timeout=10)


def next_state(stream: Iterator[pb.NodeStateUpdate]) -> pb.NodeState:
    for update in stream:
        if update.HasField("state"):
            return update.state
    raise AssertionError("the stream ended")


def listed_cpus(daemon: DaemonProcess) -> list[tuple[str, tuple[int, ...]]]:
    pods = daemon.stub().ListPods(apb.ListPodsRequest(), timeout=10).pods
    return [(p.uid, tuple(p.containers[0].cpu_ids)) for p in pods]


def mirror_cpus(mirror: NodeEmulator) -> list[tuple[str, tuple[int, ...]]]:
    return [(pod.uid, containers[0].cpu_ids) for pod, containers in mirror.pods()]


def test_full_state_first_then_after_each_change(feed_daemon: FeedDaemon, pki: Credentials) -> None:
    daemon = feed_daemon.daemon
    admit(daemon, "before", "4")
    with client_channel(feed_daemon.address, pki) as channel:
        stream = pb_grpc.NodeFeedStub(channel).Watch(pb.WatchRequest(), timeout=30)
        first = next_state(stream)
        assert first.node_name == NODE and first.kubelet_version
        mirror = to_emulator(state_from_message(first))
        assert mirror_cpus(mirror) == listed_cpus(daemon)
        # The mirror answers as the daemon: the same question on both.
        question = apb.WouldAdmitRequest(pod=apb.PodSource(manifest=pod_yaml("q", "6")))
        asked = daemon.stub().WouldAdmit(question, timeout=10)
        [pod] = parse_pods(pod_yaml("q", "6"))
        answer = mirror.would_admit(pod)
        assert (answer.admitted, list(answer.containers[0].cpu_ids)) == (
            asked.admitted,
            list(asked.containers[0].cpu_ids),
        )

        admit(daemon, "after", "2")
        second = next_state(stream)
        assert second.generation > first.generation and second.incarnation == first.incarnation
        assert mirror_cpus(to_emulator(state_from_message(second))) == listed_cpus(daemon)

        remove(daemon, "before")
        third = next_state(stream)
        assert third.generation > second.generation
        assert [p.uid for p, _ in to_emulator(state_from_message(third)).pods()] == ["uid-after"]
        stream.cancel()


def test_heartbeat_names_the_nodes_generation(feed_daemon: FeedDaemon, pki: Credentials) -> None:
    with client_channel(feed_daemon.address, pki) as channel:
        stream = pb_grpc.NodeFeedStub(channel).Watch(pb.WatchRequest(nodes=[NODE]), timeout=30)
        started = time.monotonic()
        first = next_state(stream)
        beat = next(stream)
        assert beat.HasField("heartbeat"), beat
        # feedHeartbeatPeriod: 1s
        assert 0.5 < time.monotonic() - started < 5
        assert beat.heartbeat.incarnation == first.incarnation
        assert [(n.node_name, n.generation) for n in beat.heartbeat.nodes] == [(NODE, first.generation)]
        stream.cancel()


def test_unknown_node_is_invalid_argument(feed_daemon: FeedDaemon, pki: Credentials) -> None:
    with client_channel(feed_daemon.address, pki) as channel:
        stream = pb_grpc.NodeFeedStub(channel).Watch(pb.WatchRequest(nodes=["nope"]), timeout=10)
        with pytest.raises(grpc.RpcError) as err:
            next(stream)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "nodes: unknown node 'nope'" in (err.value.details() or "")


def test_slow_reader_gets_the_newest_state_and_never_holds_the_node(
    feed_daemon: FeedDaemon, pki: Credentials
) -> None:
    daemon = feed_daemon.daemon
    # A pod whose state is big (a long annotation), so a few states fill the stream's flow-control window.
    ballast = "x" * 200_000
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: ballast, namespace: default, uid: uid-ballast, "
        f"annotations: {{note: {ballast}}}}}\n"
        "spec:\n  containers:\n  - name: app\n    resources:\n      limits: {cpu: 500m, memory: 64Mi}\n"
    )
    daemon.stub().Admit(apb.AdmitRequest(pod=apb.PodSource(manifest=manifest)), timeout=10)
    changes = 31  # ends with an admission: the newest state is the only one holding churn-15
    with client_channel(feed_daemon.address, pki) as channel:
        stream = pb_grpc.NodeFeedStub(channel).Watch(pb.WatchRequest(), timeout=60)
        next_state(stream)
        # The client reads nothing while the node changes 31 times, each seen by the agent on its own.
        slowest = 0.0
        for i in range(changes):
            started = time.monotonic()
            if i % 2 == 0:
                admit(daemon, f"churn-{i // 2}", "2")
            else:
                remove(daemon, f"churn-{i // 2}")
            slowest = max(slowest, time.monotonic() - started)
            time.sleep(0.08)
        final = listed_cpus(daemon)
        assert [uid for uid, _ in final] == ["uid-ballast", "uid-churn-15"]
        # Now it reads: states until the one the node holds now.
        received = 0
        while True:
            received += 1
            if mirror_cpus(to_emulator(state_from_message(next_state(stream)))) == final:
                break
        stream.cancel()
    assert slowest < 1.0, f"an admission took {slowest:.2f}s while the feed's reader stalled"
    assert received < changes // 2, f"{received} states for {changes} changes: nothing was coalesced"


def test_client_without_valid_certificate_is_refused(
    feed_daemon: FeedDaemon, pki: Credentials, other_pki: Credentials
) -> None:
    with (
        client_channel(feed_daemon.address, pki, with_cert=False) as channel,
        pytest.raises(grpc.RpcError) as no_cert,
    ):
        next(pb_grpc.NodeFeedStub(channel).Watch(pb.WatchRequest(), timeout=10))
    assert no_cert.value.code() == grpc.StatusCode.UNAVAILABLE
    # A certificate of a CA the agent does not trust.
    credentials = grpc.ssl_channel_credentials(
        root_certificates=pki.ca_cert.read_bytes(),
        private_key=other_pki.admin_key.read_bytes(),
        certificate_chain=other_pki.admin_cert.read_bytes(),
    )
    with (
        grpc.secure_channel(feed_daemon.address, credentials) as channel,
        pytest.raises(grpc.RpcError) as foreign,
    ):
        next(pb_grpc.NodeFeedStub(channel).Watch(pb.WatchRequest(), timeout=10))
    assert foreign.value.code() == grpc.StatusCode.UNAVAILABLE


def test_feed_without_tls_files_does_not_start(tmp_path: Path, sample_tree: tuple[Path, Path]) -> None:
    daemon = DaemonProcess.in_dir(
        tmp_path, kubelet_config(emulator=DEVICES), sample_tree, extra_args=["--feed-address", "127.0.0.1:0"]
    )
    with pytest.raises(RuntimeError, match=r"--feed-cert .* is required with a feed address"):
        daemon.start()


@dataclass
class RecordingMirrors:
    """The Mirrors API the feed drives (kubeletemu.scheduler.extender.mirrors), recording each call."""

    mirrors: dict[str, tuple[int, NodeEmulator]] = field(default_factory=dict)
    heartbeats: list[str] = field(default_factory=list)
    disconnects: list[tuple[str, str]] = field(default_factory=list)
    refused: dict[str, list[str]] = field(default_factory=dict)

    def apply(
        self, node: str, generation: int, emulator: NodeEmulator, *, refused: Iterable[str] = ()
    ) -> bool:
        self.refused[node] = list(refused)
        held = self.mirrors.get(node)
        if held is not None and generation <= held[0]:
            return False
        self.mirrors[node] = (generation, emulator)
        return True

    def heartbeat(self, node: str) -> None:
        self.heartbeats.append(node)

    def disconnected(self, node: str, reason: str) -> None:
        self.mirrors.pop(node, None)
        self.disconnects.append((node, reason))


async def _until(condition: object, timeout: float = 30.0) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


def test_feed_client_follows_an_agent_across_its_restart(feed_daemon: FeedDaemon, pki: Credentials) -> None:
    daemon = feed_daemon.daemon
    admit(daemon, "kept", "4")
    config = FeedConfig(
        agents=(feed_daemon.address,),
        ca_file=str(pki.ca_cert),
        cert_file=str(pki.admin_cert),
        key_file=str(pki.admin_key),
        backoff_initial=0.2,
        backoff_max=1.0,
    )
    mirrors = RecordingMirrors()

    async def scenario() -> None:
        feeds = await start_feeds(config, mirrors)
        try:
            await _until(lambda: NODE in mirrors.mirrors)
            before_generation, mirror = mirrors.mirrors[NODE]
            assert mirror_cpus(mirror) == listed_cpus(daemon)
            await _until(lambda: NODE in mirrors.heartbeats)
            await asyncio.to_thread(admit, daemon, "second", "2")
            await _until(lambda: mirrors.mirrors[NODE][0] > before_generation)
            assert mirror_cpus(mirrors.mirrors[NODE][1]) == listed_cpus(daemon)
            # The agent restarts: its node fails closed, then its full state comes back, newer.
            held = mirrors.mirrors[NODE][0]
            await asyncio.to_thread(daemon.stop)
            await _until(lambda: NODE not in mirrors.mirrors)
            assert mirrors.disconnects and mirrors.disconnects[-1][0] == NODE
            assert f"agent {feed_daemon.address}: " in mirrors.disconnects[-1][1]
            await asyncio.to_thread(daemon.start)
            await _until(lambda: NODE in mirrors.mirrors)
            assert mirrors.mirrors[NODE][0] > held
            assert mirror_cpus(mirrors.mirrors[NODE][1]) == listed_cpus(daemon)
            assert feeds.agents[feed_daemon.address].streams == 2
        finally:
            await feeds.close()

    asyncio.run(scenario())


def test_a_refused_pod_is_reported_and_closes_the_extenders_ledger_entry(
    feed_daemon: FeedDaemon, pki: Credentials
) -> None:
    """The node's state after a refusal names the pod (the stream's message, then the extender's mirror),
    and the extender's ledger (closing on the agent's report) closes its in-flight placement at once
    instead of charging the node for it until the TTL."""
    daemon = feed_daemon.daemon
    config = FeedConfig(
        agents=(feed_daemon.address,),
        ca_file=str(pki.ca_cert),
        cert_file=str(pki.admin_cert),
        key_file=str(pki.admin_key),
    )
    mirrors = Mirrors(stale_after=60)
    engine = Engine(mirrors, Ledger(ttl=3600))
    [big] = parse_pods(pod_yaml("big", "64"))

    async def scenario() -> None:
        feeds = await start_feeds(config, mirrors)
        try:
            await _until(lambda: mirrors.lookup(NODE).mirror is not None)
            engine.ledger.open(big, NODE, OPENED_BY_PRIORITIZE)
            assert NODE in engine.ledger.by_node
            answer = await asyncio.to_thread(admit, daemon, "big", "64")
            assert not answer.admitted
            await _until(lambda: engine.ledger.entry(big.uid) is None)
            mirror = mirrors.lookup(NODE).mirror
            assert mirror is not None and mirror.refused == frozenset({big.uid})
            assert engine.ledger.closed[CLOSED_BY_AGENT] == 1
        finally:
            await feeds.close()

    asyncio.run(scenario())
    with client_channel(feed_daemon.address, pki) as channel:
        stream = pb_grpc.NodeFeedStub(channel).Watch(pb.WatchRequest(), timeout=30)
        assert list(next_state(stream).refused_pods) == [big.uid]
        stream.cancel()


def test_feed_port_in_use_stops_start_up(
    tmp_path: Path, sample_tree: tuple[Path, Path], pki: Credentials
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        daemon = DaemonProcess.in_dir(
            tmp_path, feed_config(pki), sample_tree, extra_args=["--feed-address", f"127.0.0.1:{port}"]
        )
        with pytest.raises(RuntimeError, match=rf"--feed-address 127\.0\.0\.1:{port}: cannot listen"):
            daemon.start()
    assert daemon.process is not None and daemon.process.returncode != 0
