"""``image_url`` parts by OpenAI's published tile rule (issue 11, item 2).

Formerly every non-low image counted a flat 765 (the 1,024×1,024 case): 3× the API's figure
for a small image (776 where the API said 266 on LiteLLM's 1×1 PNG case) and too low for a
wide one. Now: 85 at ``detail: low``; otherwise scale to fit 2,048×2,048, scale the shortest
side down to 768, 170 per 512-px tile plus 85, with the size from ``image_sizes=`` or the
``data:`` URL's header; 765 only when the size is unknown (an estimate).
"""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest

from ctxfast import ArgumentTypeError, Tokenizer
from ctxfast._image_size import of_data_url
from ctxfast._parts import image_tokens
from ctxfast.openai import IMAGE_DEFAULT, fit_messages

O200K = Tokenizer.from_encoding("o200k_base")
#: LiteLLM's image case (messages_with_counts.py @ 895cf2f7): a 1×1 PNG at detail high, gpt-4o.
PNG_1X1 = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z/C/HgAGgwJ/lK3Q6wAAAABJRU5ErkJggg=="


def data_url(kind: str, raw: bytes) -> str:
    return f"data:image/{kind};base64," + base64.b64encode(raw).decode()


def png(w: int, h: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", w, h) + b"\x08\x06\x00\x00\x00" + b"\0" * 40


def gif(w: int, h: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", w, h) + b"\0" * 40


def webp(chunk: bytes, body: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", 100) + b"WEBP" + chunk + struct.pack("<I", 50) + body + b"\0" * 40


def jpeg(w: int, h: int, metadata: int = 0) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\0" * 9
    app1 = b"\xff\xe1" + struct.pack(">H", metadata + 2) + b"\x01" * metadata if metadata else b""
    sof = b"\xff\xc0" + struct.pack(">HBHH", 17, 8, h, w) + b"\0" * 12
    return b"\xff\xd8" + app0 + app1 + sof + b"\xff\xda" + b"\0" * 40


def user_image(url: str, detail: str | None = "high", text: str = "Describe this picture:") -> dict[str, Any]:
    image: dict[str, Any] = {"url": url}
    if detail is not None:
        image["detail"] = detail
    return {"role": "user", "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": image}]}


def image_cost(url: str, detail: str | None = "high", **kw: Any) -> int:
    _, fit = fit_messages([user_image(url, detail)], 100_000, tokenizer=O200K, **kw)
    _, bare = fit_messages([{"role": "user", "content": [{"type": "text", "text": "Describe this picture:"}]}],
                           100_000, tokenizer=O200K)
    return fit.total - bare.total


def test_api_measured_image_case() -> None:
    _, fit = fit_messages([user_image(PNG_1X1)], 100_000, tokenizer=O200K)
    assert fit.total == 266  # the API's count; the flat 765 gave 776


@pytest.mark.parametrize(
    "w,h,tokens",
    [(1, 1, 255), (512, 512, 255), (513, 512, 425), (768, 768, 765), (1024, 1024, 765),
     (1024, 2048, 1105), (2048, 4096, 1105), (4096, 8192, 1105), (4000, 500, 85 + 170 * 4), (3000, 1000, 85 + 170 * 8)],
)
def test_tile_rule(w: int, h: int, tokens: int) -> None:
    # the vision guide: 1024×1024 is 765; 2048×4096 scales to 1024×2048, then 768×1536: 6 tiles.
    # 4000×500 fits as 2048×256 (short side under 768: kept), 4×1 tiles; 3000×1000: 2048×682, 4×2
    assert image_tokens(w, h, "high") == image_tokens(w, h, "auto") == tokens
    assert image_tokens(w, h, "low") == 85


@pytest.mark.parametrize(
    "raw,kind,size",
    [(png(640, 480), "png", (640, 480)), (gif(300, 20), "gif", (300, 20)),
     (jpeg(1920, 1080), "jpeg", (1920, 1080)), (jpeg(800, 600, metadata=30_000), "jpeg", (800, 600)),
     (webp(b"VP8X", b"\0" * 4 + (1919).to_bytes(3, "little") + (1079).to_bytes(3, "little")), "webp", (1920, 1080)),
     (webp(b"VP8L", b"\x2f" + (((99 << 14) | 199).to_bytes(4, "little"))), "webp", (200, 100)),
     (webp(b"VP8 ", b"\0\0\0\x9d\x01\x2a" + struct.pack("<HH", 320, 240)), "webp", (320, 240))],
    ids=["png", "gif", "jpeg", "jpeg behind exif", "webp vp8x", "webp vp8l", "webp vp8"],
)
def test_size_from_a_data_url_header(raw: bytes, kind: str, size: tuple[int, int]) -> None:
    url = data_url(kind, raw)
    assert of_data_url(url) == size
    assert image_cost(url) == image_tokens(*size, "high")


def test_unreadable_or_remote_images_cost_the_estimate() -> None:
    for url in ("https://example.invalid/a.png", "data:image/png;base64,!!!!", data_url("bmp", b"BM" + b"\0" * 60),
                "data:image/png,raw", data_url("jpeg", b"\xff\xd8\xff\xe0\x00")):
        assert of_data_url(url) is None, url
        assert image_cost(url) == IMAGE_DEFAULT == 765
        assert image_cost(url, "auto") == image_cost(url, None) == 765
        assert image_cost(url, "low") == 85


def test_caller_sizes() -> None:
    url = "https://example.invalid/wide.png"
    assert image_cost(url, image_sizes={url: (1024, 2048)}) == 1105  # above the flat 765
    assert image_cost(url, image_sizes=lambda u: (64, 64) if u == url else None) == 255
    assert image_cost(url, image_sizes=lambda u: None) == 765  # no answer: the estimate
    assert image_cost(PNG_1X1, image_sizes={}) == 255  # the header still answers
    assert image_cost(url, "low", image_sizes={url: (4096, 4096)}) == 85
    for bad in ((0, 5), (1.5, 2), "big", (1, 2, 3)):
        with pytest.raises(ArgumentTypeError, match=r"messages\[0\]\.content\[1\]\.image_url"):
            fit_messages([user_image(url)], 100_000, image_sizes={url: bad})
