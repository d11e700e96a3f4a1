"""How ``ctxfast.langchain`` reads a ``token_counter``: a chat model, a callable over a list of
messages or over one message, ``"approximate"`` or None (the native count)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

from ctxfast import _payload
from ctxfast._errors import CounterError, InvalidArgumentError

__all__ = ["counter", "empty_cost"]


def _tokens(value: Any) -> int:
    """A counter's answer as whole tokens: fractions round up (never an undercount)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise CounterError(f"token_counter must return a number >= 0, it returned {_payload.preview(value)}")
    return math.ceil(value)


def _takes_one_message(counter: Callable[..., Any]) -> bool:
    """True when the counter's first parameter is annotated as a single BaseMessage."""
    try:
        params = list(inspect.signature(counter).parameters.values())
    except (TypeError, ValueError):
        return False
    if not params:
        return False
    annotation = params[0].annotation
    name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    return str(name).split(".")[-1].strip("'\"") == "BaseMessage"


def _guarded(fn: Callable[[Any], Any]) -> Callable[[Any], int]:
    """The caller's counter, its failures reported as CounterError (Ctrl-C passes through)."""

    def call(arg: Any) -> int:
        try:
            value = fn(arg)
        except Exception as e:
            raise CounterError(f"token_counter raised {_payload.exception_text(e)}") from e
        return _tokens(value)

    return call


def counter(token_counter: Any) -> tuple[str, Callable[[Any], int] | None]:
    """("native" | "approximate" | "message" | "list", the counting function)."""
    if token_counter is None:
        return "native", None
    if isinstance(token_counter, str):
        if token_counter == "approximate":
            return "approximate", None
        # LangChain's wording, so code matching its message keeps working.
        raise InvalidArgumentError(f"Invalid token_counter shortcut {token_counter!r}: argument 'token_counter' string must be 'approximate'")
    if hasattr(token_counter, "get_num_tokens_from_messages"):
        return "list", _guarded(token_counter.get_num_tokens_from_messages)
    if callable(token_counter):
        if _takes_one_message(token_counter):
            return "message", _guarded(token_counter)
        return "list", _guarded(token_counter)
    # ValueError (InvalidArgumentError), as LangChain raises for a counter it cannot use.
    raise InvalidArgumentError(
        # The first sentence is LangChain's wording, so code matching its message keeps working.
        "'token_counter' expected to be a model that implements 'get_num_tokens_from_messages()' or a "
        f"function. Received object of type {type(token_counter)}. (ctxfast also takes 'approximate' or None.)"
    )


def empty_cost(count_fn: Callable[[Any], int]) -> int:
    """The list counter's answer for no messages (0 if it refuses an empty list)."""
    try:
        return count_fn([])
    except CounterError:
        return 0


def image_tokens(content: Any, where: str) -> int:
    """What the image blocks of a LangChain content list cost on OpenAI, as ``ctxfast.openai``
    counts them: an OpenAI ``image_url`` block by the tile rule (its ``detail``, and the size a
    ``data:`` URL's header gives; else 765, an estimate), a standard ``image`` block (``url`` or
    ``base64`` data) the same way at ``detail: auto``."""
    from ctxfast._parts import _image_part_tokens

    total = 0
    for j, block in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(block, dict):
            continue
        at = f"{where}.content[{j}]"
        if block.get("type") == "image_url":
            image = block.get("image_url") or {}
            total += _image_part_tokens({"url": image} if isinstance(image, str) else dict(image), at, None)
        elif block.get("type") == "image":
            data = block.get("base64") or block.get("data")
            mime = block.get("mime_type") or "image/png"
            url = f"data:{mime};base64,{data}" if isinstance(data, str) else block.get("url")
            total += _image_part_tokens({"url": url, "detail": block.get("detail", "auto")}, at, None)
    return total
