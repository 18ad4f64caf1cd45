"""The podresources socket of the real daemon follows ``kubeletVersion`` (issue 16), both sides of each
change:

* ``Get``: ``KubeletPodResourcesGet`` alpha and off in 1.33 ("PodResources API Get method disabled",
  UNKNOWN), beta and on from 1.34 (kubernetes#132940), GA and locked from 1.36 (kubernetes#136728);
* ``List``: every known pod in 1.33, active pods only from 1.34 (kubernetes#132028);
* pod-level ``PodResources.cpu_ids`` and ``memory``: a 1.36 kubelet allocates pod-level CPUs and memory
  (``PodLevelResourceManagers``, alpha) but its api.proto has no field for them; 1.37 (k8s.io/kubernetes
  v1.37.2) and master report them (kubernetes#138738);
* the containers of such a pod: 1.36 lists on each container what its state entry holds, the pod's shared
  pool included; from 1.37 (the same PR: ``GetCPUs`` / ``GetMemory`` report only at
  ``ResourceIsolationContainer``) a container sharing the pool lists no CPUs unless it qualifies for
  exclusive CPUs (equivalent Guaranteed, integral CPUs) and no memory unless equivalent Guaranteed.
"""

from __future__ import annotations

import json
import signal
import time

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1 import api_pb2_grpc as v1_grpc
from kubeletemu.versions.behaviours import in_effect, step_at
from kubeletemu.versions.gates import feature_gates
from kubeletemu.versions.version import SUPPORTED
from tests.daemon.daemon_process import DaemonProcess
from tests.podresources.conftest import StartDaemon
from tests.podresources.nodes import container, general_config, pod_manifest
from tests.podresources.test_kubelet_clients import DATA, grpcurl

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

GU = pod_manifest("gu", "ns1", containers=container("c", 'cpu: "2", memory: 1Gi'))
DONE = pod_manifest("done", "ns2", containers=container("a", 'cpu: "1", memory: 100Mi'), phase="Succeeded")
# Pod-level resources only: with PodLevelResourceManagers and the pod scope, one pod-level CPU set.
POD_LEVEL = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: plr, namespace: ns1, uid: uid-plr}\n"
    'spec:\n  resources: {limits: {cpu: "4", memory: 2Gi}}\n  containers:\n  - name: c\n'
)


def admit(daemon: DaemonProcess, *manifests: str) -> None:
    for manifest in manifests:
        reply = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
        assert reply.admitted, reply.message


def podresources(daemon: DaemonProcess) -> v1_grpc.PodResourcesListerStub:
    return v1_grpc.PodResourcesListerStub(daemon.podresources_channel())


@pytest.mark.parametrize(("version", "served"), [("1.33", False), ("1.34", True), ("1.36", True)])
def test_get_follows_the_version(start_daemon: StartDaemon, version: str, served: bool) -> None:
    daemon = start_daemon(general_config(kubelet_version=version))
    admit(daemon, GU)
    request = v1.GetPodResourcesRequest(pod_name="gu", pod_namespace="ns1")
    if served:
        reply = podresources(daemon).Get(request, timeout=10)
        assert [len(c.cpu_ids) for c in reply.pod_resources.containers] == [2]
        return
    with pytest.raises(grpc.RpcError) as err:
        podresources(daemon).Get(request, timeout=10)
    assert (err.value.code(), err.value.details()) == (
        grpc.StatusCode.UNKNOWN,
        "PodResources API Get method disabled",
    )


@pytest.mark.parametrize("version", ["1.33", "1.34"])
def test_get_through_grpcurl_with_the_kubelet_proto(start_daemon: StartDaemon, version: str) -> None:
    daemon = start_daemon(general_config(kubelet_version=version))
    admit(daemon, GU)
    proto = ["-plaintext", "-unix", "-import-path", str(DATA), "-proto", "kubelet_api_v1.proto"]
    request = json.dumps({"podName": "gu", "podNamespace": "ns1"})
    got = grpcurl(*proto, "-d", request, str(daemon.podresources_socket), "v1.PodResourcesLister/Get")
    if version == "1.33":
        assert got.returncode == 66, got.stdout
        assert "Code: Unknown" in got.stderr
        assert "Message: PodResources API Get method disabled" in got.stderr
    else:
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["podResources"]["name"] == "gu"


@pytest.mark.parametrize(("version", "listed"), [("1.33", ["gu", "done"]), ("1.34", ["gu"])])
def test_list_of_terminated_pods_follows_the_version(
    start_daemon: StartDaemon, version: str, listed: list[str]
) -> None:
    daemon = start_daemon(general_config(kubelet_version=version))
    admit(daemon, GU, DONE)
    reply = podresources(daemon).List(v1.ListPodResourcesRequest(), timeout=10)
    assert [p.name for p in reply.pod_resources] == listed


