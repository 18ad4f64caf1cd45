"""The objects a node writes: capacity and allocatable in the kubelet's Quantity formats, the pod statuses
of an admission, a rejection and a deletion, as read in the kubelet at v1.37."""

from __future__ import annotations

import datetime
from pathlib import Path

from kubeletemu.emulator import NodeEmulator
from kubeletemu.nodes import objects
from kubeletemu.quantity import Quantity
from tests.nodes import kubelet_config, probe_machine

NOW = datetime.datetime(2026, 12, 2, 1, 2, 3, 456789, tzinfo=datetime.UTC)
LATER = NOW + datetime.timedelta(seconds=2)
POD = {
    "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "generation": 3},
    "spec": {
        "initContainers": [
            {"name": "setup", "image": "busybox"},
            {"name": "proxy", "restartPolicy": "Always"},
        ],
        "containers": [{"name": "app", "image": "nginx"}, {"name": "log", "image": "fluent"}],
    },
}


def test_quantities_keep_the_kubelets_formats() -> None:
    assert objects.quantity_text("memory", Quantity(64 * 2**30)) == "64Gi"
    # BinarySI that no power of 1024 divides: the plain number (CanonicalizeBytes), not "1G".
    assert objects.quantity_text("memory", Quantity(10**9)) == "1000000000"
    assert objects.quantity_text("hugepages-2Mi", Quantity(2**30)) == "1Gi"
    assert objects.quantity_text("cpu", Quantity.parse("15500m")) == "15500m"
    assert objects.quantity_text("pods", Quantity(110)) == "110"


def test_node_object_from_the_emulator(tmp_path: Path) -> None:
    from kubeletemu.config import parse_config

    node = NodeEmulator(parse_config(kubelet_config()), probe_machine(tmp_path))
    body = objects.node_object("w-000", {"pool": "numa"}, node.allocatable, "1.34", "10.128.0.1", NOW)
    labels = body["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "w-000" and labels["pool"] == "numa"
    status = body["status"]
    assert status["capacity"]["pods"] == "110"
    # kubeReserved cpu 1 of the sample's CPUs; memory less kubeReserved and the eviction threshold.
    assert (
        Quantity.parse(status["allocatable"]["cpu"]).amount
        == Quantity.parse(status["capacity"]["cpu"]).amount - 1
    )
    assert status["allocatable"] == objects.resource_list(node.allocatable.allocatable)
    assert [c["type"] for c in status["conditions"]] == [
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
        "Ready",
    ]
    ready = status["conditions"][-1]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
    )
    assert ready["lastHeartbeatTime"] == "2026-12-02T01:02:03Z"
    assert status["nodeInfo"]["kubeletVersion"] == "v1.34.0-kubeletemu"
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}


def test_lease() -> None:
    lease = objects.lease_object("w-000", "node-uid", 40, NOW)
    assert lease["metadata"]["namespace"] == "kube-node-lease"
    assert lease["spec"] == {
        "holderIdentity": "w-000",
        "leaseDurationSeconds": 40,
        "renewTime": "2026-12-02T01:02:03.456789Z",
    }
    assert lease["metadata"]["ownerReferences"][0]["uid"] == "node-uid"


def test_pending_then_running_then_terminated() -> None:
    writer = objects.PodWriter("10.128.0.1")
    pending = writer.pending(POD, "BestEffort", NOW)
    assert pending["phase"] == "Pending" and pending["observedGeneration"] == 3
    conditions = {c["type"]: c for c in pending["conditions"]}
    assert conditions["PodReadyToStartContainers"]["message"] == "no pod sandbox exists"
    assert conditions["Initialized"]["message"] == "containers with incomplete status: [setup proxy]"
    # generate.go: restartable init containers first, then the app containers.
    assert conditions["Ready"]["message"] == "containers with unready status: [proxy app log]"
    assert {s["state"]["waiting"]["reason"] for s in pending["containerStatuses"]} == {"PodInitializing"}

    running = writer.running(POD, "BestEffort", NOW, LATER)
    assert running["phase"] == "Running" and running["startTime"] == "2026-12-02T01:02:03Z"
    assert all(c["status"] == "True" and c["reason"] is None for c in running["conditions"])
    setup, proxy = running["initContainerStatuses"]
    assert setup["state"]["terminated"]["reason"] == "Completed" and setup["ready"] is True
    assert "running" in proxy["state"] and proxy["ready"] is True
    assert [s["ready"] for s in running["containerStatuses"]] == [True, True]

    done = writer.terminated(POD, "BestEffort", NOW, LATER)
    assert done["phase"] == "Succeeded"
    ready = next(c for c in done["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")


def test_without_the_gates() -> None:
    """1.33: no observedGeneration; a kubelet without the condition's gate writes no such condition."""
    writer = objects.PodWriter("10.128.0.1", observed_generation=False, ready_to_start=False)
    pending = writer.pending(POD, "BestEffort", NOW)
    assert "observedGeneration" not in pending
    assert [c["type"] for c in pending["conditions"]] == ["Initialized", "Ready", "ContainersReady"]


def test_rejection() -> None:
    status = objects.rejected_status(
        "Guaranteed", "TopologyAffinityError", "Resources cannot be allocated with Topology locality", NOW
    )
    assert status == {
        "phase": "Failed",
        "qosClass": "Guaranteed",
        "reason": "TopologyAffinityError",
        "message": "Pod was rejected: Resources cannot be allocated with Topology locality",
        "startTime": "2026-12-02T01:02:03Z",
    }
    event = objects.warning_event(POD, "w-000", "TopologyAffinityError", "Resources cannot …", NOW)
    assert (event["type"], event["reason"], event["message"]) == (
        "Warning",
        "TopologyAffinityError",
        "Resources cannot …",
    )
    assert event["involvedObject"]["uid"] == "u-1" and event["source"] == {
        "component": "kubelet",
        "host": "w-000",
    }


def test_preempted_victim() -> None:
    """``evictPodsToFreeRequests``' status function (v1.37.2): Failed, ``Preempting``, the
    ``DisruptionTarget`` condition with the kubelet's reason; Ready and ContainersReady False with
    ``PodFailed`` as the status generator gives a Failed pod."""
    writer = objects.PodWriter("10.128.0.1")
    status = writer.preempted(POD, "Guaranteed", NOW, NOW)
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed",
        "Preempting",
        "Preempted in order to admit critical pod",
    )
    conditions = {c["type"]: (c["status"], c.get("reason")) for c in status["conditions"]}
    assert conditions["DisruptionTarget"] == ("True", "TerminationByKubelet")
    assert conditions["Ready"] == conditions["ContainersReady"] == ("False", "PodFailed")
    assert all(s["state"]["terminated"]["exitCode"] == 0 for s in status["containerStatuses"])
    assert status["observedGeneration"] == POD["metadata"].get("generation", 0)
