"""LangChain-facing input handling for ``ctxfast.langchain``: message-likes, ``end_on`` and
``strategy="first"`` (a prefix that fits, with an optional partial message after it).

Kept apart from ``langchain.py`` so that file stays about the policy-driven fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ctxfast._errors import ArgumentTypeError

__all__ = ["convert", "is_type", "drop_trailing", "first_prefix", "last_suffix"]


def convert(messages: Any) -> list[Any]:
    """`messages` as a list of BaseMessage, accepting what LangChain's ``convert_to_messages``
    accepts (tuples, dicts, strings, a ``PromptValue`` such as ``ChatPromptValue``, any iterable
    such as a generator). Items that already are messages come back as the same objects. A bare
    string or None is refused: LangChain would read a string as one message per character."""
    from langchain_core.messages import BaseMessage, convert_to_messages
    from langchain_core.prompt_values import PromptValue

    if isinstance(messages, PromptValue):
        return list(messages.to_messages())
    if messages is None or isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
        raise ArgumentTypeError(f"argument 'messages' must be a list of messages, not {type(messages).__name__}")
    out: list[Any] = []
    for i, m in enumerate(messages):
        if isinstance(m, BaseMessage):
            out.append(m)
            continue
        try:
            out.extend(convert_to_messages([m]))
        except Exception as e:  # LangChain raises ValueError or NotImplementedError here
            raise ArgumentTypeError(
                f"messages[{i}] must be a LangChain message or a message-like (a (role, content) tuple, "
                f"a dict with role and content, a str), not {type(m).__name__}"
            ) from e
    return out


def is_type(m: Any, types: Any) -> bool:
    """Whether message `m` is of one of `types`: type names ("human", "ai", ...), message
    classes, or a list of either, as LangChain's ``start_on``/``end_on`` take them."""
    wanted = types if isinstance(types, (list, tuple)) else [types]
    names = [t for t in wanted if isinstance(t, str)]
    classes = tuple(t for t in wanted if isinstance(t, type))
    return getattr(m, "type", None) in names or (bool(classes) and isinstance(m, classes))


def drop_trailing(messages: list[Any], end_on: Any) -> list[Any]:
    """`messages` without the trailing messages that are not of type `end_on`."""
    if end_on is None:
        return messages
    end = len(messages)
    while end > 0 and not is_type(messages[end - 1], end_on):
        end -= 1
    return messages[:end]


def _splitter(text_splitter: Any) -> Callable[[str], list[str]]:
    """The caller's splitter (a callable or an object with ``split_text``), or a split into
    lines that keeps each line feed, so the pieces join back to the text."""
    if text_splitter is None:

        def lines(text: str) -> list[str]:
            parts = text.split("\n")
            return [p + "\n" for p in parts[:-1]] + parts[-1:]

        return lines
    if hasattr(text_splitter, "split_text"):
        return text_splitter.split_text  # type: ignore[no-any-return]
    if callable(text_splitter):
        return text_splitter  # type: ignore[no-any-return]
    raise ArgumentTypeError(f"argument 'text_splitter' must be a callable or a TextSplitter, not {type(text_splitter).__name__}")


