"""Writes the oracle harness module of another pinned release (``python -m tests.oracle.gomod 1.36``).

The harness of a release is ``tests/oracle/kubelet/v<minor>/``: its go.mod is the upstream components'
module of the same pin (``tests/upstream/kubernetes/v<minor>/go.mod``, written by ``python -m
tests.upstream.gomod``: k8s.io/kubernetes at the tag, the staging modules replaced at the same release) under
the harness's module name, then ``go mod tidy``; its Go sources start as a copy of the newest harness. The
kubelet's signatures move between releases (1.37 added the ``lifecycle.Operation`` arguments of the hint
providers, for one), so the copy may need adapting to the release: ``go vet`` in the new directory says
where. The harness of 1.37 (the newest pin) is the one CI builds.
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
    newest = [m for m in written() if m != pin.minor]
    if not list(target.glob("*.go")) and newest:
        for source in module_dir(PINS[newest[-1]]).glob("*.go"):
            shutil.copyfile(source, target / source.name)
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
