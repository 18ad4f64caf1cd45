"""One unary gRPC call over HTTP/2 on a unix socket, without grpcio: the CLI's transport.

``import grpc`` alone costs a client three times Python's own start-up (``benchmarks/bench_cli.py``), and
a command asks the daemon one question, so the CLI speaks the little of HTTP/2 (RFC 9113) a unary call
needs: the connection preface with prior knowledge (as gRPC over a unix socket does, no TLS, no upgrade),
one stream, the request as one length-prefixed message (gRPC's "Length-Prefixed-Message": a compressed
flag, a 4-byte big-endian length, the protobuf bytes), and the answer's headers, message and trailers
(``grpc-status``, ``grpc-message`` percent-encoded). Flow control is honoured both ways: the request is
sent within the daemon's windows, and this side opens its own windows wide at once, so an answer of any
size flows without further updates. A status other than OK, a connection that fails or closes, and a
deadline become :class:`CallError` with the status names grpcio gives, and the same limit on a received
message (4 MiB unless the caller raises it). What a peer sends is bounded: frames of at most 16 KiB (this
side never raises SETTINGS_MAX_FRAME_SIZE), a header list of at most :data:`MAX_HEADER_LIST` (announced as
SETTINGS_MAX_HEADER_LIST_SIZE, counted while the block is read and while it is decoded), and what RFC 9113
calls a connection error (padding longer than its frame, a setting out of its range) ends the call
``INTERNAL`` at once, as grpc core does, instead of waiting on a peer that broke the protocol.
``tests/cli/test_wire_http2.py`` talks to the real daemon, ``tests/cli/test_wire_http2_frames.py`` to a
peer that sends the frames a test writes.
"""

from __future__ import annotations

import contextlib
import socket
import time

from kubeletemu.cli.wire.hpack import Decoder, Header, HeaderListTooLargeError, HpackError, encode

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY = 0x4, 0x8, 0x20
SETTINGS_ENABLE_PUSH, SETTINGS_INITIAL_WINDOW_SIZE = 0x2, 0x4
SETTINGS_MAX_FRAME_SIZE, SETTINGS_MAX_HEADER_LIST_SIZE = 0x5, 0x6
DEFAULT_WINDOW, DEFAULT_FRAME, MAX_WINDOW = 65_535, 16_384, 2**31 - 1
MAX_FRAME_LIMIT = 2**24 - 1  # the largest SETTINGS_MAX_FRAME_SIZE a peer may announce (RFC 9113 §6.5.2)
# The largest header list (headers or trailers) accepted: far above what the daemon sends (its messages
# are clipped to a few hundred characters), small enough that a peer cannot make this side hold much.
MAX_HEADER_LIST = 1024 * 1024
STREAM = 1  # the one stream a client's first request opens
# grpcio's default limit on a received message (grpc.max_receive_message_length).
DEFAULT_MAX_RECEIVE = 4 * 1024 * 1024

# gRPC's status codes by number (grpc/doc/statuscodes.md).
STATUS_NAMES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)
# An HTTP status without grpc-status (grpc/doc/http-grpc-status-mapping.md); any other is UNKNOWN.
_HTTP_STATUS = {
    "400": "INTERNAL",
    "401": "UNAUTHENTICATED",
    "403": "PERMISSION_DENIED",
    "404": "UNIMPLEMENTED",
    "429": "UNAVAILABLE",
    "502": "UNAVAILABLE",
    "503": "UNAVAILABLE",
    "504": "UNAVAILABLE",
}


# An HTTP/2 error code in RST_STREAM (RFC 9113 §7) as grpc's status; see _Call._receive.
_RESET_STATUS = {0x7: "UNAVAILABLE", 0x8: "CANCELLED", 0xB: "RESOURCE_EXHAUSTED", 0xC: "PERMISSION_DENIED"}


class CallError(Exception):
    """A call that did not answer OK: the status name, its message, the trailers (the metadata the daemon
    sent with it), and whether the daemon was reached at all (a socket that could not be connected)."""

    def __init__(self, code: str, details: str, trailers: list[Header] | None = None, reached: bool = True):
        super().__init__(f"{code}: {details}")
        self.code = code
        self.details = details
        self.trailers = trailers or []
        self.reached = reached


