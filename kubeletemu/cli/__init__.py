"""The ``kubeletemu`` command: the daemon (``serve``) and its clients, one module per command group.

Exit statuses are those of :mod:`kubeletemu.cli.common`: 0 success, 1 a refusal or negative answer, 2 a
usage or input error, 3 the daemon unreachable; anything but 0 comes with one line on standard error.
Clients find the daemon at ``--socket``, else ``$KUBELETEMU_SOCKET``, else the configuration's ``socket``;
``simulate`` and ``schedule`` run here unless ``--live`` asks them to use the daemon's node.

Start-up: building the parser imports argparse and the command modules, which import nothing else at
module level; each command's handler imports the message classes, YAML and the engine it needs when it runs
(``tests/cli/test_startup.py`` holds the commands to that). No command imports grpcio: the clients speak
HTTP/2 to the daemon themselves (:mod:`kubeletemu.cli.wire`), and a command that only prints an answer
reads it without the protobuf runtime.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence

from kubeletemu import __version__
from kubeletemu.cli import extender, fleet, node, nodes, pods, probe, schedule, serve, shadow, whatif
from kubeletemu.cli.common import EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, CLIError
from kubeletemu.cli.parsing import PROG, CommandListFormatter, CommandParser, describe_commands

__all__ = ["EXIT_OK", "EXIT_REFUSED", "EXIT_UNREACHABLE", "EXIT_USAGE", "build_parser", "main"]


def build_parser() -> CommandParser:
    parser = CommandParser(
        prog=PROG,
        description="The kubelet's NUMA-aware admission, emulated.",
        formatter_class=CommandListFormatter,
    )
    # The package's own version (pyproject's, checked equal by a test): importlib.metadata would cost more
    # than the rest of `--version` together.
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    for group in (serve, pods, node, whatif, schedule, shadow, probe, fleet, nodes, extender):
        group.register(sub)
    describe_commands(sub)
    return parser


# The long-running commands: each serves peers over sockets.
SERVERS = frozenset({"serve", "nodes", "extender"})


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command not in SERVERS:
        # A reader that went away (| head) ends a client quietly, as it ends any Unix filter; no further
        # pod is sent once the answers cannot be shown. The servers keep Python's handling (SIGPIPE
        # ignored): a peer that closes its connection mid-write is an EPIPE for that connection, not
        # the end of the daemon, the node agent or the extender.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        code: int = args.func(args)
    except CLIError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return err.status
    except KeyboardInterrupt:
        return 130
    return code
