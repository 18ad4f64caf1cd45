"""scheduler-plugins' NodeResourceTopologyMatch, and a second kube-scheduler version, against ``kubeletemu
nodes`` with the real resource-topology-exporter publishing each node's NodeResourceTopology.

Three nodes as in test_nodes.py (2 NUMA nodes of 8 CPUs, the static CPU Manager with CPU 0 reserved, the
single-numa-node Topology Manager): at most 7 exclusive CPUs on NUMA node 0 and 8 on NUMA node 1,
allocatable cpu 15. An RTE per node reads that node's podresources socket (``kubeletemu nodes
--podresources-dir``) and its kubelet configuration, and publishes its NodeResourceTopology to the API server.

- A pod of 6 CPUs fits a NUMA node: scheduler-plugins' scheduler binds it and it runs.
- A pod of 9 CPUs fits the node (15) but no NUMA node: NodeResourceTopologyMatch's filter refuses every node
  ("cannot align container", singleNUMAContainerLevelHandler in pkg/noderesourcetopology/filter.go at
  v0.34.7), so it stays Pending and unbound; the default kube-scheduler, which counts the node's CPUs only,
  binds it, and the node refuses it as the kubelet does: Failed, ``TopologyAffinityError``.
- Both with the passthrough cache and with the overreserve cache (tests/upstream/schedulers.py).
- kube-scheduler 1.34.7 (built with scheduler-plugins) binds a pod to the nodes, against the 1.37 API server.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hostprobe.synthetic import write_tree
from kubeletemu.simulate.topology import synthetic_shape
from tests.e2e import exporters as ex
from tests.e2e.test_nodes import (
    KUBELET_CONFIG,
    REFUSAL,
    NodesProcess,
    get,
    nodes_file,
    wait_for,
)
from tests.upstream import build, scheduler_plugins, schedulers
from tests.upstream.controlplane import ControlPlane, Process
from tests.upstream.exporters import ExporterBinaries
from tests.upstream.pins import SCHEDULER_PLUGINS

pytestmark = pytest.mark.slow

NAMESPACE = "kubeletemu-nrt"
NODES = 3
NRT = "noderesourcetopologies.topology.node.k8s.io"
# The nodes' shape (test_nodes.TOPOLOGY), as the sysfs tree RTE reads.
SHAPE = synthetic_shape(sockets=2, cores_per_socket=4, threads_per_core=2, memory_gib_per_node=16)
FITS_A_NUMA_NODE = 6
FITS_NO_NUMA_NODE = 9
METHOD = "with-exclusive-resources"
# The static Memory Manager too, as NUMA-aware clusters run it: with the None policy the podresources API
# reports no allocatable memory per NUMA node, RTE publishes none available, and NodeResourceTopologyMatch
# refuses every Guaranteed pod's memory request. Its reservation is the default hard eviction threshold
# (100Mi memory.available), all on NUMA node 0, as the kubelet requires them to be equal.
NODE_CONFIG = {
    **KUBELET_CONFIG,
    "memoryManagerPolicy": "Static",
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "100Mi"}}],
}  # RTE's pod-set fingerprint method, which the overreserve cache reads


class PodresourcesNodes(NodesProcess):
    """``kubeletemu nodes`` serving each node's podresources socket in ``podresources_dir/<node>``."""

    def __init__(self, spec: Path, kubeconfig: Path, state_dir: Path, podresources_dir: Path) -> None:
        super().__init__(spec, kubeconfig, state_dir)
        self.podresources_dir = podresources_dir

    def argv(self) -> list[str]:
        return [*super().argv(), "--podresources-dir", str(self.podresources_dir)]


@pytest.fixture(scope="module")
def nrt_cluster(control_plane: ControlPlane, kube_controller_manager: Process, nrt_crd: None) -> ControlPlane:
    """The control plane with the controller manager (it lifts the new nodes' not-ready taint) and the CRD."""
    control_plane.namespace_with_account(NAMESPACE)
    return control_plane


def _nrt(plane: ControlPlane, node: str) -> dict[str, Any] | None:
    return get(plane, NRT, node, namespace=None)