def test_list_of_all_pods_with_the_gate_off_from_1_34(start_daemon: StartDaemon) -> None:
    daemon = start_daemon(
        general_config(kubelet_version="1.34", feature_gates={"KubeletPodResourcesListUseActivePods": False})
    )
    admit(daemon, GU, DONE)
    reply = podresources(daemon).List(v1.ListPodResourcesRequest(), timeout=10)
    assert [p.name for p in reply.pod_resources] == ["gu", "done"]


POD_LEVEL_VERSIONS = [("1.36", False), ("1.37", True), ("master", True)]


def pod_level_daemon(start_daemon: StartDaemon, version: str) -> DaemonProcess:
    config = general_config(feature_gates={"PodLevelResourceManagers": True}, kubelet_version=version)
    return start_daemon(config.replace("topologyManagerScope: container", "topologyManagerScope: pod"))


@pytest.mark.parametrize(("version", "pod_level"), POD_LEVEL_VERSIONS)
def test_pod_level_cpus_from_137(start_daemon: StartDaemon, version: str, pod_level: bool) -> None:
    """Every version allocates the pod's 4 CPUs, and the container runs in the pod's shared slice of
    them: 1.36 lists that slice on the container, 1.37 on the pod only."""
    daemon = pod_level_daemon(start_daemon, version)
    admit(daemon, POD_LEVEL)
    [pod] = podresources(daemon).List(v1.ListPodResourcesRequest(), timeout=10).pod_resources
    [only] = pod.containers
    listed = pod.cpu_ids if pod_level else only.cpu_ids
    assert len(listed) == 4
    assert list(pod.cpu_ids if not pod_level else only.cpu_ids) == []
    got = podresources(daemon).Get(v1.GetPodResourcesRequest(pod_name="plr", pod_namespace="ns1"), timeout=10)
    assert got.pod_resources == pod


@pytest.mark.parametrize(("version", "pod_level"), POD_LEVEL_VERSIONS)
def test_pod_level_memory_from_137(start_daemon: StartDaemon, version: str, pod_level: bool) -> None:
    """PodResources.memory (field 5): the pod entry's 2Gi block from 1.37; 1.36 allocates it and lists it
    on the container (its shared pool, all 2Gi), having no field on the pod."""
    daemon = pod_level_daemon(start_daemon, version)
    admit(daemon, POD_LEVEL)
    [pod] = podresources(daemon).List(v1.ListPodResourcesRequest(), timeout=10).pod_resources
    [only] = pod.containers
    listed = pod.memory if pod_level else only.memory
    assert [(m.memory_type, m.size, len(m.topology.nodes)) for m in listed] == [("memory", 2 << 30, 1)]
    assert list(pod.memory if not pod_level else only.memory) == []
    got = podresources(daemon).Get(v1.GetPodResourcesRequest(pod_name="plr", pod_namespace="ns1"), timeout=10)
    assert got.pod_resources == pod


# A 4-CPU, 2Gi bubble: "ex" exclusive (2 CPUs, 512Mi), "frac" equivalent Guaranteed with a fractional CPU
# (shared CPUs, its own 256Mi), "sh" asking nothing (the shared remainder of both), and a sidecar "sc"
# sharing too.
MIXED = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: mixed, namespace: ns1, uid: uid-mixed}\n"
    'spec:\n  resources: {requests: {cpu: "4", memory: 2Gi}, limits: {cpu: "4", memory: 2Gi}}\n'
    "  initContainers:\n  - name: sc\n    restartPolicy: Always\n"
    '  containers:\n  - name: ex\n    resources: {limits: {cpu: "2", memory: 512Mi}}\n'
    "  - name: frac\n    resources: {limits: {cpu: 500m, memory: 256Mi}}\n"
    "  - name: sh\n"
)


