"""The ``kubeletemu`` command: the daemon (``serve``) and its clients, one module per command group.

Exit statuses are those of :mod:`kubeletemu.cli.common`: 0 success, 1 a refusal or negative answer, 2 a
usage or input error, 3 the daemon unreachable; anything but 0 comes with one line on standard error.
Clients find the daemon at ``--socket``, else ``$KUBELETEMU_SOCKET``, else the configuration's ``socket``.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from importlib import metadata

from kubeletemu.cli import fleet, node, pods, probe, schedule, serve, shadow, whatif
from kubeletemu.cli.common import EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, CLIError

__all__ = ["EXIT_OK", "EXIT_REFUSED", "EXIT_UNREACHABLE", "EXIT_USAGE", "build_parser", "main"]


def version() -> str:
    try:
        return metadata.version("kubeletemu")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubeletemu", description="The kubelet's NUMA-aware admission, emulated."
    )
    parser.add_argument("--version", action="version", version=f"kubeletemu {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (serve, pods, node, whatif, schedule, shadow, probe, fleet):
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command != "serve":
        # A reader that went away (| head) ends a client quietly, as it ends any Unix filter; no further
        # pod is sent once the answers cannot be shown. The daemon keeps Python's handling.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        code: int = args.func(args)
    except CLIError as err:
        print(f"kubeletemu: {err}", file=sys.stderr)
        return err.status
    except KeyboardInterrupt:
        return 130
    return code
