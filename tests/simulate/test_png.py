"""The minimal PNG codec and the bitmap font behind the simulation chart."""

from __future__ import annotations

import struct
import zlib

import pytest

from kubeletemu.simulate.font import FONT, GLYPH_HEIGHT, GLYPH_WIDTH, glyph
from kubeletemu.simulate.png import Canvas, PNGError, decode_png, encode_png, text_width


def test_round_trip_and_chunks() -> None:
    canvas = Canvas(3, 2, (255, 255, 255))
    canvas.fill(1, 0, 5, 1, (10, 20, 30))  # clipped at the right edge
    canvas.fill(-4, 1, 5, 9, (1, 2, 3))  # clipped left and bottom
    png = canvas.to_png()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert png[12:16] == b"IHDR" and struct.unpack(">II", png[16:24]) == (3, 2)
    width, height, pixels = decode_png(png)
    assert (width, height) == (3, 2)
    assert pixels == bytes([255, 255, 255, 10, 20, 30, 10, 20, 30, 1, 2, 3, 255, 255, 255, 255, 255, 255])


def test_text_metadata_chunk_is_skipped_by_the_reader() -> None:
    png = encode_png(1, 1, b"\x00\x00\x00", {"Software": "kubeletemu"})
    assert b"tEXtSoftware\x00kubeletemu" in png
    assert decode_png(png) == (1, 1, b"\x00\x00\x00")


def test_corruption_is_detected() -> None:
    png = bytearray(Canvas(2, 2).to_png())
    with pytest.raises(PNGError, match="bad signature"):
        decode_png(b"GIF89a" + bytes(png[6:]))
    png[30] ^= 0xFF  # inside the IHDR CRC / IDAT: the CRC no longer matches
    with pytest.raises(PNGError, match="bad length or CRC"):
        decode_png(bytes(png))


def test_only_what_we_write_is_read() -> None:
    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # RGBA
    chunk = (
        struct.pack(">I", len(header)) + b"IHDR" + header + struct.pack(">I", zlib.crc32(b"IHDR" + header))
    )
    with pytest.raises(PNGError, match="only 8-bit RGB"):
        decode_png(b"\x89PNG\r\n\x1a\n" + chunk)


def test_encode_checks_the_buffer_size() -> None:
    with pytest.raises(ValueError, match="needs 12 bytes, got 3"):
        encode_png(2, 2, b"abc")
    with pytest.raises(ValueError, match="positive size"):
        Canvas(0, 5)


def test_font() -> None:
    assert all(
        len(rows) == GLYPH_HEIGHT and all(len(r) == GLYPH_WIDTH for r in rows) for rows in FONT.values()
    )
    assert all(set("".join(rows)) <= {"#", "."} for rows in FONT.values())
    assert glyph("a") == glyph("A")
    assert glyph("~") == glyph("?")
    # Every character a configuration label can hold has its own glyph.
    for char in "abcdefghijklmnopqrstuvwxyz0123456789-/=,.:%()_+ ":
        assert char.upper() in FONT, char


def test_text_draws_lit_cells_only() -> None:
    canvas = Canvas(text_width("1"), GLYPH_HEIGHT, (255, 255, 255))
    end = canvas.text(0, 0, "1", (0, 0, 0))
    assert end == text_width("1")
    lit = {
        (x, y)
        for y in range(GLYPH_HEIGHT)
        for x in range(canvas.width)
        if canvas.pixels[(y * canvas.width + x) * 3] == 0
    }
    assert lit == {(x, y) for y, row in enumerate(glyph("1")) for x, cell in enumerate(row) if cell == "#"}
