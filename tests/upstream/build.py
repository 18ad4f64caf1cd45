"""Builds the upstream components at a pinned release into a cache, reusing what it already built.

``python -m tests.upstream.build [--version 1.37] [--components kube-apiserver,etcd,...]`` builds the
Kubernetes commands of one release in ONE ``go build`` (they share most of their packages, so the second
binary costs little more than its link) and etcd from its own module, into
``$KUBELETEMU_UPSTREAM_CACHE/<release>/bin`` (default ``~/.cache/kubeletemu/upstream``), and prints that
directory. A binary is reused while its build key holds: the release, the committed go.mod and go.sum, the
Go version and the build flags. ``KUBELETEMU_UPSTREAM_ASSETS=<dir>`` points at prebuilt binaries instead,
as envtest's ``KUBEBUILDER_ASSETS`` does: nothing is built, and a missing one is an error.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.upstream.pins import COMPONENTS, ETCD, KUBERNETES_COMPONENTS, PINS, Pin, pin_for, unwritten

ASSETS_ENV = "KUBELETEMU_UPSTREAM_ASSETS"
CACHE_ENV = "KUBELETEMU_UPSTREAM_CACHE"
STAMPS = ".build-keys.json"


class MissingAssetsError(RuntimeError):
    """The override directory lacks a component the caller needs."""


@dataclass(frozen=True)
class Assets:
    """A directory holding the components' binaries under their upstream names."""

    directory: Path

    def path(self, component: str) -> Path:
        return self.directory / component


def cache_root() -> Path:
    if root := os.environ.get(CACHE_ENV):
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "kubeletemu" / "upstream"


def bin_dir(pin: Pin) -> Path:
    return cache_root() / pin.kubernetes / "bin"


def _ldflags(pin: Pin, *, kubernetes: bool) -> str:
    """-s -w: no symbol table or DWARF, which shortens the links. The version variables are those
    hack/lib/version.sh sets, so that `kubectl version`, /version and the Node's kubeletVersion tell the
    release (unset, they say v0.0.0-master)."""
    flags = ["-s", "-w"]
    if kubernetes:
        major, minor = pin.kubernetes.split(".")[:2]
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [
                f"-X {package}.gitVersion=v{pin.kubernetes}",
                f"-X {package}.gitMajor={major}",
                f"-X {package}.gitMinor={minor}",
                f"-X {package}.gitTreeState=clean",
            ]
    return " ".join(flags)


def _go_build_args(pin: Pin, *, kubernetes: bool) -> list[str]:
    # Static binaries as the release builds them (CGO_ENABLED=0 in the environment); -trimpath keeps the
    # build cache's keys free of this machine's paths.
    return ["go", "build", "-trimpath", "-buildvcs=false", "-ldflags", _ldflags(pin, kubernetes=kubernetes)]


_GO_VERSION: list[str] = []


def _go_version() -> str:
    if not _GO_VERSION:
        _GO_VERSION.append(
            subprocess.run(
                ["go", "env", "GOVERSION"], check=True, capture_output=True, text=True
            ).stdout.strip()
        )
    return _GO_VERSION[0]


def build_key(pin: Pin, module_dir: Path, *, kubernetes: bool) -> str:
    digest = hashlib.sha256()
    for part in (
        (module_dir / "go.mod").read_bytes(),
        (module_dir / "go.sum").read_bytes(),
        _go_version().encode(),
        " ".join(_go_build_args(pin, kubernetes=kubernetes)).encode(),
    ):
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()[:16]


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One build per directory at a time: pytest-xdist's workers may all ask for the binaries at once."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _go_build(
    pin: Pin,
    module_dir: Path,
    packages: Sequence[str],
    out: str,
    *,
    kubernetes: bool,
    log: Callable[[str], None],
) -> None:
    env = {**os.environ, "CGO_ENABLED": "0"}
    log(f"building {', '.join(p.rsplit('/', 1)[-1] for p in packages)} ({pin.kubernetes}) in {module_dir}")
    started = time.monotonic()
    subprocess.run(
        [*_go_build_args(pin, kubernetes=kubernetes), "-o", out, *packages],
        check=True,
        cwd=module_dir,
        env=env,
    )
    log(f"built in {time.monotonic() - started:.0f} s")


def _stderr(message: str) -> None:
    print(f"tests.upstream.build: {message}", file=sys.stderr, flush=True)


