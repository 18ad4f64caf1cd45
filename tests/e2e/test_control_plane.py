"""The upstream control plane on loopback: the API server answers kubectl, and the real kube-scheduler
binds a pod to a Node that reports Ready, never to one that reports NotReady."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.upstream.controlplane import ControlPlane, Process

pytestmark = pytest.mark.slow

WAIT = 60.0  # seconds, for what the controllers and the scheduler do on their own


def _wait_for(what: str, probe: Callable[[], Any], timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while (value := probe()) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:.0f} s")
        time.sleep(0.5)
    return value


def _node(name: str) -> str:
    return json.dumps(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"e2e-node": name}}}
    )


def _pod(name: str, node: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeSelector": {"e2e-node": node},
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    }
                ],
            },
        }
    )


def _report(plane: ControlPlane, node: str, *, ready: bool) -> None:
    """The status a kubelet posts: capacity, allocatable and its Ready condition, True or False, what the
    scheduler and the node lifecycle controller read. Both nodes get resources, so that only the condition
    tells them apart. (A node with no Ready condition at all loses its not-ready taint too: the lifecycle
    controller maps only Ready False and Unknown to taints, and marks Unknown after the grace period.)"""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "e2e",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    status = {"status": {"capacity": resources, "allocatable": resources, "conditions": [condition]}}
    plane.kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p", json.dumps(status))


def test_readyz_through_kubectl(control_plane: ControlPlane) -> None:
    assert control_plane.kubectl("get", "--raw", "/readyz").stdout == "ok"
    version = json.loads(control_plane.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"] == version["clientVersion"]["gitVersion"]


def test_scheduler_binds_only_to_a_ready_node(
    control_plane: ControlPlane, kube_scheduler: Process, kube_controller_manager: Process
) -> None:
    plane = control_plane
    # The ServiceAccount admission plugin refuses pods until the controller manager made "default".
    _wait_for(
        "the default ServiceAccount",
        lambda: plane.kubectl("get", "serviceaccount", "default", check=False).returncode == 0 or None,
    )
    for node in ("e2e-ready", "e2e-notready"):
        plane.kubectl("apply", "-f", "-", input=_node(node))
    _report(plane, "e2e-ready", ready=True)
    _report(plane, "e2e-notready", ready=False)
    plane.kubectl("apply", "-f", "-", input=_pod("to-ready", "e2e-ready"))
    plane.kubectl("apply", "-f", "-", input=_pod("to-notready", "e2e-notready"))
    try:
        bound = _wait_for(
            "pod to-ready bound",
            lambda: plane.get_json("pod", "to-ready")["spec"].get("nodeName"),  # type: ignore[attr-defined]
        )
        assert bound == "e2e-ready"

        def unschedulable() -> str | None:
            pod: Any = plane.get_json("pod", "to-notready")
            assert not pod["spec"].get("nodeName"), "bound to a node that reports NotReady"
            for condition in pod["status"].get("conditions", []):
                if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                    return str(condition["message"])
            return None

        # API admission (TaintNodesByCondition) gave the new Node the not-ready taint; only the node
        # lifecycle controller lifts it, when the node reports Ready.
        assert "1 node(s) had untolerated taint(s)" in _wait_for(
            "pod to-notready unschedulable", unschedulable
        )
        taints: Any = plane.get_json("node", "e2e-notready")["spec"]
        assert {t["key"] for t in taints.get("taints", [])} == {"node.kubernetes.io/not-ready"}
    finally:
        plane.kubectl("delete", "pod", "to-ready", "to-notready", "--wait=false", check=False)
        plane.kubectl("delete", "node", "e2e-ready", "e2e-notready", "--wait=false", check=False)
