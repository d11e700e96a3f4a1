"""An image's width and height from the header of a ``data:`` URL (PNG, JPEG, GIF, WebP), so
the OpenAI adapter can apply the tile rule. Only a prefix of the base64 text is decoded, and no
image library is used: these formats put their size in the first bytes (a JPEG in its frame
header, after any metadata segments, so it gets a longer prefix). Anything else is None, and
the caller falls back to its estimate."""

from __future__ import annotations

import binascii
import struct

#: Base64 characters decoded: enough for PNG, GIF and WebP headers, and for a JPEG's frame
#: header behind the usual metadata (an EXIF block with a thumbnail is up to 64 KiB).
_SHORT, _LONG = 64, 96 * 1024
#: JPEG start-of-frame markers (C0-CF except DHT C4, JPG C8 and DAC CC): they carry the size.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
#: JPEG markers with no length field after them.
_STANDALONE = frozenset(range(0xD0, 0xDA)) | {0x01}


def of_data_url(url: str) -> tuple[int, int] | None:
    """(width, height) of a base64 ``data:image/...`` URL, or None when it cannot be read."""
    if not url.startswith("data:"):
        return None
    comma = url.find(",", 0, 256)
    if comma < 0 or not url[:comma].endswith(";base64"):
        return None
    head = _decode(url, comma + 1, _SHORT)
    if head is None:
        return None
    if head.startswith(b"\xff\xd8"):
        body = _decode(url, comma + 1, _LONG)
        return None if body is None else _jpeg(body)
    return _png(head) or _gif(head) or _webp(head)


def _decode(url: str, start: int, chars: int) -> bytes | None:
    chunk = url[start : start + chars]
    chunk = chunk[: len(chunk) - len(chunk) % 4]
    try:
        return binascii.a2b_base64(chunk)
    except (binascii.Error, ValueError):
        return None


def _positive(w: int, h: int) -> tuple[int, int] | None:
    return (w, h) if w > 0 and h > 0 else None


def _png(b: bytes) -> tuple[int, int] | None:
    if len(b) >= 24 and b.startswith(b"\x89PNG\r\n\x1a\n") and b[12:16] == b"IHDR":
        w, h = struct.unpack(">II", b[16:24])
        return _positive(w, h)
    return None


def _gif(b: bytes) -> tuple[int, int] | None:
    if len(b) >= 10 and b[:6] in (b"GIF87a", b"GIF89a"):
        w, h = struct.unpack("<HH", b[6:10])
        return _positive(w, h)
    return None


def _webp(b: bytes) -> tuple[int, int] | None:
    if len(b) < 30 or b[:4] != b"RIFF" or b[8:12] != b"WEBP":
        return None
    kind = b[12:16]
    if kind == b"VP8 ":
        w, h = struct.unpack("<HH", b[26:30])
        return _positive(w & 0x3FFF, h & 0x3FFF)
    if kind == b"VP8L":
        bits = int.from_bytes(b[21:25], "little")
        return _positive((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if kind == b"VP8X":
        return _positive(int.from_bytes(b[24:27], "little") + 1, int.from_bytes(b[27:30], "little") + 1)
    return None


def _jpeg(b: bytes) -> tuple[int, int] | None:
    i = 2
    n = len(b)
    while i + 1 < n:
        if b[i] != 0xFF:
            return None
        while i < n and b[i] == 0xFF:  # fill bytes before a marker
            i += 1
        if i >= n:
            return None
        marker = b[i]
        if marker in _STANDALONE:
            i += 1
            continue
        if i + 3 > n:
            return None
        length = (b[i + 1] << 8) | b[i + 2]
        if marker in _SOF:
            if i + 8 > n:
                return None
            h, w = struct.unpack(">HH", b[i + 4 : i + 8])
            return _positive(w, h)
        if length < 2:
            return None
        i += 1 + length
    return None
