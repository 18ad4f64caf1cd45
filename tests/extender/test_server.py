"""The extender's real aiohttp server on a real TCP port with real mutual TLS, asked by a real HTTP client
presenting a client certificate, its mirrors real node emulators that admitted pods: each verb's answers,
the null and empty cases, nodes failing closed, the ledger counting in-flight pods, a client without a
valid certificate refused, and a malformed body answered 400 with one log line."""

from __future__ import annotations

import json
import re
import socket
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import structlog

from kubeletemu.config import Config
from kubeletemu.extender.config import parse_config
from kubeletemu.extender.server import ExtenderServer, StartError
from kubeletemu.machine import Machine
from tests.extender.conftest import (
    Certs,
    FakeClock,
    args_body,
    config_text,
    emulator_with,
    make_pod,
    pod_manifest,
)


@dataclass
class Running:
    server: ExtenderServer
    base: str
    session: aiohttp.ClientSession
    certs: Certs

    async def post(self, verb: str, body: bytes) -> tuple[int, bytes]:
        async with self.session.post(f"{self.base}/kubeletemu/{verb}", data=body) as response:
            return response.status, await response.read()

    async def verb(self, verb: str, body: bytes) -> Any:
        status, data = await self.post(verb, body)
        assert status == 200, data
        return json.loads(data)

    async def get(self, path: str) -> tuple[int, str]:
        async with self.session.get(f"{self.base}{path}") as response:
            return response.status, await response.text()


async def start(certs: Certs, clock: FakeClock, extra: str = "") -> tuple[ExtenderServer, str]:
    config = parse_config(config_text(certs, extra))
    server = ExtenderServer(config, clock=clock)
    port = await server.start()
    return server, f"https://127.0.0.1:{port}"


@pytest.fixture
async def running(certs: Certs, clock: FakeClock) -> AsyncIterator[Running]:
    extra = (
        "staleAfter: 30s\nreadiness: {expectedNodes: [never]}\noptInResources: [kubeletemu.io/exact-numa]\n"
    )
    server, base = await start(certs, clock, extra)
    connector = aiohttp.TCPConnector(ssl=certs.client_context())
    async with aiohttp.ClientSession(connector=connector) as session:
        yield Running(server, base, session, certs)
    await server.stop()


def feed(running: Running, node: str, generation: int, emulator: Any, refused: tuple[str, ...] = ()) -> None:
    assert running.server.mirrors.apply(node, generation, emulator, refused=refused)


OPT_IN = "kubeletemu.io/exact-numa"


# ---- Filter ----------------------------------------------------------------------------------------------


async def test_filter_answers_each_node_as_its_kubelet(
    running: Running, node_config: Config, machine: Machine, clock: FakeClock
) -> None:
    feed(running, "fits", 1, emulator_with(node_config, machine))
    # A 4-CPU pod of priority 0 holds NUMA node 1: evicting it would make room for a higher-priority pod.
    feed(running, "evictable", 1, emulator_with(node_config, machine, make_pod("low", priority=0)))
    feed(running, "held", 1, emulator_with(node_config, machine, make_pod("high", priority=1000)))
    feed(running, "stale", 1, emulator_with(node_config, machine))
    clock.advance(20)
    for name in ("fits", "evictable", "held"):
        running.server.mirrors.heartbeat(name)
    clock.advance(20)  # "stale" was last heard 40 s ago
    pod = pod_manifest("p", priority=100)
    reply = await running.verb("filter", args_body(pod, ["fits", "evictable", "held", "stale", "never"]))
    topology = "TopologyAffinityError: Resources cannot be allocated with Topology locality"
    assert reply == {
        "Nodes": None,
        "NodeNames": ["fits"],
        "FailedNodes": {"evictable": topology},
        "FailedAndUnresolvableNodes": {
            "held": topology,
            "stale": "node 'stale' fails closed: its agent was last heard 40.0s ago (staleAfter 30s)",
            "never": "node 'never' fails closed: its agent never reported",
        },
        "Error": "",
    }
    # A pod no NUMA node can hold: no node fits, every one named.
    reply = await running.verb("filter", args_body(pod_manifest("big", "5"), ["fits", "evictable"]))
    assert reply["NodeNames"] == []
    assert set(reply["FailedAndUnresolvableNodes"]) == {"fits", "evictable"}
    # The empty cases: no node asked; NodeNames null (the scheduler is not node-cache capable).
    assert (await running.verb("filter", args_body(pod, [])))["NodeNames"] == []
    status, raw = await running.post("filter", args_body(pod, None))
    assert status == 200
    assert json.loads(raw)["NodeNames"] is None
    assert "nodeCacheCapable: true" in json.loads(raw)["Error"]


