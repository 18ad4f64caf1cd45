"""Writes the oracle harness module of another pinned release (``python -m tests.oracle.gomod 1.36``).

The harness of a release is ``tests/oracle/kubelet/v<minor>/``: its go.mod is the upstream components'
module of the same pin (``tests/upstream/kubernetes/v<minor>/go.mod``, written by ``python -m
tests.upstream.gomod``: k8s.io/kubernetes at the tag, the staging modules replaced at the same release) under
the harness's module name, then ``go mod tidy``. Its Go sources are the newest harness's (copied where it
builds: tests/oracle/harness.py), but for ``kubelet_api.go``: the calls whose signatures move between
releases (1.37 added the logger and ``lifecycle.Operation`` arguments of the hint providers and
policies, for one), each release's own, copied from the nearest newer release when the release has none
yet (then adapt it: ``go vet`` in the build directory says where). CI builds the newest harness only.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys

from tests.oracle.harness import RELEASE_SPECIFIC, module_dir, source_dir, written
from tests.upstream.pins import PINS, pin_for

MODULE = "kubeletemu.test/oracle/kubelet"
HEADER = "// The kubelet oracle harness at one release: see tests/oracle/harness.py."


def _order(minor: str) -> tuple[int, ...]:
    return tuple(int(part) for part in minor.split("."))


def write(minor: str) -> None:
    pin = pin_for(minor)
    upstream = pin.kubernetes_module_dir / "go.mod"
    if not upstream.is_file():
        raise ValueError(
            f"no upstream module for {pin.minor}: run python -m tests.upstream.gomod {pin.minor}"
        )
    target = module_dir(pin)
    target.mkdir(parents=True, exist_ok=True)
    gomod = re.sub(r"^module .*$", f"module {MODULE}", upstream.read_text(), count=1, flags=re.MULTILINE)
    gomod = re.sub(r"\A(//[^\n]*\n)*", HEADER + "\n", gomod, count=1)
    # The components' tool lines name commands the harness does not build.
    gomod = re.sub(r"^tool [^\n]*\n|^tool \([^)]*\)\n", "", gomod, flags=re.MULTILINE)
    (target / "go.mod").write_text(gomod)
    shutil.copyfile(pin.kubernetes_module_dir / "go.sum", target / "go.sum")
    # A release without its own kubelet_api.go starts from the nearest newer release's.
    if not (target / RELEASE_SPECIFIC).is_file():
        newer = [m for m in written() if _order(m) > _order(pin.minor)]
        if newer:
            nearest = min(newer, key=_order)
            shutil.copyfile(module_dir(PINS[nearest]) / RELEASE_SPECIFIC, target / RELEASE_SPECIFIC)
    # Tidied where it builds (with the shared sources), then its go.mod and go.sum kept.
    sources = source_dir(pin)
    subprocess.run(["nice", "-n", "19", "go", "mod", "tidy"], check=True, cwd=sources)
    for name in ("go.mod", "go.sum"):
        if sources != target:
            shutil.copyfile(sources / name, target / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.oracle.gomod", description=__doc__)
    parser.add_argument("minor", help=f"a pinned minor ({', '.join(PINS)})")
    args = parser.parse_args(argv)
    try:
        write(args.minor)
    except (ValueError, subprocess.CalledProcessError) as error:
        print(f"tests.oracle.gomod: {error}", file=sys.stderr)
        return 1
    print(module_dir(pin_for(args.minor)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
