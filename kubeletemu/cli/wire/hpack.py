"""HPACK (RFC 7541), the header compression of HTTP/2, as much as one gRPC client needs.

Encoding writes every field as a literal without indexing (RFC 7541 §6.2.2) and plain strings: valid
for any peer, and a request's few headers gain nothing from the tables. Decoding is complete, since the
peer chooses: indexed fields, literals with and without indexing or never indexed, the dynamic table with
its size updates and evictions, and Huffman-coded strings.

The Huffman code of Appendix B is canonical (codes of each length follow in symbol order, each length's
first code continues the previous length's last one, shifted), so the code lengths per symbol define it:
``_LENGTHS`` holds them, symbol 0 … 256 (EOS), as letters (``A`` is 5 bits). ``tests/cli/test_wire_hpack.py``
checks the decoder against the RFC's examples and against the ``hpack`` library's encoder.
"""

from __future__ import annotations

from collections.abc import Iterable

Header = tuple[str, str]

# RFC 7541 Appendix A.
_STATIC: tuple[Header, ...] = (
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
)

# RFC 7541 Appendix B: each symbol's code length in bits, as chr(ord("A") + length - 5).
_LENGTHS = (
    "ISXXXXXXXTZXXZXXXXXXXXZXXXXXXXXXBFFHIBDGFFDGDBBBAAABBBBBBBCDKBHF"
    "IBCCCCCCCCCCCCCCCCCCCCCCDCDIOIJBKABABABBBACCBBBABCBAABCCCCCKGJIX"
    "PRPPRRRSRSSSSSTSTTRSTSSSSQRSRSSTRQPRRSSQSRRTQRSSQQRQSRSSPRRRSRRS"
    "VVPORSRUVVVWWVTUOQVWWVWTQQVVXWWWPTPQRQQSRRUUTTVSVWVVWWWWWXWWWWWV"
    "Z"
)
_EOS = 256
# RFC 7541 §4.1: an entry's size counts its name, its value and 32 octets.
_ENTRY_OVERHEAD = 32
DEFAULT_TABLE_SIZE = 4096


class HpackError(Exception):
    """A header block this decoder cannot read: HTTP/2's COMPRESSION_ERROR, fatal to the connection."""


class HeaderListTooLargeError(HpackError):
    """A header block that decodes to more than the receiver allows."""


def huffman_code() -> tuple[list[int], list[int], list[int], list[int]]:
    """The canonical code as, per length ``n`` (0 … 30): the first code of that length, how many codes
    have it, where its symbols start in ``symbols``; and ``symbols`` ordered by (length, symbol)."""
    lengths = [ord(c) - ord("A") + 5 for c in _LENGTHS]
    symbols = sorted(range(len(lengths)), key=lambda s: (lengths[s], s))
    longest = max(lengths)
    first, count, start = [0] * (longest + 1), [0] * (longest + 1), [0] * (longest + 1)
    code, previous = 0, lengths[symbols[0]]
    for index, symbol in enumerate(symbols):
        n = lengths[symbol]
        if index:
            code = (code + 1) << (n - previous)
        if count[n] == 0:
            first[n], start[n] = code, index
        count[n] += 1
        previous = n
    return first, count, start, symbols


_huffman: tuple[list[int], list[int], list[int], list[int]] | None = None


def huffman_decode(data: bytes) -> bytes:
    """A Huffman-coded string (RFC 7541 §5.2): padding is at most 7 bits, all ones; EOS never appears."""
    global _huffman
    if _huffman is None:  # built on first use: most answers carry no Huffman string worth the table
        _huffman = huffman_code()
    first, count, start, symbols = _huffman
    out = bytearray()
    code = length = 0
    for byte in data:
        for shift in range(7, -1, -1):
            code = (code << 1) | ((byte >> shift) & 1)
            length += 1
            if length < len(first) and code - first[length] < count[length] and code >= first[length]:
                symbol = symbols[start[length] + code - first[length]]
                if symbol == _EOS:
                    raise HpackError("Huffman string contains EOS")
                out.append(symbol)
                code = length = 0
            elif length >= len(first):
                raise HpackError("invalid Huffman code")
    if length > 7 or code != (1 << length) - 1:
        raise HpackError("invalid Huffman padding")
    return bytes(out)


