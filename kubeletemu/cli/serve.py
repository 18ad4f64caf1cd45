"""``serve``: the daemon."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys

from kubeletemu.cli.choices import KUBELET_VERSIONS, LOG_LEVELS
from kubeletemu.cli.common import (
    DEFAULT_SOCKET,
    EXIT_REFUSED,
    EXIT_USAGE,
    add_feed_arguments,
    fail,
    kubelet_version,
)


def _duration(text: str) -> float:
    from kubeletemu.config.emulator_config import parse_duration

    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


# A pod to ask about, small enough for one line of a terminal.
DEMO_POD = (
    '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "demo"}, "spec": {"containers": [{"name": "c", '
    '"resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]}}'
)


def next_steps(socket: str, podresources_socket: str) -> str:
    """What to type in a second terminal, verbatim: this interpreter's bin directory (where pip put
    ``kubeletemu``, and ``grpcurl`` with the test extra) on PATH, and the socket in ``KUBELETEMU_SOCKET``."""
    bin_dir = (
        os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv[0] else os.path.dirname(sys.executable)
    )
    if not os.path.exists(os.path.join(bin_dir, "kubeletemu")):
        bin_dir = os.path.dirname(sys.executable)
    lines = [
        f"kubeletemu is serving on {socket} (podresources: {podresources_socket}). In another terminal:",
        f'  export PATH={shlex.quote(bin_dir)}:"$PATH" KUBELETEMU_SOCKET={shlex.quote(socket)}',
        "  kubeletemu topology",
        f"  echo {shlex.quote(DEMO_POD)} | kubeletemu would-admit -f -",
        "  kubeletemu list",
    ]
    if shutil.which("grpcurl", path=bin_dir):
        lines.append(f"  grpcurl -plaintext -unix {shlex.quote(socket)} list")
    lines.append("Stop it with Ctrl-C.")
    return "\n".join(lines) + "\n"


def _announce(socket: str, podresources_socket: str) -> None:
    sys.stderr.write(next_steps(socket, podresources_socket))
    sys.stderr.flush()


def cmd_serve(args: argparse.Namespace) -> int:
    from kubeletemu.daemon.logging import configure_logging
    from kubeletemu.daemon.server import ServeOptions, StartupConflictError, StartupError, serve

    configure_logging(args.log_level)
    options = ServeOptions(
        config_paths=args.config or (),
        socket=args.socket,
        podresources_socket=args.podresources_socket,
        state_dir=args.state_dir,
        sysfs_root=args.sysfs_root,
        procfs_root=args.procfs_root,
        metrics_address=args.metrics_address,
        sample=args.sample,
        shadow=args.shadow,
        kubelet_root_dir=args.kubelet_root_dir,
        kubelet_config=args.kubelet_config,
        kubelet_podresources_socket=args.kubelet_podresources_socket,
        shadow_refresh_period=args.shadow_refresh_period,
        feed_address=args.feed_address,
        feed_cert=args.feed_cert,
        feed_key=args.feed_key,
        feed_client_ca=args.feed_client_ca,
        kubelet_version=args.kubelet_version,  # normalised by the parser (see kubelet_version)
        # Only for a person at a terminal; under systemd the journal gets the JSON log lines alone.
        on_ready=_announce if sys.stderr.isatty() else None,
    )
    try:
        return serve(options)
    except StartupConflictError as err:
        # Another daemon holds the socket or the state directory: a refusal, not bad input.
        fail(str(err), EXIT_REFUSED)
    except StartupError as err:
        fail(str(err), EXIT_USAGE)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve",
        help="run the daemon: an emulated node, or --shadow",
        description="Run the daemon: the kubelet's admission on an emulated node (this host, a captured "
        "tree or --sample), or with --shadow a read-only mirror of this node's real kubelet.",
    )
    serve.add_argument(
        "--config",
        action="append",
        metavar="FILE",
        help="KubeletConfiguration and/or EmulatorConfiguration YAML; repeatable (at most one of each kind "
        "in all)",
    )
    serve.add_argument(
        "--socket", metavar="PATH", help=f"admission socket (default from the config, else {DEFAULT_SOCKET})"
    )
    serve.add_argument(
        "--podresources-socket",
        metavar="PATH",
        help="the kubelet podresources API socket (default from the config, else podresources.sock "
        "beside --socket)",
    )
    serve.add_argument(
        "--state-dir",
        metavar="DIR",
        help="checkpoints and the pod registry (locked while the daemon runs)",
    )
    serve.add_argument("--sysfs-root", metavar="DIR", help="probe this sysfs tree instead of /sys")
    serve.add_argument("--procfs-root", metavar="DIR", help="probe this procfs tree instead of /proc")
    add_feed_arguments(serve)
    serve.add_argument(
        "--metrics-address", metavar="HOST:PORT", help="serve Prometheus metrics here (off by default)"
    )
    serve.add_argument(
        "--sample",
        action="store_true",
        help="use the bundled sample topology (2 NUMA nodes) instead of this host",
    )
    serve.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="the lowest level logged (JSON lines on standard output): %(choices)s (default %(default)s)",
    )
    serve.add_argument(
        "--shadow",
        action="store_true",
        help="mirror this node's real kubelet (read-only) instead of emulating a node; Admit and RemovePod "
        "are refused",
    )
    serve.add_argument(
        "--kubelet-root-dir",
        metavar="DIR",
        help="shadow mode: the kubelet's root directory (/var/lib/kubelet)",
    )
    serve.add_argument(
        "--kubelet-config",
        metavar="FILE",
        help="shadow mode: the kubelet's config file (default: config.yaml in the root dir)",
    )
    serve.add_argument(
        "--kubelet-podresources-socket",
        metavar="PATH",
        help="shadow mode: the kubelet's podresources socket (default: pod-resources/kubelet.sock in the "
        "root dir)",
    )
    serve.add_argument(
        "--shadow-refresh-period",
        type=_duration,
        metavar="DURATION",
        help="shadow mode: re-read the kubelet's state this often besides on changes (10s; 0s: never)",
    )
    serve.add_argument(
        "--kubelet-version",
        type=kubelet_version,
        metavar="VERSION",
        help=f"the kubelet version to be exact to: {', '.join(KUBELET_VERSIONS)} (default from the config, "
        "else master)",
    )
    serve.set_defaults(func=cmd_serve)
