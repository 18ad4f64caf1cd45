"""What every command shares: exit statuses, the daemon's socket, gRPC calls, reading manifests, printing.

Exit statuses (one readable line on standard error for anything but 0):
0 success; 1 a refusal or negative answer (a rejected pod, a pod that already exists or is not there, a
divergence, a daemon that refused to start because another holds its socket or state); 2 a usage or input
error (bad flags, an unreadable or invalid file, ``INVALID_ARGUMENT``); 3 the daemon is unreachable. A
daemon that answers ``UNAVAILABLE`` itself (its state directory cannot be written) has refused: 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

# Every command module imports this one to build the parser: the stubs, YAML and the engine are
# imported by the functions that use them, so that ``--version``, ``--help`` and a bad flag cost nothing.
if TYPE_CHECKING:
    from typing import TypeVar

    from google.protobuf.message import Message

    from kubeletemu.pod import Pod

    M = TypeVar("M", bound=Message)

DEFAULT_SOCKET = "/run/kubeletemu/kubeletemu.sock"
# Where the systemd unit's configuration lives; a client reads its ``socket`` when nothing else says.
DEFAULT_CONFIG = "/etc/kubeletemu/config.yaml"
SOCKET_ENV = "KUBELETEMU_SOCKET"
SERVICE = "kubeletemu.v1.Admission"
CALL_TIMEOUT_S = 30.0  # a call's deadline, unless the command needs longer (simulate)
CONFIG_ENV = "KUBELETEMU_CONFIG"

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
OUTPUTS = ("table", "json", "yaml")


class CLIError(Exception):
    """One line for standard error, and the exit status that goes with it."""

    def __init__(self, message: str, status: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.status = status


def fail(message: str, status: int = EXIT_USAGE) -> NoReturn:
    raise CLIError(message, status)


def one_line(text: str) -> str:
    """``text`` as one line of standard error: a multi-line message (a kubelet error quoting a manifest)
    has its line breaks folded into spaces."""
    return " ".join(text.split())


def kubelet_version(text: str) -> str:
    """``--kubelet-version``'s type: ``1.34``, ``v1.34.2`` or ``master``, normalised as ``serve`` and the
    daemon read ``kubeletVersion`` (:func:`kubeletemu.versions.parse_version`), so a wrong one is a usage
    error here (exit 2) before any daemon is asked."""
    from kubeletemu.versions import parse_version

    try:
        return parse_version(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


# ---- the daemon's socket ------------------------------------------------------------------------------


def add_socket_arguments(parser: argparse.ArgumentParser, help_text: str | None = None) -> None:
    parser.add_argument(
        "--socket",
        help=help_text
        or f"the daemon's socket (default: ${SOCKET_ENV}, else the socket of --config, else "
        f"{DEFAULT_SOCKET})",
    )
    parser.add_argument(
        "--config",
        dest="client_config",
        metavar="FILE",
        help=f"read the socket from this EmulatorConfiguration (default: ${CONFIG_ENV}, else "
        f"{DEFAULT_CONFIG} where it exists)",
    )


def add_feed_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The node feed's listener (``kubeletemu serve`` and ``kubeletemu nodes``): off unless an address."""
    group = parser.add_argument_group("node feed (mutual TLS; see docs/daemon.md)")
    group.add_argument(
        "--feed-address", metavar="HOST:PORT", help="stream the node's exact state here (off by default)"
    )
    group.add_argument("--feed-cert", metavar="FILE", help="the feed's server certificate (PEM)")
    group.add_argument("--feed-key", metavar="FILE", help="its private key (PEM)")
    group.add_argument(
        "--feed-client-ca", metavar="FILE", help="the CA clients' certificates must chain to (PEM)"
    )
    return group


