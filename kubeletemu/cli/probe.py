"""``probe``: this host's NUMA topology, as ``python -m hostprobe`` prints it."""

from __future__ import annotations

import argparse
import json
import sys

from kubeletemu.cli.common import OUTPUTS, fail


def cmd_probe(args: argparse.Namespace) -> int:
    import yaml

    import hostprobe
    from hostprobe.__main__ import main as probe_main

    if args.output != "yaml":
        argv = ["--sysfs-root", args.sysfs_root, "--procfs-root", args.procfs_root]
        return probe_main([*argv, "--json"] if args.output == "json" else argv)
    try:
        topology = hostprobe.probe(args.sysfs_root, args.procfs_root)
    except hostprobe.ProbeError as err:
        fail(str(err))
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
