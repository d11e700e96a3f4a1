"""What the provider adapters share: messages in, segments through one ``fit``, messages out.

Each adapter turns its provider's messages into ``Message`` records: a layer, an exchange group,
the strings that are tokenized and the framing the provider adds; and what is always sent (tool
schemas, a system prompt, reply priming) into ``Fixed`` records. The strings of the whole
request, fixed parts included, are counted in one ``count_many`` call, each message becomes one ``Segment`` whose
``tokens=`` is its full cost (text plus framing), and the ladder runs once in Rust. Kept messages
come back as the caller's own objects, unchanged. A digest comes back as a new message, and so
does a truncated message (a copy with shorter text).

Grouping is what keeps a payload valid. An exchange runs from a user message through every
assistant and tool message that follows it, up to the next user message. It is one eviction unit,
so a tool call never loses its result: the exchange leaves whole, or a digest replaces it whole.
Everything from the last user message onward is the current turn, which is protected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxfast._core import Budget, Fit, Policy, PromptLayer, Segment, Tokenizer, _resolve_policy, _resolve_tokenizer, fit
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError, TextEncodingError


@dataclass
class Message:
    """One provider message, as the ladder sees it."""

    index: int
    layer: PromptLayer
    group: str | None
    #: What a digest summarises and a truncate rung shortens (the message's main text).
    text: str
    #: Every string the provider renders for this message (text included), each tokenized.
    counted: list[str] = field(default_factory=list)
    #: Tokens the provider adds beyond those strings (message framing, image estimates...).
    framing: int = 0
    meta: dict[str, Any] | None = None


@dataclass
class Fixed:
    """A part that is always sent (tool schemas, a system prompt, reply priming)."""

    label: str
    layer: PromptLayer
    #: Its strings, tokenized in the request's one batch.
    counted: list[str] = field(default_factory=list)
    #: Tokens beyond those strings (per-function constants, a tool-use system prompt...).
    tokens: int = 0
    #: What an error about its text names, e.g. ``"tools"`` or ``"system"``.
    where: str = ""


def resolve_tokenizer(tokenizer: Tokenizer | Callable[[str], int] | None) -> Tokenizer:
    """The tokenizer argument, resolved exactly as ``ctxfast.fit`` resolves it (in Rust): a plain
    callable keeps one wrapper, and so one count cache, across requests."""
    return _resolve_tokenizer(tokenizer)


def resolve_policy(policy: Policy | str | None) -> Policy:
    """The policy argument as ``ctxfast.fit`` resolves it, with the adapters' default, ``agent``."""
    return _resolve_policy(policy, "agent")


def resolve_budget(budget: Budget | int) -> Budget:
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, int) and not isinstance(budget, bool):
        return Budget(budget)
    raise ArgumentTypeError(
        f"argument 'budget' must be a ctxfast.Budget or an int, not {type(budget).__name__}"
    )


def assign_exchanges(
    roles: Sequence[str],
    starts_exchange: Callable[[int], bool],
    pin_first_user: bool,
) -> tuple[list[str | None], int | None, int | None]:
    """Group indices into exchanges: returns (group per message, current-turn start, pinned index).

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


def place(
    i: int,
    groups: list[str | None],
    current: int | None,
    pinned: int | None,
    *,
    system: bool,
    tool_result: bool,
) -> tuple[PromptLayer, str | None]:
    """The layer and eviction group of message `i`: system, the current turn (from the last
    exchange-opening user message on), the pinned first user message, a tool result, or
    conversation. System and pinned messages stand alone; the rest belong to their exchange."""
    if system:
        return PromptLayer.SYSTEM, None
    if current is not None and i >= current:
        return PromptLayer.CURRENT_TURN, groups[i]
    if i == pinned:
        return PromptLayer.PINNED, None
    return (PromptLayer.TOOL_RESULT if tool_result else PromptLayer.CONVERSATION), groups[i]


def fit_messages(
    messages: Sequence[Any],
    records: list[Message],
    fixed: list[Fixed],
    budget: Budget | int,
    policy: Policy | str | None,
    tokenizer: Tokenizer | Callable[[str], int] | None,
    *,
    digest_framing: int,
    make_digest: Callable[[str], Any] | None = None,
    with_text: Callable[[Any, str], Any] | None = None,
) -> tuple[list[Any], Fit]:
    """Count every string in one batch, fit once, and rebuild the message list.

    ``fixed`` holds the parts that are always sent (tool schemas, reply priming); their strings
    join the same batch. ``make_digest(text)`` builds the provider message that stands in for
    a digested exchange, and ``with_text(message, text)`` copies a message with shorter text;
    both default to the dict messages OpenAI and Anthropic share (a plain user message; a copy
    with new ``content``).
    """
    make_digest = make_digest or (lambda text: {"role": "user", "content": text})
    with_text = with_text or (lambda m, text: {**m, "content": text})
    if not records:
        raise InvalidArgumentError("argument 'messages' is empty: there is no request to fit")
    tok = resolve_tokenizer(tokenizer)
    parts: list[Message | Fixed] = [*records, *fixed]
    strings = [s for p in parts for s in p.counted]
    try:
        counts: Sequence[int] = tok.count_many(strings).tolist() if strings else []
    except TextEncodingError as e:
        raise _locate(e, parts) from e
    segments: list[Segment] = []
    at = 0
    for p in parts:
        cost = int(sum(counts[at : at + len(p.counted)]))
        at += len(p.counted)
        if isinstance(p, Message):
            meta = dict(p.meta or {})
            meta["index"] = p.index
            segments.append(Segment(p.text, p.layer, group=p.group, tokens=cost + p.framing, meta=meta))
        elif cost + p.tokens > 0:
            segments.append(Segment(p.label, p.layer, tokens=cost + p.tokens, meta={"fixed": p.label}))
    if not segments:
        raise InvalidArgumentError("argument 'messages' is empty: there is no request to fit")
    result = fit(
        segments,
        resolve_budget(budget),
        resolve_policy(policy),
        tok,
        framing=digest_framing,
    )
    text_of = {r.index: r.text for r in records}
    out: list[Any] = []
    for seg in result.kept:
        meta = seg.meta if isinstance(seg.meta, dict) else {}
        if "fixed" in meta:
            continue
        index = meta.get("index")
        if index is None:
            out.append(make_digest(seg.text))
        elif seg.text == text_of.get(index):
            out.append(messages[index])
        else:
            out.append(with_text(messages[index], seg.text))
    return out, result


def _locate(err: TextEncodingError, parts: list[Message | Fixed]) -> TextEncodingError:
    """Re-word a lone-surrogate error about the batch's strings in terms of the caller's payload:
    ``err.index`` is the string's place in the batch, which maps back to one message or part."""
    if err.index is None:
        return err
    at = err.index
    for p in parts:
        if at < len(p.counted):
            where = f"messages[{p.index}]" if isinstance(p, Message) else p.where or p.label
            return TextEncodingError(
                f"{where} contains a lone surrogate, which is not valid Unicode text and has no token "
                "count; clean it first, e.g. text.encode('utf-8', 'replace').decode('utf-8')",
                where,
                p.index if isinstance(p, Message) else None,
                err.position,
            )
        at -= len(p.counted)
    return err
