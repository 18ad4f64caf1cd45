"""Exact scheduling as a user deploys it, every part real: ``kubeletemu nodes`` joins the loopback control
plane and streams each node's exact state over its mutual-TLS feed; ``kubeletemu extender`` (its own process,
as the CLI starts it) mirrors the nodes from that feed alone; a real kube-scheduler 1.37.2, configured with
docs/extender.md's snippet, asks it over mutual TLS.

One node: two NUMA nodes of 8 CPUs, CPU 0 reserved, the static CPU Manager and single-numa-node, so 15 CPUs
allocatable, 7 and 8 to give per NUMA node. Three 5-CPU pods fit the node as the scheduler counts (15), but
the third fits no NUMA node (2 and 3 left):

- through the default kube-scheduler the node fails the third with ``TopologyAffinityError``;
- through the extender the third stays Pending, its PodScheduled condition carrying the kubelet's reason
  (from the mirror the nodes' feed keeps), and no pod is Failed; deleting one of the first two lets the
  scheduler place it (the feed reports the release; the ledger's entries were closed by the node's report).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.extender_process import ExtenderProcess, extender_config, scheduler_config_with_extender
from tests.e2e.test_extender import OPT_IN
from tests.e2e.test_nodes import NAMESPACE, create, get, nodes_file, phase_of, wait_for
from tests.e2e.test_nodes_feed import FeedNodesProcess
from tests.feed.test_feed_daemon import free_port
from tests.upstream.certs import Credentials, generate
from tests.upstream.controlplane import ControlPlane, Process

pytestmark = pytest.mark.slow

EXACT = "kubeletemu-exact"


@pytest.fixture
def nodes(cluster: ControlPlane, tmp_path: Path) -> Iterator[tuple[str, int, Credentials]]:
    """One node of its own group, its feed on a free port: (group, feed port, the feed's PKI)."""
    group = f"x{uuid.uuid4().hex[:6]}"
    (tmp_path / "pki").mkdir()
    pki = generate(tmp_path / "pki", service_ip="10.96.0.1")
    port = free_port()
    process = FeedNodesProcess(
        nodes_file(tmp_path, group, 1), cluster.kubeconfig, tmp_path / f"state-{group}", pki, port
    )
    process.start()
    try:
        yield group, port, pki
    finally:
        process.stop()
        cluster.kubectl("delete", "node", "-l", f"kubeletemu-e2e={group}", "--wait=false", check=False)


@pytest.fixture
def extender(cluster: ControlPlane, nodes: tuple[str, int, Credentials], tmp_path: Path) -> Iterator[int]:
    """``kubeletemu extender`` fed by the nodes alone; serving with the control plane's certificates (the
    scheduler's client certificate is the control plane's admin one); its port."""
    _, feed_port, pki = nodes
    port = free_port()
    config = tmp_path / "extender.yaml"
    config.write_text(extender_config(port, cluster.creds, feed_port, pki))
    process = ExtenderProcess(config, tmp_path / "extender.log").start()
    try:
        yield port
    finally:
        process.stop()


@pytest.fixture
def exact_scheduler(cluster: ControlPlane, extender: int) -> Iterator[Process]:
    """kube-scheduler 1.37.2 under ``kubeletemu-exact`` with the docs' extenders entry."""
    path = scheduler_config_with_extender(cluster, extender, EXACT)
    process = cluster.start_scheduler([f"--config={path}"], name=f"{EXACT}-{extender}")
    try:
        yield process
    finally:
        cluster.stop_process(process)


def five_cpus(name: str, group: str, scheduler: str | None) -> str:
    """Through the extender's scheduler, opted in with the managed resource (which the default scheduler,
    not configured to ignore it, would find on no node)."""
    resources = {"cpu": "5", "memory": "1Gi"} | ({OPT_IN: "1"} if scheduler else {})
    spec: dict[str, Any] = {
        "nodeSelector": {"kubeletemu-e2e": group},
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": resources, "limits": resources}}],
    }  # fmt: skip
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
                       "spec": spec})  # fmt: skip


def unschedulable(plane: ControlPlane, name: str) -> str | None:
    found = get(plane, "pod", name)
    for condition in (found or {}).get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return str(condition.get("message", ""))
    return None


def test_the_default_scheduler_binds_what_the_node_refuses(
    cluster: ControlPlane, nodes: tuple[str, int, Credentials]
) -> None:
    group = nodes[0]
    for i in range(3):
        create(cluster, five_cpus(f"{group}-d{i}", group, None))
        if i < 2:
            wait_for(f"d{i} Running", lambda i=i: phase_of(cluster, f"{group}-d{i}", "Running"))
    failed = wait_for("d2 Failed", lambda: phase_of(cluster, f"{group}-d2", "Failed"))
    assert failed["status"]["reason"] == "TopologyAffinityError"


def test_the_extender_places_only_where_the_node_admits(
    cluster: ControlPlane, nodes: tuple[str, int, Credentials], exact_scheduler: Process
) -> None:
    group = nodes[0]
    for i in range(3):
        create(cluster, five_cpus(f"{group}-x{i}", group, EXACT))
        if i < 2:
            wait_for(f"x{i} Running", lambda i=i: phase_of(cluster, f"{group}-x{i}", "Running"))
    message = wait_for("x2 Unschedulable", lambda: unschedulable(cluster, f"{group}-x2"))
    assert "TopologyAffinityError" in message, message
    pods = cluster.get_json("pods", "-n", NAMESPACE)["items"]
    ours = [p for p in pods if p["metadata"]["name"].startswith(f"{group}-x")]
    assert [p["status"].get("phase") for p in ours if p["status"].get("phase") == "Failed"] == []
    found = get(cluster, "pod", f"{group}-x2")
    assert found is not None and not found["spec"].get("nodeName")
    # One of the first two deleted: the node's feed reports the release, and the scheduler places x2.
    cluster.kubectl("delete", "pod", f"{group}-x0", "-n", NAMESPACE, "--timeout=60s")
    wait_for("x2 Running", lambda: phase_of(cluster, f"{group}-x2", "Running"), timeout=120)
