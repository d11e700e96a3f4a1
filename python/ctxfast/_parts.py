"""Reading OpenAI Chat content parts: what each known part type costs, and the message's longest
text (its truncatable string). ``ctxfast.openai`` documents the rules; this module applies them."""

from __future__ import annotations

from typing import Any

from ctxfast import _payload, _shapes
from ctxfast._errors import ArgumentTypeError
from ctxfast._payload import Origin, Where

IMAGE_LOW, IMAGE_DEFAULT = 85, 765
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


def content_strings(
    content: Any, where: str, origins: list[Where] | None = None
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
                extra += IMAGE_LOW if image.get("detail") == "low" else IMAGE_DEFAULT
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