def unary(
    socket_path: str,
    method: str,
    request: bytes,
    timeout: float = 30.0,
    max_receive: int = DEFAULT_MAX_RECEIVE,
) -> bytes:
    """Call ``method`` (``/package.Service/Method``) with the serialized ``request``; the answer's bytes."""
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(socket_path)
        except OSError as err:
            raise CallError("UNAVAILABLE", err.strerror or str(err), reached=False) from None
        return _Call(sock, deadline, max_receive).run(method, request, timeout)
    finally:
        sock.close()


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def _timeout_header(seconds: float) -> str:
    """``grpc-timeout``: at most 8 digits and a unit; milliseconds, rounded up, as grpcio sends."""
    millis = max(1, int(seconds * 1000 + 0.999))
    return f"{millis}m" if millis < 10**8 else f"{min(int(seconds) + 1, 10**8 - 1)}S"


def _percent_decoded(text: str) -> str:
    """``grpc-message`` is percent-encoded UTF-8 (the gRPC HTTP/2 protocol); a stray ``%`` stays."""
    if "%" not in text:
        return text
    raw = bytearray()
    at = 0
    while at < len(text):
        if text[at] == "%" and _is_hex(text[at + 1 : at + 3]):
            raw.append(int(text[at + 1 : at + 3], 16))
            at += 3
        else:
            raw.extend(text[at].encode("latin-1"))
            at += 1
    return raw.decode("utf-8", "replace")


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)


def _protocol_error(what: str) -> CallError:
    """A connection error of the peer's (RFC 9113 §5.4.1): grpc core ends the call INTERNAL."""
    return CallError("INTERNAL", f"the daemon broke the HTTP/2 protocol: {what}")


def _header_list_too_large() -> CallError:
    # grpc core refuses metadata over its limit RESOURCE_EXHAUSTED too.
    return CallError(
        "RESOURCE_EXHAUSTED", f"the daemon's header list is larger than max ({MAX_HEADER_LIST} bytes)"
    )