@pytest.fixture(scope="module")
def nrt_nodes(
    nrt_cluster: ControlPlane, exporter_binaries: ExporterBinaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Three nodes of one group (its name is yielded: the label ``kubeletemu-e2e=<group>``), each with an RTE
    that has published its NodeResourceTopology."""
    workdir = tmp_path_factory.mktemp("nrt-nodes")
    sysfs_root, _ = write_tree(workdir / "host", SHAPE)
    kubelet_config = workdir / "kubelet-config.yaml"
    kubelet_config.write_text(yaml.safe_dump(NODE_CONFIG))
    group = f"t{uuid.uuid4().hex[:6]}"
    # Unix socket paths are limited to 107 bytes: the sockets go under a short directory in /tmp.
    with tempfile.TemporaryDirectory(prefix="nrt-", dir="/tmp") as sockets:
        nodes = PodresourcesNodes(
            nodes_file(workdir, group, NODES, NODE_CONFIG),
            nrt_cluster.kubeconfig,
            workdir / "state",
            Path(sockets),
        )
        exporters: list[ex.Exporter] = []
        try:
            nodes.start()
            for index in range(NODES):
                name = f"{group}-{index:03d}"
                node_dir = workdir / name
                node_dir.mkdir()
                files = ex.NodeFiles(
                    node_name=name,
                    podresources_socket=Path(sockets) / name / "kubelet.sock",
                    state_dir=workdir / "state" / name,
                    kubelet_config=kubelet_config,
                    sysfs_root=sysfs_root,
                )
                exporters.append(
                    ex.rte(exporter_binaries.rte, files, nrt_cluster.kubeconfig, node_dir, METHOD).start()
                )
            wait_for("every RTE published", lambda: _published(nrt_cluster, group, exporters))
            yield group
        finally:
            for exporter in exporters:
                exporter.stop()
            nodes.stop()
            nrt_cluster.kubectl(
                "delete", "node", "-l", f"kubeletemu-e2e={group}", "--wait=false", check=False
            )
            for index in range(NODES):
                nrt_cluster.kubectl("delete", NRT, f"{group}-{index:03d}", "--ignore-not-found", check=False)


def _published(plane: ControlPlane, group: str, exporters: list[ex.Exporter]) -> bool | None:
    for index, exporter in enumerate(exporters):
        if not exporter.running():
            raise AssertionError(f"RTE of node {index} exited:\n{exporter.tail()}")
        if not (_nrt(plane, f"{group}-{index:03d}") or {}).get("zones"):
            return None
    return True


@pytest.fixture
def pods(nrt_cluster: ControlPlane) -> Iterator[list[str]]:
    """The names of the pods a test made, deleted afterwards (the nodes free what they held)."""
    names: list[str] = []
    yield names
    for name in names:
        nrt_cluster.kubectl(
            "-n", NAMESPACE, "delete", "pod", name, "--wait=true", "--timeout=60s", check=False
        )


def _create_pod(plane: ControlPlane, names: list[str], group: str, cpus: int, scheduler: str) -> str:
    """A Guaranteed pod of ``cpus`` exclusive CPUs for the group's nodes, scheduled by ``scheduler``."""
    name = f"p{uuid.uuid4().hex[:8]}"
    resources = {"cpu": str(cpus), "memory": "1Gi"}
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {"kubeletemu-e2e": group},
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": resources, "limits": resources},
                }
            ],
        },
    }
    plane.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    names.append(name)
    return name


def _pod(plane: ControlPlane, name: str) -> dict[str, Any]:
    found = get(plane, "pod", name, namespace=NAMESPACE)
    assert found is not None, f"pod {name} is gone"
    return found


def _in_phase(plane: ControlPlane, name: str, phase: str) -> dict[str, Any] | None:
    found = _pod(plane, name)
    status = found.get("status", {})
    if status.get("phase") == "Failed" and phase != "Failed":
        raise AssertionError(f"pod {name} Failed: {status.get('reason')}: {status.get('message')}")
    return found if status.get("phase") == phase else None


def _scheduled_by(plane: ControlPlane, name: str) -> str | None:
    """The component that reported the pod's Scheduled event: the profile's schedulerName."""
    events = plane.get_json("events", "-n", NAMESPACE, "--field-selector", f"involvedObject.name={name}")
    for event in events.get("items", []):  # type: ignore[attr-defined]
        if event.get("reason") == "Scheduled":
            return str(event.get("reportingComponent") or event.get("source", {}).get("component"))
    return None


def _unschedulable(plane: ControlPlane, name: str, reason: str) -> dict[str, Any] | None:
    """The pod's PodScheduled condition once it is Unschedulable for ``reason``. The overreserve cache may
    first say "invalid node topology data" for a node where another scheduler placed a pod (a foreign pod:
    the node is not trusted until its next resync), then retries."""
    conditions = _pod(plane, name).get("status", {}).get("conditions") or []
    for condition in conditions:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable":
            return dict(condition) if reason in condition.get("message", "") else None
    return None


def _available(plane: ControlPlane, group: str) -> dict[str, dict[str, dict[str, str]]]:
    """Each node's NRT as RTE last wrote it: zone -> resource -> available."""
    return {
        f"{group}-{index:03d}": {
            zone["name"]: {r["name"]: str(r["available"]) for r in zone.get("resources") or []}
            for zone in (_nrt(plane, f"{group}-{index:03d}") or {}).get("zones") or []
        }
        for index in range(NODES)
    }


