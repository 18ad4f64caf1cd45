"""``kubeletemu nodes -f FILE``: the nodes of a Nodes (or Fleet) file join a real cluster from a kubeconfig,
each admitting pods as the kubelet of its version would (:mod:`kubeletemu.nodes`). Needs the ``nodes`` extra.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

from kubeletemu.cli.choices import LOG_LEVELS
from kubeletemu.cli.common import EXIT_OK, EXIT_UNREACHABLE, add_feed_arguments, add_file_arguments, fail

if TYPE_CHECKING:
    from kubeletemu.nodes.run import NodesRun

EXTRA_HINT = "kubeletemu nodes needs the nodes extra: pip install 'kubeletemu[nodes]'"


def default_kubeconfig() -> str:
    """kubectl's order: ``$KUBECONFIG`` (its first file), else ``~/.kube/config``."""
    listed = os.environ.get("KUBECONFIG", "")
    first = next((p for p in listed.split(os.pathsep) if p), "")
    return first or os.path.join(os.path.expanduser("~"), ".kube", "config")


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "kubeletemu", "nodes")


def _announce(run: NodesRun) -> None:
    assert run.api is not None
    names = [m.name for m in run.members]
    shown = names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"
    sys.stderr.write(
        f"{len(names)} node(s) joined {run.api.server} ({shown}); state in {run.options.state_dir}. "
        "Stop them with Ctrl-C.\n"
    )
    sys.stderr.flush()


def cmd_nodes(args: argparse.Namespace) -> int:
    try:
        import lightkube  # noqa: F401
    except ImportError:
        fail(EXTRA_HINT)
    from kubeletemu.config.emulator_config import EmulatorConfiguration
    from kubeletemu.daemon.feed_server import FeedListen, FeedSetupError
    from kubeletemu.daemon.logging import configure_logging
    from kubeletemu.nodes.run import NodesRun, RunOptions, StartError, run_until_stopped
    from kubeletemu.nodes.spec import NodesError, load_nodes

    [path] = args.files if len(args.files) == 1 else fail("nodes takes one -f file")
    try:
        spec = load_nodes(path)
    except NodesError as err:
        fail(str(err))
    try:
        defaults = EmulatorConfiguration(feed_heartbeat_period=args.feed_heartbeat_period)
        feed = FeedListen.from_config(
            defaults, args.feed_address, args.feed_cert, args.feed_key, args.feed_client_ca
        )
    except FeedSetupError as err:
        fail(str(err))
    configure_logging(args.log_level)
    # httpx2 logs every request at info: thousands a minute for many nodes. Its warnings still show.
    logging.getLogger("httpx2").setLevel(max(logging.WARNING, logging.getLogger().level))
    options = RunOptions(
        kubeconfig=args.kubeconfig or default_kubeconfig(),
        state_dir=args.state_dir or default_state_dir(),
        context=args.context,
        podresources_dir=args.podresources_dir,
        feed=feed,
    )
    run = NodesRun(spec, options)
    try:
        run.prepare()
        run_until_stopped(run, _announce if sys.stderr.isatty() or args.announce else None)
    except StartError as err:
        fail(str(err), EXIT_UNREACHABLE if err.unreachable else 2)
    finally:
        run.close()
    return EXIT_OK


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be positive")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    nodes = sub.add_parser(
        "nodes",
        help="exact nodes that join a real cluster",
        description="The nodes of a Nodes file (or a Fleet file's nodeGroups) join the API server of a "
        "kubeconfig: each registers its Node, renews its Lease, and admits the pods bound to it as the "
        "kubelet of its version would (Running after its start-up latency, or Failed with the kubelet's "
        "reason and message). Runs until Ctrl-C or SIGTERM; a restart recovers every node from --state-dir.",
    )
    add_file_arguments(nodes, "a kind: Nodes (or kind: Fleet) YAML file")
    nodes.add_argument(
        "--kubeconfig", metavar="FILE", help="the cluster to join (default: $KUBECONFIG, else ~/.kube/config)"
    )
    nodes.add_argument("--context", metavar="NAME", help="the kubeconfig context (default: its current one)")
    nodes.add_argument(
        "--state-dir",
        metavar="DIR",
        help="each node's checkpoints and admitted pods, in DIR/<node> (locked while running; default "
        "$XDG_STATE_HOME/kubeletemu/nodes)",
    )
    nodes.add_argument(
        "--podresources-dir",
        metavar="DIR",
        help="also serve each node's podresources API on DIR/<node>/kubelet.sock (for an exporter per node)",
    )
    add_feed_arguments(nodes).add_argument(
        "--feed-heartbeat-period",
        metavar="SECONDS",
        type=_positive_seconds,
        default=5.0,
        help="a Heartbeat on every feed stream this often (default %(default)s)",
    )
    nodes.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="the lowest level logged (JSON lines on standard output): %(choices)s (default %(default)s)",
    )
    nodes.add_argument(
        "--announce",
        action="store_true",
        help="say on standard error when every node has joined, also when it is not a terminal",
    )
    nodes.set_defaults(func=cmd_nodes)
