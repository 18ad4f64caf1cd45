"""The upstream control plane as session fixtures: one per pytest worker, started on first use.

``KUBELETEMU_E2E_VERSION`` picks the pinned Kubernetes minor (default: the newest, tests/upstream/pins.py).
Absent binaries are BUILT, never skipped (tests/upstream/build.py; ``.ci/run`` builds them before pytest,
so that no test pays for it); ``KUBELETEMU_UPSTREAM_ASSETS`` points at prebuilt ones instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.upstream import build, exporters, scheduler_plugins, schedulers
from tests.upstream.controlplane import ControlPlane, Process
from tests.upstream.pins import COMPONENTS

VERSION_ENV = "KUBELETEMU_E2E_VERSION"


CONTROL_PLANE = ("etcd", "kube-apiserver", "kubectl")
# The namespace of the tests that run `kubeletemu nodes` in the cluster (test_nodes and the feed tests).
NODES_NAMESPACE = "kubeletemu-nodes"


@pytest.fixture(scope="session")
def upstream_assets() -> build.Assets:
    """The control plane's binaries. Built, every component is built at once (one `go build` shares the
    compilation, so the scheduler fixtures find theirs ready); from an override directory, only these
    three must be there."""
    overridden = build.ASSETS_ENV in os.environ
    return build.ensure(os.environ.get(VERSION_ENV), CONTROL_PLANE if overridden else COMPONENTS)


@pytest.fixture(scope="session")
def control_plane(upstream_assets: build.Assets) -> Iterator[ControlPlane]:
    """etcd and kube-apiserver on loopback, with a kubeconfig (``control_plane.kubeconfig``) as an admin."""
    plane = ControlPlane.start(upstream_assets)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def kube_scheduler(control_plane: ControlPlane) -> Iterator[Process]:
    """The default kube-scheduler, no leader election."""
    build.ensure(os.environ.get(VERSION_ENV), ["kube-scheduler"])
    yield from _running(control_plane, control_plane.start_scheduler())


def _running(plane: ControlPlane, process: Process) -> Iterator[Process]:
    try:
        yield process
    finally:
        plane.stop_process(process)


@pytest.fixture(scope="session")
def kube_controller_manager(control_plane: ControlPlane) -> Iterator[Process]:
    """kube-controller-manager with its default controllers (the node lifecycle controller among them, which
    lifts the not-ready taint of a node that reports Ready, and the service-account controller)."""
    build.ensure(os.environ.get(VERSION_ENV), ["kube-controller-manager"])
    yield from _running(control_plane, control_plane.start_controller_manager())


@pytest.fixture(scope="session")
def exporter_binaries() -> exporters.ExporterBinaries:
    """resource-topology-exporter and nfd-topology-updater, built if absent (tests/upstream/exporters.py),
    and the NodeResourceTopology CRD of the noderesourcetopology-api module."""
    return exporters.ensure_all()


@pytest.fixture(scope="session")
def nrt_crd(control_plane: ControlPlane) -> None:
    """The NodeResourceTopology CRD of the noderesourcetopology-api module RTE is built with, Established."""
    control_plane.kubectl("apply", "-f", str(exporters.crd_path()))
    control_plane.kubectl(
        "wait",
        "--for=condition=Established",
        "crd/noderesourcetopologies.topology.node.k8s.io",
        "--timeout=60s",
    )


@pytest.fixture(scope="session")
def scheduler_plugins_assets() -> build.Assets:
    """scheduler-plugins' scheduler and the kube-scheduler of its Kubernetes release (one `go build`)."""
    return scheduler_plugins.ensure()


def _start_configured(
    plane: ControlPlane, binary: Path, name: str, config: dict[str, object]
) -> Iterator[Process]:
    path = schedulers.write(config, plane.workdir / f"{name}.config.json")
    yield from _running(plane, plane.start_scheduler([f"--config={path}"], binary=binary, name=name))


@pytest.fixture(scope="session")
def nrt_scheduler(
    control_plane: ControlPlane, nrt_crd: None, scheduler_plugins_assets: build.Assets
) -> Iterator[Process]:
    """scheduler-plugins' scheduler, profile ``nrt-passthrough``: NodeResourceTopologyMatch at filter and
    score, no cache (it reads each NodeResourceTopology as last written)."""
    config = schedulers.nrt_config(control_plane.kubeconfig, schedulers.NRT_PASSTHROUGH)
    binary = scheduler_plugins_assets.path(scheduler_plugins.SCHEDULER)
    yield from _start_configured(control_plane, binary, schedulers.NRT_PASSTHROUGH, config)


@pytest.fixture(scope="session")
def nrt_scheduler_overreserve(
    control_plane: ControlPlane, nrt_crd: None, scheduler_plugins_assets: build.Assets
) -> Iterator[Process]:
    """scheduler-plugins' scheduler, profile ``nrt-overreserve``: NodeResourceTopologyMatch at filter, score,
    reserve and postBind with the overreserve cache (resync every schedulers.RESYNC_SECONDS)."""
    config = schedulers.nrt_config(
        control_plane.kubeconfig, schedulers.NRT_OVERRESERVE, cache_resync_seconds=schedulers.RESYNC_SECONDS
    )
    binary = scheduler_plugins_assets.path(scheduler_plugins.SCHEDULER)
    yield from _start_configured(control_plane, binary, schedulers.NRT_OVERRESERVE, config)


@pytest.fixture(scope="session")
def kube_scheduler_second(
    control_plane: ControlPlane, scheduler_plugins_assets: build.Assets
) -> Iterator[Process]:
    """kube-scheduler of scheduler-plugins' Kubernetes release (1.34), the default plugins under the
    schedulerName ``scheduler_plugins.KUBE_SCHEDULER`` (the default name is the newest kube-scheduler's)."""
    name = scheduler_plugins.KUBE_SCHEDULER
    config = schedulers.default_config(control_plane.kubeconfig, name)
    yield from _start_configured(control_plane, scheduler_plugins_assets.path(name), name, config)


@pytest.fixture(scope="module")
def cluster(
    control_plane: ControlPlane, kube_scheduler: Process, kube_controller_manager: Process
) -> ControlPlane:
    """The control plane with the scheduler and the controller manager, and a namespace whose default
    service account exists. The API server's TaintNodesByCondition admission gives every new Node the
    not-ready NoSchedule taint; the controller manager's node lifecycle controller lifts it once the node
    reports Ready, as in any cluster (without it the scheduler never binds)."""
    control_plane.namespace_with_account(NODES_NAMESPACE)
    return control_plane
