"""Writes the Go module that builds one pinned Kubernetes release (``python -m tests.upstream.gomod 1.36``).

Run once per new pin; its go.mod and go.sum are committed, so that every build reads the same module graph
and the checksum database checks every download. The go.mod requires ``k8s.io/kubernetes`` at the tag and
replaces each staging module the upstream go.mod requires at ``v0.0.0`` (its own tree's placeholders) with
the published staging module of that release; ``tool`` lines name the commands it builds.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from tests.upstream.pins import (
    ETCD,
    KUBERNETES_COMPONENTS,
    PINS,
    SCHEDULER_PLUGINS,
    Pin,
    SchedulerPluginsPin,
    pin_for,
)

# A staging module in upstream go.mod's require block: "\tk8s.io/api v0.0.0".
_STAGING_REQUIRE = re.compile(r"^\s+(k8s\.io/[\w.-]+) v0\.0\.0$", re.MULTILINE)


def upstream_gomod(pin: Pin) -> str:
    """k8s.io/kubernetes' own go.mod at the pinned tag, as `go mod download` fetches it."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@v{pin.kubernetes}"],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path.home(),
    ).stdout
    return Path(json.loads(out)["GoMod"]).read_text()


def _staging_replace(pin: Pin, upstream: str, substitutes: dict[str, str] | None = None) -> list[str]:
    """The staging modules at the same release (but ``substitutes``' tags, where that one is not served), as
    scheduler-plugins' go.mod does it: k8s.io/kubernetes requires them at v0.0.0 and replaces them with its
    own tree (a replace a dependency cannot carry)."""
    tags = substitutes or {}
    staging = sorted(set(_STAGING_REQUIRE.findall(upstream)))
    if not staging:
        raise ValueError(f"k8s.io/kubernetes v{pin.kubernetes}'s go.mod requires no staging module at v0.0.0")
    return [
        "// The staging modules at the same release, as scheduler-plugins' go.mod does it:",
        "// k8s.io/kubernetes requires them at v0.0.0 and replaces them with its own tree.",
        "replace (",
        *(f"\t{module} => {module} {tags.get(module, f'v{pin.staging}')}" for module in staging),
        ")",
    ]


def kubernetes_gomod(pin: Pin, upstream: str) -> str:
    lines = [
        f"// Kubernetes v{pin.kubernetes}'s commands for the e2e tests; written by tests/upstream/gomod.py.",
        "module kubeletemu.test/upstream/kubernetes",
        "",
        "go 1.26.0",
        "",
        f"require k8s.io/kubernetes v{pin.kubernetes}",
        "",
        *(f"tool k8s.io/kubernetes/cmd/{command}" for command in KUBERNETES_COMPONENTS),
        "",
        *_staging_replace(pin, upstream),
    ]
    return "\n".join(lines) + "\n"


def scheduler_plugins_gomod(sp: SchedulerPluginsPin, upstream: str) -> str:
    """scheduler-plugins' scheduler and kube-scheduler of the Kubernetes release its go.mod requires, in one
    module so that one `go build` compiles their shared packages once."""
    lines = [
        f"// scheduler-plugins v{sp.version}'s scheduler and kube-scheduler v{sp.kubernetes.kubernetes};",
        "// written by tests/upstream/gomod.py.",
        "module kubeletemu.test/upstream/scheduler-plugins",
        "",
        "go 1.26.0",
        "",
        "require (",
        f"\tk8s.io/kubernetes v{sp.kubernetes.kubernetes}",
        f"\tsigs.k8s.io/scheduler-plugins v{sp.version}",
        ")",
        "",
        "tool sigs.k8s.io/scheduler-plugins/cmd/scheduler",
        "tool k8s.io/kubernetes/cmd/kube-scheduler",
        "",
        *_staging_replace(sp.kubernetes, upstream, dict(sp.substitutes)),
    ]
    return "\n".join(lines) + "\n"


def etcd_gomod(pin: Pin) -> str:
    lines = [
        f"// {ETCD} v{pin.etcd} (its server module's main package); written by tests/upstream/gomod.py.",
        "module kubeletemu.test/upstream/etcd",
        "",
        "go 1.26.0",
        "",
        f"require go.etcd.io/etcd/server/v3 v{pin.etcd}",
        "",
        "tool go.etcd.io/etcd/server/v3",
    ]
    return "\n".join(lines) + "\n"


def write_module(directory: Path, gomod: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "go.mod").write_text(gomod)
    subprocess.run(["go", "mod", "tidy"], check=True, cwd=directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.upstream.gomod", description=__doc__)
    parser.add_argument(
        "versions",
        nargs="*",
        help=f"minors or pinned releases (default: all of {list(PINS)}), or scheduler-plugins alone",
    )
    args = parser.parse_args(argv)
    if args.versions == ["scheduler-plugins"]:
        sp = SCHEDULER_PLUGINS
        write_module(sp.module_dir, scheduler_plugins_gomod(sp, upstream_gomod(sp.kubernetes)))
        print(f"wrote {sp.module_dir}/go.mod and go.sum", file=sys.stderr)
        return 0
    pins = [pin_for(v) for v in args.versions] if args.versions else list(PINS.values())
    for pin in pins:
        write_module(pin.kubernetes_module_dir, kubernetes_gomod(pin, upstream_gomod(pin)))
        print(f"wrote {pin.kubernetes_module_dir}/go.mod and go.sum", file=sys.stderr)
    for etcd_pin in {pin.etcd_module_dir: pin for pin in pins}.values():
        if (etcd_pin.etcd_module_dir / "go.sum").is_file():
            continue  # one etcd module serves several pins: written once
        write_module(etcd_pin.etcd_module_dir, etcd_gomod(etcd_pin))
        print(f"wrote {etcd_pin.etcd_module_dir}/go.mod and go.sum", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
