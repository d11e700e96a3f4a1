"""Reading a provider's reported usage: a dict or an SDK object, alone or inside the response.

OpenAI Chat ``prompt_tokens`` (cached: ``prompt_tokens_details.cached_tokens``), OpenAI Responses
``input_tokens`` (``input_tokens_details.cached_tokens``), Anthropic ``input_tokens`` +
``cache_read_input_tokens`` + ``cache_creation_input_tokens`` (its ``input_tokens`` leaves the
cached tokens out) and Gemini ``promptTokenCount`` / ``prompt_token_count`` (cached:
``cachedContentTokenCount``). A bad value is an ``InvalidArgumentError`` naming its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast._fields import preview

_MISSING: Any = object()
_WRAPPERS = ("usage", "usageMetadata", "usage_metadata")
_PROMPT_FIELDS = ("promptTokenCount", "prompt_token_count", "prompt_tokens", "input_tokens")


class Usage(NamedTuple):
    """The prompt size the server counted (cached tokens included), and the cached part if given."""

    prompt: int
    cached: int | None


def _get(obj: Any, name: str) -> Any:
    """``obj[name]`` of a mapping, else the attribute; ``_MISSING`` when absent or None (SDK
    objects carry every field, unset ones as None)."""
    value = obj.get(name, _MISSING) if isinstance(obj, Mapping) else getattr(obj, name, _MISSING)
    return _MISSING if value is None else value


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"{where} must be a non-negative int, got {preview(value)}")
    return int(value)


def _optional(obj: Any, path: tuple[str, ...], where: str) -> int | None:
    for name in path:
        if obj is _MISSING:
            return None
        obj = _get(obj, name)
        where += f".{name}"
    return None if obj is _MISSING else _count(obj, where)


def read_usage(usage: Any, provider: str | None) -> Usage:
    if usage is None or isinstance(usage, (str, bytes, int, float, list, tuple)):
        raise ArgumentTypeError(
            f"argument 'usage' must be the provider's usage (a dict or the SDK's object) or its response, "
            f"not {type(usage).__name__}"
        )
    where = "usage"
    if all(_get(usage, f) is _MISSING for f in _PROMPT_FIELDS):
        # A whole response: its usage is one level down.
        for name in _WRAPPERS:
            inner = _get(usage, name)
            if inner is not _MISSING:
                usage, where = inner, name
                break
    for prompt, cached in (("promptTokenCount", "cachedContentTokenCount"),
                           ("prompt_token_count", "cached_content_token_count")):
        if _get(usage, prompt) is not _MISSING:
            return Usage(_count(_get(usage, prompt), f"{where}.{prompt}"), _optional(usage, (cached,), where))
    if _get(usage, "prompt_tokens") is not _MISSING:
        return Usage(_count(_get(usage, "prompt_tokens"), f"{where}.prompt_tokens"),
                      _optional(usage, ("prompt_tokens_details", "cached_tokens"), where))
    if _get(usage, "input_tokens") is not _MISSING:
        tokens = _count(_get(usage, "input_tokens"), f"{where}.input_tokens")
        anthropic_fields = ("cache_read_input_tokens", "cache_creation_input_tokens")
        present = any((f in usage) if isinstance(usage, Mapping) else hasattr(usage, f) for f in anthropic_fields)
        if provider == "anthropic" or (present and provider != "openai-responses"):
            read = _optional(usage, ("cache_read_input_tokens",), where)
            written = _optional(usage, ("cache_creation_input_tokens",), where)
            return Usage(tokens + (read or 0) + (written or 0), read)
        return Usage(tokens, _optional(usage, ("input_tokens_details", "cached_tokens"), where))
    raise InvalidArgumentError(
        f"{where} has no prompt token count: expected prompt_tokens (OpenAI Chat), input_tokens "
        "(OpenAI Responses, Anthropic) or promptTokenCount (Gemini)"
    )
