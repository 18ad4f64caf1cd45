"""The node topology exporters, built from their released Go modules as the Kubernetes components are.

Each exporter has a module of its own under ``tests/upstream/`` (``rte/``, ``nfd/``): its go.mod names the
command as a ``tool`` and requires the release, with the release's own ``replace`` block (which a dependency's
go.mod cannot carry) and go.sum. No upstream code is committed; ``go build`` takes it from the module cache.

* resource-topology-exporter v0.24.0 (the newest tag; the module proxy lists none, so the tag was read
  from the repository).
* nfd-topology-updater from node-feature-discovery v0.19.0 (the newest release tag), with the host-mount
  prefix of its Makefile's local builds (``/``: it reads ``/sys``; the e2e tests give it the node's sysfs
  there in a mount namespace).

Binaries go to ``<cache>/<component>/<version>/`` (the cache of :mod:`tests.upstream.build`), keyed by go.mod,
go.sum, the Go version and the flags. With ``KUBELETEMU_UPSTREAM_ASSETS`` set, the exporters are taken from
that directory unbuilt, like the Kubernetes binaries.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.upstream import build
from tests.upstream.pins import UPSTREAM_DIR

RTE_MODULE = "github.com/k8stopologyawareschedwg/resource-topology-exporter"
NRT_API_MODULE = "github.com/k8stopologyawareschedwg/noderesourcetopology-api"
CRD_FILE = "noderesourcetopologies.crd.yaml"  # the CRD's name in an assets directory


@dataclass(frozen=True)
class ExporterPin:
    component: str
    module_dir: Path
    package: str
    version: str
    ldflags: tuple[str, ...]
    # An alternate go.mod in module_dir (``go build -modfile``; its go.sum is the same name ending ``.sum``):
    # one source built at several versions of its dependencies.
    modfile: str = "go.mod"
    # CGO_ENABLED=0, as the Kubernetes builds: a pin that shares compiled k8s.io packages with them.
    static: bool = False

    def output(self) -> Path:
        return build.cache_root() / self.component / self.version / self.component


RTE = ExporterPin(
    "resource-topology-exporter",
    UPSTREAM_DIR / "rte",
    f"{RTE_MODULE}/cmd/resource-topology-exporter",
    "v0.24.0",
    (
        "-s",
        "-w",
        "-X github.com/k8stopologyawareschedwg/resource-topology-exporter/pkg/version.version=v0.24.0",
    ),
)
NFD = ExporterPin(
    "nfd-topology-updater",
    UPSTREAM_DIR / "nfd",
    "sigs.k8s.io/node-feature-discovery/cmd/nfd-topology-updater",
    "v0.19.0",
    (
        "-s",
        "-w",
        "-X sigs.k8s.io/node-feature-discovery/pkg/version.version=v0.19.0",
    ),
)
PINS = (RTE, NFD)
COMPONENTS = tuple(p.component for p in PINS)


def _argv(pin: ExporterPin, out: Path) -> list[str]:
    modfile = [] if pin.modfile == "go.mod" else [f"-modfile={pin.modfile}"]
    return [
        "go",
        "build",
        *modfile,
        "-trimpath",
        "-buildvcs=false",
        "-ldflags",
        " ".join(pin.ldflags),
        "-o",
        str(out),
        pin.package,
    ]


def _env(pin: ExporterPin) -> dict[str, str] | None:
    return {**os.environ, "CGO_ENABLED": "0"} if pin.static else None


def _key(pin: ExporterPin) -> str:
    digest = hashlib.sha256()
    go = subprocess.run(["go", "env", "GOVERSION"], check=True, capture_output=True, text=True).stdout.strip()
    modfile = pin.module_dir / pin.modfile
    parts = [
        modfile.read_bytes(),
        modfile.with_suffix(".sum").read_bytes(),
        go.encode(),
        " ".join(_argv(pin, Path("-"))).encode(),
    ]
    if pin.static:  # only then: the keys of the pins built with the toolchain's cgo setting stay as they were
        parts.append(b"CGO_ENABLED=0")
    for part in parts:
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()[:16]


def ensure_exporter(pin: ExporterPin, log: Callable[[str], None] = build._stderr) -> Path:
    """The exporter's binary, built when absent or stale (one build at a time per output directory)."""
    if override := os.environ.get(build.ASSETS_ENV):
        path = Path(override) / pin.component
        if not os.access(path, os.X_OK):
            raise build.MissingAssetsError(f"{build.ASSETS_ENV}={override} has no executable {pin.component}")
        return path
    out = pin.output()
    with build._locked(out.parent):
        key = _key(pin)
        stamp = out.parent / ".build-key"
        if out.is_file() and stamp.is_file() and stamp.read_text().strip() == key:
            return out
        log(f"building {pin.component} {pin.version} in {pin.module_dir}")
        started = time.monotonic()
        # The exporters keep the toolchain's own cgo setting: they share no compiled package with the
        # Kubernetes builds (other k8s.io versions), so the CGO_ENABLED=0 those use would buy nothing there.
        subprocess.run(_argv(pin, out), check=True, cwd=pin.module_dir, env=_env(pin))
        log(f"built {pin.component} in {time.monotonic() - started:.0f} s")
        stamp.write_text(key + "\n")
    return out


def crd_path() -> Path:
    """The NodeResourceTopology CRD (``manifests/crd.yaml``) of the noderesourcetopology-api module RTE is
    built with, from the module cache; in an assets directory, its ``noderesourcetopologies.crd.yaml``."""
    if override := os.environ.get(build.ASSETS_ENV):
        path = Path(override) / CRD_FILE
        if not path.is_file():
            raise build.MissingAssetsError(f"{build.ASSETS_ENV}={override} has no {CRD_FILE}")
        return path
    directory = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", NRT_API_MODULE],
        cwd=RTE.module_dir,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not directory:  # not in the module cache yet
        subprocess.run(["go", "mod", "download", NRT_API_MODULE], cwd=RTE.module_dir, check=True)
        return crd_path()
    return Path(directory) / "manifests" / "crd.yaml"


@dataclass(frozen=True)
class ExporterBinaries:
    rte: Path
    nfd: Path
    crd: Path


def ensure_all(log: Callable[[str], None] = build._stderr) -> ExporterBinaries:
    return ExporterBinaries(ensure_exporter(RTE, log), ensure_exporter(NFD, log), crd_path())
