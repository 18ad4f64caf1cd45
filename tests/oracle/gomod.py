"""Writes the oracle harness module of another pinned release (``python -m tests.oracle.gomod 1.36``).

The harness of a release is ``tests/oracle/kubelet/v<minor>/``: its go.mod is the upstream components'
module of the same pin (``tests/upstream/kubernetes/v<minor>/go.mod``, written by ``python -m
tests.upstream.gomod``: k8s.io/kubernetes at the tag, the staging modules replaced at the same release) under
the harness's module name, then ``go mod tidy``. Its Go sources are the newest harness's, copied over
each time, but for ``kubelet_api.go``: the calls whose signatures move between releases (1.37 added the
logger and ``lifecycle.Operation`` arguments of the hint providers and policies, for one), each release's
own, copied from the nearest newer release only when the release has none yet (then adapt it: ``go vet``
says where).
The harness of 1.37 (the newest pin) is the one CI builds.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys

from tests.oracle.harness import module_dir, written
from tests.upstream.pins import PINS, pin_for

MODULE = "kubeletemu.test/oracle/kubelet"
HEADER = "// The kubelet oracle harness at one release: see tests/oracle/harness.py."
# The one source file each release has its own of.
RELEASE_SPECIFIC = "kubelet_api.go"


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
    # The shared sources come from the newest harness (none when this is it); a release without its own
    # kubelet_api.go starts from the nearest newer release's.
    others = [minor for minor in written() if minor != pin.minor]
    if others and others[-1] != pin.minor and _order(others[-1]) > _order(pin.minor):
        for source in module_dir(PINS[others[-1]]).glob("*.go"):
            if source.name != RELEASE_SPECIFIC:
                shutil.copyfile(source, target / source.name)
        if not (target / RELEASE_SPECIFIC).is_file():
            nearest = min((m for m in others if _order(m) > _order(pin.minor)), key=_order)
            shutil.copyfile(module_dir(PINS[nearest]) / RELEASE_SPECIFIC, target / RELEASE_SPECIFIC)
    subprocess.run(["nice", "-n", "19", "go", "mod", "tidy"], check=True, cwd=target)


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