def add_live_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--live`` on a command that also runs on its own (``simulate``, ``schedule``): use the daemon's
    node. ``--socket``, ``$KUBELETEMU_SOCKET`` and ``--config`` only say where that daemon is."""
    parser.add_argument("--live", action="store_true", help=help_text)


def on_daemon(args: argparse.Namespace) -> bool:
    """Whether a command with ``--live`` runs on the daemon. ``--socket`` or ``--config`` without
    ``--live`` is refused rather than ignored: ``--socket`` alone once meant "run on the daemon" in
    ``simulate`` and ``schedule``, and a script written then must not silently run elsewhere."""
    if args.live:
        return True
    given = [
        flag for flag, dest in (("--socket", "socket"), ("--config", "client_config")) if getattr(args, dest)
    ]
    if given:
        says, them = ("say", "them") if len(given) > 1 else ("says", "it")
        fail(
            f"{args.command}: {' and '.join(given)} only {says} where the daemon is; add --live to use its "
            f"node, or leave {them} out to run here"
        )
    return False


def socket_path(args: argparse.Namespace) -> str:
    """``--socket``, else ``$KUBELETEMU_SOCKET``, else the configuration's ``socket`` (``--config``,
    ``$KUBELETEMU_CONFIG``, or the systemd unit's file where it exists), else the default."""
    if getattr(args, "socket", None):
        return str(args.socket)
    if os.environ.get(SOCKET_ENV):
        return os.environ[SOCKET_ENV]
    config = getattr(args, "client_config", None) or os.environ.get(CONFIG_ENV)
    if config is None and os.path.exists(DEFAULT_CONFIG):
        config = DEFAULT_CONFIG
    if config is not None:
        from kubeletemu.config import load_config

        try:
            return load_config([config]).emulator.socket
        except OSError as err:
            fail(f"{config}: {err.strerror}")
        except Exception as err:
            fail(f"{config}: {err}")
    return DEFAULT_SOCKET


def _unary(socket: str, method: str, request: bytes, timeout: float, max_receive: int | None) -> bytes:
    """One unary call to the daemon's Admission service, over :mod:`kubeletemu.cli.wire.http2` (grpcio's
    import alone would cost three times Python's start-up); a failure becomes the exit status its status
    code stands for."""
    from kubeletemu.cli.wire.http2 import DEFAULT_MAX_RECEIVE, CallError, unary
    from kubeletemu.daemon.refusals import is_state_refusal

    try:
        return unary(socket, f"/{SERVICE}/{method}", request, timeout, max_receive or DEFAULT_MAX_RECEIVE)
    except CallError as err:
        if not err.reached or (err.code == "UNAVAILABLE" and not is_state_refusal(err.trailers)):
            fail(f"cannot reach the daemon at {socket}: {err.details}", EXIT_UNREACHABLE)
        # The daemon's negative answer about what was asked: bad input, not a refusal.
        if err.code in ("INVALID_ARGUMENT", "OUT_OF_RANGE"):
            fail(f"{err.code}: {err.details}", EXIT_USAGE)
        fail(f"{err.code}: {err.details}", EXIT_REFUSED)


def call(
    socket: str,
    method: str,
    request: Message,
    answer: type[M],
    timeout: float = CALL_TIMEOUT_S,
    max_receive: int | None = None,
) -> M:
    """``method`` asked with a protobuf ``request``; its answer parsed as ``answer``."""
    return answer.FromString(_unary(socket, method, request.SerializeToString(), timeout, max_receive))


def call_doc(
    socket: str,
    method: str,
    answer: str,
    request: tuple[str, Mapping[str, Any]] | None = None,
    timeout: float = CALL_TIMEOUT_S,
    max_receive: int | None = None,
) -> dict[str, Any]:
    """``method`` asked with ``request``, a message's full name and its document (None: every field at its
    default), encoded by :mod:`kubeletemu.cli.wire.protoenc`; its answer, of message ``answer``
    (``kubeletemu.v1.ListPodsResponse``), as the document ``-o json|yaml`` prints, decoded by
    :mod:`kubeletemu.cli.wire.protodoc`: the same as :func:`to_dict` of the parsed message. Neither way
    loads the protobuf runtime."""
    from kubeletemu.cli.wire.protodoc import WireError, decode

    data = b""
    if request is not None:
        from kubeletemu.cli.wire.protoenc import encode

        data = encode(*request)
    reply = _unary(socket, method, data, timeout, max_receive)
    try:
        return decode(answer, reply)
    except WireError as err:
        fail(f"the daemon's answer to {method} is not a {answer}: {err}", EXIT_REFUSED)


