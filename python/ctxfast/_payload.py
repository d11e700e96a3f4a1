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

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Union

from ctxfast._core import Budget, Fit, Policy, PromptLayer, Segment, Tokenizer, _resolve_policy, _resolve_tokenizer, fit
from ctxfast._errors import ArgumentTypeError, CtxfastError, InvalidArgumentError, TextEncodingError

#: The deepest nesting read in a payload field (the core's documented MAX_DEPTH).
MAX_DEPTH = 128


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
    #: What a digest summarises and a truncate rung shortens (the message's main text).
    text: str
    #: Every string the provider renders for this message (text included), each tokenized.
    counted: list[str] = field(default_factory=list)
    #: Tokens the provider adds beyond those strings (message framing, image estimates...).
    framing: int = 0
    meta: dict[str, Any] | None = None
    #: Where each of ``counted`` came from (parallel to it), or None: see ``fit_messages``'s
    #: ``origins_of``, else the message as a whole.
    origins: list[Where] | None = None


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
    origins_of: Callable[[int], list[Where]] | None = None,
) -> tuple[list[Any], Fit]:
    """Count every string in one batch, fit once, and rebuild the message list.

    ``fixed`` holds the parts that are always sent (tool schemas, reply priming); their strings
    join the same batch. ``make_digest(text)`` builds the provider message that stands in for
    a digested exchange, and ``with_text(message, text)`` copies a message with shorter text;
    both default to the dict messages OpenAI and Anthropic share (a plain user message; a copy
    with new ``content``). ``origins_of(i)`` gives where each counted string of message `i` came
    from, for a message whose record has no ``origins``: computed only to word an error.
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
        raise _locate(e, parts, origins_of) from e
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


def _locate(
    err: TextEncodingError,
    parts: list[Message | Fixed],
    origins_of: Callable[[int], list[Where]] | None = None,
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
                head, argument, index = f"messages[{p.index}]", "messages", p.index
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


# ------------------------------------------------------------------------------------------------
# Reading untrusted values: bounded, never a repr of something unvalidated


def preview(value: Any, limit: int = 40) -> str:
    """A short, safe description of a value for an error message: a str or a small number is
    quoted (cut at `limit` characters), anything else is named by its type. Never a repr of a
    container, which could be deep enough to overflow the stack."""
    if isinstance(value, str):
        s = str.__str__(value)
        return repr(s) if len(s) <= limit else repr(s[:limit]) + "..."
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() <= 64:
            return int.__repr__(value)
        return f"an int of {value.bit_length()} bits"
    if isinstance(value, float):
        return float.__repr__(value)
    return f"a {type(value).__name__}"


def _step(key: Any) -> str:
    """One step of a path: ``.name`` for identifier keys, ``[3]`` for indices, else ``[...]``."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"[{preview(key)}]"
    if isinstance(key, str) and key.isidentifier() and len(key) <= 40:
        return f".{key}"
    return f"[{preview(key)}]"


def _render(where: str, chain: Any) -> str:
    """`where` plus the steps of `chain` (a linked list of (parent, step)), at most 12 shown."""
    steps: list[str] = []
    while chain is not None:
        chain, step = chain
        steps.append(step)
    steps.reverse()
    if len(steps) > 12:
        steps = [*steps[:6], "...", *steps[-5:]]
    return where + "".join(steps)


_INT_SAFE_BITS = 10_000  # well under 4,300 decimal digits: such ints always convert


def _int_ok(value: int) -> bool:
    """Whether ``str(value)`` works (Python limits int-to-str conversion, 4,300 digits by default)."""
    if value.bit_length() <= _INT_SAFE_BITS:
        return True
    try:
        int.__repr__(value)
    except ValueError:
        return False
    return True