def _partial(m: Any, fits: Callable[[Any], bool], split: Callable[[str], list[str]], back: bool = False) -> Any | None:
    """The longest front part of message `m` that `fits` (with `back`, the longest back part):
    content blocks dropped from the other end, then its first (last) text cut at the splitter's
    pieces, dropped from the other end. None if no part fits."""
    content = m.content

    def side(seq: list[Any], keep: int) -> list[Any]:
        return seq[len(seq) - keep :] if back else seq[:keep]

    if isinstance(content, list) and content:
        for keep in range(len(content) - 1, 0, -1):
            candidate = m.model_copy(update={"content": side(content, keep)})
            if fits(candidate):
                return candidate
    # The text to cut, and where it sits: the str content, or block `at` of the content list.
    at: int | None = None
    if isinstance(content, str):
        text = content
    else:
        texts = [j for j, b in enumerate(content or []) if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")]
        if not texts:
            return None
        at = texts[-1] if back else texts[0]
        block = content[at]
        text = block if isinstance(block, str) else str(block.get("text", ""))

    def rebuild(t: str) -> Any:
        if at is None:
            return t
        block = content[at]
        return [t if isinstance(block, str) else {**block, "text": t}]

    pieces = list(split(text))
    for keep in range(len(pieces) - 1, 0, -1):
        candidate = m.model_copy(update={"content": rebuild("".join(side(pieces, keep)))})
        if fits(candidate):
            return candidate
    return None


def _calls(m: Any) -> bool:
    return getattr(m, "type", None) == "ai" and bool(getattr(m, "tool_calls", None))


def _cuttable(m: Any) -> bool:
    """Whether a part of `m` may be sent: not a tool result, nor a message with tool calls."""
    return getattr(m, "type", None) != "tool" and not _calls(m)


def _longest(cuts: list[int], fits: Callable[[int], bool]) -> int:
    """The last of `cuts` (ordered by growing kept size) that `fits`; `cuts[0]` if none."""
    lo, hi = 0, len(cuts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(cuts[mid]):
            lo = mid
        else:
            hi = mid - 1
    return cuts[lo]


def last_suffix(
    messages: list[Any],
    head: list[Any],
    max_tokens: int,
    count: Callable[[list[Any]], int],
    *,
    text_splitter: Any,
    start_on: Any,
) -> list[Any] | None:
    """``strategy="last"`` with ``allow_partial``: `head` (the kept system message, or nothing)
    and the longest suffix of `messages` that fits, with the back part of the message before it
    when that still fits; then leading messages not of type `start_on` dropped. The suffix never
    starts at a tool result. None when `head` alone is over `max_tokens`."""
    if count(head) > max_tokens:
        return None
    split = _splitter(text_splitter)
    n = len(messages)
    # Suffixes messages[k:], from the shortest (k = n) to the longest (k = 0).
    cuts = [k for k in range(n, -1, -1) if k in (0, n) or getattr(messages[k], "type", None) != "tool"]
    start = _longest(cuts, lambda k: count(head + messages[k:]) <= max_tokens)
    kept = list(messages[start:])
    if start > 0 and _cuttable(messages[start - 1]):
        part = _partial(messages[start - 1], lambda c: count(head + [c] + kept) <= max_tokens, split, back=True)
        if part is not None:
            kept.insert(0, part)
    if start_on is not None:
        while kept and not is_type(kept[0], start_on):
            kept.pop(0)
    return head + kept


def first_prefix(
    messages: list[Any],
    max_tokens: int,
    count: Callable[[list[Any]], int],
    *,
    allow_partial: bool,
    text_splitter: Any,
    end_on: Any,
) -> list[Any]:
    """``strategy="first"``: the longest prefix of `messages` whose count (`count` over the
    whole kept list) is within `max_tokens`; with `allow_partial`, the front part of the next
    message that still fits; then trailing messages not of type `end_on` dropped."""
    split = _splitter(text_splitter)
    n = len(messages)

    def clean(k: int) -> bool:
        # A cut that leaves no tool call without its results and no result without its call:
        # providers reject both, so a prefix ends only where a tool round is complete.
        return k == n or (getattr(messages[k], "type", None) != "tool" and not (k > 0 and _calls(messages[k - 1])))

    # Counts grow with the prefix, so the longest clean prefix that fits is found by bisection.
    end = _longest([k for k in range(n + 1) if clean(k)], lambda k: count(messages[:k]) <= max_tokens)
    kept = list(messages[:end])
    if allow_partial and end < n and _cuttable(messages[end]):
        part = _partial(messages[end], lambda c: count(kept + [c]) <= max_tokens, split)
        if part is not None:
            kept.append(part)
    if end_on is None:
        return kept
    while True:
        kept = drop_trailing(kept, end_on)
        if not kept or len(kept) == n or clean(len(kept)) or kept[-1] is not messages[len(kept) - 1]:
            return kept
        kept.pop()


def before_start(out: list[Any], start_on: Any, include_system: bool) -> list[Any]:
    """The kept messages LangChain's ``start_on`` removes: after a kept system message, those
    before the first message of a ``start_on`` type (none when no kept message is of one)."""
    if start_on is None or not out:
        return []
    first = 1 if include_system and out[0].type == "system" else 0
    for k in range(first, len(out)):
        if is_type(out[k], start_on):
            return list(out[first:k])
    return []
