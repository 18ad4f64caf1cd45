"""``kubeletemu extender --config FILE``: the kube-scheduler extender that answers from exact mirrors of the
nodes (:mod:`kubeletemu.extender`). Needs the ``extender`` extra (aiohttp).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kubeletemu.cli.choices import LOG_LEVELS
from kubeletemu.cli.common import EXIT_OK, fail

if TYPE_CHECKING:
    from kubeletemu.extender.server import ExtenderServer

EXTRA_HINT = "kubeletemu extender needs the extender extra: pip install 'kubeletemu[extender]'"


def _announce(server: ExtenderServer) -> None:
    config = server.config
    health = (
        "" if server.health_port is None else f", health on http://{config.health_host}:{server.health_port}"
    )
    sys.stderr.write(
        f"kubeletemu extender serving https://{config.host}:{server.port}{config.path_prefix} "
        f"(mutual TLS){health}. Stop it with Ctrl-C.\n"
    )
    sys.stderr.flush()


def cmd_extender(args: argparse.Namespace) -> int:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        fail(EXTRA_HINT)
    from kubeletemu.daemon.logging import configure_logging
    from kubeletemu.extender.config import ExtenderConfigError, load_config
    from kubeletemu.extender.server import StartError, run_until_stopped

    try:
        config = load_config(args.config)
    except ExtenderConfigError as err:
        fail(str(err))
    configure_logging(args.log_level)
    try:
        run_until_stopped(config, _announce if sys.stderr.isatty() or args.announce else None)
    except StartError as err:
        fail(str(err))
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "extender",
        help="a scheduler extender on exact node mirrors",
        description="Serve kube-scheduler's extender protocol (Filter, Prioritize, Preempt, optionally Bind; "
        "node-cache mode) over mutual TLS, each answer the node's own kubelet admission on its exact mirror, "
        "with the placements still in flight counted. Runs until Ctrl-C or SIGTERM. See docs/extender.md.",
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="a kind: Extender YAML file")
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="the lowest level logged (JSON lines on standard output): %(choices)s (default %(default)s)",
    )
    parser.add_argument(
        "--announce",
        action="store_true",
        help="say on standard error when the server listens, also when it is not a terminal",
    )
    parser.set_defaults(func=cmd_extender)
