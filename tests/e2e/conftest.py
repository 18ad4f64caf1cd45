"""The upstream control plane as session fixtures: one per pytest worker, started on first use.

``KUBELETEMU_E2E_VERSION`` picks the pinned Kubernetes minor (default: the newest, tests/upstream/pins.py).
Absent binaries are BUILT, never skipped (tests/upstream/build.py; ``.ci/run`` builds them before pytest,
so that no test pays for it); ``KUBELETEMU_UPSTREAM_ASSETS`` points at prebuilt ones instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.upstream import build
from tests.upstream.controlplane import ControlPlane, Process

VERSION_ENV = "KUBELETEMU_E2E_VERSION"


@pytest.fixture(scope="session")
def upstream_assets() -> build.Assets:
    return build.ensure(os.environ.get(VERSION_ENV))


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
    process = control_plane.start_scheduler()
    try:
        yield process
    finally:
        control_plane.stop_process(process)


@pytest.fixture(scope="session")
def kube_controller_manager(control_plane: ControlPlane) -> Iterator[Process]:
    """kube-controller-manager with its default controllers (the node lifecycle controller among them, which
    lifts the not-ready taint of a node that reports Ready, and the service-account controller)."""
    process = control_plane.start_controller_manager()
    try:
        yield process
    finally:
        control_plane.stop_process(process)
