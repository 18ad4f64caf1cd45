"""What the extender's tests share: real node emulators on a small synthetic host (two NUMA nodes of four
CPUs, the static CPU Manager with one CPU reserved on NUMA node 0, single-numa-node), pods, request bodies,
a fake clock, and real certificates (a CA, the server's and a client's, and a second CA's client)."""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hostprobe.synthetic import GIB_KIB, SyntheticHost
from kubeletemu.config import Config, parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod
from tests.nodes import kubelet_config, probe_machine
from tests.upstream.certs import Credentials, generate

HOST = SyntheticHost(
    sockets=2, cores_per_socket=2, threads_per_core=2, nodes_per_socket=1, node_memory_kib=4 * GIB_KIB
)
# CPU 0 (NUMA node 0) is reserved: NUMA node 0 has 3 CPUs to give, NUMA node 1 has 4; allocatable 7.
CONFIG = kubelet_config(
    "single-numa-node", managers='cpuManagerPolicy: static\nkubeReserved: {cpu: "1", memory: 512Mi}\n'
)


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="session")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return probe_machine(tmp_path_factory.mktemp("extender-host"), HOST)


@pytest.fixture(scope="session")
def node_config() -> Config:
    return parse_config(CONFIG)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def pod_manifest(
    name: str,
    cpus: str = "4",
    memory: str = "1Gi",
    *,
    priority: int | None = None,
    extra: Mapping[str, str] = {},
) -> dict[str, Any]:
    """A pod as kube-scheduler marshals it (``encoding/json`` of a ``v1.Pod`` from its informer: no kind or
    apiVersion, empty fields as Go writes them); Guaranteed when ``cpus`` and ``memory`` are set."""
    resources = {k: v for k, v in (("cpu", cpus), ("memory", memory)) if v} | dict(extra)
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"limits": resources, "requests": resources} if resources else {},
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
    }
    if priority is not None:
        spec["priority"] = priority
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": None,
        },
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": "Guaranteed"},
    }


def make_pod(name: str, cpus: str = "4", memory: str = "1Gi", *, priority: int | None = None) -> Pod:
    return pod_from_manifest(pod_manifest(name, cpus, memory, priority=priority))


def args_body(pod: Mapping[str, Any], node_names: list[str] | None) -> bytes:
    return json.dumps({"Pod": pod, "Nodes": None, "NodeNames": node_names}).encode()


def emulator_with(node_config: Config, machine: Machine, *pods: Pod) -> NodeEmulator:
    """A node whose kubelet admitted ``pods`` (each must be admitted)."""
    emulator = NodeEmulator(node_config, machine)
    for pod in pods:
        assert emulator.admit(pod).admitted, pod.name
    return emulator


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_client_cert: Path  # signed by another CA: must be refused
    other_client_key: Path

    def client_context(self, *, cert: bool = True, other: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca)
        if other:
            context.load_cert_chain(self.other_client_cert, self.other_client_key)
        elif cert:
            context.load_cert_chain(self.client_cert, self.client_key)
        return context


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    own: Credentials = generate(tmp_path_factory.mktemp("extender-pki"), service_ip="10.96.0.1")
    other: Credentials = generate(tmp_path_factory.mktemp("other-pki"), service_ip="10.96.0.1")
    return Certs(
        own.ca_cert,
        own.serving_cert,
        own.serving_key,
        own.admin_cert,
        own.admin_key,
        other.admin_cert,
        other.admin_key,
    )


def config_text(certs: Certs, extra: str = "") -> str:
    return (
        "apiVersion: kubeletemu.io/v1alpha1\n"
        "kind: Extender\n"
        "listen: 127.0.0.1:0\n"
        "pathPrefix: /kubeletemu\n"
        "tls:\n"
        f"  certFile: {certs.server_cert}\n"
        f"  keyFile: {certs.server_key}\n"
        f"  clientCAFile: {certs.ca}\n" + extra
    )
