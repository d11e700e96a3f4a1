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
The last exchange is the current turn, which is protected; in an agent loop (one ask, then many
tool rounds) only the ask and the newest round are, and each older round is a unit of its own
(``_rounds``: the rule, and the one truncatable string each message gives the ladder).

Tool calls and results are paired by id (OpenAI ``tool_calls[k].id`` / ``tool_call_id``,
Anthropic ``tool_use.id`` / ``tool_result.tool_use_id``, LangChain ``tool_calls[k]["id"]`` /
``ToolMessage.tool_call_id``), and a result must sit in the same exchange as its call. When a user
message stands between a call and its result, the payload is **refused** with an
``InvalidArgumentError`` naming the result, the call and the message between them, rather than
the exchanges being merged: the providers reject such a payload anyway (a result must follow its
call), and refusing means that every request ctxfast returns has each result in its call's
exchange, whatever is evicted. A result whose id matches no earlier call, a call id used twice
and a call answered twice are refused the same way. A call with no result (yet) is accepted:
the model may be about to get it. Calls and results without ids (old payloads) are grouped by
position alone, as before; when no call in the payload has an id at all, results are not
checked against calls either (a history whose calls the caller already removed still fits).

Malformed input gets a ``CtxfastError`` subclass naming the path (``messages[3].content[0].input``),
never a ``RecursionError``, ``TypeError`` or ``ValueError``: nested values are read up to
``MAX_DEPTH`` (128) levels, JSON object keys must be strings, integers must fit Python's
int-to-str limit, and error messages never ``repr`` an unvalidated value. Each adapter runs
inside ``boundary()``, which turns anything unexpected into an ``ArgumentTypeError`` or
``InvalidArgumentError`` (``KeyboardInterrupt``, ``SystemExit`` and ``MemoryError`` pass through,
and a failing counter stays a ``CounterError``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Union

from ctxfast._core import Budget, Fit, Policy, PromptLayer, Tokenizer, _fit_records, _resolve_policy, _resolve_tokenizer
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError, TextEncodingError
from ctxfast import telemetry as telemetry

# The field readers, the id pairing and the error boundary live in _fields.py; the adapters
# reach them through this module.
from ctxfast._fields import MAX_DEPTH as MAX_DEPTH
from ctxfast._fields import Cursor as Cursor
from ctxfast._fields import ToolLink as ToolLink
from ctxfast._fields import _step as _step
from ctxfast._fields import as_json as as_json
from ctxfast._fields import boundary as boundary
from ctxfast._fields import check_tool_pairs as check_tool_pairs
from ctxfast._fields import check_tree as check_tree
from ctxfast._fields import exception_text as exception_text
from ctxfast._fields import preview as preview
from ctxfast._fields import sequence_arg as sequence_arg
from ctxfast._fields import text as text
from ctxfast._fields import tool_id as tool_id
from ctxfast._rounds import assign_exchanges as assign_exchanges
from ctxfast._rounds import assign_units as assign_units
from ctxfast._rounds import place as place
from ctxfast._rounds import protect_last_unit as protect_last_unit
from ctxfast._rounds import replace_at as replace_at

#: One INFO line per adapter fit that removed anything (``logging.getLogger("ctxfast")``); a fit
#: that kept everything logs nothing, and the line is only built when INFO is enabled.
log = logging.getLogger("ctxfast")


class Origin(NamedTuple):
    """Where a counted string (or a piece of one) came from, for error messages."""

    #: The caller's path, e.g. ``"tools[0].function.description"``.
    path: str
    #: The item of the argument it belongs to (a tool's index, a system block's index), if any.
    item: int | None = None
    #: Where this piece starts in the counted string (strings joined from several fields).
    start: int = 0


#: One counted string's origin: one field, or the pieces of a string joined from several.
Where = Union[Origin, tuple[Origin, ...]]


@dataclass
class Message:
    """One provider message, as the ladder sees it."""

    index: int
    layer: PromptLayer
    group: str | None
    #: What a digest previews and a truncate rung shortens: the message's longest text field.
    text: str
    #: Every string the provider renders for this message (text included), each tokenized.
    counted: list[str] = field(default_factory=list)
    #: Tokens the provider adds beyond those strings (message framing, image estimates...).
    framing: int = 0
    #: Its (first) tool call, ``(name, arguments)``, which a digest of its unit names.
    call: tuple[str, str] | None = None
    #: Where each of ``counted`` came from (parallel to it), or None: see ``fit_messages``'s
    #: ``origins_of``, else the message as a whole.
    origins: list[Where] | None = None
    #: Where ``text`` is in the message (keys and indices from the message down), or None when
    #: the message has no text to shorten. ``text`` must also be one of ``counted``, whole.
    path: tuple[Any, ...] | None = None


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
    #: Where each of ``counted`` came from (parallel to it): e.g. which tool, which field.
    origins: list[Where] | None = None


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
    with_text: Callable[[Any, tuple[Any, ...], str], Any] | None = None,
    origins_of: Callable[[int], list[Where]] | None = None,
    input_name: str = "messages",
    previous: Fit | None = None,
    cache: Any = None,
    cache_default: str = "none",
    provider: str | None = None,
    exactness: str | None = None,
    breakpoints: list[int] | None = None,
) -> tuple[list[Any], Fit]:
    """Count every string in one batch, fit once, and rebuild the message list.

    ``fixed`` holds the parts that are always sent (tool schemas, reply priming); their strings
    join the same batch. ``make_digest(text)`` builds the provider message that stands in for
    a digested unit, and ``with_text(message, path, text)`` copies a message with the string at
    ``path`` (its record's ``path``) shortened to ``text``; both default to the dict messages
    OpenAI and Anthropic share (a plain user message; ``replace_at``). ``origins_of(i)`` gives
    where each counted string of message `i` came from, for a message whose record has no
    ``origins``: computed only to word an error. ``input_name`` is the argument the items came
    in (``"messages"``, Responses ``"input"``, Gemini ``"contents"``): errors and trace rows name
    positions in it. ``previous`` and ``cache`` are the caller's (``ctxfast.fit``'s meaning), with
    ``cache_default`` the provider's profile; ``provider`` and ``exactness`` are what the ``Fit``
    says of itself; ``breakpoints`` lists the parts (records, then fixed parts) that end with a
    cache breakpoint.
    """
    started = telemetry.now()  # None unless OpenTelemetry listens: the span's start
    make_digest = make_digest or (lambda text: {"role": "user", "content": text})
    with_text = with_text or replace_at
    if not records:
        raise InvalidArgumentError(f"argument '{input_name}' is empty: there is no request to fit")
    tok = resolve_tokenizer(tokenizer)
    parts: list[Message | Fixed] = [*records, *fixed]
    strings: list[str] = []
    ends: list[int] = []
    extra: list[int] = []
    layers: list[PromptLayer] = []
    for p in parts:
        strings += p.counted
        ends.append(len(strings))
        extra.append(p.framing if isinstance(p, Message) else p.tokens)
        layers.append(p.layer)
    groups = [r.group for r in records]
    calls = [r.call for r in records]
    labels = [f.label for f in fixed]
    texts = [r.text for r in records]
    budget, policy = resolve_budget(budget), resolve_policy(policy)
    while True:
        try:
            order, digests, cut, result = _fit_records(
                strings, ends, extra, layers, groups, texts, calls, labels, budget, policy, tok,
                framing=digest_framing, input_name=input_name, previous=previous, cache=cache,
                cache_default=cache_default, provider=provider, exactness=exactness, breakpoints=breakpoints,
            )
        except TextEncodingError as e:
            raise _locate(e, parts, origins_of, input_name) from e
        # A text cut to whitespace alone (providers reject an empty text block; the core never
        # cuts a text to empty, but its first token can be whitespace) is answered by fitting
        # again with that message's text off limits. Rare, and bounded by the messages.
        emptied = [i for i, t in cut.items() if not t.strip() and texts[i].strip()]
        if not emptied:
            break
        for i in emptied:
            texts[i] = ""
    out = rebuild(
        messages, order, digests, cut,
        lambda i: records[i].path if cut[i] != records[i].text else None,
        make_digest, with_text,
    )
    log_fit(len(messages), len(out), result, started)
    return out, result


