"""Critical-pod preemption through the real daemon: a static pod the node fit refuses for cpu is admitted
by evicting the pods the kubelet's ``getPodsToPreempt`` picks (reported, gone from ListPods and from the
podresources API, their exclusive CPUs free again), and refused with the kubelet's
``UnexpectedAdmissionError`` text when no set of pods suffices."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from tests.daemon.daemon_process import DaemonProcess

pytestmark = pytest.mark.slow  # starts the daemon

MakeDaemon = Callable[..., DaemonProcess]
STATIC = {"kubernetes.io/config.source": "file"}


def pod_msg(
    name: str,
    cpu: str,
    *,
    guaranteed: bool = False,
    annotations: dict[str, str] | None = None,
    priority: int | None = None,
) -> pb.Pod:
    """One container ``app``: requests only (Burstable), or limits of cpu and 1Gi (Guaranteed)."""
    if guaranteed:
        resources = pb.ResourceRequirements(limits={"cpu": cpu, "memory": "1Gi"})
    else:
        resources = pb.ResourceRequirements(requests={"cpu": cpu})
    msg = pb.Pod(
        name=name,
        namespace="default",
        uid=f"uid-{name}",
        containers=[pb.Container(name="app", resources=resources)],
        annotations=annotations or {},
    )
    if priority is not None:
        msg.priority = priority
    return msg


def admit(daemon: DaemonProcess, pod: pb.Pod) -> pb.AdmitResponse:
    return daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(pod=pod)), timeout=10)


def listed(daemon: DaemonProcess) -> list[str]:
    return [p.name for p in daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods]


def podresources_pods(daemon: DaemonProcess) -> list[str]:
    with daemon.podresources_channel() as channel:
        answer = v1_grpc.PodResourcesListerStub(channel).List(v1.ListPodResourcesRequest(), timeout=10)
    return sorted(p.name for p in answer.pod_resources)


def test_static_pod_preempts_then_is_refused_with_the_kubelets_text(make_daemon: MakeDaemon) -> None:
    """Allocatable cpu 15 (16 CPUs, 1 kube-reserved). g holds 8 exclusive CPUs (node 1), b1 and b2 request
    3 each: 1 CPU free. A static pod asking 8 lacks 7000m; the burstables give only 6000m, so the kubelet
    evicts the guaranteed g (and then no burstable: g alone covers the 7000m)."""
    daemon = make_daemon()
    assert admit(daemon, pod_msg("g", "8", guaranteed=True)).admitted
    assert admit(daemon, pod_msg("b1", "3")).admitted
    assert admit(daemon, pod_msg("b2", "3")).admitted
    plain = admit(daemon, pod_msg("api-pod", "8", annotations={"kubernetes.io/config.source": "api"}))
    assert (plain.admitted, plain.reason) == (False, "OutOfcpu")
    assert list(plain.preempted) == []

    static = admit(daemon, pod_msg("static", "8", annotations=STATIC))
    assert static.admitted, static.message
    assert [(p.name, p.uid, p.phase, p.reason, p.message) for p in static.preempted] == [
        ("g", "uid-g", "Failed", "Preempting", "Preempted in order to admit critical pod")
    ]
    assert listed(daemon) == ["b1", "b2", "static"]
    assert podresources_pods(daemon) == ["b1", "b2", "static"]
    # g's 8 exclusive CPUs are back: a guaranteed pod of 8 lands on node 1 again (the fit has 1 CPU free
    # so it is refused by the node fit, not by the CPU manager).
    again = admit(daemon, pod_msg("g2", "8", guaranteed=True))
    assert (again.admitted, again.decided_by, again.reason) == (False, "predicate", "OutOfcpu")

    # 1 CPU free, only b1 and b2 (6000m) preemptable; a critical pod by priority asking 20 lacks 19000m.
    refused = admit(daemon, pod_msg("huge", "20", priority=2_000_000_000))
    assert (refused.admitted, refused.reason) == (False, "UnexpectedAdmissionError")
    assert refused.message == (
        "Unexpected error while attempting to recover from admission failure: preemption: error finding a "
        "set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 13000), ]"
    )
    assert listed(daemon) == ["b1", "b2", "static"]


def test_priority_out_of_int32_is_invalid_argument(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, uid: uid-p}\n"
        "spec:\n  priority: 2147483648\n  containers: [{name: app}]\n"
    )
    with pytest.raises(grpc.RpcError) as info:
        daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "spec.priority: must be a 32-bit integer" in (info.value.details() or "")
