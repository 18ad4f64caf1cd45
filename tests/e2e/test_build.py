"""The build command: pins match the committed Go modules, an override directory is used as envtest uses
KUBEBUILDER_ASSETS, errors are one line, and a second build reuses the first."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.upstream import build
from tests.upstream.pins import COMPONENTS, KUBERNETES_COMPONENTS, PINS, pin_for

ROOT = Path(__file__).resolve().parents[2]


def _run_build(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.upstream.build", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
        timeout=60,
    )


@pytest.mark.parametrize("minor", sorted(PINS))
def test_committed_module_builds_the_pinned_release(minor: str) -> None:
    pin = PINS[minor]
    gomod = (pin.kubernetes_module_dir / "go.mod").read_text()
    assert f"require k8s.io/kubernetes v{pin.kubernetes}\n" in gomod
    assert f"\tk8s.io/api => k8s.io/api v{pin.staging}\n" in gomod
    assert all(f"tool k8s.io/kubernetes/cmd/{c}\n" in gomod for c in KUBERNETES_COMPONENTS)
    # Every staging replacement at the release's own staging tag, none left at another.
    replaced = [line.split()[-1] for line in gomod.splitlines() if "=> k8s.io/" in line]
    assert replaced and set(replaced) == {f"v{pin.staging}"}
    assert (pin.kubernetes_module_dir / "go.sum").stat().st_size > 0
    assert f"require go.etcd.io/etcd/server/v3 v{pin.etcd}\n" in (pin.etcd_module_dir / "go.mod").read_text()


def test_versions_name_a_minor_or_its_pinned_release() -> None:
    newest = pin_for(None)
    assert pin_for(f"v{newest.minor}") == pin_for(newest.kubernetes) == newest
    with pytest.raises(ValueError, match=r"no pinned Kubernetes release for '1\.36\.0'"):
        pin_for("1.36.0")


def test_override_directory_is_used_and_nothing_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for component in COMPONENTS:
        (tmp_path / component).write_text("#!/bin/sh\n")
        (tmp_path / component).chmod(0o755)
    monkeypatch.setenv(build.ASSETS_ENV, str(tmp_path))
    monkeypatch.setenv("PATH", "")  # no go: building anything would fail
    assert build.ensure("1.33").directory == tmp_path


def test_override_directory_missing_a_binary_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "etcd").write_text("#!/bin/sh\n")
    (tmp_path / "etcd").chmod(0o755)
    result = _run_build("--components", "etcd,kubectl", env={build.ASSETS_ENV: str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr == f"tests.upstream.build: {build.ASSETS_ENV}={tmp_path} has no executable kubectl\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--version", "1.20"], "no pinned Kubernetes release for '1.20'"),
        (["--components", "kube-proxy"], "unknown components ['kube-proxy']"),
    ],
)
def test_bad_arguments_are_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    result = _run_build(*args, env={build.CACHE_ENV: str(tmp_path)})
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr


@pytest.mark.slow
def test_a_second_build_reuses_the_first() -> None:
    first = build.ensure()
    mtimes = {c: first.path(c).stat().st_mtime_ns for c in COMPONENTS}
    started = time.monotonic()
    second = build.ensure()
    assert time.monotonic() - started < 10
    assert second == first
    assert {c: second.path(c).stat().st_mtime_ns for c in COMPONENTS} == mtimes