def rebuild(
    messages: Sequence[Any],
    order: Sequence[int],
    digests: Sequence[str],
    cut: dict[int, str],
    path_of: Callable[[int], tuple[Any, ...] | None],
    make_digest: Callable[[str], Any],
    with_text: Callable[[Any, tuple[Any, ...], str], Any],
) -> list[Any]:
    """The payload a fit sends, from the core's kept ``order`` (a message's index, or ``-(d + 1)``
    for digest ``d``): the caller's own messages, each digest as ``make_digest(text)``, and a
    message whose text was cut as ``with_text(message, path, text)`` along ``path_of(i)`` (None:
    sent as it was). ``path_of`` is only called for cut messages."""
    out: list[Any] = []
    for index in order:
        if index < 0:
            out.append(make_digest(digests[-index - 1]))
            continue
        path = path_of(index) if index in cut else None
        out.append(messages[index] if path is None else with_text(messages[index], path, cut[index]))
    return out


def log_fit(sent: int, kept: int, result: Fit, started_ns: int | None = None) -> None:
    """The INFO line, when INFO is on and the fit removed anything (checked in that order, so a
    quiet logger never makes the fit build its ``evicted`` list), after ``telemetry.observe``
    (the rung stats, the DEBUG record, the span), every adapter fit going through here.
    ``started_ns`` is the ``telemetry.now()`` taken when the fit started."""
    telemetry.observe(result, items_in=sent, items_out=kept, started_ns=started_ns)
    if not log.isEnabledFor(logging.INFO) or not (result.rungs_fired or result.ledger.removed):
        return
    ledger = result.ledger
    log.info(
        "ctxfast fit: %d -> %d messages, %d tokens under a ceiling of %d; removed %d tokens "
        "(evicted %d, digested %d, truncated %d) by %s",
        sent, kept, result.total, result.ceiling, ledger.removed,
        ledger.evicted_recoverable + ledger.evicted_dispensable, ledger.digested, ledger.truncated,
        ", ".join(result.rungs_fired) or "no rung",
    )


