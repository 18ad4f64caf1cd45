"""The CLI's HPACK (kubeletemu.cli.wire.hpack): RFC 7541's own examples, and python-hyper's ``hpack``
encoder as the reference on random header blocks."""

from __future__ import annotations

import random

import hpack
import pytest
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH
from hpack.table import HeaderTable

from kubeletemu.cli.wire import hpack as ours
from kubeletemu.cli.wire.hpack import Decoder, HpackError, encode, huffman_code, huffman_decode

# RFC 7541 C.4: requests with Huffman coding, one connection (the dynamic table carries over).
C4 = [
    (
        "828684418cf1e3c2e5f23a6ba0ab90f4ff",
        [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
    ),
    (
        "828684be5886a8eb10649cbf",
        [
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
            ("cache-control", "no-cache"),
        ],
    ),
    (
        "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
        [
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/index.html"),
            (":authority", "www.example.com"),
            ("custom-key", "custom-value"),
        ],
    ),
]
# RFC 7541 C.6: responses with Huffman coding in a 256-octet table, so entries are evicted.
C6 = [
    (
        "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82"
        "ae43d3",
        [
            (":status", "302"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("location", "https://www.example.com"),
        ],
    ),
    (
        "4883640effc1c0bf",
        [
            (":status", "307"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("location", "https://www.example.com"),
        ],
    ),
    (
        "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5"
        "af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
        [
            (":status", "200"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
            ("location", "https://www.example.com"),
            ("content-encoding", "gzip"),
            ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
        ],
    ),
]


def test_rfc_7541_request_examples_on_one_connection() -> None:
    decoder = Decoder()
    for block, headers in C4:
        assert decoder.decode(bytes.fromhex(block)) == headers


def test_rfc_7541_response_examples_evict_from_a_small_table() -> None:
    decoder = Decoder(max_table_size=256)
    for block, headers in C6:
        assert decoder.decode(bytes.fromhex(block)) == headers
    # After C.6.3 the table holds exactly these three entries, newest first (the RFC's table state).
    assert [decoder.decode(bytes([0x80 | index]))[0] for index in (62, 63, 64)] == [
        ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
        ("content-encoding", "gzip"),
        ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
    ]
    with pytest.raises(HpackError, match="out of range"):
        decoder.decode(bytes([0x80 | 65]))


def test_the_canonical_code_from_lengths_is_the_rfc_table() -> None:
    first, count, start, symbols = huffman_code()
    codes = {}
    for length in range(len(first)):
        for offset in range(count[length]):
            codes[symbols[start[length] + offset]] = (first[length] + offset, length)
    assert [codes[s] for s in range(257)] == list(zip(REQUEST_CODES, REQUEST_CODES_LENGTH, strict=True))


def test_static_table_is_the_rfc_table() -> None:
    assert [(n.decode(), v.decode()) for n, v in HeaderTable.STATIC_TABLE] == list(ours._STATIC)


def _random_text(rng: random.Random) -> str:
    alphabet = [chr(c) for c in range(0x20, 0x7F)] + ["\t", "é", "\x7f", "\x00"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))


def test_random_blocks_from_the_reference_encoder_decode_alike() -> None:
    """Blocks the ``hpack`` library writes, over one connection each: Huffman on and off, indexed and
    never-indexed fields, repeats that hit the dynamic table, and table-size updates down and up."""
    rng = random.Random(20261129)
    names = [":status", "content-type", "grpc-status", "grpc-message", "date", "x-custom", "set-cookie"]
    for _connection in range(60):
        encoder, decoder = hpack.Encoder(), Decoder()
        reference = hpack.Decoder()
        seen: list[tuple[str, str]] = []
        for _block in range(12):
            if rng.random() < 0.2:
                encoder.header_table_size = rng.choice([0, 64, 256, 1024, 4096])
            headers: list[tuple[str, str] | hpack.HeaderTuple] = []
            for _field in range(rng.randrange(1, 8)):
                if seen and rng.random() < 0.4:
                    name, value = rng.choice(seen)
                else:
                    name = rng.choice(names) if rng.random() < 0.7 else _random_text(rng).lower() or "x"
                    value = _random_text(rng)
                    seen.append((name, value))
                if rng.random() < 0.1:
                    headers.append(hpack.NeverIndexedHeaderTuple(name, value))
                else:
                    headers.append((name, value))
            block = encoder.encode(headers, huffman=rng.random() < 0.7)
            expected = [(n, v) for n, v in reference.decode(block, raw=True)]
            assert decoder.decode(block) == [(n.decode("latin-1"), v.decode("latin-1")) for n, v in expected]


def test_our_encoding_reads_back_with_the_reference_decoder() -> None:
    headers = [
        (":method", "POST"),
        (":path", "/kubeletemu.v1.Admission/ListPods"),
        ("grpc-timeout", "30000m"),
    ]
    assert hpack.Decoder().decode(encode(headers)) == headers
    long_value = "v" * 300  # a length past the 7-bit prefix
    assert hpack.Decoder().decode(encode([("x", long_value)])) == [("x", long_value)]


@pytest.mark.parametrize(
    ("block", "error"),
    [
        ("bf", "out of range"),  # index 63 with an empty dynamic table
        ("80", "out of range"),  # index 0
        ("41", "ends before a string"),
        ("4185", "ends inside a string"),
        ("7f", "ends inside an integer"),
        ("8230", "after a header field"),  # a size update after a field
        ("3fe21f", "above the limit"),  # size 4097 > 4096
        ("4081ff81ff", "Huffman"),  # 8 bits of 1s: padding longer than 7 bits
    ],
)
def test_malformed_blocks_are_errors(block: str, error: str) -> None:
    with pytest.raises(HpackError, match=error):
        Decoder().decode(bytes.fromhex(block))


def test_huffman_rejects_eos_and_bad_padding() -> None:
    assert huffman_decode(bytes.fromhex("f1e3c2e5f23a6ba0ab90f4ff")) == b"www.example.com"
    with pytest.raises(HpackError):
        huffman_decode(b"\xff\xff\xff\xff")  # 30 ones: EOS
    with pytest.raises(HpackError, match="padding"):
        huffman_decode(bytes([0b00000_000]))  # '0' (00000) then three 0 bits of padding
