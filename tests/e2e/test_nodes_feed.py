"""``kubeletemu nodes --feed-address``: one mutual-TLS listener streams every node's exact state. In the real
cluster (loopback control plane, the real kube-scheduler), the extender's feed client keeps a mirror of
each node: the pods the scheduler binds show on their node's mirror, and the mirror refuses what the node
refused, with the kubelet's reason."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeletemu.emulator import NodeEmulator
from kubeletemu.extender.feed_client import FeedConfig, start_feeds
from kubeletemu.manifest import parse_pods
from tests.e2e.test_nodes import (
    WAIT,
    NodesProcess,
    create,
    nodes_file,
    phase_of,
    pod,
    wait_for,
)
from tests.feed.test_feed_daemon import RecordingMirrors, free_port
from tests.upstream.certs import Credentials, generate
from tests.upstream.controlplane import ControlPlane

pytestmark = pytest.mark.slow


class FeedNodesProcess(NodesProcess):
    def __init__(self, spec: Path, kubeconfig: Path, state_dir: Path, pki: Credentials, port: int) -> None:
        super().__init__(spec, kubeconfig, state_dir)
        self.pki, self.port = pki, port

    def argv(self) -> list[str]:
        return [*super().argv(), "--feed-address", f"127.0.0.1:{self.port}", "--feed-cert",
                str(self.pki.serving_cert), "--feed-key", str(self.pki.serving_key), "--feed-client-ca",
                str(self.pki.ca_cert), "--feed-heartbeat-period", "1"]  # fmt: skip


@pytest.fixture
def feed_nodes(cluster: ControlPlane, tmp_path: Path) -> Iterator[tuple[FeedNodesProcess, str, Credentials]]:
    group = f"f{uuid.uuid4().hex[:6]}"
    (tmp_path / "pki").mkdir()
    pki = generate(tmp_path / "pki", service_ip="10.96.0.1")
    process = FeedNodesProcess(
        nodes_file(tmp_path, group, 2), cluster.kubeconfig, tmp_path / f"state-{group}", pki, free_port()
    )
    yield process.start(), group, pki
    process.stop()
    cluster.kubectl("delete", "node", "-l", f"kubeletemu-e2e={group}", "--wait=false", check=False)


def _uids(mirror: NodeEmulator) -> list[str]:
    return [p.name for p, _ in mirror.pods()]


def test_every_node_mirrored_from_one_listener(
    cluster: ControlPlane, feed_nodes: tuple[FeedNodesProcess, str, Credentials]
) -> None:
    process, group, pki = feed_nodes
    first, second = f"{group}-000", f"{group}-001"
    config = FeedConfig(
        agents=(f"127.0.0.1:{process.port}",),
        ca_file=str(pki.ca_cert),
        cert_file=str(pki.admin_cert),
        key_file=str(pki.admin_key),
    )
    mirrors = RecordingMirrors()

    async def until(what: str, condition: Callable[[], Any]) -> None:
        deadline = time.monotonic() + WAIT
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.1)

    async def scenario() -> None:
        feeds = await start_feeds(config, mirrors)
        try:
            await until("both nodes mirrored", lambda: {first, second} <= set(mirrors.mirrors))
            await until("heartbeats of both", lambda: {first, second} <= set(mirrors.heartbeats))
            assert _uids(mirrors.mirrors[first][1]) == [] == _uids(mirrors.mirrors[second][1])
            # A pod bound to the first node: Running there, and on its mirror; the second's is untouched.
            await asyncio.to_thread(create, cluster, pod(f"{group}-fits", group, 4, node=first))
            await asyncio.to_thread(
                wait_for, "the pod Running", lambda: phase_of(cluster, f"{group}-fits", "Running")
            )
            await until(
                "the pod on the mirror", lambda: _uids(mirrors.mirrors[first][1]) == [f"{group}-fits"]
            )
            assert _uids(mirrors.mirrors[second][1]) == []
            # The mirror answers as the node: 9 CPUs fit no NUMA node there (TopologyAffinityError).
            manifest = json.loads(pod("question", group, 9, node=first))
            manifest["metadata"]["uid"] = "uid-question"
            [question] = parse_pods(json.dumps(manifest))
            answer = mirrors.mirrors[first][1].would_admit(question)
            assert (answer.admitted, answer.reason) == (False, "TopologyAffinityError")
            await asyncio.to_thread(create, cluster, pod(f"{group}-refused", group, 9, node=first))
            await asyncio.to_thread(
                wait_for, "the pod Failed", lambda: phase_of(cluster, f"{group}-refused", "Failed")
            )
            assert _uids(mirrors.mirrors[first][1]) == [f"{group}-fits"]
        finally:
            await feeds.close()

    asyncio.run(scenario())
