"""scheduler-plugins' scheduler and kube-scheduler of the Kubernetes release it was released against, built in
ONE ``go build`` from ``tests/upstream/scheduler-plugins/v<minor>/`` (tests/upstream/pins.py says why
v0.34.7 and Kubernetes v1.34.7).

Both commands are kube-scheduler's app (scheduler-plugins' ``cmd/scheduler/main.go`` calls
``app.NewSchedulerCommand`` with its plugins registered), so they share nearly every package: the second
binary costs little more than its link. ``go build -o <dir>/`` names them after their packages (``scheduler``
and ``kube-scheduler``); they are renamed to the component names below, which cannot clash with the newest
release's ``kube-scheduler`` in a ``KUBELETEMU_UPSTREAM_ASSETS`` directory.

Binaries go to ``<cache>/scheduler-plugins/v<version>/``, reused while the build key of
:func:`tests.upstream.build.build_key` holds (go.mod, go.sum, Go version, flags). The version variables are
Kubernetes v1.34.7's in both (scheduler-plugins' Makefile sets ``gitVersion`` to its own tag; one ``go
build`` has one ``-ldflags``, and kube-scheduler's must be right).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.upstream import build
from tests.upstream.pins import SCHEDULER_PLUGINS, SchedulerPluginsPin

SCHEDULER = "scheduler-plugins"  # sigs.k8s.io/scheduler-plugins/cmd/scheduler
KUBE_SCHEDULER = (
    f"kube-scheduler-{SCHEDULER_PLUGINS.kubernetes.minor}"  # k8s.io/kubernetes/cmd/kube-scheduler
)
COMPONENTS = (SCHEDULER, KUBE_SCHEDULER)
# component -> (package, the name `go build -o <dir>/` gives its binary)
_PACKAGES = {
    SCHEDULER: ("sigs.k8s.io/scheduler-plugins/cmd/scheduler", "scheduler"),
    KUBE_SCHEDULER: ("k8s.io/kubernetes/cmd/kube-scheduler", "kube-scheduler"),
}


def output_dir(pin: SchedulerPluginsPin = SCHEDULER_PLUGINS) -> Path:
    return build.cache_root() / SCHEDULER / f"v{pin.version}"


def key(pin: SchedulerPluginsPin = SCHEDULER_PLUGINS) -> str:
    return build.build_key(pin.kubernetes, pin.module_dir, kubernetes=True)


def stale(directory: Path, key: str) -> list[str]:
    """The components whose binary is absent or was built under another key."""
    stamps_file = directory / build.STAMPS
    stamps: dict[str, str] = json.loads(stamps_file.read_text()) if stamps_file.is_file() else {}
    return [c for c in COMPONENTS if stamps.get(c) != key or not (directory / c).is_file()]


def ensure(
    pin: SchedulerPluginsPin = SCHEDULER_PLUGINS, *, log: Callable[[str], None] = build._stderr
) -> build.Assets:
    """Both binaries, built together if either is absent or stale; from ``$KUBELETEMU_UPSTREAM_ASSETS``
    unbuilt when that is set."""
    if override := os.environ.get(build.ASSETS_ENV):
        assets = build.Assets(Path(override))
        if missing := [c for c in COMPONENTS if not os.access(assets.path(c), os.X_OK)]:
            raise build.MissingAssetsError(
                f"{build.ASSETS_ENV}={override} has no executable {', '.join(missing)}"
            )
        return assets
    assets = build.Assets(output_dir(pin))
    with build._locked(assets.directory):
        build_key = key(pin)
        if not stale(assets.directory, build_key):
            return assets
        scratch = assets.directory / ".go-build-out"
        shutil.rmtree(scratch, ignore_errors=True)
        build._go_build(
            pin.kubernetes,
            pin.module_dir,
            [package for package, _ in _PACKAGES.values()],
            f"{scratch}/",
            kubernetes=True,
            log=log,
        )
        for component, (_, built_name) in _PACKAGES.items():
            os.replace(scratch / built_name, assets.path(component))
        scratch.rmdir()
        (assets.directory / build.STAMPS).write_text(
            json.dumps(dict.fromkeys(COMPONENTS, build_key), indent=1, sort_keys=True) + "\n"
        )
    return assets
