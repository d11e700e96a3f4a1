"""``ctxfast.openai.fit_messages`` in one crossing: the Python side of ``_core._fit_chat_fast``.

The tool schemas are rendered once per distinct ``(tools, tool_choice)`` (cached by fingerprint:
a server sends the same schemas on every request), the messages go to Rust whole, and the kept
order comes back; the caller's own dicts are returned, a digest is a new user message and a cut
text a copy along its path. Whatever the fast path does not read exactly, it declines, and the
full reader (``openai._fit``) does the request, with its own error messages.
"""

from __future__ import annotations

from typing import Any

from ctxfast import _payload
from ctxfast._core import Budget, Fit, _fingerprint, _fit_chat_fast
from ctxfast._errors import CtxfastError
from ctxfast._openai_schema import OVERHEADS, tools_parts


#: Rendered tool schemas by fingerprint of (tools, tool_choice): a server sends the same schemas
#: on every request, and rendering them is most of what the Python side would do. Bounded.
_SCHEMAS: dict[tuple[int, int], tuple[list[str], tuple[int, int]]] = {}
_SCHEMAS_MAX = 256


def _schemas(tools: list[Any], tool_choice: Any) -> tuple[list[str], tuple[int, int]] | None:
    """The tool schemas' strings and constant tokens ``(alone, sharing a system message)``, from
    the cache when the same schemas were rendered before; None when they are not valid (the full
    reader then says why)."""
    key = (_fingerprint(tools), _fingerprint(tool_choice))
    hit = _SCHEMAS.get(key) if key[0] is not None and key[1] is not None else None  # type: ignore[arg-type]
    if hit is not None:
        return hit
    try:
        strings, _, tokens = tools_parts(tools, tool_choice, False)
    except CtxfastError:
        return None
    got = (strings, (tokens, tokens + OVERHEADS["shares_system"]) if tools else (0, 0))
    if key[0] is not None and key[1] is not None:
        if len(_SCHEMAS) >= _SCHEMAS_MAX:
            _SCHEMAS.clear()
        _SCHEMAS[key] = got  # type: ignore[index]
    return got


def _digest(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _cut_path(message: dict[str, Any], i: int) -> tuple[Any, ...] | None:
    """Where the core's cut text goes: the full reader's longest text of the message."""
    from ctxfast.openai import _read_message  # openai imports this module: read it late

    main = _read_message(message, f"messages[{i}]")[4]
    return main[0] if main else None


def fit(
    messages: Any,
    budget: Any,
    tools: Any,
    policy: Any,
    tokenizer: Any,
    pin_first_user: bool,
    tool_choice: Any,
    previous: Any = None,
    cache: Any = None,
) -> tuple[list[dict[str, Any]], Fit] | None:
    """The request in one crossing (``_fit_chat_fast``) when it is made only of what that path
    reads exactly (text content and parts, names, tool calls and results paired by id); None
    otherwise, and ``openai._fit`` reads it (with its own error messages)."""
    if type(messages) is not list or not (tools is None or type(tools) is list):
        return None
    if not (isinstance(budget, Budget) or (type(budget) is int and budget >= 0)):
        return None
    started, schemas = _payload.telemetry.now(), _schemas(tools or [], tool_choice)
    if schemas is None:
        return None
    got = _fit_chat_fast(
        messages, schemas[0], schemas[1], _payload.resolve_budget(budget), _payload.resolve_policy(policy),
        _payload.resolve_tokenizer(tokenizer), pin_first_user=bool(pin_first_user), previous=previous, cache=cache,
    )
    if got is None:
        return None
    order, digests, cut, result = got
    if any(not t.strip() for t in cut.values()):
        return None  # a text cut to whitespace: the full reader fits again without it
    out = _payload.rebuild(messages, order, digests, cut, lambda i: _cut_path(messages[i], i), _digest, _payload.replace_at)
    _payload.log_fit(len(messages), len(out), result, started)
    return out, result