async def test_a_pod_without_exclusive_resources_passes_through(
    running: Running, node_config: Config, machine: Machine
) -> None:
    feed(running, "a", 1, emulator_with(node_config, machine))
    burstable = pod_manifest("web", cpus="", memory="")
    burstable["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "500m"}}
    reply = await running.verb("filter", args_body(burstable, ["a", "never"]))
    assert reply["NodeNames"] == ["a", "never"]
    assert reply["FailedNodes"] == {} and reply["FailedAndUnresolvableNodes"] == {}
    scores = await running.verb("prioritize", args_body(burstable, ["a", "never"]))
    assert scores == [{"Host": "a", "Score": 0}, {"Host": "never", "Score": 0}]
    assert len(running.server.ledger) == 0
    # The opt-in resource says nothing about exclusivity; with whole CPUs the pod is checked.
    opted_in = pod_manifest("opted-in", cpus="", memory="", extra={OPT_IN: "1"})
    assert (await running.verb("filter", args_body(opted_in, ["a", "never"])))["NodeNames"] == ["a", "never"]
    exclusive = pod_manifest("exclusive", extra={OPT_IN: "1"})
    reply = await running.verb("filter", args_body(exclusive, ["a", "never"]))
    assert reply["NodeNames"] == ["a"] and list(reply["FailedAndUnresolvableNodes"]) == ["never"]


# ---- the ledger ------------------------------------------------------------------------------------------


async def test_two_filters_back_to_back_count_the_first_placement(
    running: Running, node_config: Config, machine: Machine
) -> None:
    feed(running, "a", 1, emulator_with(node_config, machine))
    first, second = pod_manifest("first"), pod_manifest("second")
    assert (await running.verb("filter", args_body(first, ["a"])))["NodeNames"] == ["a"]
    # No agent report between the two: the second sees the first on NUMA node 1.
    reply = await running.verb("filter", args_body(second, ["a"]))
    assert reply["NodeNames"] == []
    assert reply["FailedAndUnresolvableNodes"]["a"].startswith("TopologyAffinityError")
    assert running.server.ledger.entry("uid-first") is not None
    # The agent reports the first pod admitted: the entry closes, the node's own state now counts it.
    feed(running, "a", 2, emulator_with(node_config, machine, make_pod("first")))
    assert running.server.ledger.entry("uid-first") is None
    assert (await running.verb("filter", args_body(second, ["a"])))["NodeNames"] == []
    # The first pod goes away; the node reports it: the second fits.
    feed(running, "a", 3, emulator_with(node_config, machine))
    assert (await running.verb("filter", args_body(second, ["a"])))["NodeNames"] == ["a"]


async def test_prioritize_opens_the_top_ranked_node(
    running: Running, node_config: Config, machine: Machine
) -> None:
    feed(running, "a", 1, emulator_with(node_config, machine))
    feed(running, "b", 1, emulator_with(node_config, machine))
    first, second = pod_manifest("first"), pod_manifest("second")
    assert (await running.verb("filter", args_body(first, ["a", "b"])))["NodeNames"] == ["a", "b"]
    assert running.server.ledger.entry("uid-first") is None  # two nodes fit: Prioritize decides
    scores = await running.verb("prioritize", args_body(first, ["a", "b"]))
    # Equal nodes: the first in the scheduler's order alone gets 10, the other at most 7.
    assert scores == [{"Host": "a", "Score": 10}, {"Host": "b", "Score": 7}]
    entry = running.server.ledger.entry("uid-first")
    assert entry is not None and entry.node == "a" and entry.opened_by == "prioritize"
    reply = await running.verb("filter", args_body(second, ["a", "b"]))
    assert reply["NodeNames"] == ["b"]
    assert list(reply["FailedAndUnresolvableNodes"]) == ["a"]
    # The agent refused the first pod: it counts nowhere.
    feed(running, "a", 2, emulator_with(node_config, machine), refused=("uid-first",))
    assert (await running.verb("filter", args_body(pod_manifest("third"), ["a"])))["NodeNames"] == ["a"]


async def test_prioritize_scores_fewest_numa_nodes_then_tightest_fit(
    running: Running, node_config: Config, machine: Machine
) -> None:
    feed(running, "empty", 1, emulator_with(node_config, machine))
    feed(running, "loaded", 1, emulator_with(node_config, machine, make_pod("big")))
    feed(running, "full", 1, emulator_with(node_config, machine, make_pod("x"), make_pod("y", "3")))
    pod = pod_manifest("p", "2")
    scores = await running.verb("prioritize", args_body(pod, ["empty", "loaded", "full", "never"]))
    # Both would put the pod on NUMA node 0 (1 CPU left); "loaded" has less memory left: the tighter fit.
    assert scores == [
        {"Host": "empty", "Score": 0},
        {"Host": "loaded", "Score": 10},
        {"Host": "full", "Score": 0},
        {"Host": "never", "Score": 0},
    ]
    # Null and empty node lists: an empty list back.
    assert await running.verb("prioritize", args_body(pod, [])) == []
    assert await running.verb("prioritize", args_body(pod, None)) == []


# ---- Preempt ---------------------------------------------------------------------------------------------


def victims_body(pod: Mapping[str, Any], victims: Mapping[str, Any] | None) -> bytes:
    return json.dumps({"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": victims}).encode()


async def test_preempt_keeps_the_nodes_where_removing_the_victims_lets_the_kubelet_admit(
    running: Running, node_config: Config, machine: Machine
) -> None:
    feed(running, "enough", 1, emulator_with(node_config, machine, make_pod("v1", priority=0)))
    # NUMA node 1 full, NUMA node 0 holding 2 of its 3 CPUs: evicting only the 2-CPU pod leaves 3 there.
    two = emulator_with(node_config, machine, make_pod("v2", priority=0), make_pod("v3", "2", priority=0))
    feed(running, "not-enough", 1, two)
    pod = pod_manifest("p", priority=100)
    victims = {
        "enough": {"Pods": [{"UID": "uid-v1"}], "NumPDBViolations": 0},
        "not-enough": {"Pods": [{"UID": "uid-v3"}], "NumPDBViolations": 1},
        "no-victims": {"Pods": [], "NumPDBViolations": 0},
        "never": {"Pods": [{"UID": "uid-zz"}], "NumPDBViolations": 0},
    }
    reply = await running.verb("preempt", victims_body(pod, victims))
    assert reply == {
        "NodeNameToMetaVictims": {"enough": {"Pods": [{"UID": "uid-v1"}], "NumPDBViolations": 0}}
    }
    assert await running.verb("preempt", victims_body(pod, None)) == {"NodeNameToMetaVictims": {}}
    assert await running.verb("preempt", victims_body(pod, {})) == {"NodeNameToMetaVictims": {}}
    # A pod without exclusive resources: the candidates as given (those with victims).
    plain = pod_manifest("plain", cpus="", memory="")
    reply = await running.verb("preempt", victims_body(plain, victims))
    assert set(reply["NodeNameToMetaVictims"]) == {"enough", "not-enough", "never"}


# ---- refusals ----------------------------------------------------------------------------------------------


async def test_a_malformed_body_is_400_with_one_log_line(running: Running) -> None:
    with structlog.testing.capture_logs() as logs:
        status, data = await running.post("filter", b'{"Pod": {"metadata": {"name": "p"}}, "NodeNames": 3}')
    assert status == 400
    assert data.decode().startswith("malformed filter request: Pod: ")
    assert len(logs) == 1
    assert logs[0]["log_level"] == "warning" and logs[0]["verb"] == "filter" and logs[0]["status"] == 400
    for verb, body in (("prioritize", b"not json"), ("preempt", b"{}"), ("filter", b"null")):
        status, _ = await running.post(verb, body)
        assert status == 400, verb
    # Bind is off by default: not served.
    status, _ = await running.post("bind", b'{"PodName":"p","PodUID":"u","Node":"n"}')
    assert status == 404


async def test_a_body_over_the_bound_is_refused(certs: Certs, clock: FakeClock) -> None:
    server, base = await start(certs, clock, "maxBodyBytes: 4096\n")
    try:
        connector = aiohttp.TCPConnector(ssl=certs.client_context())
        async with aiohttp.ClientSession(connector=connector) as session:
            body = args_body(pod_manifest("p"), ["n" * 50] * 200)
            async with session.post(f"{base}/kubeletemu/filter", data=body) as response:
                assert response.status == 413
    finally:
        await server.stop()


@pytest.mark.parametrize("client", ["no certificate", "another CA's certificate"])
async def test_a_client_without_a_valid_certificate_is_refused(running: Running, client: str) -> None:
    context = running.certs.client_context(cert=False, other=client != "no certificate")
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
        with pytest.raises((aiohttp.ClientError, ssl.SSLError)):
            async with session.post(f"{running.base}/kubeletemu/filter", data=b"{}") as response:
                await response.read()
    # The server still serves the scheduler's certificate.
    assert await running.get("/healthz") == (200, "ok\n")


# ---- health, readiness, metrics ------------------------------------------------------------------------


async def test_health_readiness_and_metrics(running: Running, node_config: Config, machine: Machine) -> None:
    assert await running.get("/healthz") == (200, "ok\n")
    status, text = await running.get("/readyz")
    assert status == 503 and "node 'never' fails closed: its agent never reported" in text
    feed(running, "never", 1, emulator_with(node_config, machine))
    assert await running.get("/readyz") == (200, "ok\n")
    running.server.mirrors.disconnected("never", "agent stopped")
    status, text = await running.get("/readyz")
    assert status == 503 and "agent stopped" in text

    await running.verb("filter", args_body(pod_manifest("p"), ["never"]))
    await running.post("filter", b"{")
    status, text = await running.get("/metrics")
    assert status == 200
    assert 'kubeletemu_extender_request_duration_seconds_count{verb="filter"} 2.0' in text
    assert 'kubeletemu_extender_requests_total{code="200",verb="filter"} 1.0' in text
    assert 'kubeletemu_extender_requests_total{code="400",verb="filter"} 1.0' in text
    assert 'kubeletemu_extender_nodes{state="disconnected"} 1.0' in text
    assert 'kubeletemu_extender_nodes{state="fresh"} 0.0' in text
    assert "kubeletemu_extender_ledger_entries 0.0" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "feeds: [{agents: [127.0.0.1:9], tls: {caFile: /nonexistent/ca.crt, certFile: /none/c.crt, "
            "keyFile: /none/c.key}}]\n",
            "feeds: ca_file /nonexistent/ca.crt: cannot read: No such file or directory",
        ),
        ("bind: {enabled: true}\n", "bind.kubeconfig: Required value when bind.enabled is true"),
    ],
)
async def test_what_cannot_start_says_why(certs: Certs, clock: FakeClock, extra: str, message: str) -> None:
    server = ExtenderServer(parse_config(config_text(certs, extra)), clock=clock)
    with pytest.raises(StartError, match=re.escape(message)):
        try:
            await server.start()
        finally:
            await server.stop()


async def test_a_health_address_in_use_stops_the_start_and_frees_the_main_listener(
    certs: Certs, clock: FakeClock
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = ExtenderServer(
            parse_config(config_text(certs, f"healthListen: 127.0.0.1:{port}\n")), clock=clock
        )
        with pytest.raises(StartError, match=re.escape(f"healthListen 127.0.0.1:{port}: ")):
            await server.start()
        assert server.port is not None
        with socket.socket() as again:  # the mutual-TLS listener was closed on the way out
            again.bind(("127.0.0.1", server.port))