class _Call:
    """The client side of one connection carrying one unary call."""

    def __init__(self, sock: socket.socket, deadline: float, max_receive: int) -> None:
        self.sock = sock
        self.deadline = deadline
        self.max_receive = max_receive
        self.buffer = bytearray()
        self.decoder = Decoder()
        # What the daemon allows this side to send: its settings and window updates.
        self.frame_size = DEFAULT_FRAME
        self.initial_window = DEFAULT_WINDOW
        self.connection_window = DEFAULT_WINDOW
        self.stream_window = DEFAULT_WINDOW
        self.block = bytearray()  # a header block being read, across CONTINUATION frames
        self.block_ends_stream = False
        self.header_blocks: list[list[Header]] = []
        self.data = bytearray()
        self.ended = False

    def run(self, method: str, request: bytes, timeout: float) -> bytes:
        block = encode(
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":path", method),
                (":authority", "localhost"),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("grpc-timeout", _timeout_header(timeout)),
            ]
        )
        settings = b"".join(
            key.to_bytes(2, "big") + value.to_bytes(4, "big")
            for key, value in (
                (SETTINGS_ENABLE_PUSH, 0),
                (SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW),
                (SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST),
            )
        )
        out = bytearray(PREFACE)
        out += _frame(SETTINGS, 0, 0, settings)
        out += _frame(WINDOW_UPDATE, 0, 0, (MAX_WINDOW - DEFAULT_WINDOW).to_bytes(4, "big"))
        out += self._header_frames(block)
        self._send(bytes(out))
        self._send_message(b"\x00" + len(request).to_bytes(4, "big") + request)  # not compressed
        while not self.ended:
            self._receive()
        # The answer is complete: a daemon that closed first loses nothing by a GOAWAY not delivered.
        with contextlib.suppress(CallError):
            self._send(_frame(GOAWAY, 0, 0, bytes(8)))  # last stream 0, NO_ERROR
        return self._answer()

    def _header_frames(self, block: bytes) -> bytes:
        """HEADERS, then CONTINUATION frames for a block larger than one frame."""
        pieces = [block[at : at + self.frame_size] for at in range(0, len(block), self.frame_size)] or [b""]
        frames = bytearray()
        for index, piece in enumerate(pieces):
            kind = HEADERS if index == 0 else CONTINUATION
            flags = END_HEADERS if index == len(pieces) - 1 else 0
            frames += _frame(kind, flags, STREAM, piece)
        return bytes(frames)

    def _send_message(self, message: bytes) -> None:
        """DATA frames within the frame size and both send windows, the last one ending the stream."""
        at = 0
        while True:
            room = min(self.frame_size, self.connection_window, self.stream_window, len(message) - at)
            if room <= 0 and at < len(message):
                self._receive()  # wait for WINDOW_UPDATE or SETTINGS (or an early answer)
                if self.ended:
                    return
                continue
            last = at + room == len(message)
            self._send(_frame(DATA, END_STREAM if last else 0, STREAM, message[at : at + room]))
            self.connection_window -= room
            self.stream_window -= room
            at += room
            if last:
                return

    def _send(self, data: bytes) -> None:
        try:
            self.sock.settimeout(self._remaining())
            # MSG_NOSIGNAL: a daemon gone mid-request is EPIPE here, not a SIGPIPE that kills the CLI
            # (which restores SIGPIPE's default so that `| head` ends it quietly).
            self.sock.sendall(data, socket.MSG_NOSIGNAL)
        except TimeoutError:
            raise CallError("DEADLINE_EXCEEDED", "Deadline Exceeded") from None
        except OSError as err:
            raise CallError("UNAVAILABLE", f"the connection failed: {err.strerror or err}") from None

    def _remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise CallError("DEADLINE_EXCEEDED", "Deadline Exceeded")
        return left

    def _read(self, size: int) -> bytes:
        while len(self.buffer) < size:
            try:
                self.sock.settimeout(self._remaining())
                chunk = self.sock.recv(max(65_536, size - len(self.buffer)))
            except TimeoutError:
                raise CallError("DEADLINE_EXCEEDED", "Deadline Exceeded") from None
            except OSError as err:
                raise CallError("UNAVAILABLE", f"the connection failed: {err.strerror or err}") from None
            if not chunk:
                raise CallError("UNAVAILABLE", "the daemon closed the connection before answering")
            self.buffer += chunk
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def _receive(self) -> None:
        """Read and act on one frame."""
        head = self._read(9)
        length = int.from_bytes(head[:3], "big")
        kind, flags, stream = head[3], head[4], int.from_bytes(head[5:9], "big") & MAX_WINDOW
        if length > DEFAULT_FRAME:  # FRAME_SIZE_ERROR: this side announced no larger frames
            raise _protocol_error(f"a frame of {length} bytes, over the {DEFAULT_FRAME} this client allows")
        payload = self._read(length)
        if kind == SETTINGS:
            if not flags & ACK:
                self._settings(payload)
                self._send(_frame(SETTINGS, ACK, 0))
        elif kind == PING:
            if not flags & ACK:
                self._send(_frame(PING, ACK, 0, payload))
        elif kind == WINDOW_UPDATE:
            increment = int.from_bytes(payload[:4], "big") & MAX_WINDOW
            if stream == 0:
                self.connection_window += increment
            else:
                self.stream_window += increment
        elif kind == GOAWAY:
            last_stream = int.from_bytes(payload[:4], "big") & MAX_WINDOW
            if last_stream < STREAM:
                detail = payload[8:].decode("utf-8", "replace")
                raise CallError(
                    "UNAVAILABLE", "the daemon closed the connection" + (f": {detail}" if detail else "")
                )
        elif stream != STREAM:
            return
        elif kind == HEADERS:
            self._headers(self._unpadded(payload, flags, priority=bool(flags & PRIORITY)), flags)
        elif kind == CONTINUATION:
            self.block += payload
            self._check_block_size()
            if flags & END_HEADERS:
                self._end_block()
        elif kind == DATA:
            self.data += self._unpadded(payload, flags, priority=False)
            if len(self.data) > self.max_receive + 5 and self.data[0] == 0:
                self._check_size()
            if flags & END_STREAM:
                self.ended = True
        elif kind == RST_STREAM:
            error = int.from_bytes(payload[:4], "big")
            # grpc core's grpc_http2_error_to_grpc_status: CANCEL is CANCELLED (DEADLINE_EXCEEDED once the
            # deadline has passed), ENHANCE_YOUR_CALM RESOURCE_EXHAUSTED, INADEQUATE_SECURITY
            # PERMISSION_DENIED, REFUSED_STREAM UNAVAILABLE, anything else INTERNAL.
            code = _RESET_STATUS.get(error, "INTERNAL")
            if error == 0x8 and time.monotonic() >= self.deadline:
                code = "DEADLINE_EXCEEDED"
            raise CallError(code, f"the daemon reset the stream (HTTP/2 error {error})")

    def _settings(self, payload: bytes) -> None:
        """Apply the peer's settings; a value out of its range is a connection error (RFC 9113 §6.5.2): a
        frame size of 0 would otherwise leave the request waiting for room that never comes."""
        if len(payload) % 6:
            raise _protocol_error(f"a SETTINGS frame of {len(payload)} bytes, not a multiple of 6")
        for at in range(0, len(payload), 6):
            key, value = (
                int.from_bytes(payload[at : at + 2], "big"),
                int.from_bytes(payload[at + 2 : at + 6], "big"),
            )
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                if value > MAX_WINDOW:
                    raise _protocol_error(f"SETTINGS_INITIAL_WINDOW_SIZE {value}, over {MAX_WINDOW}")
                self.stream_window += value - self.initial_window  # RFC 9113 §6.9.2
                self.initial_window = value
            elif key == SETTINGS_MAX_FRAME_SIZE:
                if not DEFAULT_FRAME <= value <= MAX_FRAME_LIMIT:
                    raise _protocol_error(
                        f"SETTINGS_MAX_FRAME_SIZE {value}, outside {DEFAULT_FRAME}..{MAX_FRAME_LIMIT}"
                    )
                self.frame_size = value

    @staticmethod
    def _unpadded(payload: bytes, flags: int, priority: bool) -> bytes:
        """The fragment or data of a DATA or HEADERS frame: without its pad length, priority fields and
        padding (RFC 9113 §6.1, §6.2)."""
        start, end = 0, len(payload)
        if flags & PADDED:
            if not payload:
                raise _protocol_error("a padded frame without its pad length")
            start, end = 1, len(payload) - payload[0]
        if priority:
            start += 5
        if end < start:  # PROTOCOL_ERROR: the padding is as long as the frame or longer
            raise _protocol_error(f"a frame of {len(payload)} bytes with more padding or priority than that")
        return payload[start:end]

    def _headers(self, fragment: bytes, flags: int) -> None:
        self.block = bytearray(fragment)
        self.block_ends_stream = bool(flags & END_STREAM)
        self._check_block_size()
        if flags & END_HEADERS:
            self._end_block()

    def _check_block_size(self) -> None:
        """A header block is held whole until its last CONTINUATION: bounded as its decoded list is."""
        if len(self.block) > MAX_HEADER_LIST:
            raise _header_list_too_large()

    def _end_block(self) -> None:
        try:
            self.header_blocks.append(self.decoder.decode(bytes(self.block), MAX_HEADER_LIST))
        except HeaderListTooLargeError:
            raise _header_list_too_large() from None
        except HpackError as err:
            raise CallError("INTERNAL", f"unreadable headers from the daemon: {err}") from None
        if self.block_ends_stream:
            self.ended = True

    def _check_size(self) -> None:
        size = int.from_bytes(self.data[1:5], "big")
        if size > self.max_receive:
            raise CallError(
                "RESOURCE_EXHAUSTED", f"Received message larger than max ({size} vs. {self.max_receive})"
            )

    def _answer(self) -> bytes:
        if not self.header_blocks:
            raise CallError("INTERNAL", "the daemon ended the call without headers")
        first = dict(self.header_blocks[0])
        fields = dict(self.header_blocks[-1])
        # The metadata the daemon set, as grpcio's trailing_metadata(): neither pseudo-headers nor the
        # protocol's own fields.
        trailers = [
            (name, value)
            for name, value in self.header_blocks[-1]
            if not name.startswith(":") and name not in ("content-type", "grpc-status", "grpc-message")
        ]
        if "grpc-status" not in fields:
            status = first.get(":status", "")
            code = "UNKNOWN" if status == "200" else _HTTP_STATUS.get(status, "UNKNOWN")
            raise CallError(
                code, f"the daemon's answer has no grpc-status (HTTP status {status or 'none'})", trailers
            )
        try:
            number = int(fields["grpc-status"])
        except ValueError:
            number = 2
        code = STATUS_NAMES[number] if 0 <= number < len(STATUS_NAMES) else "UNKNOWN"
        if code != "OK":
            raise CallError(code, _percent_decoded(fields.get("grpc-message", "")), trailers)
        if len(self.data) < 5:
            raise CallError("INTERNAL", "the daemon answered OK without a message", trailers)
        if self.data[0] != 0:
            raise CallError(
                "INTERNAL", "the daemon compressed its answer, which this client did not offer", trailers
            )
        self._check_size()
        size = int.from_bytes(self.data[1:5], "big")
        if len(self.data) != 5 + size:
            raise CallError("INTERNAL", "the daemon's answer is not exactly one message", trailers)
        return bytes(self.data[5:])
