"""kubeletemu.cli.wire.http2, the CLI's transport, against the real daemon: the same answers and the same
failures (status names, messages, trailers) as grpcio's client gets for the same calls, answers split over
many frames, a request larger than the connection's first window, and the transport failures a client
meets (no socket, nobody listening, a peer that hangs or hangs up)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from kubeletemu.cli.wire.http2 import DEFAULT_WINDOW, CallError, unary
from kubeletemu.daemon.refusals import REFUSAL_KEY
from tests.cli.support import MakeDaemon, kubeletemu
from tests.daemon.daemon_process import DaemonProcess

SERVICE = "/kubeletemu.v1.Admission/"


def manifest(name: str, cpu: str = "1", annotation: str = "") -> str:
    container = {"name": "app", "resources": {"limits": {"cpu": cpu, "memory": "256Mi"}}}
    metadata: dict[str, object] = {"name": name, "namespace": "wire"}
    if annotation:
        metadata["annotations"] = {"example.com/padding": annotation}
    return json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": [container]}}
    )


@pytest.fixture
def daemon(make_daemon: MakeDaemon) -> DaemonProcess:
    return make_daemon()


def test_answers_equal_grpcio_ones(daemon: DaemonProcess) -> None:
    client = daemon.stub()
    for name in ("a", "b"):
        client.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=manifest(name))), timeout=30)
    sock = str(daemon.socket)
    would = pb.WouldAdmitRequest(pod=pb.PodSource(manifest=manifest("c", "3")))
    asked = [
        ("ListPods", pb.ListPodsRequest(), pb.ListPodsResponse, client.ListPods),
        ("GetNodeTopology", pb.GetNodeTopologyRequest(), pb.NodeTopology, client.GetNodeTopology),
        ("GetFingerprint", pb.GetFingerprintRequest(), pb.GetFingerprintResponse, client.GetFingerprint),
        ("WouldAdmit", would, pb.AdmitResponse, client.WouldAdmit),
    ]
    for method, request, answer, theirs in asked:
        ours = answer.FromString(unary(sock, SERVICE + method, request.SerializeToString()))
        assert ours == theirs(request, timeout=30), method


def test_a_large_request_and_answer_cross_windows_and_frames(daemon: DaemonProcess) -> None:
    """A 200 kB request is more than the 65,535 bytes a connection may send before the daemon's first
    WINDOW_UPDATE; a list of 100 pods of 6 containers is more than two 16 kB frames."""
    padding = "x" * 200_000
    request = pb.WouldAdmitRequest(pod=pb.PodSource(manifest=manifest("big", annotation=padding)))
    assert len(request.SerializeToString()) > 3 * DEFAULT_WINDOW
    data = unary(str(daemon.socket), SERVICE + "WouldAdmit", request.SerializeToString())
    assert pb.AdmitResponse.FromString(data) == daemon.stub().WouldAdmit(request, timeout=30)

    client = daemon.stub()
    containers = [{"name": f"container-{c}-with-a-name-as-long-as-names-may-be-{c:08d}"} for c in range(6)]
    for index in range(100):  # the kubelet's maxPods is 110
        best_effort = json.dumps(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"be-{index:03d}", "namespace": "many"},
             "spec": {"containers": containers}}
        )  # fmt: skip
        client.Admit(pb.AdmitRequest(pod=pb.PodSource(manifest=best_effort)), timeout=30)
    data = unary(str(daemon.socket), SERVICE + "ListPods", b"")
    assert len(data) > 2 * 16_384
    assert pb.ListPodsResponse.FromString(data) == client.ListPods(pb.ListPodsRequest(), timeout=30)

    with pytest.raises(CallError) as small:
        unary(str(daemon.socket), SERVICE + "ListPods", b"", max_receive=len(data) - 1)
    assert (small.value.code, small.value.details) == (
        "RESOURCE_EXHAUSTED",
        f"Received message larger than max ({len(data)} vs. {len(data) - 1})",
    )


@pytest.mark.parametrize(
    ("method", "request_bytes"),
    [
        ("RemovePod", pb.RemovePodRequest(uid='ü 100% "odd"\tuid').SerializeToString()),
        ("Admit", pb.AdmitRequest(pod=pb.PodSource(manifest="{")).SerializeToString()),
        ("NoSuchMethod", b""),
        ("ListPods", b"\x0a"),  # a request that does not parse
    ],
    ids=["not-found-percent-encoded", "invalid-argument", "unimplemented", "undecodable"],
)
def test_failures_carry_grpcios_status_and_message(
    daemon: DaemonProcess, method: str, request_bytes: bytes
) -> None:
    with pytest.raises(CallError) as ours:
        unary(str(daemon.socket), SERVICE + method, request_bytes)
    call = daemon.channel().unary_unary(SERVICE + method)
    with pytest.raises(grpc.RpcError) as theirs:
        call(request_bytes, timeout=30)
    assert ours.value.code == theirs.value.code().name
    assert ours.value.details == theirs.value.details()
    assert ours.value.reached
    # Trailers as grpcio's trailing metadata: the daemon's own, no protocol fields.
    assert ours.value.trailers == [(m.key, m.value) for m in theirs.value.trailing_metadata() or ()]


def test_a_state_refusal_arrives_in_the_trailers(make_daemon: MakeDaemon, tmp_path: Path) -> None:
    """A daemon whose state directory cannot be written answers UNAVAILABLE with the refusal mark, which
    the CLI reads to tell it from an unreachable daemon (exit 1, not 3)."""
    daemon = make_daemon()
    registry = daemon.state_dir / "pods"
    # A file where the registry's directory must be: the next admission cannot be saved.
    if registry.exists():
        for child in registry.iterdir():
            child.unlink()
        registry.rmdir()
    registry.write_text("in the way")
    with pytest.raises(CallError) as refused:
        unary(
            str(daemon.socket),
            SERVICE + "Admit",
            pb.AdmitRequest(pod=pb.PodSource(manifest=manifest("r"))).SerializeToString(),
        )
    assert refused.value.code == "UNAVAILABLE" and refused.value.reached
    assert (REFUSAL_KEY, "state-directory-not-writable") in refused.value.trailers


def test_no_socket_and_nobody_listening_are_not_reached(tmp_path: Path) -> None:
    with pytest.raises(CallError) as missing:
        unary(str(tmp_path / "nobody.sock"), SERVICE + "ListPods", b"")
    assert not missing.value.reached and missing.value.code == "UNAVAILABLE"
    assert missing.value.details == "No such file or directory"
    stale = tmp_path / "stale.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(stale))
    listener.close()  # the socket file stays, nobody listens: a daemon that died
    with pytest.raises(CallError) as refused:
        unary(str(stale), SERVICE + "ListPods", b"")
    assert not refused.value.reached and refused.value.details == "Connection refused"


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A listener that does what the test appends to its list: ``hang`` (read, never answer), ``hang-up``
    (close at once) or ``reset:N`` (reset the call's stream with HTTP/2 error code N)."""
    path = str(tmp_path / "peer.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    behaviour: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            if behaviour[-1] == "hang-up":
                conn.close()
                continue
            if behaviour[-1].startswith("reset:"):  # an empty SETTINGS, then RST_STREAM on stream 1
                conn.recv(65_536)
                code = int(behaviour[-1].removeprefix("reset:"))
                settings = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
                reset = bytes([0, 0, 4, 3, 0, 0, 0, 0, 1]) + code.to_bytes(4, "big")
                conn.sendall(settings + reset)
            conn.settimeout(0.1)
            while not stop.is_set():
                try:
                    if not conn.recv(65_536):
                        break
                except TimeoutError:
                    continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path, behaviour
    stop.set()
    thread.join(5)
    listener.close()


def test_a_silent_peer_is_a_deadline_and_a_closing_one_unavailable(peer: tuple[str, list[str]]) -> None:
    path, behaviour = peer
    behaviour.append("hang")
    start = time.monotonic()
    with pytest.raises(CallError) as late:
        unary(path, SERVICE + "ListPods", b"", timeout=0.5)
    assert late.value.code == "DEADLINE_EXCEEDED" and late.value.reached
    assert 0.45 <= time.monotonic() - start < 5
    behaviour.append("hang-up")
    with pytest.raises(CallError) as closed:
        unary(path, SERVICE + "ListPods", b"")
    assert closed.value.code == "UNAVAILABLE" and closed.value.reached


def test_the_cli_reports_a_daemon_gone_mid_request(peer: tuple[str, list[str]], tmp_path: Path) -> None:
    """The CLI restores SIGPIPE's default (so `| head` ends it quietly); a daemon that hangs up while a
    large request is being written must still give exit 3 and one line, not a silent death by SIGPIPE."""
    path, behaviour = peer
    behaviour.append("hang-up")
    big = tmp_path / "big.json"
    big.write_text(manifest("big", annotation="x" * 250_000))
    out = kubeletemu("would-admit", "-f", str(big), "--socket", path)
    assert out.returncode == 3, (out.returncode, out.stderr)
    assert out.stderr.startswith(f"kubeletemu: cannot reach the daemon at {path}: ")
    assert out.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("error", "code"),
    [(0x7, "UNAVAILABLE"), (0x8, "CANCELLED"), (0xB, "RESOURCE_EXHAUSTED"), (0xC, "PERMISSION_DENIED"),
     (0x2, "INTERNAL")],
)  # fmt: skip
def test_a_reset_stream_is_the_status_grpc_core_gives_it(
    peer: tuple[str, list[str]], error: int, code: str
) -> None:
    """RST_STREAM's error code as grpc core's grpc_http2_error_to_grpc_status maps it."""
    path, behaviour = peer
    behaviour.append(f"reset:{error}")
    with pytest.raises(CallError) as reset:
        unary(path, SERVICE + "ListPods", b"", timeout=5)
    assert reset.value.code == code and reset.value.reached
