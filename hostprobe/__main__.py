"""``python -m hostprobe [--sysfs-root DIR] [--procfs-root DIR] [--json]``.

Exit status: 0 on success, 2 on an unreadable/malformed tree or bad usage, with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from hostprobe.errors import ProbeError
from hostprobe.probe import probe
from hostprobe.render import render_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hostprobe", description="Print this host's NUMA topology as the kubelet would see it."
    )
    parser.add_argument("--sysfs-root", default="/sys", metavar="DIR", help="sysfs root (default /sys)")
    parser.add_argument("--procfs-root", default="/proc", metavar="DIR", help="procfs root (default /proc)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    netlink = parser.add_mutually_exclusive_group()
    netlink.add_argument(
        "--netlink",
        dest="netlink",
        action="store_true",
        default=None,
        help="list interfaces through netlink (default: only for the live /sys)",
    )
    netlink.add_argument(
        "--no-netlink", dest="netlink", action="store_false", help="list interfaces from sysfs only"
    )
    args = parser.parse_args(argv)
    try:
        topology = probe(args.sysfs_root, args.procfs_root, netlink=args.netlink)
        text = json.dumps(topology.to_json_dict(), indent=2) + "\n" if args.json else render_table(topology)
        sys.stdout.write(text)
        sys.stdout.flush()
    except ProbeError as exc:
        print(f"hostprobe: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"hostprobe: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
