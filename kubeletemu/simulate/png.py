"""A minimal RGB canvas and PNG codec (zlib + struct): enough for bar charts, with no dependency.

Only what we write is read back: 8-bit truecolour, no interlace, filter type 0 on every row. The encoder
is deterministic for a given zlib; tests compare decoded pixels, which do not depend on zlib's version.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping

from kubeletemu.simulate.font import GLYPH_HEIGHT, GLYPH_WIDTH, glyph

RGB = tuple[int, int, int]
_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class PNGError(ValueError):
    """Bytes that are not a PNG this module wrote."""


class Canvas:
    def __init__(self, width: int, height: int, background: RGB = (255, 255, 255)) -> None:
        if width < 1 or height < 1:
            raise ValueError(f"a canvas needs a positive size, got {width}x{height}")
        self.width = width
        self.height = height
        self.pixels = bytearray(bytes(background) * (width * height))

    def fill(self, x: int, y: int, width: int, height: int, colour: RGB) -> None:
        """A rectangle, clipped to the canvas."""
        x0, y0 = max(0, x), max(0, y)
        x1, y1 = min(self.width, x + width), min(self.height, y + height)
        if x0 >= x1 or y0 >= y1:
            return
        row = bytes(colour) * (x1 - x0)
        for yy in range(y0, y1):
            start = (yy * self.width + x0) * 3
            self.pixels[start : start + len(row)] = row

    def text(self, x: int, y: int, text: str, colour: RGB, scale: int = 1) -> int:
        """Draw ``text`` with its top-left corner at (x, y); returns the x after the last glyph."""
        for char in text:
            for row, bits in enumerate(glyph(char)):
                for col, bit in enumerate(bits):
                    if bit == "#":
                        self.fill(x + col * scale, y + row * scale, scale, scale, colour)
            x += (GLYPH_WIDTH + 1) * scale
        return x

    def to_png(self) -> bytes:
        return encode_png(self.width, self.height, bytes(self.pixels))


def text_width(text: str, scale: int = 1) -> int:
    return len(text) * (GLYPH_WIDTH + 1) * scale


def text_height(scale: int = 1) -> int:
    return GLYPH_HEIGHT * scale


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(width: int, height: int, rgb: bytes, text: Mapping[str, str] | None = None) -> bytes:
    stride = width * 3
    if len(rgb) != stride * height:
        raise ValueError(f"{width}x{height} RGB needs {stride * height} bytes, got {len(rgb)}")
    raw = b"".join(b"\x00" + rgb[y * stride : (y + 1) * stride] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunks = [_chunk(b"IHDR", header)]
    for key, value in (text or {}).items():
        chunks.append(_chunk(b"tEXt", key.encode("latin-1") + b"\x00" + value.encode("latin-1")))
    chunks += [_chunk(b"IDAT", zlib.compress(raw, 9)), _chunk(b"IEND", b"")]
    return _SIGNATURE + b"".join(chunks)


def decode_png(data: bytes) -> tuple[int, int, bytes]:
    """(width, height, RGB bytes) of a PNG written by :func:`encode_png`; CRCs are checked."""
    if not data.startswith(_SIGNATURE):
        raise PNGError("not a PNG: bad signature")
    pos, width, height, idat = len(_SIGNATURE), 0, 0, b""
    while pos < len(data):
        if pos + 8 > len(data):
            raise PNGError("truncated chunk header")
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        if len(body) != length or zlib.crc32(kind + body) != crc:
            raise PNGError(f"chunk {kind!r}: bad length or CRC")
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if (depth, colour, interlace) != (8, 2, 0):
                raise PNGError("only 8-bit RGB, non-interlaced PNGs are read")
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * 3
    if len(raw) != (stride + 1) * height:
        raise PNGError("image data does not match the header's size")
    rows = []
    for y in range(height):
        line = raw[y * (stride + 1) : (y + 1) * (stride + 1)]
        if line[0] != 0:
            raise PNGError(f"row {y}: filter {line[0]} is not supported")
        rows.append(line[1:])
    return width, height, b"".join(rows)
