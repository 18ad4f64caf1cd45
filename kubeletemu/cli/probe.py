"""``probe``: this host's NUMA topology, as ``python -m hostprobe`` prints it."""

from __future__ import annotations

import argparse
import json
import sys

from kubeletemu.cli.common import OUTPUTS, fail


def cmd_probe(args: argparse.Namespace) -> int:
    """Probes here, not through ``hostprobe``'s own ``main``, so that every output's errors read as the
    other commands' (``kubeletemu: <reason>``, exit 2)."""
    import hostprobe
    from hostprobe.render import render_table

    try:
        topology = hostprobe.probe(args.sysfs_root, args.procfs_root)
    except hostprobe.ProbeError as err:
        fail(str(err))
    except OSError as err:
        fail(f"{err.filename or ''}: {err.strerror or err}")
    if args.output == "table":
        sys.stdout.write(render_table(topology))
    elif args.output == "json":
        sys.stdout.write(json.dumps(topology.to_json_dict(), indent=2) + "\n")
    else:
        import yaml

        sys.stdout.write(yaml.safe_dump(json.loads(json.dumps(topology.to_json_dict())), sort_keys=False))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    probe = sub.add_parser(
        "probe",
        help="print this host's NUMA topology",
        description="Print this host's NUMA topology (or a captured tree's) as the kubelet would see it, "
        "as python -m hostprobe does; needs no daemon.",
    )
    probe.add_argument(
        "--sysfs-root", default="/sys", metavar="DIR", help="read this sysfs tree (default %(default)s)"
    )
    probe.add_argument(
        "--procfs-root", default="/proc", metavar="DIR", help="read this procfs tree (default %(default)s)"
    )
    probe.add_argument(
        "-o", "--output", choices=OUTPUTS, default="table", help="%(choices)s (default %(default)s)"
    )
    probe.set_defaults(func=cmd_probe)
