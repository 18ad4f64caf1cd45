"""The build command: pins match the committed Go modules, an override directory is used as envtest uses
KUBEBUILDER_ASSETS, errors are one line, and a second build reuses the first."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.upstream import build, scheduler_plugins
from tests.upstream.pins import (
    COMPONENTS,
    KUBERNETES_COMPONENTS,
    PINS,
    SCHEDULER_PLUGINS,
    pin_for,
    unwritten,
)

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


def _requires(gomod: str, module: str) -> str | None:
    """The version go.mod requires ``module`` at, alone or in a block (go mod tidy marks tools' modules
    indirect)."""
    match = re.search(rf"^(?:require )?\s*{re.escape(module)} (v\S+)(?: // indirect)?$", gomod, re.MULTILINE)
    return match.group(1) if match else None


@pytest.mark.parametrize("minor", sorted(set(PINS) - set(unwritten())))
def test_committed_module_builds_the_pinned_release(minor: str) -> None:
    pin = PINS[minor]
    gomod = (pin.kubernetes_module_dir / "go.mod").read_text()
    assert _requires(gomod, "k8s.io/kubernetes") == f"v{pin.kubernetes}"
    assert f"\tk8s.io/api => k8s.io/api v{pin.staging}\n" in gomod
    assert all(f"tool k8s.io/kubernetes/cmd/{c}\n" in gomod for c in KUBERNETES_COMPONENTS)
    # Every staging replacement at the release's own staging tag, none left at another.
    replaced = [line.split()[-1] for line in gomod.splitlines() if "=> k8s.io/" in line]
    assert replaced and set(replaced) == {f"v{pin.staging}"}
    assert (pin.kubernetes_module_dir / "go.sum").stat().st_size > 0
    assert (
        _requires((pin.etcd_module_dir / "go.mod").read_text(), "go.etcd.io/etcd/server/v3") == f"v{pin.etcd}"
    )


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


def test_every_pin_has_its_module() -> None:
    assert unwritten() == []


def test_a_pin_without_its_module_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "unwritten", lambda: ["1.33"])
    with pytest.raises(ValueError, match=r"run python -m tests\.upstream\.gomod 1\.33$"):
        build.ensure("1.33")


# ---- what a build runs, without compiling: a `go` that answers GOVERSION and records the rest ----------


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``go`` on PATH answers ``go env GOVERSION`` as the real one does and fails anything else, writing
    ``<cwd> <argv>`` to the returned log: a build that would compile shows there instead."""
    version = build._go_version()
    log = tmp_path / "go.log"
    bindir = tmp_path / "fake-bin"
    bindir.mkdir()
    (bindir / "go").write_text(
        "#!/bin/sh\n"
        f'if [ "$1 $2" = "env GOVERSION" ]; then echo {version}; exit 0; fi\n'
        f'echo "$PWD $*" >> {log}\n'
        "exit 1\n"
    )
    (bindir / "go").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(build.ASSETS_ENV, raising=False)
    return log


@pytest.mark.parametrize("minor", sorted(PINS))
def test_fresh_binaries_of_every_pin_are_reused(minor: str, fake_go: Path) -> None:
    pin = PINS[minor]
    directory = build.bin_dir(pin)
    directory.mkdir(parents=True)
    key = build.build_key(pin, pin.kubernetes_module_dir, kubernetes=True)
    for component in KUBERNETES_COMPONENTS:
        (directory / component).write_text("")
    (directory / build.STAMPS).write_text(json.dumps(dict.fromkeys(KUBERNETES_COMPONENTS, key)))
    assert build.ensure(minor, KUBERNETES_COMPONENTS).directory == directory
    assert not fake_go.exists()


@pytest.mark.parametrize("minor", sorted(PINS))
def test_every_pin_builds_its_commands_in_one_go_build(minor: str, fake_go: Path) -> None:
    pin = PINS[minor]
    with pytest.raises(subprocess.CalledProcessError):
        build.ensure(minor, KUBERNETES_COMPONENTS)
    [line] = fake_go.read_text().splitlines()
    cwd, argv = line.split(" ", 1)
    assert cwd == str(pin.kubernetes_module_dir)
    assert argv.startswith("build -trimpath -buildvcs=false -ldflags")
    assert f"-X k8s.io/component-base/version.gitVersion=v{pin.kubernetes} " in argv
    assert argv.endswith(" ".join(f"k8s.io/kubernetes/cmd/{c}" for c in KUBERNETES_COMPONENTS))
    # Every release its own key: a binary of one is never taken for another's.
    keys = {build.build_key(p, p.kubernetes_module_dir, kubernetes=True) for p in PINS.values()}
    assert len(keys) == len(PINS)


def test_scheduler_plugins_and_its_kube_scheduler_build_in_one_go_build(fake_go: Path) -> None:
    with pytest.raises(subprocess.CalledProcessError):
        scheduler_plugins.ensure()
    [line] = fake_go.read_text().splitlines()
    cwd, argv = line.split(" ", 1)
    assert cwd == str(SCHEDULER_PLUGINS.module_dir)
    assert f"-X k8s.io/component-base/version.gitVersion=v{SCHEDULER_PLUGINS.kubernetes.kubernetes} " in argv
    assert argv.endswith(
        f"-o {scheduler_plugins.output_dir()}/.go-build-out/ sigs.k8s.io/scheduler-plugins/cmd/scheduler "
        "k8s.io/kubernetes/cmd/kube-scheduler"
    )


def test_fresh_scheduler_plugins_binaries_are_reused(fake_go: Path) -> None:
    directory = scheduler_plugins.output_dir()
    directory.mkdir(parents=True)
    for component in scheduler_plugins.COMPONENTS:
        (directory / component).write_text("")
    (directory / build.STAMPS).write_text(
        json.dumps(dict.fromkeys(scheduler_plugins.COMPONENTS, scheduler_plugins.key()))
    )
    assert scheduler_plugins.ensure().directory == directory
    assert not fake_go.exists()


def test_committed_scheduler_plugins_module() -> None:
    sp = SCHEDULER_PLUGINS
    gomod = (sp.module_dir / "go.mod").read_text()
    assert _requires(gomod, "sigs.k8s.io/scheduler-plugins") == f"v{sp.version}"
    assert _requires(gomod, "k8s.io/kubernetes") == f"v{sp.kubernetes.kubernetes}"
    assert "tool sigs.k8s.io/scheduler-plugins/cmd/scheduler\n" in gomod
    assert "tool k8s.io/kubernetes/cmd/kube-scheduler\n" in gomod
    # "\tk8s.io/api => k8s.io/api v0.34.7": module -> the tag it is replaced at
    replaced = {line.split()[0]: line.split()[3] for line in gomod.splitlines() if "=> k8s.io/" in line}
    assert replaced and replaced == {
        module: dict(sp.substitutes).get(module, f"v{sp.kubernetes.staging}") for module in replaced
    }
    assert set(dict(sp.substitutes)) <= set(replaced)


def test_scheduler_plugins_override_missing_is_one_line(tmp_path: Path) -> None:
    result = _run_build("--components", "scheduler-plugins", env={build.ASSETS_ENV: str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr == (
        f"tests.upstream.build: {build.ASSETS_ENV}={tmp_path} has no executable "
        f"{', '.join(scheduler_plugins.COMPONENTS)}\n"
    )
