"""Eviction units over a message list, and rebuilding messages the units left changed.

**Exchanges and rounds.** An exchange runs from a user message that opens one (the user's own
words, not a message of tool results alone) through every message up to the next such user
message; it is one eviction unit. The last exchange is the current turn, except in an agent
loop: when the assistant made tool calls in two or more messages after the last ask, the current
turn is

- the ask (the last exchange-opening user message) and any messages before the first call, and
- the newest tool round: the assistant message that made the last tool calls, its results, and
  everything after them,

and each older round after the ask (one assistant message with tool calls, its results, and any
messages up to the next assistant message with tool calls; Anthropic: the ``tool_use`` message and
the ``tool_result`` message) is its own unit, grouped ``exN.roundK``. Its assistant message is in
the CONVERSATION layer and its results in TOOL_RESULT, like an exchange's, so a policy's floors
("keep the last 2 exchanges") count rounds like exchanges, and digests and drops take the oldest
rounds first. The current turn is protected, so the newest round the model is acting on always
stays, with the ask. A result is always in its call's round (``check_tool_pairs``).

**The truncatable string.** Each message gives the ladder one string, its longest text field by
characters, the first of equal ones (a str content, a text part, a ``tool_result``'s string
content or a text block inside it, a ``tool`` message's content), with the path to it; a message
without text (tool calls alone, an image) gives none. It is also what a digest previews. A truncate rung shortens that string alone, and the message comes
back as a copy made along that path only (``replace_at``): every other part, block, id and field
is the caller's own, untouched. The other strings of the message are still counted: the
segment's ``tokens=`` covers the whole message, and the engine keeps what is not the string as
overhead, so ``fit.total`` is the count of what is sent. A text is never cut to nothing (or to
whitespace): should the core do so, the request is fitted again with that text off limits.

**Anthropic alternation** (``merge_user_runs``). Removing a unit can put two user messages side
by side: a digest (a user message) next to the ask or to a message of results, or a pinned first
message whose exchange left. The later one is merged into the earlier as text blocks, in a copy,
so roles alternate as they did in the input; the count stays an upper bound (each merged piece's
3 tokens of framing are still counted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ctxfast._core import PromptLayer


def assign_exchanges(
    roles: Sequence[str],
    starts_exchange: Callable[[int], bool],
    pin_first_user: bool,
) -> tuple[list[str | None], int | None, int | None]:
    """Group indices into exchanges: returns (group per message, the last ask's index, pinned index).

    ``roles[i]`` is "system", "user" or anything else; ``starts_exchange(i)`` says whether a user
    message opens a new exchange (a message holding only tool results does not).
    """
    groups: list[str | None] = []
    n = 0
    current_start = None
    first_user = None
    for i, role in enumerate(roles):
        if role == "system":
            groups.append(None)
            continue
        if role == "user" and starts_exchange(i):
            n += 1
            current_start = i
            if first_user is None:
                first_user = i
        groups.append(f"ex{n}")
    pinned = first_user if pin_first_user and first_user != current_start else None
    return groups, current_start, pinned


def assign_units(
    roles: Sequence[str],
    starts_exchange: Callable[[int], bool],
    makes_calls: Callable[[int], bool],
    pin_first_user: bool,
) -> tuple[list[str | None], list[bool], int | None]:
    """Group messages into exchanges and, after the last ask, tool rounds (see the module
    docstring): returns (group per message, whether each is in the protected current turn,
    the pinned first user message's index)."""
    groups, ask, pinned = assign_exchanges(roles, starts_exchange, pin_first_user)
    n = len(roles)
    current = [False] * n
    if ask is None:
        return groups, current, pinned
    calls = [i for i in range(ask + 1, n) if roles[i] == "assistant" and makes_calls(i)]
    for i in range(ask, n):
        current[i] = True
    if len(calls) >= 2:
        base = groups[ask]
        for k, (start, end) in enumerate(zip(calls, calls[1:]), 1):
            for i in range(start, end):
                current[i] = False
                if groups[i] is not None:
                    groups[i] = f"{base}.round{k}"
    return groups, current, pinned


def protect_last_unit(groups: Sequence[str | None], current: list[bool]) -> None:
    """With no ask (no user message opens an exchange: a payload of calls and results alone), the
    last unit is the current turn, so the fit never returns an empty request."""
    if any(current):
        return
    last = next((g for g in reversed(groups) if g is not None), None)
    if last is not None:
        for i, g in enumerate(groups):
            current[i] = current[i] or g == last


def place(
    i: int,
    groups: list[str | None],
    current: Sequence[bool],
    pinned: int | None,
    *,
    system: bool,
    tool_result: bool,
) -> tuple[PromptLayer, str | None]:
    """The layer and eviction group of message `i`: system, the current turn (``assign_units``),
    the pinned first user message, a tool result, or conversation. System and pinned messages
    stand alone; the rest belong to their exchange or round."""
    if system:
        return PromptLayer.SYSTEM, None
    if current[i]:
        return PromptLayer.CURRENT_TURN, groups[i]
    if i == pinned:
        return PromptLayer.PINNED, None
    return (PromptLayer.TOOL_RESULT if tool_result else PromptLayer.CONVERSATION), groups[i]


def replace_at(node: Any, path: Sequence[Any], text: str) -> Any:
    """A copy of `node` with the string at `path` replaced by `text`: only the dicts and lists
    along the path are copied; everything else is shared with the original, never edited."""
    if not path:
        return text
    key = path[0]
    copy: Any = dict(node) if isinstance(node, dict) else list(node)
    copy[key] = replace_at(node[key], path[1:], text)
    return copy


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _as_blocks(content: Any) -> list[Any]:
    """A user message's content as a list of blocks (a copy; an empty string has none)."""
    if isinstance(content, str):
        return [_text_block(content)] if content else []
    return list(content)


def merge_user_runs(out: list[dict[str, Any]], origin: dict[int, int]) -> list[dict[str, Any]]:
    """Anthropic: make the fitted list alternate again where the fit put two user messages side
    by side (a digest next to a user message, or a pinned first message whose exchange left).

    A user message that follows another user message in the output, when the two were not
    neighbours in the input, is merged into it: the earlier one becomes a copy whose content is
    its blocks followed by the later one's (a string becomes a text block). `origin` maps
    ``id(message)`` to its input index; a message missing from it (a digest) is never a neighbour.
    Two user messages that were already neighbours in the input are left as they came."""
    merged: list[dict[str, Any]] = []
    last_index: int | None = None  # the input index of merged[-1]'s last piece, if it has one
    for m in out:
        index = origin.get(id(m))
        prev = merged[-1] if merged else None
        adjacent_in_input = index is not None and last_index is not None and index == last_index + 1
        if prev is not None and prev.get("role") == "user" and m.get("role") == "user" and not adjacent_in_input:
            blocks = _as_blocks(m.get("content"))
            # tool_result blocks must lead a user message: never put text in front of them (a
            # message that opens with results follows its tool_use, so this is a safeguard).
            lead = 0
            while lead < len(blocks) and isinstance(blocks[lead], dict) and blocks[lead].get("type") == "tool_result":
                lead += 1
            if lead:
                merged[-1] = {**m, "content": [*blocks[:lead], *_as_blocks(prev.get("content")), *blocks[lead:]]}
            else:
                merged[-1] = {**prev, "content": [*_as_blocks(prev.get("content")), *blocks]}
        else:
            merged.append(m)
        last_index = index
    return merged