@contextlib.contextmanager
def _explained(plane: ControlPlane, name: str, scheduler: Process) -> Iterator[None]:
    """A failed wait says where the pod is, what RTE published and what its scheduler logged."""
    try:
        yield
    except AssertionError as error:
        pod = _pod(plane, name)
        available = _available(plane, pod["spec"]["nodeSelector"]["kubeletemu-e2e"])
        raise AssertionError(
            f"{error}\npod status: {json.dumps(pod.get('status'), indent=1)}\nNRT available: {available}\n"
            f"{scheduler.name} log:\n{scheduler.tail(20)}"
        ) from None


NRT_SCHEDULERS = ("nrt_scheduler", "nrt_scheduler_overreserve")
SCHEDULER_NAMES = {
    "nrt_scheduler": schedulers.NRT_PASSTHROUGH,
    "nrt_scheduler_overreserve": schedulers.NRT_OVERRESERVE,
}


@pytest.mark.parametrize("fixture", NRT_SCHEDULERS)
def test_pod_fitting_a_numa_node_is_bound_and_runs(
    fixture: str, request: pytest.FixtureRequest, nrt_cluster: ControlPlane, nrt_nodes: str, pods: list[str]
) -> None:
    process: Process = request.getfixturevalue(fixture)
    scheduler = SCHEDULER_NAMES[fixture]
    name = _create_pod(nrt_cluster, pods, nrt_nodes, FITS_A_NUMA_NODE, scheduler)
    with _explained(nrt_cluster, name, process):
        running = wait_for(f"pod {name} Running", lambda: _in_phase(nrt_cluster, name, "Running"))
    assert running["spec"]["nodeName"].startswith(f"{nrt_nodes}-")
    assert wait_for(f"pod {name}'s Scheduled event", lambda: _scheduled_by(nrt_cluster, name)) == scheduler


@pytest.mark.parametrize("fixture", NRT_SCHEDULERS)
def test_pod_fitting_no_numa_node_is_not_bound(
    fixture: str, request: pytest.FixtureRequest, nrt_cluster: ControlPlane, nrt_nodes: str, pods: list[str]
) -> None:
    process: Process = request.getfixturevalue(fixture)
    name = _create_pod(nrt_cluster, pods, nrt_nodes, FITS_NO_NUMA_NODE, SCHEDULER_NAMES[fixture])
    # "0/N nodes are available: 3 cannot align container, ..." (the other nodes fail the nodeSelector).
    reason = f"{NODES} cannot align container"
    with _explained(nrt_cluster, name, process):
        wait_for(f"pod {name} Unschedulable: {reason}", lambda: _unschedulable(nrt_cluster, name, reason))
    assert not _pod(nrt_cluster, name)["spec"].get("nodeName")


def test_default_scheduler_binds_it_and_the_node_refuses(
    kube_scheduler: Process, nrt_cluster: ControlPlane, nrt_nodes: str, pods: list[str]
) -> None:
    name = _create_pod(nrt_cluster, pods, nrt_nodes, FITS_NO_NUMA_NODE, "default-scheduler")
    failed = wait_for(f"pod {name} Failed", lambda: _in_phase(nrt_cluster, name, "Failed"))
    assert failed["spec"]["nodeName"].startswith(f"{nrt_nodes}-")
    assert (failed["status"]["reason"], failed["status"]["message"]) == ("TopologyAffinityError", REFUSAL)


def test_second_kube_scheduler_version_binds_to_kubeletemu_nodes(
    kube_scheduler_second: Process,
    scheduler_plugins_assets: build.Assets,
    nrt_cluster: ControlPlane,
    nrt_nodes: str,
    pods: list[str],
) -> None:
    binary = scheduler_plugins_assets.path(scheduler_plugins.KUBE_SCHEDULER)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True, timeout=30)
    assert version.stdout.strip() == f"Kubernetes v{SCHEDULER_PLUGINS.kubernetes.kubernetes}"
    name = _create_pod(nrt_cluster, pods, nrt_nodes, 2, scheduler_plugins.KUBE_SCHEDULER)
    running = wait_for(f"pod {name} Running", lambda: _in_phase(nrt_cluster, name, "Running"))
    assert running["spec"]["nodeName"].startswith(f"{nrt_nodes}-")
    scheduled_by = wait_for(f"pod {name}'s Scheduled event", lambda: _scheduled_by(nrt_cluster, name))
    assert scheduled_by == scheduler_plugins.KUBE_SCHEDULER
