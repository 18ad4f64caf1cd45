"""Issue 8 through the real daemon: a rejected pod leaves no trace in ListPods nor in the podresources
API, and what it had taken is allocatable again."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from tests.daemon.daemon_process import DaemonProcess

MakeDaemon = Callable[..., DaemonProcess]

# A Guaranteed pod whose first container fits (2 CPUs, a device) and whose second cannot (9 CPUs: more
# than any NUMA node has). single-numa-node refuses it after the first container's allocation.
REFUSED = """apiVersion: v1
kind: Pod
metadata: {name: half, namespace: default, uid: uid-half}
spec:
  containers:
  - name: first
    resources:
      limits: {cpu: "2", memory: 1Gi, example.com/dev: "1"}
  - name: second
    resources:
      limits: {cpu: "9", memory: 1Gi}
"""
KEPT = REFUSED.replace("half", "kept").replace('cpu: "9"', 'cpu: "2"')


def podresources(
    daemon: DaemonProcess,
) -> tuple[v1.ListPodResourcesResponse, v1.AllocatableResourcesResponse]:
    with daemon.podresources_channel() as channel:
        stub = v1_grpc.PodResourcesListerStub(channel)
        listed = stub.List(v1.ListPodResourcesRequest(), timeout=10)
        allocatable = stub.GetAllocatableResources(v1.AllocatableResourcesRequest(), timeout=10)
    return listed, allocatable


def test_rejected_pod_leaves_no_trace(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    before = podresources(daemon)
    reply = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=REFUSED)), timeout=10)
    assert (reply.admitted, reply.reason, reply.decided_by) == (
        False,
        "TopologyAffinityError",
        "resource-allocator",
    )
    assert reply.cleanup.startswith("first: cpus ")
    assert daemon.stub().ListPods(pb.ListPodsRequest(), timeout=10).pods == []
    after = podresources(daemon)
    assert after == before and not after[0].pod_resources
    with daemon.podresources_channel() as channel, pytest.raises(grpc.RpcError) as info:
        v1_grpc.PodResourcesListerStub(channel).Get(
            v1.GetPodResourcesRequest(pod_name="half", pod_namespace="default"), timeout=10
        )
    assert "pod half in namespace default not found" in (info.value.details() or "")
    # What "first" had is free again: a pod with the same first container gets the same CPUs and device.
    kept = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=KEPT)), timeout=10)
    assert kept.admitted
    released_cpus = reply.cleanup.split(";")[0].removeprefix("first: cpus ")
    assert ",".join(map(str, kept.containers[0].cpu_ids)) == released_cpus
    listed, _ = podresources(daemon)
    assert [p.name for p in listed.pod_resources] == ["kept"]