def _locate(
    err: TextEncodingError,
    parts: list[Message | Fixed],
    origins_of: Callable[[int], list[Where]] | None = None,
    input_name: str = "messages",
) -> TextEncodingError:
    """Re-word a lone-surrogate error about the batch's strings in terms of the caller's payload:
    ``err.index`` is the string's place in the batch, which maps back to one message or part, and
    the part's ``origins`` map it (and ``err.position``) to the field it came from.

    The new error's ``argument`` is the payload argument (``"messages"``, ``"tools"``,
    ``"system"``), ``index`` the item in it (the message, the tool, the system block) and
    ``position`` the character offset in that field's text."""
    if err.index is None:
        return err
    at = err.index
    for p in parts:
        if at < len(p.counted):
            if isinstance(p, Message):
                head, argument, index = f"{input_name}[{p.index}]", input_name, p.index
            else:
                head = p.where or p.label
                argument, index = head, None
            position = err.position
            path = None
            origins = p.origins
            if origins is None and isinstance(p, Message) and origins_of is not None:
                origins = origins_of(p.index)
            if origins is not None and at < len(origins):
                origin = _piece(origins[at], position)
                path = origin.path
                if position is not None:
                    position -= origin.start
                if not isinstance(p, Message):
                    index = origin.item
            detail = ""
            if path and path != head:
                detail = f" in {path}"
            if position is not None:
                detail += f" (character {position})" if detail else f" at character {position}"
            return TextEncodingError(
                f"{head} contains a lone surrogate{detail}, which is not valid Unicode text and has no "
                "token count; clean it first, e.g. text.encode('utf-8', 'replace').decode('utf-8')",
                argument,
                index,
                position,
            )
        at -= len(p.counted)
    return err


def _piece(where: Where, position: int | None) -> Origin:
    """The origin of the piece of a joined string that holds character `position`."""
    if isinstance(where, Origin):
        return where
    chosen = where[0]
    for origin in where:
        if position is not None and position >= origin.start:
            chosen = origin
    return chosen