def check_tree(value: Any, where: str, field: str = "", *, strict_json: bool) -> None:
    """Refuse a nested value that cannot be turned into text safely: more than ``MAX_DEPTH``
    levels, an int over Python's int-to-str limit, and with `strict_json` a non-str object key
    or a value that is not JSON. Errors name the path under ``where + field``.

    The walk is level by level, without recursion and without recording paths: a payload's
    fields are checked on every request, so the common case allocates little. Only when
    something is wrong does ``_explain`` walk again to find and name it."""
    t = type(value)
    if t is str or t is float or t is bool or value is None or (t is int and value.bit_length() <= _INT_SAFE_BITS):
        return
    level = [value]
    depth = 0
    while level:
        below: list[Any] = []
        for node in level:
            t = type(node)
            if t is str or t is float or t is bool or node is None:
                continue
            if t is int:
                if node.bit_length() > _INT_SAFE_BITS and not _int_ok(node):
                    _explain(value, where + field, strict_json)
                continue
            if t is dict:
                if depth >= MAX_DEPTH:
                    _explain(value, where + field, strict_json)
                for key in node:
                    if type(key) is not str:
                        if strict_json:
                            _explain(value, where + field, strict_json)
                        below.append(key)
                below.extend(node.values())
            elif t is list or t is tuple:
                if depth >= MAX_DEPTH:
                    _explain(value, where + field, strict_json)
                below.extend(node)
            else:
                # Subclasses, sets, other objects: the thorough walk decides (and names the path).
                _explain(value, where + field, strict_json)
                return
        level = below
        depth += 1


def _explain(value: Any, where: str, strict_json: bool) -> None:
    """The thorough walk: raise the error for the first problem in `value`, naming its path;
    return if there is none."""
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        node, depth, chain = stack.pop()
        if isinstance(node, str) or isinstance(node, (bool, float)) or node is None:
            continue
        if isinstance(node, int):
            if not _int_ok(node):
                raise InvalidArgumentError(
                    f"{_render(where, chain)} is an int of more than {sys.get_int_max_str_digits()} digits, "
                    "which has no text form (Python's int-to-str limit)"
                )
            continue
        container = isinstance(node, (dict, list, tuple)) or (not strict_json and isinstance(node, (set, frozenset)))
        if container and depth >= MAX_DEPTH:
            raise InvalidArgumentError(
                f"{where} is nested more than {MAX_DEPTH} levels deep; ctxfast reads at most {MAX_DEPTH}"
            )
        if isinstance(node, dict):
            children: list[tuple[Any, Any]] = []
            for key, item in node.items():
                if strict_json and not isinstance(key, str):
                    raise ArgumentTypeError(
                        f"{_render(where, chain)} has a key of type {type(key).__name__}: "
                        "JSON object keys must be str"
                    )
                if not isinstance(key, str):
                    children.append((key, (chain, "<key>")))
                children.append((item, (chain, _step(key))))
        elif container:
            children = [(item, (chain, f"[{k}]")) for k, item in enumerate(node)]
        elif strict_json:
            raise ArgumentTypeError(
                f"{_render(where, chain)} is of type {type(node).__name__}, which is not JSON "
                "(expected str, int, float, bool, None, a list or a dict)"
            )
        else:
            continue  # any other object: its own str() decides (inside boundary())
        stack.extend((item, depth + 1, sub) for item, sub in children)


def text(value: Any, where: str, field: str = "") -> str:
    """``str(value)``, as the adapters have always rendered a field, after checking that it can
    be rendered: a bounded depth and no int over Python's int-to-str limit. The path in an error
    is ``where + field`` (joined only then)."""
    if type(value) is str:
        return value
    check_tree(value, where, field, strict_json=False)
    return str(value)


def as_json(value: Any, where: str, field: str = "", **dumps: Any) -> str:
    """``json.dumps(value, **dumps)`` of a checked value: bounded depth, str keys, JSON leaves."""
    check_tree(value, where, field, strict_json=True)
    try:
        return json.dumps(value, **dumps)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError(f"{where}{field} is not JSON-serialisable: {type(e).__name__}") from e