def ensure(
    version: str | None = None,
    components: Iterable[str] = COMPONENTS,
    *,
    log: Callable[[str], None] = _stderr,
) -> Assets:
    """The binaries of ``components`` at the pinned release of ``version`` (newest by default), built if
    absent or stale; from ``$KUBELETEMU_UPSTREAM_ASSETS`` unbuilt when that is set."""
    wanted = list(dict.fromkeys(components))
    if unknown := [c for c in wanted if c not in COMPONENTS]:
        raise ValueError(f"unknown components {unknown}; known: {', '.join(COMPONENTS)}")
    if override := os.environ.get(ASSETS_ENV):
        assets = Assets(Path(override))
        if missing := [c for c in wanted if not os.access(assets.path(c), os.X_OK)]:
            raise MissingAssetsError(f"{ASSETS_ENV}={override} has no executable {', '.join(missing)}")
        return assets
    pin = pin_for(version)
    if pin.minor in unwritten():
        raise ValueError(f"no Go module for {pin.minor} yet: run python -m tests.upstream.gomod {pin.minor}")
    assets = Assets(bin_dir(pin))
    with _locked(assets.directory):
        stamps_file = assets.directory / STAMPS
        stamps: dict[str, str] = json.loads(stamps_file.read_text()) if stamps_file.is_file() else {}
        groups = (
            (pin.kubernetes_module_dir, [c for c in wanted if c in KUBERNETES_COMPONENTS], True),
            (pin.etcd_module_dir, [c for c in wanted if c == ETCD], False),
        )
        for module_dir, group, kubernetes in groups:
            if not group:
                continue
            key = build_key(pin, module_dir, kubernetes=kubernetes)
            stale = [c for c in group if stamps.get(c) != key or not assets.path(c).is_file()]
            if not stale:
                continue
            if kubernetes:
                packages = [f"k8s.io/kubernetes/cmd/{c}" for c in stale]
                _go_build(pin, module_dir, packages, f"{assets.directory}/", kubernetes=True, log=log)
            else:
                _go_build(
                    pin,
                    module_dir,
                    ["go.etcd.io/etcd/server/v3"],
                    str(assets.path(ETCD)),
                    kubernetes=False,
                    log=log,
                )
            stamps.update(dict.fromkeys(stale, key))
            stamps_file.write_text(json.dumps(stamps, indent=1, sort_keys=True) + "\n")
    return assets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.upstream.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="append",
        help=f"a pinned minor or release (repeatable; default {max(PINS)}); 'all' for every pin",
    )
    # The node topology exporters (tests/upstream/exporters.py), the fake CRI the real kubelet runs over
    # (tests/upstream/kubelet.py), the extender wire's Go program at each kube-scheduler version
    # (tests/extender/gowire.py) and scheduler-plugins' scheduler with its kube-scheduler
    # (tests/upstream/scheduler_plugins.py) are pinned apart from Kubernetes: built once whatever --version
    # says.
    from tests.extender import gowire
    from tests.oracle import harness
    from tests.oracle.scheduler import build as oracle
    from tests.upstream import exporters, kubelet, scheduler_plugins

    tools = (*exporters.PINS, kubelet.FAKECRI, *gowire.WIRE_PINS)
    # The scheduling-queue oracle (tests/oracle/scheduler/build.py) at each release it is built for.
    oracles = {oracle.component(release): release for release in oracle.BUILDS}
    # The node oracle's harness (tests/oracle/harness.py) is per release like the Kubernetes commands, but a
    # module of its own; it is built after them, from the compiled packages they left in the Go build cache.
    apart = (*(pin.component for pin in tools), *scheduler_plugins.COMPONENTS, *oracles, harness.COMPONENT)
    parser.add_argument(
        "--components",
        default=",".join((*COMPONENTS, *apart)),
        help=f"comma-separated (default: all of them, {', '.join(apart)} included)",
    )
    args = parser.parse_args(argv)
    versions = args.version or [None]
    if "all" in versions:
        versions = list(PINS)
    wanted = [c for c in args.components.split(",") if c]
    components = [c for c in wanted if c not in apart]
    try:
        for version in versions if components else []:
            started = time.monotonic()
            assets = ensure(version, components)
            _stderr(f"{', '.join(components)} ready in {time.monotonic() - started:.0f} s")
            print(assets.directory)
        if harness.COMPONENT in wanted:
            for version in versions:
                if pin_for(version).minor in harness.written():
                    print(harness.ensure(version).parent)
                elif version is not None:
                    written = ", ".join(harness.written())
                    _stderr(f"no {harness.COMPONENT} for {pin_for(version).minor} (written: {written})")
        for pin in tools:
            if pin.component in wanted:
                print(exporters.ensure_exporter(pin).parent)
        if set(wanted) & set(scheduler_plugins.COMPONENTS):
            print(scheduler_plugins.ensure().directory)
        for component, release in oracles.items():
            if component in wanted:
                print(oracle.ensure(release).parent)
    except (ValueError, MissingAssetsError, subprocess.CalledProcessError) as error:
        _stderr(str(error))
        return 1
    return 0


if __name__ == "__main__":
    # The importable module's main, not this __main__ copy's: the exporters and scheduler-plugins modules
    # import tests.upstream.build, and their MissingAssetsError must be the class main() catches.
    from tests.upstream import build

    sys.exit(build.main())