def _integer(value: int, prefix_bits: int, flags: int) -> bytes:
    """RFC 7541 §5.1: ``value`` in an N-bit prefix, continued in 7-bit groups."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([flags | value])
    out = bytearray([flags | limit])
    value -= limit
    while value >= 128:
        out.append((value & 127) | 128)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _integer(len(raw), 7, 0) + raw


def encode(headers: Iterable[Header]) -> bytes:
    """A header block of literals without indexing, new names, plain strings (RFC 7541 §6.2.2)."""
    return b"".join(b"\x00" + _string(name) + _string(value) for name, value in headers)


class Decoder:
    """One connection's decoding context: the dynamic table lives from one header block to the next."""

    def __init__(self, max_table_size: int = DEFAULT_TABLE_SIZE) -> None:
        # The limit this side announced (SETTINGS_HEADER_TABLE_SIZE); the encoder may lower the size used.
        self.max_table_size = max_table_size
        self.table_size = max_table_size
        self._entries: list[Header] = []  # newest first: index 62 is the first entry
        self._used = 0

    def decode(self, block: bytes, max_list_size: int | None = None) -> list[Header]:
        """The block's fields; :class:`HeaderListTooLargeError` as soon as they add up to more than
        ``max_list_size`` (counted as SETTINGS_MAX_HEADER_LIST_SIZE counts: name, value and 32 octets per
        field). Counted while decoding: a few bytes that index a large dynamic-table entry over and over
        decode to far more than they are."""
        headers: list[Header] = []
        list_size = 0

        def add(header: Header) -> None:
            nonlocal list_size
            list_size += len(header[0]) + len(header[1]) + _ENTRY_OVERHEAD
            if max_list_size is not None and list_size > max_list_size:
                raise HeaderListTooLargeError(f"header list larger than {max_list_size} bytes")
            headers.append(header)

        at, end = 0, len(block)
        seen_field = False
        while at < end:
            byte = block[at]
            if byte & 0x80:  # indexed field (§6.1)
                index, at = self._read_integer(block, at, 7)
                add(self._lookup(index))
            elif byte & 0x40:  # literal with incremental indexing (§6.2.1)
                header, at = self._read_literal(block, at, 6)
                add(header)
                self._insert(header)
            elif byte & 0x20:  # dynamic table size update (§6.3), only before the block's first field
                if seen_field:
                    raise HpackError("dynamic table size update after a header field")
                size, at = self._read_integer(block, at, 5)
                if size > self.max_table_size:
                    raise HpackError(f"dynamic table size {size} above the limit {self.max_table_size}")
                self.table_size = size
                self._evict(0)
                continue
            else:  # literal without indexing (0000) or never indexed (0001) (§6.2.2, §6.2.3)
                header, at = self._read_literal(block, at, 4)
                add(header)
            seen_field = True
        return headers

    def _read_integer(self, block: bytes, at: int, prefix_bits: int) -> tuple[int, int]:
        limit = (1 << prefix_bits) - 1
        if at >= len(block):
            raise HpackError("header block ends inside an integer")
        value = block[at] & limit
        at += 1
        if value < limit:
            return value, at
        shift = 0
        while True:
            if at >= len(block):
                raise HpackError("header block ends inside an integer")
            byte = block[at]
            at += 1
            value += (byte & 127) << shift
            shift += 7
            if not byte & 128:
                return value, at
            if shift > 56:
                raise HpackError("integer too large")

    def _read_string(self, block: bytes, at: int) -> tuple[str, int]:
        if at >= len(block):
            raise HpackError("header block ends before a string")
        huffman = block[at] & 0x80
        length, at = self._read_integer(block, at, 7)
        if at + length > len(block):
            raise HpackError("header block ends inside a string")
        raw = block[at : at + length]
        data = huffman_decode(raw) if huffman else raw
        # Header values are octets; gRPC's are ASCII (grpc-message is percent-encoded). Latin-1 keeps any.
        return data.decode("latin-1"), at + length

    def _read_literal(self, block: bytes, at: int, prefix_bits: int) -> tuple[Header, int]:
        index, at = self._read_integer(block, at, prefix_bits)
        if index:
            name = self._lookup(index)[0]
        else:
            name, at = self._read_string(block, at)
        value, at = self._read_string(block, at)
        return (name, value), at

    def _lookup(self, index: int) -> Header:
        if 1 <= index <= len(_STATIC):
            return _STATIC[index - 1]
        dynamic = index - len(_STATIC) - 1
        if 0 <= dynamic < len(self._entries):
            return self._entries[dynamic]
        raise HpackError(f"header index {index} out of range")

    def _insert(self, header: Header) -> None:
        size = len(header[0]) + len(header[1]) + _ENTRY_OVERHEAD  # Latin-1: one character per octet
        self._evict(size)
        if size <= self.table_size:  # a larger entry empties the table and is not added (§4.4)
            self._entries.insert(0, header)
            self._used += size

    def _evict(self, room: int) -> None:
        while self._entries and self._used + room > self.table_size:
            name, value = self._entries.pop()
            self._used -= len(name) + len(value) + _ENTRY_OVERHEAD