def sequence_arg(value: Any, name: str, what: str = "dicts") -> Sequence[Any]:
    """An optional list argument (``tools``): None is empty, a str, dict or scalar is refused."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, bytearray, dict)) or not isinstance(value, Sequence):
        raise ArgumentTypeError(f"argument '{name}' must be a list of {what} or None, not {type(value).__name__}")
    return value


# ------------------------------------------------------------------------------------------------
# Pairing tool calls and results by id


class ToolLink(NamedTuple):
    """A tool call or a tool result with an id."""

    #: The index of the message it is in.
    message: int
    #: Its path for error messages, e.g. ``"messages[2].tool_calls[0]"``.
    where: str
    id: str


def tool_id(value: Any, where: str, field: str = "") -> str | None:
    """A call or result id: a str, or None (absent: paired by position). Anything else is refused."""
    if value is None or isinstance(value, str):
        return value
    raise ArgumentTypeError(f"{where}{field} must be a str, not {type(value).__name__}")


def check_tool_pairs(
    calls: Sequence[ToolLink],
    results: Sequence[ToolLink],
    groups: Sequence[str | None],
    *,
    result_field: str,
    between: Callable[[int], str],
) -> None:
    """Refuse a payload whose results cannot be kept with their calls.

    `groups` are the exchange groups of ``assign_exchanges``; a result must be in its call's.
    `between(k)` describes message k (e.g. "a user message") when it stands between a call and
    its result. See the module docstring for why this refuses rather than merging exchanges.
    """
    if not calls:
        # No call carries an id (an old payload, or one whose calls were removed): grouping
        # stays by position alone, and results are not checked against calls.
        return
    by_id: dict[str, ToolLink] = {}
    for call in calls:
        seen = by_id.get(call.id)
        if seen is not None:
            raise InvalidArgumentError(
                f"{call.where} repeats the tool call id {preview(call.id)} of {seen.where}: each call "
                "needs its own id, so that its result can be paired with it"
            )
        by_id[call.id] = call
    answered: dict[str, ToolLink] = {}
    for result in results:
        match = by_id.get(result.id)
        if match is None or match.message >= result.message:
            later = f"; the call with that id is in {match.where}, after it" if match is not None else ""
            raise InvalidArgumentError(
                f"{_label(result, result_field)} answers no tool call: no message before it calls that "
                f"id{later}. A tool result must follow its call"
            )
        first = answered.get(result.id)
        if first is not None:
            raise InvalidArgumentError(
                f"{_label(result, result_field)} answers the call in {match.where} a second time: "
                f"{first.where} already answered it"
            )
        answered[result.id] = result
        if groups[match.message] != groups[result.message]:
            k = next(
                j
                for j in range(match.message + 1, result.message + 1)
                if groups[j] is not None and groups[j] != groups[match.message]
            )
            raise InvalidArgumentError(
                f"{_label(result, result_field)} answers the call in {match.where}, but messages[{k}] "
                f"({between(k)}) stands between them: a tool result must follow its call with no user "
                "message between, so ctxfast refuses the payload rather than keep one without the other"
            )


def _label(result: ToolLink, field: str) -> str:
    return f"{result.where} ({field} {preview(result.id)})"


# ------------------------------------------------------------------------------------------------
# The adapter boundary


class Cursor:
    """What an adapter is reading, for the error ``boundary()`` raises on the unexpected:
    ``at`` is a message index, a path, or None (the payload as a whole)."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: int | str | None = None

    def describe(self) -> str:
        if isinstance(self.at, int):
            return f"messages[{self.at}]"
        return self.at or "the payload"


def exception_text(e: BaseException, limit: int = 200) -> str:
    try:
        s = " ".join(str(e).split())
    except Exception:  # noqa: BLE001 - an exception whose str() fails still gets a message
        s = ""
    s = s if len(s) <= limit else s[:limit] + "..."
    return f"{type(e).__name__}: {s}" if s else type(e).__name__


@contextmanager
def boundary() -> Iterator[Cursor]:
    """Run an adapter: a CtxfastError passes as it is, anything unexpected from a malformed payload
    becomes one (``ArgumentTypeError`` for a ``TypeError``, else ``InvalidArgumentError``) naming
    what was being read. ``KeyboardInterrupt``, ``SystemExit`` and ``MemoryError`` pass through."""
    cursor = Cursor()
    try:
        yield cursor
    except (CtxfastError, MemoryError):
        raise
    except RecursionError as e:
        raise InvalidArgumentError(
            f"{cursor.describe()} is nested too deeply to read (at most {MAX_DEPTH} levels)"
        ) from e
    except TypeError as e:
        raise ArgumentTypeError(f"{cursor.describe()} is malformed: {exception_text(e)}") from e
    except Exception as e:
        raise InvalidArgumentError(f"{cursor.describe()} is malformed: {exception_text(e)}") from e
