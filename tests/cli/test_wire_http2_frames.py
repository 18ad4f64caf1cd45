"""kubeletemu.cli.wire.http2 against a peer that sends the frames each test writes: what a gRPC server may
send and the daemon's grpcio happens not to (trailers over 16 KB in CONTINUATION frames, padded DATA and
HEADERS, the PRIORITY flag, GOAWAY from a daemon restarting mid-call, a lowered SETTINGS_MAX_FRAME_SIZE),
and what a broken or hostile peer sends (settings out of range, padding longer than its frame, frames and
header lists over the limits)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubeletemu.cli.wire.hpack import encode
from kubeletemu.cli.wire.http2 import (
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    MAX_HEADER_LIST,
    PADDED,
    PRIORITY,
    SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_FRAME_SIZE,
    SETTINGS_MAX_HEADER_LIST_SIZE,
    WINDOW_UPDATE,
    CallError,
    unary,
)

METHOD = "/kubeletemu.v1.Admission/ListPods"
ANSWER = b"\x0a\x03abc"  # some protobuf bytes
ACK = 0x1
Frame = tuple[int, int, int, bytes]  # kind, flags, stream, payload


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def settings(*pairs: tuple[int, int]) -> bytes:
    return frame(SETTINGS, 0, 0, b"".join(k.to_bytes(2, "big") + v.to_bytes(4, "big") for k, v in pairs))


def header_frames(block: bytes, end_stream: bool, size: int = 16_384) -> bytes:
    """HEADERS, then CONTINUATION frames of ``size`` bytes, the last one ending the block."""
    pieces = [block[at : at + size] for at in range(0, len(block), size)] or [b""]
    out = b""
    for index, piece in enumerate(pieces):
        flags = (END_HEADERS if index == len(pieces) - 1 else 0) | (
            END_STREAM if end_stream and index == 0 else 0
        )
        out += frame(HEADERS if index == 0 else CONTINUATION, flags, 1, piece)
    return out


RESPONSE_HEADERS = encode([(":status", "200"), ("content-type", "application/grpc")])
MESSAGE = b"\x00" + len(ANSWER).to_bytes(4, "big") + ANSWER


def answer(trailers: list[tuple[str, str]] | None = None) -> bytes:
    """A whole answer: headers, the message, trailers (OK unless given)."""
    block = encode(trailers or [("grpc-status", "0")])
    return header_frames(RESPONSE_HEADERS, False) + frame(DATA, 0, 1, MESSAGE) + header_frames(block, True)


class Peer:
    """The server side of one connection: reads the client's frames, sends what the test says."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.buffer = b""
        self.frames: list[Frame] = []
        self._read_exactly(24)  # the connection preface

    def _read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = self.conn.recv(65_536)
            if not chunk:
                raise ConnectionError("the client closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def frame(self) -> Frame:
        head = self._read_exactly(9)
        payload = self._read_exactly(int.from_bytes(head[:3], "big"))
        got = (head[3], head[4], int.from_bytes(head[5:9], "big"), payload)
        self.frames.append(got)
        return got

    def until(self, done: Callable[[Frame], bool]) -> Frame:
        while not done(got := self.frame()):
            pass
        return got

    def request(self) -> None:
        """Until the request's last DATA frame."""
        self.until(lambda f: f[0] == DATA and bool(f[1] & END_STREAM))

    def send(self, data: bytes) -> None:
        self.conn.sendall(data)


Handler = Callable[[Peer], None]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[Handler], str]]:
    """``serve(handler)``: a socket whose one connection ``handler`` answers; its failures fail the test."""
    errors: list[BaseException] = []
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def start(handler: Handler) -> str:
        path = str(tmp_path / f"peer{len(listeners)}.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        listeners.append(listener)

        def run() -> None:
            conn, _ = listener.accept()
            conn.settimeout(10)
            try:
                handler(Peer(conn))
                while conn.recv(65_536):  # until the client is done
                    pass
            except (ConnectionError, BrokenPipeError):
                pass  # the client closed first: what a test of its refusals expects
            except BaseException as err:
                errors.append(err)
            finally:
                conn.close()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        return path

    yield start
    for thread in threads:
        thread.join(10)
    for listener in listeners:
        listener.close()
    assert not errors, errors


def call(path: str, timeout: float = 10.0) -> bytes:
    return unary(path, METHOD, b"", timeout=timeout)


def refusal(path: str, timeout: float = 10.0) -> tuple[CallError, float]:
    start = time.monotonic()
    with pytest.raises(CallError) as err:
        call(path, timeout)
    return err.value, time.monotonic() - start


# ---- what a gRPC server may send -----------------------------------------------------------------------


def test_trailers_over_16_kb_arrive_across_continuation_frames(serve: Callable[[Handler], str]) -> None:
    text = "m" * 40_000  # a long grpc-message: three frames of header block

    def handler(peer: Peer) -> None:
        peer.request()
        block = encode([("grpc-status", "3"), ("grpc-message", text), ("x-detail", "kept")])
        peer.send(header_frames(RESPONSE_HEADERS, False, size=7) + header_frames(block, True))

    err, _ = refusal(serve(handler))
    assert (err.code, err.details, err.trailers) == ("INVALID_ARGUMENT", text, [("x-detail", "kept")])


@pytest.mark.parametrize("flags", [PADDED, PRIORITY, PADDED | PRIORITY], ids=["padded", "priority", "both"])
def test_padded_and_priority_frames_are_read_without_their_extra_bytes(
    serve: Callable[[Handler], str], flags: int
) -> None:
    def headers(block: bytes, end_stream: bool) -> bytes:
        payload = (bytes([7]) if flags & PADDED else b"") + (
            b"\x80\x00\x00\x03\x10" if flags & PRIORITY else b""
        )
        payload += block + (b"\xff" * 7 if flags & PADDED else b"")
        return frame(HEADERS, flags | END_HEADERS | (END_STREAM if end_stream else 0), 1, payload)

    def handler(peer: Peer) -> None:
        peer.request()
        data = frame(DATA, PADDED, 1, bytes([200]) + MESSAGE + b"\0" * 200)
        empty_padded = frame(DATA, PADDED, 1, bytes([0]))  # a pad length of 0 is padding too
        peer.send(headers(RESPONSE_HEADERS, False) + data + empty_padded)
        peer.send(headers(encode([("grpc-status", "0")]), True))

    assert call(serve(handler)) == ANSWER


def test_goaway_naming_the_call_lets_it_finish(serve: Callable[[Handler], str]) -> None:
    """A daemon stopping gracefully: GOAWAY with the last stream it will serve (this call's), then the
    answer."""

    def handler(peer: Peer) -> None:
        peer.request()
        peer.send(frame(GOAWAY, 0, 0, (2**31 - 1).to_bytes(4, "big") + bytes(4)))
        peer.send(frame(GOAWAY, 0, 0, (1).to_bytes(4, "big") + bytes(4)) + answer())

    assert call(serve(handler)) == ANSWER


def test_goaway_before_the_call_and_a_restart_mid_call_are_unavailable(
    serve: Callable[[Handler], str],
) -> None:
    def not_served(peer: Peer) -> None:
        peer.request()
        peer.send(frame(GOAWAY, 0, 0, bytes(4) + bytes(4) + b"restarting"))

    err, took = refusal(serve(not_served))
    assert (err.code, err.details, err.reached) == (
        "UNAVAILABLE",
        "the daemon closed the connection: restarting",
        True,
    )
    assert took < 5

    def gone_mid_call(peer: Peer) -> None:  # promised to finish the call, then killed
        peer.request()
        peer.send(
            frame(GOAWAY, 0, 0, (1).to_bytes(4, "big") + bytes(4)) + header_frames(RESPONSE_HEADERS, False)
        )
        peer.conn.shutdown(socket.SHUT_RDWR)

    err, took = refusal(serve(gone_mid_call))
    assert (err.code, err.details) == ("UNAVAILABLE", "the daemon closed the connection before answering")
    assert took < 5


def test_a_lowered_max_frame_size_is_honoured(serve: Callable[[Handler], str]) -> None:
    """The peer allows 1 MiB frames, then lowers that to 16 KiB while the request waits for its window:
    every DATA frame sent after the client acknowledged the lower size fits it."""
    sizes: list[int] = []
    request = b"r" * 200_000

    def handler(peer: Peer) -> None:
        peer.send(settings((SETTINGS_MAX_FRAME_SIZE, 1 << 20), (SETTINGS_INITIAL_WINDOW_SIZE, 0)))
        peer.until(lambda f: f[0] == SETTINGS and bool(f[1] & ACK))
        peer.send(settings((SETTINGS_MAX_FRAME_SIZE, 16_384)))
        peer.until(lambda f: f[0] == SETTINGS and bool(f[1] & ACK))
        peer.send(settings((SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20)))
        peer.send(frame(WINDOW_UPDATE, 0, 0, (1 << 20).to_bytes(4, "big")))
        peer.request()
        sizes.extend(len(f[3]) for f in peer.frames if f[0] == DATA)
        peer.send(answer())

    assert unary(serve(handler), METHOD, request, timeout=10) == ANSWER
    assert sum(sizes) == 5 + len(request)
    assert max(sizes) == 16_384


# ---- what a broken or hostile peer sends ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "detail"),
    [
        (settings((SETTINGS_MAX_FRAME_SIZE, 0)), "SETTINGS_MAX_FRAME_SIZE 0, outside 16384..16777215"),
        (settings((SETTINGS_MAX_FRAME_SIZE, 1 << 24)), "SETTINGS_MAX_FRAME_SIZE 16777216, outside"),
        (settings((SETTINGS_INITIAL_WINDOW_SIZE, 1 << 31)), "SETTINGS_INITIAL_WINDOW_SIZE 2147483648, over"),
        (frame(SETTINGS, 0, 0, b"\x00\x05\x00"), "a SETTINGS frame of 3 bytes, not a multiple of 6"),
        (frame(DATA, PADDED, 1, bytes([200]) + b"short"), "more padding or priority than that"),
        (frame(HEADERS, PRIORITY | END_HEADERS, 1, b"\x00\x00"), "more padding or priority than that"),
        (frame(DATA, 0, 1, bytes(16_385)), "a frame of 16385 bytes, over the 16384 this client allows"),
    ],
    ids=[
        "frame-size-0",
        "frame-size-2^24",
        "window-2^31",
        "settings-length",
        "padding",
        "priority",
        "big-frame",
    ],
)
def test_a_protocol_error_ends_the_call_at_once(
    serve: Callable[[Handler], str], sent: bytes, detail: str
) -> None:
    """Not a wait until the deadline on a peer that broke the protocol (a frame size of 0 left the request
    waiting for room to send)."""

    def handler(peer: Peer) -> None:
        peer.send(sent)

    err, took = refusal(serve(handler), timeout=5)
    assert err.code == "INTERNAL" and detail in err.details, err
    assert took < 2


