"""The real exporters on the real daemon's podresources socket, publishing to the real API server.

For each exporter and each kubelet version the daemon emulates, a sequence of admits and removes goes
through the daemon (and the pods into the API server, bound to the node, as the scheduler would leave them:
nfd-topology-updater reads each listed pod's QoS from there). After each step the NodeResourceTopology the
exporter wrote must equal ``kubeletemu nrt --flavour <exporter>``'s, field by field.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hostprobe.synthetic import write_tree
from kubeletemu.versions.version import SUPPORTED
from tests.daemon.daemon_process import DaemonProcess
from tests.e2e import exporters as ex
from tests.e2e.exporter_pods import PODS, STEPS
from tests.podresources.nodes import GENERAL_HOST, general_config
from tests.upstream.controlplane import ControlPlane
from tests.upstream.exporters import ExporterBinaries

pytestmark = pytest.mark.slow

NRT = "noderesourcetopologies.topology.node.k8s.io"

# Scans run every second; under load an update can take a few.
UPDATE_TIMEOUT = 60.0
METHOD_RTE = "with-exclusive-resources"


@pytest.fixture(scope="module")
def sysfs_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_tree(tmp_path_factory.mktemp("exporters-host"), GENERAL_HOST)


@pytest.fixture(scope="module")
def crd(nrt_crd: None) -> None:
    """The NodeResourceTopology CRD (the session's, conftest.nrt_crd)."""


def _namespaces(plane: ControlPlane) -> None:
    for namespace in sorted({p["metadata"]["namespace"] for p in PODS}):
        plane.namespace_with_account(namespace)


@pytest.fixture
def node_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes: a short directory under /tmp.
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ex-", dir="/tmp") as directory:
        yield Path(directory)


def _read_nrt(plane: ControlPlane, name: str) -> dict[str, Any] | None:
    result = plane.kubectl(
        "get", "noderesourcetopologies.topology.node.k8s.io", name, "-o", "json", check=False
    )
    if result.returncode != 0:
        return None
    parsed: dict[str, Any] = yaml.safe_load(result.stdout)
    return parsed


@pytest.mark.parametrize("version", [v for v in SUPPORTED])
@pytest.mark.parametrize("exporter", ex.EXPORTERS)
def test_exporter_writes_kubeletemu_nrt(
    exporter: str,
    version: str,
    control_plane: ControlPlane,
    crd: None,
    exporter_binaries: ExporterBinaries,
    sysfs_tree: tuple[Path, Path],
    node_dir: Path,
) -> None:
    node_name = f"{'rte' if exporter == ex.RTE else 'nfd'}-{version.replace('.', '-')}"
    config = general_config(policy="best-effort", kubelet_version=version).replace("node-a", node_name)
    daemon = DaemonProcess.in_dir(node_dir, config, sysfs_tree)
    daemon.start(timeout=120)
    assert daemon.podresources_socket is not None
    files = ex.NodeFiles(
        node_name=node_name,
        podresources_socket=daemon.podresources_socket,
        state_dir=daemon.state_dir,
        kubelet_config=ex.write_kubelet_config(config, node_dir / "kubelet-config.yaml"),
        sysfs_root=sysfs_tree[0],
    )
    _namespaces(control_plane)
    if exporter == ex.RTE:
        process = ex.rte(exporter_binaries.rte, files, control_plane.kubeconfig, node_dir, METHOD_RTE)
    else:
        process = ex.nfd(exporter_binaries.nfd, files, control_plane.kubeconfig, node_dir)
    flavour = "rte" if exporter == ex.RTE else "nfd"
    process.start()
    kept = ""
    try:
        for admit, remove in STEPS:
            for pod in admit:
                control_plane.kubectl("apply", "-f", "-", input=ex.pod_manifests([pod], node_name))
                ex.kubeletemu_cli(daemon.socket, "admit", "-f", "-", input=yaml.safe_dump(pod))
            for pod in remove:
                ex.kubeletemu_cli(daemon.socket, "remove", "--uid", pod["metadata"]["uid"])
                control_plane.kubectl(
                    "delete",
                    "pod",
                    "-n",
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    "--grace-period=0",
                    "--force",
                )
            expected = ex.kubeletemu_nrt(daemon.socket, flavour, METHOD_RTE if exporter == ex.RTE else None)
            if exporter == ex.NFD:
                expected = ex.with_kept_fingerprint(expected, kept)
                kept = ex.fingerprint_of(expected)
            ex.wait_equal(expected, lambda: _read_nrt(control_plane, node_name), UPDATE_TIMEOUT, process)
    finally:
        process.stop()
        daemon.stop()
        control_plane.kubectl(
            "delete",
            "noderesourcetopologies.topology.node.k8s.io",
            node_name,
            "--ignore-not-found",
            check=False,
        )
