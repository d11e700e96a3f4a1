"""Anthropic prompt-cache breakpoints for ``anthropic.fit_messages(cache_breakpoints=...)``.

Anthropic caches a prompt's prefix only up to a block marked ``cache_control``, at most four per
request (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching). A conversation
that marks its last block has the whole request written to the cache, and the next turn, which
appends, reads it back (the provider looks back from the new breakpoint to the ones it wrote).
So the placed breakpoint goes on the last block of the fitted payload: the current turn, which
the policy never drops and which the next request repeats unchanged. The caller's own
breakpoints are kept and counted against the limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxfast._errors import ArgumentTypeError, InvalidArgumentError

#: Anthropic's limit on ``cache_control`` blocks in one request.
BREAKPOINT_LIMIT = 4

#: What a placed breakpoint says: the default five-minute cache.
EPHEMERAL = {"type": "ephemeral"}


def _marked(value: Any) -> bool:
    return isinstance(value, dict) and value.get("cache_control") is not None


def _listing(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def blocks_marked(content: Any) -> int:
    """How many blocks of a message's (or a system prompt's) content carry ``cache_control``."""
    if isinstance(content, list):
        return sum(1 for b in content if _marked(b))
    return 0


def caller_breakpoints(system: Any, tools: Sequence[Any] | None, messages: Sequence[Any]) -> tuple[int, list[int], bool]:
    """The caller's breakpoints: how many in all, which messages hold one, and whether the
    system prompt or the tool schemas do."""
    # Read before the request is checked: anything but a sequence is left to the checks, which
    # name the argument.
    tool_list: Sequence[Any] = tools if tools is not None and _listing(tools) else ()
    message_list: Sequence[Any] = messages if _listing(messages) else ()
    in_front = blocks_marked(system) + sum(1 for t in tool_list if _marked(t))
    marked = [i for i, m in enumerate(message_list) if isinstance(m, dict) and blocks_marked(m.get("content"))]
    total = in_front + sum(blocks_marked(message_list[i].get("content")) for i in marked)
    return total, marked, in_front > 0


def allowance(cache_breakpoints: Any, already: int) -> int:
    """How many breakpoints to place: ``True`` as many as the limit leaves (one is all the
    policy places), an int at most that many, ``False``/None none."""
    if cache_breakpoints is None or cache_breakpoints is False:
        return 0
    if cache_breakpoints is True:
        wanted = 1
    elif isinstance(cache_breakpoints, int) and not isinstance(cache_breakpoints, bool):
        if cache_breakpoints < 0:
            raise InvalidArgumentError(f"argument 'cache_breakpoints' must be >= 0, got {cache_breakpoints}")
        wanted = min(cache_breakpoints, 1)
    else:
        raise ArgumentTypeError(
            f"argument 'cache_breakpoints' must be a bool or an int, not {type(cache_breakpoints).__name__}"
        )
    return max(0, min(wanted, BREAKPOINT_LIMIT - already))


def place_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with a breakpoint on the last block of the last message (a copy of that
    message; a str content becomes one text block). Unchanged when that block has one."""
    if not messages:
        return messages
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        if _marked(content[-1]):
            return messages
        blocks = [*content[:-1], {**content[-1], "cache_control": dict(EPHEMERAL)}]
    else:
        return messages
    return [*messages[:-1], {**last, "content": blocks}]
