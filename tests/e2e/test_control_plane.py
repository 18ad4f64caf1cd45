"""The upstream control plane on loopback: the API server answers kubectl, and the real kube-scheduler
binds a pod to a Node that reports Ready, never to one that does not."""

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


def _report_ready(plane: ControlPlane, node: str) -> None:
    """The status a kubelet posts: capacity, allocatable and a Ready condition (what the scheduler and the
    node lifecycle controller read)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    status = {
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "e2e",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
        }
    }
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
    for node in ("e2e-ready", "e2e-silent"):
        plane.kubectl("apply", "-f", "-", input=_node(node))
    _report_ready(plane, "e2e-ready")
    plane.kubectl("apply", "-f", "-", input=_pod("to-ready", "e2e-ready"))
    plane.kubectl("apply", "-f", "-", input=_pod("to-silent", "e2e-silent"))
    try:
        bound = _wait_for(
            "pod to-ready bound",
            lambda: plane.get_json("pod", "to-ready")["spec"].get("nodeName"),  # type: ignore[attr-defined]
        )
        assert bound == "e2e-ready"

        def unschedulable() -> str | None:
            pod: Any = plane.get_json("pod", "to-silent")
            assert not pod["spec"].get("nodeName"), "bound to a node that never reported Ready"
            for condition in pod["status"].get("conditions", []):
                if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                    return str(condition["message"])
            return None

        # API admission (TaintNodesByCondition) gave the new Node the not-ready taint; only the node
        # lifecycle controller lifts it, when the node reports Ready.
        assert "node.kubernetes.io/not-ready" in _wait_for("pod to-silent unschedulable", unschedulable)
    finally:
        plane.kubectl("delete", "pod", "to-ready", "to-silent", "--wait=false", check=False)
        plane.kubectl("delete", "node", "e2e-ready", "e2e-silent", "--wait=false", check=False)
