"""The Go oracle harness of the node side: its build (cached like the upstream components) and a client.

``tests/oracle/kubelet/v<minor>/`` is a Go module per pinned Kubernetes release: it requires
``k8s.io/kubernetes`` at the pin with the staging modules replaced at the same release, exactly as
``tests/upstream/kubernetes/v<minor>/go.mod`` does, so that the packages it imports (the kubelet's
``cm/topologymanager``, ``cm/cpumanager``, ``cm/memorymanager``) compile to the very objects the kubelet
build of ``tests.upstream.build`` left in the Go build cache: same flags (``CGO_ENABLED=0``, ``-trimpath``,
``-buildvcs=false``), same module graph. The binary, ``kubelet-oracle``, goes beside the release's other
binaries (``<cache>/<release>/bin``) and is reused while its build key holds: the build key of
:func:`tests.upstream.build.build_key` (go.mod, go.sum, Go version, flags) plus the harness's Go sources.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from tests.upstream import build
from tests.upstream.pins import PINS, Pin, pin_for

COMPONENT = "kubelet-oracle"
HARNESS_DIR = Path(__file__).resolve().parent / "kubelet"


def module_dir(pin: Pin) -> Path:
    return HARNESS_DIR / f"v{pin.minor}"


def written() -> list[str]:
    """The pinned minors whose harness module exists (newest last)."""
    return [minor for minor in PINS if (module_dir(PINS[minor]) / "go.mod").is_file()]


# The one source file each release has its own of: the calls whose signatures move between releases.
RELEASE_SPECIFIC = "kubelet_api.go"


def source_dir(pin: Pin) -> Path:
    """Where the release's harness builds. The newest harness holds every source; an older release's
    directory holds its go.mod, go.sum and kubelet_api.go only, and builds in a directory of the binary
    cache that adds the newest harness's other sources (the same at every release), copied afresh."""
    directory = module_dir(pin)
    newest = module_dir(PINS[written()[-1]])
    if directory == newest:
        return directory
    assembled = build.cache_root() / pin.kubernetes / "kubelet-oracle-src"
    if assembled.is_dir():
        shutil.rmtree(assembled)
    assembled.mkdir(parents=True)
    for source in newest.glob("*.go"):
        if source.name != RELEASE_SPECIFIC:
            shutil.copyfile(source, assembled / source.name)
    for name in ("go.mod", "go.sum", RELEASE_SPECIFIC):
        if (directory / name).is_file():
            shutil.copyfile(directory / name, assembled / name)
    return assembled


def build_key(pin: Pin, directory: Path) -> str:
    digest = hashlib.sha256(build.build_key(pin, directory, kubernetes=False).encode())
    for source in sorted(directory.glob("*.go")):
        part = source.name.encode() + b"\0" + source.read_bytes()
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()[:16]


def ensure(version: str | None = None, *, log: Callable[[str], None] = build._stderr) -> Path:
    """The harness binary of the pinned release of ``version`` (newest by default), built if absent or
    stale; from ``$KUBELETEMU_UPSTREAM_ASSETS`` unbuilt when that is set."""
    if override := os.environ.get(build.ASSETS_ENV):
        path = Path(override) / COMPONENT
        if not os.access(path, os.X_OK):
            raise build.MissingAssetsError(f"{build.ASSETS_ENV}={override} has no executable {COMPONENT}")
        return path
    pin = pin_for(version)
    directory = module_dir(pin)
    if not (directory / "go.mod").is_file():
        raise ValueError(
            f"no oracle harness for {pin.minor} yet (written: {', '.join(written())}): "
            f"python -m tests.oracle.gomod {pin.minor}"
        )
    out_dir = build.bin_dir(pin)
    out = out_dir / COMPONENT
    with build._locked(out_dir):
        stamps_file = out_dir / build.STAMPS
        stamps: dict[str, str] = json.loads(stamps_file.read_text()) if stamps_file.is_file() else {}
        sources = source_dir(pin)
        key = build_key(pin, sources)
        if stamps.get(COMPONENT) != key or not out.is_file():
            build._go_build(pin, sources, ["."], str(out), kubernetes=False, log=log)
            stamps[COMPONENT] = key
            stamps_file.write_text(json.dumps(stamps, indent=1, sort_keys=True) + "\n")
    return out


class HarnessError(RuntimeError):
    """The harness process failed (not an upstream panic: that is an answer)."""


class Harness:
    """One harness process; :meth:`ask` sends a batch of cases as one JSON array line and reads the
    answers back (one line, in order)."""

    def __init__(self, binary: Path) -> None:
        # Kept open for the process's life (closed by close()): read back when the harness dies.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self._process = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
        )

    def ask(self, cases: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(list(cases), separators=(",", ":")).encode() + b"\n")
            stdin.flush()
            line = stdout.readline()
        except BrokenPipeError:
            line = b""
        if not line:
            raise HarnessError(f"the harness exited ({self._process.wait()}): {self._stderr_text()}")
        answers: list[dict[str, Any]] = json.loads(line)
        return answers

    def cpu_seconds(self) -> float:
        """The harness process's CPU time so far (user + system, from /proc): the upstream side's cost,
        apart from the machine's load."""
        fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # utime and stime: fields 14 and 15 of stat(5), the 12th and 13th after the command's ")".
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-2000:]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)
        self._stderr.close()

    def __enter__(self) -> Harness:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
