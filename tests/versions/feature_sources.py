"""The Go text ``kubeletemu.versions.generate`` reads, fetched from the Go module proxy (issue 43: no skips).

For every supported version, ``go mod download`` puts ``k8s.io/kubernetes`` and the staging modules
``k8s.io/component-base`` / ``k8s.io/client-go`` at the versions :data:`kubeletemu.versions.generate.MODULES`
names into the module cache (``GOMODCACHE``; the checksum database checks each zip), and
:func:`source_dir` lays the five files of each version out as the generator's ``SRC_DIR``. A warm cache
answers at once; a cold one downloads the k8s.io/kubernetes zips (one per distinct release).
``KUBELETEMU_FEATURE_SOURCES`` names a prepared ``SRC_DIR`` instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from kubeletemu.versions.generate import KUBE_FEATURES, MODULES

OVERRIDE = "KUBELETEMU_FEATURE_SOURCES"
# Seconds for one `go mod download` of every module; a cold k8s.io/kubernetes zip is ~50 MB.
DOWNLOAD_TIMEOUT = 1800.0

_STAGING_FILES = (
    ("component-base", "logs/api/v1/kube_features.go"),
    ("component-base", "metrics/features/kube_features.go"),
    ("component-base", "zpages/features/kube_features.go"),
    ("client-go", "features/known_features.go"),
)


class SourceDownloadError(RuntimeError):
    """A module could not be downloaded; ``str()`` is one line naming it and Go's reason."""


def wanted_modules() -> list[str]:
    """``path@version`` of every module the supported versions' text lives in, each once."""
    out: dict[str, None] = {}
    for module in MODULES.values():
        out[f"k8s.io/kubernetes@{module.kubernetes}"] = None
        out[f"k8s.io/component-base@{module.staging}"] = None
        out[f"k8s.io/client-go@{module.staging}"] = None
    return list(out)


def download(modules: list[str], timeout: float = DOWNLOAD_TIMEOUT) -> dict[str, Path]:
    """``go mod download -json`` of ``modules`` (outside any module, so exact versions only): each one's
    directory in the module cache. Raises :class:`SourceDownloadError` for the first that failed."""
    go = shutil.which("go")
    if go is None:
        raise SourceDownloadError("go: not on PATH (the Go toolchain fetches the kubelet's sources)")
    with tempfile.TemporaryDirectory(prefix="kubeletemu-gomod-") as cwd:
        try:
            proc = subprocess.run(
                [go, "mod", "download", "-json", *modules],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=timeout,
                env={**os.environ, "GO111MODULE": "on", "GOFLAGS": "-mod=mod"},
            )
        except subprocess.TimeoutExpired:
            raise SourceDownloadError(f"go mod download: no answer in {timeout:.0f} s") from None
    dirs: dict[str, Path] = {}
    decoder = json.JSONDecoder()
    text = proc.stdout.strip()
    while text:
        entry, end = decoder.raw_decode(text)
        text = text[end:].lstrip()
        name = f"{entry.get('Path')}@{entry.get('Version')}"
        if entry.get("Error") or not entry.get("Dir"):
            reason = str(entry.get("Error", "no directory")).splitlines()[0]
            raise SourceDownloadError(f"go mod download {name}: {reason}")
        dirs[name] = Path(entry["Dir"])
    missing = [m for m in modules if m not in dirs]
    if missing:
        reason = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SourceDownloadError(f"go mod download {missing[0]}: {reason}")
    return dirs


def source_dir(target: Path) -> Path:
    """``target`` filled as the generator's ``SRC_DIR`` from the module cache (downloading what it lacks)."""
    dirs = download(wanted_modules())
    for version, module in MODULES.items():
        base = target / version
        base.mkdir(parents=True, exist_ok=True)
        kubernetes = dirs[f"k8s.io/kubernetes@{module.kubernetes}"]
        shutil.copyfile(kubernetes / KUBE_FEATURES, base / "kube_features.go")
        for repo, rel in _STAGING_FILES:
            dest = base / repo / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(dirs[f"k8s.io/{repo}@{module.staging}"] / rel, dest)
    return target
