"""Builds the scheduling-queue oracle (``tests/oracle/scheduler/queue``) at each pinned release, into the
upstream binaries' cache, reusing a binary while its build key holds.

One Go source serves every release: ``go.mod`` pins Kubernetes v1.37.2 with the requirements and
replacements of ``tests/upstream/kubernetes/v1.37/go.mod``; ``go.1.34.mod`` (``-modfile``, with the build
tag ``k8s134``) pins v1.34.7 with those of ``tests/upstream/scheduler-plugins/v0.34/go.mod``. Built like the
upstream components (``CGO_ENABLED=0 go build -trimpath -buildvcs=false``), the oracle shares their compiled
packages in Go's build cache: after ``python -m tests.upstream.build`` only the queue's own package and main
compile.

``python -m tests.oracle.scheduler.build [--release 1.37]`` builds and prints the binaries' paths;
``python -m tests.upstream.build`` (CI) builds them too, after the upstream components, as the components
``scheduler-queue-oracle-<release>``. The key
is the module files, the Go sources, the Go version and the flags.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.upstream import build as upstream

HERE = Path(__file__).resolve().parent
QUEUE_DIR = HERE / "queue"


@dataclass(frozen=True)
class OracleBuild:
    """One release's build of a harness: its module file and build tags."""

    release: str  # "1.37"
    kubernetes: str  # the k8s.io/kubernetes tag it pins, without "v"
    modfile: str  # relative to the harness directory
    tags: tuple[str, ...] = ()

    def args(self) -> list[str]:
        args = [
            "go",
            "build",
            "-trimpath",
            "-buildvcs=false",
            "-ldflags",
            "-s -w",
            f"-modfile={self.modfile}",
        ]
        return args + (["-tags", ",".join(self.tags)] if self.tags else [])


BUILDS: dict[str, OracleBuild] = {
    "1.37": OracleBuild("1.37", "1.37.2", "go.mod"),
    "1.34": OracleBuild("1.34", "1.34.7", "go.1.34.mod", ("k8s134",)),
}


def component(release: str) -> str:
    """The oracle's name among the components ``python -m tests.upstream.build`` builds."""
    return f"scheduler-queue-oracle-{release}"


def key(spec: OracleBuild, directory: Path = QUEUE_DIR) -> str:
    digest = hashlib.sha256()
    sources = sorted(p for p in directory.iterdir() if p.suffix in (".go", ".s"))
    modfile = directory / spec.modfile
    for path in (modfile, modfile.with_suffix(".sum"), *sources):
        part = path.name.encode() + b"\0" + path.read_bytes()
        digest.update(len(part).to_bytes(8, "big") + part)
    for text in (upstream._go_version(), " ".join(spec.args())):
        digest.update(len(text).to_bytes(8, "big") + text.encode())
    return digest.hexdigest()[:16]


def output_dir(spec: OracleBuild) -> Path:
    return upstream.cache_root() / "oracle" / f"scheduler-queue-{spec.kubernetes}"


def ensure(release: str = "1.37", *, log: Callable[[str], None] = upstream._stderr) -> Path:
    """The queue oracle's binary at ``release``, built if absent or stale."""
    if release not in BUILDS:
        raise ValueError(f"no queue oracle for {release!r}; built: {', '.join(BUILDS)}")
    spec = BUILDS[release]
    directory = output_dir(spec)
    binary = directory / "queue-oracle"
    with upstream._locked(directory):
        stamps_file = directory / upstream.STAMPS
        stamps: dict[str, str] = json.loads(stamps_file.read_text()) if stamps_file.is_file() else {}
        want = key(spec)
        if stamps.get(binary.name) == want and binary.is_file():
            return binary
        log(f"building the queue oracle ({spec.kubernetes}) in {QUEUE_DIR}")
        started = time.monotonic()
        subprocess.run(
            [*spec.args(), "-o", str(binary), "."],
            check=True,
            cwd=QUEUE_DIR,
            env={**os.environ, "CGO_ENABLED": "0"},
        )
        log(f"built in {time.monotonic() - started:.0f} s")
        stamps[binary.name] = want
        stamps_file.write_text(json.dumps(stamps, indent=1, sort_keys=True) + "\n")
    return binary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.oracle.scheduler.build", description=__doc__)
    parser.add_argument("--release", action="append", choices=sorted(BUILDS), help="default: all")
    args = parser.parse_args(argv)
    try:
        for release in args.release or sorted(BUILDS):
            print(ensure(release))
    except (ValueError, subprocess.CalledProcessError) as error:
        upstream._stderr(str(error))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
