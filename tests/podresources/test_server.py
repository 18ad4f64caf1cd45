"""The podresources gRPC server in process: one rate limiter for both API versions, the kubelet's
statuses and texts, fingerprint headers on List, metrics, and responses beyond 16 MiB."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as v1alpha1
from kubeletemu._proto.podresources.v1alpha1 import api_pb2_grpc as v1alpha1_grpc
from kubeletemu.daemon.metrics import KubeletMetrics
from kubeletemu.emulator import NodeEmulator
from kubeletemu.pod import Container, Pod
from kubeletemu.podresources import view
from kubeletemu.podresources.fingerprint import PodInfo, compute
from kubeletemu.podresources.ratelimit import TokenBucket
from kubeletemu.podresources.server import PodResourcesServer
from tests.podresources.nodes import (
    GENERAL_HOST,
    admit_all,
    container,
    general_config,
    make_emulator,
    pod_manifest,
)

MiB = 1 << 20


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Running:
    emulator: NodeEmulator
    server: PodResourcesServer
    clock: FakeClock
    metrics: KubeletMetrics
    socket: Path

    def channel(self, max_receive: int = 16 * MiB) -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(
            f"unix:{self.socket}", options=[("grpc.max_receive_message_length", max_receive)]
        )


@pytest.fixture
async def running(tmp_path: Path, short_dir: Path) -> AsyncIterator[Running]:
    emulator = make_emulator(tmp_path, GENERAL_HOST, general_config())
    admit_all(
        emulator,
        pod_manifest("gu", "ns1", containers=container("c", 'cpu: "2", memory: 1Gi, example.com/nic: "1"'))
        + pod_manifest("bu", "ns2", containers=container("c", requests="cpu: 100m")),
    )
    clock = FakeClock()
    metrics = KubeletMetrics()
    server = PodResourcesServer(lambda: emulator, asyncio.Lock(), metrics, TokenBucket(clock=clock))
    socket = short_dir / "pr.sock"
    assert server.server.add_insecure_port(f"unix:{socket}") != 0
    await server.start()
    try:
        yield Running(emulator, server, clock, metrics, socket)
    finally:
        await server.stop(None)


async def test_list_answers_with_fingerprint_headers(running: Running) -> None:
    async with running.channel() as channel:
        call = v1_grpc.PodResourcesListerStub(channel).List(v1.ListPodResourcesRequest())
        response = await call
        headers = dict(await call.initial_metadata())
    assert [(p.namespace, p.name) for p in response.pod_resources] == [("ns1", "gu"), ("ns2", "bu")]
    assert headers["kubeletemu-fingerprint-all"] == compute([("ns1", "gu"), ("ns2", "bu")])
    assert headers["kubeletemu-fingerprint-with-exclusive-resources"] == compute([("ns1", "gu")])


async def test_get_errors_are_unknown_with_the_kubelet_text(running: Running) -> None:
    async with running.channel() as channel:
        stub = v1_grpc.PodResourcesListerStub(channel)
        found = await stub.Get(v1.GetPodResourcesRequest(pod_name="gu", pod_namespace="ns1"))
        assert found.pod_resources == view.get_pod_resources(running.emulator, "ns1", "gu").pod_resources
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Get(v1.GetPodResourcesRequest(pod_name="x", pod_namespace="y"))
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert err.value.details() == "pod x in namespace y not found"


async def test_unknown_methods_are_unimplemented_and_cost_no_token(running: Running) -> None:
    async with running.channel() as channel:
        method = channel.unary_unary("/v1.PodResourcesLister/Watch")
        for _ in range(12):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await method(b"")
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        # The clock stands still, yet the whole burst is left.
        stub = v1_grpc.PodResourcesListerStub(channel)
        for _ in range(10):
            await stub.GetAllocatableResources(v1.AllocatableResourcesRequest())


async def test_one_rate_limiter_for_every_method_of_both_versions(running: Running) -> None:
    async with running.channel() as channel:
        stub = v1_grpc.PodResourcesListerStub(channel)
        alpha = v1alpha1_grpc.PodResourcesListerStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        calls = [
            lambda: stub.List(v1.ListPodResourcesRequest()),
            lambda: stub.GetAllocatableResources(v1.AllocatableResourcesRequest()),
            lambda: stub.Get(v1.GetPodResourcesRequest(pod_name="gu", pod_namespace="ns1")),
            lambda: alpha.List(v1alpha1.ListPodResourcesRequest()),
        ]

        async def outcome(i: int) -> str:
            try:
                await calls[i % len(calls)]()
            except grpc.aio.AioRpcError as err:
                return f"{err.code().name}: {err.details()}"
            return "OK"

        # The clock stands still: the burst of 10 tokens is all there is, whichever method asks.
        results = [await outcome(i) for i in range(14)]
        assert results == ["OK"] * 10 + ["RESOURCE_EXHAUSTED: rejected by rate limit"] * 4
        # Health (ours, not the kubelet's) is not rate-limited.
        reply = await health.Check(health_pb2.HealthCheckRequest(service="v1.PodResourcesLister"))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        # 100 QPS: a token every 10 ms, never more than the burst.
        running.clock.now += 0.0101
        assert [await outcome(i) for i in range(2)] == ["OK", "RESOURCE_EXHAUSTED: rejected by rate limit"]
        running.clock.now += 60
        assert [await outcome(i) for i in range(11)].count("OK") == 10
    # Refused calls never reached the servers: 21 accepted calls (List, GetAllocatableResources, Get and
    # v1alpha1 List in turn), counted per version.
    m = running.metrics.registry
    v1_total = m.get_sample_value(
        "kubelet_pod_resources_endpoint_requests_total", {"server_api_version": "v1"}
    )
    alpha_total = m.get_sample_value(
        "kubelet_pod_resources_endpoint_requests_total", {"server_api_version": "v1alpha1"}
    )
    assert (v1_total, alpha_total) == (17, 4)
    assert (
        m.get_sample_value("kubelet_pod_resources_endpoint_requests_list", {"server_api_version": "v1"}) == 7
    )


def big_listing(total_bytes: int) -> view.Listing:
    """Pods whose List entries add up to about ``total_bytes`` on the wire."""
    name = "c" * 1000
    per_pod = v1.PodResources(name="p", namespace="n", containers=[v1.ContainerResources(name=name)] * 100)
    count = total_bytes // per_pod.ByteSize() + 1
    pod = Pod("p", "n", "u", (Container("c"),))
    response = v1.ListPodResourcesResponse()
    pods = []
    for i in range(count):
        msg = response.pod_resources.add(name=f"p{i}", namespace="n", containers=per_pod.containers)
        pods.append(view.ListedPod(pod, msg, PodInfo("n", f"p{i}")))
    return view.Listing(response, pods)


@pytest.mark.parametrize(
    ("size", "client_limit", "received"),
    [
        (16 * MiB - 256 * 1024, 16 * MiB, True),  # what the kubelet's own clients accept
        (24 * MiB, 32 * MiB, True),  # the server itself sets no send limit
        (24 * MiB, 16 * MiB, False),
    ],
    ids=["under_16MiB", "24MiB", "24MiB_to_a_16MiB_client"],
)
async def test_large_list_responses(
    running: Running, monkeypatch: pytest.MonkeyPatch, size: int, client_limit: int, received: bool
) -> None:
    listing = big_listing(size)
    monkeypatch.setattr(view, "list_pods", lambda emulator: listing)
    async with running.channel(client_limit) as channel:
        stub = v1_grpc.PodResourcesListerStub(channel)
        if received:
            response = await stub.List(v1.ListPodResourcesRequest())
            assert size <= response.ByteSize() < client_limit
            assert len(response.pod_resources) == len(listing.pods)
        else:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.List(v1.ListPodResourcesRequest())
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "larger than max" in (err.value.details() or "")
