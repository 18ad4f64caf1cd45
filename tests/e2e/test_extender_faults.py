"""The extender's faults in the real deployment (issue 45's acceptance), every part real: ``kubeletemu
nodes`` with its mutual-TLS feed, ``kubeletemu extender`` as its own process on a fixed port, and
kube-scheduler 1.37.2 configured with docs/extender.md's snippet.

- **The extender killed mid-run** (SIGKILL): the scheduler's calls fail while it is down, so a pod created
  then stays Pending and is never bound; once restarted on the same port it rebuilds every mirror from the
  agents alone, the waiting pod is placed, and the next one is refused exactly as the kubelet would (its
  mirror holds the pods admitted before the kill).
- **An agent disconnected** (its ``kubeletemu nodes`` killed): its node fails closed at once, with why; the
  restarted agent recovers the node from its state directory, resends its full state, and the pod waiting
  for it is placed.

The node is test_extender_nodes's: 15 CPUs allocatable, 7 and 8 to give per NUMA node under single-numa-node,
so two 5-CPU pods fit and a third fits no NUMA node.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.extender_process import ExtenderProcess, extender_config, scheduler_config_with_extender
from tests.e2e.test_extender_nodes import EXACT, five_cpus, unschedulable
from tests.e2e.test_nodes import NAMESPACE, create, get, nodes_file, phase_of, wait_for
from tests.e2e.test_nodes_feed import FeedNodesProcess
from tests.feed.test_feed_daemon import free_port
from tests.upstream.certs import Credentials, generate
from tests.upstream.controlplane import ControlPlane, Process

pytestmark = pytest.mark.slow


@pytest.fixture
def agent(cluster: ControlPlane, tmp_path: Path) -> Iterator[tuple[FeedNodesProcess, str]]:
    """One node of its own group, its feed on a fixed free port: the agent and its group."""
    group = f"k{uuid.uuid4().hex[:6]}"
    (tmp_path / "pki").mkdir()
    pki: Credentials = generate(tmp_path / "pki", service_ip="10.96.0.1")
    process = FeedNodesProcess(
        nodes_file(tmp_path, group, 1), cluster.kubeconfig, tmp_path / f"state-{group}", pki, free_port()
    )
    process.start()
    try:
        yield process, group
    finally:
        process.stop()
        cluster.kubectl("delete", "node", "-l", f"kubeletemu-e2e={group}", "--wait=false", check=False)


@pytest.fixture
def extender(
    cluster: ControlPlane, agent: tuple[FeedNodesProcess, str], tmp_path: Path
) -> Iterator[tuple[ExtenderProcess, Process]]:
    """The extender on a fixed port, fed by the agent alone, and kube-scheduler 1.37.2 asking it."""
    process, _ = agent
    port, creds, pki = free_port(), cluster.creds, process.pki
    config = tmp_path / "extender.yaml"
    config.write_text(extender_config(port, creds, process.port, pki))
    extender = ExtenderProcess(config, tmp_path / "extender.log").start()
    path = scheduler_config_with_extender(cluster, port, EXACT)
    scheduler = cluster.start_scheduler([f"--config={path}"], name=f"{EXACT}-faults-{port}")
    try:
        yield extender, scheduler
    finally:
        cluster.stop_process(scheduler)
        extender.stop()


def node_of(plane: ControlPlane, name: str) -> str | None:
    found = get(plane, "pod", name)
    return (found or {}).get("spec", {}).get("nodeName") or None


def no_pod_failed(plane: ControlPlane, prefix: str) -> None:
    pods = plane.get_json("pods", "-n", NAMESPACE)["items"]
    assert isinstance(pods, list)
    ours = [p for p in pods if p["metadata"]["name"].startswith(prefix)]
    failed = [p["metadata"]["name"] for p in ours if p["status"].get("phase") == "Failed"]
    assert failed == []


def test_a_killed_extender_rebuilds_from_the_agents_and_places_exactly(
    cluster: ControlPlane, agent: tuple[FeedNodesProcess, str], extender: tuple[ExtenderProcess, Process]
) -> None:
    _, group = agent
    process, _ = extender
    create(cluster, five_cpus(f"{group}-x0", group, EXACT))
    wait_for("x0 Running", lambda: phase_of(cluster, f"{group}-x0", "Running"))

    process.kill()
    create(cluster, five_cpus(f"{group}-x1", group, EXACT))
    # The scheduler's Filter call fails (connection refused): a SchedulerError, never a binding.
    wait_for("x1's attempt failing", lambda: _scheduler_error(cluster, f"{group}-x1"))
    assert node_of(cluster, f"{group}-x1") is None

    process.start()  # the same port; its mirrors come from the agent alone
    wait_for("x1 Running", lambda: phase_of(cluster, f"{group}-x1", "Running"), timeout=120)
    # The restarted extender knows both pods: the third fits no NUMA node and is refused with the
    # kubelet's reason instead of bouncing off the node.
    create(cluster, five_cpus(f"{group}-x2", group, EXACT))
    message = wait_for("x2 Unschedulable", lambda: unschedulable(cluster, f"{group}-x2"))
    assert "TopologyAffinityError" in message, message
    assert node_of(cluster, f"{group}-x2") is None
    no_pod_failed(cluster, f"{group}-x")


def test_a_disconnected_agent_fails_its_node_closed_until_it_is_back(
    cluster: ControlPlane, agent: tuple[FeedNodesProcess, str], extender: tuple[ExtenderProcess, Process]
) -> None:
    nodes, group = agent
    assert nodes.popen is not None
    nodes.popen.send_signal(signal.SIGKILL)
    nodes.popen.wait(30)
    create(cluster, five_cpus(f"{group}-y0", group, EXACT))
    message = wait_for("y0 Unschedulable", lambda: unschedulable(cluster, f"{group}-y0"))
    assert f"node '{group}-000' fails closed: its agent disconnected" in message, message
    assert node_of(cluster, f"{group}-y0") is None

    nodes.start()  # recovers its node from the state directory; the extender's feed redials it
    wait_for("y0 Running", lambda: phase_of(cluster, f"{group}-y0", "Running"), timeout=120)
    no_pod_failed(cluster, f"{group}-y")


def _scheduler_error(plane: ControlPlane, name: str) -> str | None:
    found = get(plane, "pod", name)
    for condition in (found or {}).get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulerError":
            return str(condition.get("message", ""))
    return None