def _held(container: v1.ContainerResources) -> tuple[int, list[int]]:
    return len(container.cpu_ids), [m.size for m in container.memory]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        # 1.36: each container lists its state entry (the shared pool: 2 CPUs, 1.25Gi of the 2Gi).
        (
            "1.36",
            {
                "sc": (2, [1280 << 20]),
                "ex": (2, [512 << 20]),
                "frac": (2, [256 << 20]),
                "sh": (2, [1280 << 20]),
            },
        ),
        # 1.37: only the exclusive parts: ex's CPUs and memory, frac's memory (its CPUs are the shared ones).
        ("1.37", {"sc": (0, []), "ex": (2, [512 << 20]), "frac": (0, [256 << 20]), "sh": (0, [])}),
        ("master", {"sc": (0, []), "ex": (2, [512 << 20]), "frac": (0, [256 << 20]), "sh": (0, [])}),
    ],
)
def test_containers_sharing_the_pods_pool_from_137(
    start_daemon: StartDaemon, version: str, expected: dict[str, tuple[int, list[int]]]
) -> None:
    daemon = pod_level_daemon(start_daemon, version)
    admit(daemon, MIXED)
    [pod] = podresources(daemon).List(v1.ListPodResourcesRequest(), timeout=10).pod_resources
    assert {c.name: _held(c) for c in pod.containers} == expected
    assert [c.name for c in pod.containers] == ["sc", "ex", "frac", "sh"]
    if version != "1.36":
        assert (len(pod.cpu_ids), [m.size for m in pod.memory]) == (4, [2 << 30])
    got = podresources(daemon).Get(
        v1.GetPodResourcesRequest(pod_name="mixed", pod_namespace="ns1"), timeout=10
    )
    assert got.pod_resources == pod


@pytest.mark.parametrize("version", SUPPORTED)
def test_registry_rows_agree_with_the_gates(version: str) -> None:
    """The version-table rows (podresources.json) say what the versioned feature specs say."""
    gates = feature_gates(version)
    for key, gate in (
        ("podresources.get", "KubeletPodResourcesGet"),
        ("podresources.dynamic-resources", "KubeletPodResourcesDynamicResources"),
    ):
        spec = gates[gate]
        assert step_at(key, version) == (2 if spec.locked else 1 if spec.default else 0), (key, version)
    active = gates.get("KubeletPodResourcesListUseActivePods")
    assert in_effect("podresources.list-active-pods", version) == (active is not None and active.default)
    assert in_effect("podresources.pod-level-resources", version) == (version in ("1.37", "master"))


# What `grpcurl describe` shows of each versioned field, per version: reflection serves the version's schema.
DESCRIBED = {
    "1.34": {"share_id": False, "cpu_ids": False},
    "1.35": {"share_id": True, "cpu_ids": False},
    "1.36": {"share_id": True, "cpu_ids": False},
    "1.37": {"share_id": True, "cpu_ids": True},
    "master": {"share_id": True, "cpu_ids": True},
}


@pytest.mark.parametrize("version", sorted(DESCRIBED))
def test_reflection_describes_the_versions_schema(start_daemon: StartDaemon, version: str) -> None:
    """grpcurl, with no .proto, sees the fields the emulated kubelet's api.proto has, and a call decoded
    with that schema still works."""
    daemon = start_daemon(general_config(kubelet_version=version))
    admit(daemon, GU)
    socket = str(daemon.podresources_socket)
    claim = grpcurl("-plaintext", "-unix", socket, "describe", "v1.ClaimResource")
    assert claim.returncode == 0, claim.stderr
    assert "device_name = 4" in claim.stdout
    assert ("share_id = 5" in claim.stdout) == DESCRIBED[version]["share_id"], claim.stdout
    pod = grpcurl("-plaintext", "-unix", socket, "describe", "v1.PodResources")
    assert pod.returncode == 0, pod.stderr
    assert "containers = 3" in pod.stdout
    assert ("cpu_ids = 4" in pod.stdout) == DESCRIBED[version]["cpu_ids"], pod.stdout
    assert ("memory = 5" in pod.stdout) == DESCRIBED[version]["cpu_ids"], pod.stdout
    listed = grpcurl("-plaintext", "-unix", socket, "v1.PodResourcesLister/List")
    assert listed.returncode == 0, listed.stderr
    assert [p["name"] for p in json.loads(listed.stdout)["pod_resources"]] == ["gu"], listed.stdout


def test_reflection_follows_a_reload_to_another_version(start_daemon: StartDaemon) -> None:
    """SIGHUP with a new kubeletVersion (the node's kubelet upgraded): reflection describes the new schema."""
    daemon = start_daemon(general_config(kubelet_version="1.34"))
    socket = str(daemon.podresources_socket)
    before = grpcurl("-plaintext", "-unix", socket, "describe", "v1.ClaimResource")
    assert before.returncode == 0 and "share_id" not in before.stdout, before.stdout + before.stderr
    daemon.config.write_text(
        daemon.config.read_text().replace("kubeletVersion: '1.34'", "kubeletVersion: '1.35'")
    )
    daemon.send(signal.SIGHUP)
    deadline = time.monotonic() + 15
    while "reloaded" not in daemon.log.read_text():
        assert time.monotonic() < deadline, daemon.log.read_text()
        time.sleep(0.05)
    after = grpcurl("-plaintext", "-unix", socket, "describe", "v1.ClaimResource")
    assert after.returncode == 0 and "share_id = 5" in after.stdout, after.stdout + after.stderr