def to_dict(message: Any) -> dict[str, Any]:
    """A response as ``-o json|yaml`` prints it: exact integers, not the JSON mapping's strings."""
    from kubeletemu.cli.protojson import message_doc

    return message_doc(message)


# ---- input --------------------------------------------------------------------------------------------


def add_file_arguments(parser: argparse.ArgumentParser, what: str = "pod manifest(s)") -> None:
    parser.add_argument(
        "-f",
        "--filename",
        "--file",
        dest="files",
        action="append",
        required=True,
        metavar="FILE",
        help=f"{what}, YAML or JSON; repeat it, or name a directory (its .yaml, .yml and .json files); "
        "- for standard input",
    )


def manifest_paths(names: Sequence[str]) -> list[str]:
    """Every ``-f`` in order; a directory stands for its manifest files, sorted by name (kubectl's way)."""
    from kubeletemu.manifest import ManifestError, expand_paths

    try:
        return expand_paths(names)
    except ManifestError as err:
        fail(str(err))


def read_pod_files(names: Sequence[str]) -> list[Pod]:
    """All pods of all files, read before anything is sent: a bad file changes nothing."""
    from kubeletemu.manifest import ManifestError, read_pods

    pods: list[Pod] = []
    for path in manifest_paths(names):
        try:
            pods.extend(read_pods(path))
        except ManifestError as err:
            fail(str(err))
        except OSError as err:
            fail(f"{path}: {err.strerror}")
    if not pods:
        fail(f"no pod in {', '.join(names)}")
    return pods


# ---- output -------------------------------------------------------------------------------------------


def add_output_argument(parser: argparse.ArgumentParser, default: str = "table") -> None:
    parser.add_argument(
        "-o", "--output", choices=OUTPUTS, default=default, help="%(choices)s (default %(default)s)"
    )


def emit(docs: Iterable[dict[str, Any]], output: str, table: Callable[[dict[str, Any]], str]) -> None:
    """Objects for programs or people: ``json`` one object per line (JSON Lines), ``yaml`` one document
    each, ``table`` what ``table`` renders; flushed per object, so a reader that went away stops us."""
    first = True
    for doc in docs:
        if output == "json":
            text = json.dumps(doc, sort_keys=True) + "\n"
        elif output == "yaml":
            import yaml

            text = ("" if first else "---\n") + yaml.safe_dump(doc, sort_keys=False)
        else:
            text = table(doc)
            text = text if text.endswith("\n") or not text else text + "\n"
        sys.stdout.write(text)
        sys.stdout.flush()
        first = False


def align(rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, two spaces apart (kubectl's tables); the last is not padded."""
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]) for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def binary_bytes(value: int) -> str:
    """Bytes in Kubernetes binary units for people: ``12.4Gi``, ``512Mi``, ``100`` (exact where it can)."""
    for suffix, unit in _BINARY:
        if abs(value) >= unit:
            scaled = value / unit
            text = f"{scaled:.0f}" if value % unit == 0 else f"{scaled:.1f}"
            return f"{text}{suffix}"
    return str(value)


def cpu_list(ids: Iterable[int]) -> str:
    """CPU ids as the kernel's cpuset list format (``0-3,8``); ``-`` for none."""
    from hostprobe.parse import format_cpulist

    return format_cpulist(ids) or "-"


def pod_source(pod: Pod) -> dict[str, Any]:
    """A pod as the daemon's requests carry it (a ``kubeletemu.v1.PodSource`` document): its manifest, as
    read."""
    from kubeletemu.manifest import pod_to_manifest

    return {"manifest": json.dumps(pod_to_manifest(pod))}
