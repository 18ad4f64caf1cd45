"""The Go program of ``tests/extender/wire/`` (see its main.go), built at each kube-scheduler version the
project runs, and called from Python.

One source, two module files: ``go.mod`` requires k8s.io/kube-scheduler and k8s.io/api at v0.37.2 (the
newest pin's staging release) and ``v0.34.7.mod`` at v0.34.7 (scheduler-plugins' kube-scheduler, the e2e
tests' second version; tests/upstream/pins.py), built with ``-modfile``. The binaries are cached as the
other Go tools of the tests are (:func:`tests.upstream.exporters.ensure_exporter`: a build key of the module
file, its sums, the Go version and the flags), and built by ``python -m tests.upstream.build`` with them.
"""

from __future__ import annotations

import functools
import json
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.upstream import exporters
from tests.upstream.pins import NEWEST as NEWEST_MINOR
from tests.upstream.pins import PINS, SCHEDULER_PLUGINS

WIRE_DIR = Path(__file__).resolve().parent / "wire"
PACKAGE = "kubeletemu.test/extender/wire"
VERBS = ("filter", "prioritize", "preempt", "bind")


def _pin(staging: str, modfile: str) -> exporters.ExporterPin:
    # Static, as the Kubernetes builds: k8s.io/api compiled once serves both.
    return exporters.ExporterPin(
        f"extender-wire-v{staging}", WIRE_DIR, PACKAGE, f"v{staging}", ("-s", "-w"), modfile, static=True
    )


# The newest Kubernetes pin's kube-scheduler, and the second kube-scheduler version (scheduler-plugins').
NEWEST = _pin(PINS[NEWEST_MINOR].staging, "go.mod")
SECOND = _pin(SCHEDULER_PLUGINS.kubernetes.staging, f"v{SCHEDULER_PLUGINS.kubernetes.staging}.mod")
WIRE_PINS = (NEWEST, SECOND)


class WireError(RuntimeError):
    """The Go program refused its input (its one line of stderr)."""


@dataclass(frozen=True)
class DecodedReply:
    canonical: bytes | None  # json.Marshal of what Go decoded; None when it could not decode the body
    reads: dict[str, Any]  # what the scheduler makes of the reply (reply.go)


@dataclass(frozen=True)
class Wire:
    """One built binary of the Go program."""

    binary: Path
    version: str  # the k8s.io/kube-scheduler version it was built with, "v0.37.2"

    def _run(self, args: list[str], stdin: bytes) -> bytes:
        done = subprocess.run([str(self.binary), *args], input=stdin, capture_output=True, check=False)
        if done.returncode != 0:
            raise WireError(done.stderr.decode(errors="replace").strip())
        return done.stdout

    def kube_scheduler_version(self) -> str:
        return self._run(["version"], b"").decode().strip()

    def encode_request(self, verb: str, description: Mapping[str, Any]) -> bytes:
        """The request body kube-scheduler's HTTPExtender sends for ``verb``."""
        return self._run(["encode-request", verb], json.dumps(description).encode())

    def decode_reply(self, verb: str, description: Mapping[str, Any], body: bytes) -> DecodedReply:
        """``body`` decoded as HTTPExtender decodes a reply to the request of ``description``."""
        with tempfile.NamedTemporaryFile("w", suffix=".json") as context:
            json.dump(description, context)
            context.flush()
            out = json.loads(self._run(["decode-reply", verb, "-context", context.name], body))
        canonical = out["canonical"]
        return DecodedReply(None if canonical is None else canonical.encode(), out["reads"])

    def roundtrip(self, kind: str, verb: str, body: bytes) -> None:
        """Raises WireError unless ``body`` decodes strictly into the v1 type of ``verb``'s request or reply
        (``kind``) and json.Marshal writes it back byte for byte."""
        self._run(["roundtrip", kind, verb], body)


def ensure(pin: exporters.ExporterPin) -> Wire:
    """The binary of ``pin``, built when absent or stale."""
    return Wire(exporters.ensure_exporter(pin), pin.version)


@functools.cache
def built(version: str) -> Wire:
    """The binary of the pin of ``version`` ("v0.37.2"), once per process (the tests' way in)."""
    return ensure(next(pin for pin in WIRE_PINS if pin.version == version))


VERSIONS = tuple(pin.version for pin in WIRE_PINS)