def test_the_header_list_limit_is_announced(serve: Callable[[Handler], str]) -> None:
    announced: list[bytes] = []

    def handler(peer: Peer) -> None:
        announced.append(peer.until(lambda f: f[0] == SETTINGS)[3])
        peer.request()
        peer.send(answer())

    assert call(serve(handler)) == ANSWER
    payload = announced[0]
    pairs = {
        int.from_bytes(payload[at : at + 2], "big"): int.from_bytes(payload[at + 2 : at + 6], "big")
        for at in range(0, len(payload), 6)
    }
    assert pairs[SETTINGS_MAX_HEADER_LIST_SIZE] == MAX_HEADER_LIST


def test_a_header_block_over_the_limit_is_refused_before_it_ends(serve: Callable[[Handler], str]) -> None:
    """The block is not held whole: the call ends once it is over the limit, though the peer would go on."""
    sent: list[int] = []

    def handler(peer: Peer) -> None:
        peer.request()
        peer.send(header_frames(RESPONSE_HEADERS, False) + frame(DATA, 0, 1, MESSAGE))
        peer.send(frame(HEADERS, END_STREAM, 1, b"\x00"))  # no END_HEADERS: CONTINUATION frames follow
        for _ in range(10 * MAX_HEADER_LIST // 16_384):
            peer.send(frame(CONTINUATION, 0, 1, b"\x00" * 16_384))
            sent.append(16_384)

    err, _ = refusal(serve(handler))
    assert err.code == "RESOURCE_EXHAUSTED" and str(MAX_HEADER_LIST) in err.details, err
    assert sum(sent) < 3 * MAX_HEADER_LIST  # what the socket buffers held when the client stopped reading


def test_a_small_block_that_decodes_to_a_huge_list_is_refused(serve: Callable[[Handler], str]) -> None:
    """HPACK's dynamic table lets one byte stand for a 4 KB field: 2,000 bytes would be 8 MB of headers."""
    big = b"v" * 4_000
    # A literal with incremental indexing (becomes entry 62), name "x", its value's length 4,000 as an HPACK
    # integer on a 7-bit prefix: 127, then 3,873 = 33 + 30 * 128 in 7-bit groups.
    block = b"\x40\x01x" + bytes([0x7F, 0x80 | 33, 30]) + big
    block += b"\xbe" * 2_000  # index 62, 2,000 times

    def handler(peer: Peer) -> None:
        peer.request()
        peer.send(
            header_frames(RESPONSE_HEADERS, False) + frame(DATA, 0, 1, MESSAGE) + header_frames(block, True)
        )

    err, _ = refusal(serve(handler))
    assert err.code == "RESOURCE_EXHAUSTED" and str(MAX_HEADER_LIST) in err.details, err
