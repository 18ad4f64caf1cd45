"""The upstream control plane as session fixtures: one per pytest worker, started on first use.

``KUBELETEMU_E2E_VERSION`` picks the pinned Kubernetes minor (default: the newest, tests/upstream/pins.py).
Absent binaries are BUILT, never skipped (tests/upstream/build.py; ``.ci/run`` builds them before pytest,
so that no test pays for it); ``KUBELETEMU_UPSTREAM_ASSETS`` points at prebuilt ones instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.upstream import build, exporters
from tests.upstream.controlplane import ControlPlane, Process
from tests.upstream.pins import COMPONENTS

VERSION_ENV = "KUBELETEMU_E2E_VERSION"


CONTROL_PLANE = ("etcd", "kube-apiserver", "kubectl")


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
    process = control_plane.start_scheduler()
    try:
        yield process
    finally:
        control_plane.stop_process(process)


@pytest.fixture(scope="session")
def kube_controller_manager(control_plane: ControlPlane) -> Iterator[Process]:
    """kube-controller-manager with its default controllers (the node lifecycle controller among them, which
    lifts the not-ready taint of a node that reports Ready, and the service-account controller)."""
    build.ensure(os.environ.get(VERSION_ENV), ["kube-controller-manager"])
    process = control_plane.start_controller_manager()
    try:
        yield process
    finally:
        control_plane.stop_process(process)


@pytest.fixture(scope="session")
def exporter_binaries() -> exporters.ExporterBinaries:
    """resource-topology-exporter and nfd-topology-updater, built if absent (tests/upstream/exporters.py),
    and the NodeResourceTopology CRD of the noderesourcetopology-api module."""
    return exporters.ensure_all()
