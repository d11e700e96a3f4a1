"""Reading OpenAI Chat content parts: what each known part type costs, and the message's longest
text (its truncatable string). ``ctxfast.openai`` documents the rules; this module applies them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Union

from ctxfast import _image_size, _payload, _shapes
from ctxfast._errors import ArgumentTypeError
from ctxfast._payload import Origin, Where

#: ``detail: low``: one 512-px image, always; an image whose size is not known (``detail``
#: high or auto): the 1,024×1,024 figure of OpenAI's vision guide, an estimate.
IMAGE_LOW, IMAGE_DEFAULT = 85, 765
#: OpenAI's published tile rule (vision guide, "Calculating costs"): scale to fit 2,048×2,048,
#: then scale the shortest side down to 768, then 170 per 512-px tile plus 85. Images are
#: only scaled down: a 1×1 PNG at ``detail: high`` is one tile, 255 tokens (an API count).
IMAGE_BASE, IMAGE_PER_TILE = 85, 170
IMAGE_FIT_SIDE, IMAGE_SHORT_SIDE, IMAGE_TILE_SIDE = 2048, 768, 512
#: How a caller says how large an image is: ``{url: (width, height)}`` or a callable of the URL.
ImageSizes = Union[Mapping[str, tuple[int, int]], Callable[[str], Union[tuple[int, int], None]]]
#: ``input_audio`` estimate: tokens per second of audio, and the bytes a second takes by format
#: (wav: 16 kHz 16-bit mono; mp3: 128 kb/s).
AUDIO_TOKENS_PER_SECOND = 10
AUDIO_BYTES_PER_SECOND = {"wav": 32_000, "mp3": 16_000}
#: ``file`` part (a PDF: its text and an image of each page) estimate, per file.
FILE_TOKENS = 1600

#: The content part types counted (``ctxfast.openai``'s docstring gives each rule).
PART_TYPES = ("text", "image_url", "input_audio", "file", "refusal")

#: Where a message's truncatable string is, and the string (``_rounds``: its longest text field).
Main = tuple[tuple[Any, ...], str]


def _longer(best: Main | None, path: tuple[Any, ...], value: str) -> Main:
    return (path, value) if best is None or len(value) > len(best[1]) else best


def _audio_tokens(audio: Any, where: str) -> int:
    """The documented estimate for an ``input_audio`` part: ``AUDIO_TOKENS_PER_SECOND`` for each
    second of audio, the length taken from the base64 data's size at ``AUDIO_BYTES_PER_SECOND``."""
    if not isinstance(audio, dict):
        raise ArgumentTypeError(f"{where}.input_audio must be a dict with 'data' and 'format'")
    data = audio.get("data", "")
    if not isinstance(data, str):
        raise ArgumentTypeError(f"{where}.input_audio.data must be a base64 str, not {type(data).__name__}")
    fmt = audio.get("format")
    rate = AUDIO_BYTES_PER_SECOND.get(fmt if isinstance(fmt, str) else "", 16_000)
    return max(1, -(-len(data) * 3 // 4 * AUDIO_TOKENS_PER_SECOND // rate))


def image_tokens(width: int, height: int, detail: Any = "auto") -> int:
    """The tile rule for an image of `width` × `height` pixels (``IMAGE_BASE`` and friends).
    ``auto`` is counted as ``high``: the API may choose low for it, so this is an upper bound."""
    if detail == "low":
        return IMAGE_LOW
    w, h = max(1, int(width)), max(1, int(height))
    if max(w, h) > IMAGE_FIT_SIDE:
        longest = max(w, h)
        w, h = max(1, w * IMAGE_FIT_SIDE // longest), max(1, h * IMAGE_FIT_SIDE // longest)
    if min(w, h) > IMAGE_SHORT_SIDE:
        shortest = min(w, h)
        w, h = max(1, w * IMAGE_SHORT_SIDE // shortest), max(1, h * IMAGE_SHORT_SIDE // shortest)
    tiles = -(-w // IMAGE_TILE_SIDE) * -(-h // IMAGE_TILE_SIDE)
    return IMAGE_BASE + IMAGE_PER_TILE * tiles


def _image_part_tokens(image: dict[str, Any], at: str, sizes: ImageSizes | None) -> int:
    """One ``image_url`` part: 85 at ``detail: low``; else the tile rule on the size the caller
    gives (``sizes``) or a ``data:`` URL's header holds; else ``IMAGE_DEFAULT``, an estimate."""
    detail = image.get("detail", "auto")
    if detail == "low":
        return IMAGE_LOW
    url = image.get("url")
    size = None
    if isinstance(url, str):
        if sizes is not None:
            size = sizes.get(url) if isinstance(sizes, Mapping) else sizes(url)
        if size is None:
            size = _image_size.of_data_url(url)
    if size is None:
        return IMAGE_DEFAULT
    if (
        not isinstance(size, tuple) or len(size) != 2
        or not all(type(v) is int and v > 0 for v in size)
    ):
        raise ArgumentTypeError(f"image_sizes for {at}.image_url must be (width, height), two positive ints")
    return image_tokens(size[0], size[1], detail)


def content_strings(
    content: Any, where: str, origins: list[Where] | None = None, sizes: ImageSizes | None = None
) -> tuple[list[str], int, Main | None]:
    """The strings of a content field, the tokens of its non-text parts and its longest text
    field; with `origins`, where each string came from is appended to it (only to word an error)."""
    if content is None:
        return [], 0, None
    if isinstance(content, str):
        if origins is not None:
            origins.append(Origin(f"{where}.content"))
        return [content], 0, (("content",), content)
    if isinstance(content, list):
        strings: list[str] = []
        extra = 0
        best: Main | None = None
        for j, part in enumerate(content):
            at = f"{where}.content[{j}]"
            if not isinstance(part, dict):
                raise ArgumentTypeError(f"{at} must be a dict, not {type(part).__name__}")
            kind = part.get("type")
            if kind == "text" or kind == "refusal":
                value = part.get(kind, "")
                value = value if type(value) is str else _payload.text(value, at, f".{kind}")
                strings.append(value)
                if origins is not None:
                    origins.append(Origin(f"{at}.{kind}"))
                if kind == "text":
                    best = _longer(best, ("content", j, "text"), value)
            elif kind == "image_url":
                image = part.get("image_url") or {}
                if isinstance(image, str):
                    image = {"url": image}
                if not isinstance(image, dict):
                    raise ArgumentTypeError(f"{at}.image_url must be a dict or a URL string")
                extra += _image_part_tokens(image, at, sizes)
            elif kind == "input_audio":
                extra += _audio_tokens(part.get("input_audio"), at)
            elif kind == "file":
                if not isinstance(part.get("file"), dict):
                    raise ArgumentTypeError(f"{at}.file must be a dict (file_id, or file_data and filename)")
                extra += FILE_TOKENS
            else:
                _shapes.refuse_responses_part(kind, at, "openai")
                raise _shapes.unknown_part(part, at, PART_TYPES, "content part")
        return strings, extra, best
    raise ArgumentTypeError(f"{where}.content must be a str, a list of parts or None, not {type(content).__name__}")
