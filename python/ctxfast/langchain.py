"""A policy-driven replacement for LangChain's ``trim_messages``.

``langchain-core`` is an optional extra: ``pip install "ctxfast[langchain]"``.

It takes the same arguments and call forms: ``trim_messages(max_tokens=...)`` without messages
is a ``Runnable`` (``prompt | trimmer | llm``); message-likes (tuples, dicts, strings, a
``ChatPromptValue``, a generator) are converted by LangChain's ``convert_to_messages``; ``[]``
gives ``[]``; ``end_on`` drops trailing messages of other types; a counter it cannot use is a
``ValueError`` (``InvalidArgumentError``). What is different:

- **The system message is never dropped.** With ``include_system=True`` (the default here)
  system messages are protected. LangChain's own function returns only ``[system]`` when the
  system message alone is over the budget. This one raises ``ctxfast.Unfittable`` instead.
- **No orphaned tool results.** An exchange (a human message with every AI and tool message
  after it) leaves whole. Under the default ``Policy.agent()`` an old tool exchange is first
  replaced by a tagged digest, a ``HumanMessage`` that holds no tool blocks. The kept history
  therefore starts at a human message, except for what stood before the first one (an AI
  greeting; a system message with ``include_system=False``): ``start_on`` removes that, as
  LangChain does, and the list is fitted again without it, so ``.fit`` stays exact.
- **The current turn stays.** The last human message is never dropped, and neither is the
  newest tool round after it. In an agent loop (one human ask, then many ``AIMessage``
  tool-call rounds with their ``ToolMessage`` results) each older round is a unit of its own,
  digested or dropped oldest first like an exchange (``ctxfast._rounds``), so the loop can be
  trimmed.
- **Counting.** Each message is counted once, not once per binary-search probe.
  ``token_counter`` may be a callable over a list of messages, a callable over one message, a
  chat model (``get_num_tokens_from_messages``), ``"approximate"``, or None: OpenAI's framing on
  o200k_base (or ``tokenizer=``) in one native batch, names and images as ``ctxfast.openai``
  counts them. A list counter is handed whole exchanges (a tool result always comes with its
  call), digests too; what it says for ``[]`` (a chat model's reply priming) is charged once,
  not per exchange, so for a counter that adds per message (as ``ChatOpenAI``'s) the total is
  its count of the kept list.
- **``allow_partial=True``** without ``policy=`` is LangChain's (the kept system message, the
  longest suffix that fits counted as one list, the back part of the message before it, then
  ``start_on``), except that no cut separates a tool result from its call; its ``.fit`` is None.
  With a policy it raises ``UnsupportedOperationError``: pass a policy with a ``truncate`` rung
  instead, which shortens a message's longest text (a str content, a str item or a text block)
  in a copy; images, tool calls and other blocks stay. (With the default counter the pieces of
  a content list are counted one by one, as the OpenAI adapter counts parts.)
- **``strategy="first"``** (without ``policy=``) is LangChain's: the longest prefix that fits,
  counted as one list (a list counter is called on the whole prefix, so a chat model's reply
  priming counts once), then with ``allow_partial`` the front of the next message (content
  blocks dropped from the end, then its text cut at ``text_splitter``'s pieces, lines by
  default), then ``end_on``. The one difference: the prefix never ends inside a tool round (a
  call without its results), which a provider would reject. Its ``.fit`` is None.
- **Tool calls and results are paired by id** (``AIMessage.tool_calls[k]["id"]`` and
  ``ToolMessage.tool_call_id``). A ``ToolMessage`` whose call is not in its exchange (a
  ``HumanMessage`` stands between them), one answering no earlier call or answering a call a
  second time, and a call id used twice raise ``InvalidArgumentError`` naming the messages,
  rather than merging exchanges: providers reject such histories anyway, and refusing them means
  every trimmed list keeps each result with its call. A call without a result at the end is fine;
  calls without ids are grouped by position (and when no call has an id, results are not checked).
- **Malformed messages** get ``ArgumentTypeError`` or ``InvalidArgumentError`` naming the path
  (``messages[2].tool_calls[0].args``), never a ``RecursionError`` or ``TypeError``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ctxfast import _payload
from ctxfast._core import Budget, Policy, PromptLayer, Tokenizer
from ctxfast._langchain_count import counter, empty_cost, image_tokens
from ctxfast._langchain_input import before_start, convert, drop_trailing, first_prefix, last_suffix
from ctxfast._langchain_read import _calls, _longest, _name, _pieces, _with_text
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError, Unfittable, UnsupportedOperationError
from ctxfast._payload import Message, Origin, ToolLink, Where
from ctxfast.openai import REPLY_PRIMING, TOKENS_PER_MESSAGE, TOKENS_PER_NAME, TOKENS_PER_TOOL_CALL  # from _framing

__all__ = ["trim_messages"]

_ROLE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool", "function": "tool", "chat": "user"}
_APPROX_CHARS_PER_TOKEN = 4.0
_APPROX_PER_MESSAGE = 3
_UNBOUNDED = 2**31 - 1  # a window no count reaches: the fit then only counts


def _policy(policy: Policy | str | None, strategy: str, allow_partial: bool) -> Policy:
    if strategy not in ("last", "first"):
        raise InvalidArgumentError(f"argument 'strategy' must be 'last' or 'first', got {strategy!r}")
    base = _payload.resolve_policy(policy)
    if allow_partial:
        # A truncate rung after a rung that drops whole exchanges would never fire: say so
        # rather than accept the flag and do nothing.
        raise UnsupportedOperationError(
            "allow_partial=True is not supported: ctxfast removes whole exchanges so a tool call "
            "never loses its result. To cut message bodies, pass a policy with a truncate rung, "
            'e.g. Policy.from_dict({"rungs": [{"name": "bodies", "layers": ["conversation"], '
            '"order": "oldest", "action": "truncate", "min_tokens": 64}, ...]})'
        )
    return base


def trim_messages(
    messages: Any = None,
    *,
    max_tokens: int,
    token_counter: Any = None,
    strategy: str = "last",
    allow_partial: bool = False,
    end_on: Any = None,
    start_on: Any = None,
    include_system: bool = True,
    text_splitter: Any = None,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    reserve: int = 0,
    pin_first_user: bool = False,
) -> TrimmedMessages:
    """Trim ``messages`` (LangChain ``BaseMessage`` objects) to ``max_tokens`` by policy.

    Returns the kept messages, the caller's own objects, in order. Digests come back as new
    ``HumanMessage`` objects. The ``ctxfast.Fit`` with its trace is attached to the returned
    list as ``.fit`` (the list is a ``TrimmedMessages``, a ``list`` subclass).
    """
    try:
        from langchain_core.messages import HumanMessage
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError('ctxfast.langchain needs langchain-core: pip install "ctxfast[langchain]"') from e
    options = dict(
        max_tokens=max_tokens, token_counter=token_counter, strategy=strategy, allow_partial=allow_partial,
        end_on=end_on, start_on=start_on, include_system=include_system, text_splitter=text_splitter,
        policy=policy, tokenizer=tokenizer, reserve=reserve, pin_first_user=pin_first_user,
    )
    if messages is None:
        # LangChain's runnable form: `prompt | trim_messages(max_tokens=...) | llm`.
        from langchain_core.runnables import RunnableLambda

        return RunnableLambda(functools.partial(trim_messages, **options), name="trim_messages")  # type: ignore[return-value]
    with _payload.boundary() as here:
        msgs = convert(messages)
        if strategy not in ("last", "first"):
            raise InvalidArgumentError(f"argument 'strategy' must be 'last' or 'first', got {strategy!r}")
        msgs = drop_trailing(msgs, end_on) if strategy == "last" else msgs
        if policy is None and (strategy == "first" or allow_partial):
            return _as_langchain(HumanMessage, msgs, options, here)
        if not msgs:
            out = TrimmedMessages()
            out.fit = None
            return out
        def trim(items: list[Any]) -> TrimmedMessages:
            return _trim(
                HumanMessage, items, max_tokens, token_counter, strategy, allow_partial, include_system,
                policy, tokenizer, reserve, pin_first_user, here,
            )

        out = trim(msgs)
        leading = before_start(out, start_on, include_system)
        if leading:
            # What comes before the first message of type `start_on` (it can only be what stood
            # before the first human message: exchanges open on one) leaves, and the request is
            # fitted again without it, so `.fit` is the fit of what is returned.
            gone = {id(m) for m in leading}
            out = trim([m for m in msgs if id(m) not in gone])
        return out



def _as_langchain(HumanMessage: Any, msgs: list[Any], options: dict[str, Any], here: _payload.Cursor) -> TrimmedMessages:  # noqa: N803
    """LangChain's ``strategy="first"``, and ``"last"`` with ``allow_partial``: the longest
    prefix (suffix) that fits, counted as a whole list (one reply priming, one call of a list
    counter per probe), plus a part of the next (previous) message with ``allow_partial``. A
    cut never separates a tool result from its call, and a kept system message stays."""
    mode, count_fn = counter(options["token_counter"])
    max_tokens = options["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise ArgumentTypeError(f"argument 'max_tokens' (the window) must be an int, not {type(max_tokens).__name__}")
    if max_tokens < 0:
        raise InvalidArgumentError(f"argument 'max_tokens' (the window) must be >= 0, got {max_tokens}")

    def count(prefix: list[Any]) -> int:
        if not prefix:
            return 0
        if mode == "list" and count_fn is not None:
            return count_fn(prefix)
        if mode == "message" and count_fn is not None:
            return sum(count_fn(m) for m in prefix)
        # The native and approximate counts are what a fit of the whole list would total.
        fit = _trim(
            HumanMessage, prefix, _UNBOUNDED, options["token_counter"], "last", False, True, "context_window",
            options["tokenizer"], 0, False, here,
        ).fit
        return int(fit.total)

    ceiling = max_tokens - options["reserve"]
    if options["strategy"] == "first":
        kept = first_prefix(
            msgs, ceiling, count, allow_partial=options["allow_partial"],
            text_splitter=options["text_splitter"], end_on=options["end_on"],
        )
    else:
        system = options["include_system"] and bool(msgs) and msgs[0].type == "system"
        head, rest = (msgs[:1], msgs[1:]) if system else ([], msgs)
        suffix = last_suffix(rest, head, ceiling, count, text_splitter=options["text_splitter"], start_on=options["start_on"])
        if suffix is None:
            total = count(head)
            raise Unfittable(
                f"the system message alone is {total} tokens, over the ceiling of {ceiling}",
                components=[("system", total)], total=total, ceiling=ceiling, shortfall=total - ceiling,
            )
        kept = suffix
    out = TrimmedMessages(kept)
    out.fit = None
    return out


def _trim(
    HumanMessage: Any,  # noqa: N803 - the class, imported by the caller
    messages: Sequence[Any],
    max_tokens: int,
    token_counter: Any,
    strategy: str,
    allow_partial: bool,
    include_system: bool,
    policy: Policy | str | None,
    tokenizer: Tokenizer | Callable[[str], int] | None,
    reserve: int,
    pin_first_user: bool,
    here: _payload.Cursor,
) -> TrimmedMessages:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ArgumentTypeError(f"argument 'messages' must be a list of messages, not {type(messages).__name__}")
    roles: list[str] = []
    for i, m in enumerate(messages):
        here.at = i
        kind = getattr(m, "type", None)
        if not isinstance(kind, str) or kind not in _ROLE:
            raise ArgumentTypeError(f"messages[{i}] must be a LangChain BaseMessage, not {type(m).__name__}")
        role = _ROLE[kind]
        if role == "system" and not include_system:
            role = "other"  # evictable like any message before the first human one
        roles.append(role)
    groups, current, pinned = _payload.assign_units(
        roles, lambda i: True, lambda i: messages[i].type == "ai" and bool(getattr(messages[i], "tool_calls", None)),
        pin_first_user,
    )
    _payload.protect_last_unit(groups, current)  # no ask: the last unit is the current turn
    mode, count_fn = counter(token_counter)
    records: list[Message] = []
    links: list[ToolLink] = []
    results: list[ToolLink] = []
    for i, m in enumerate(messages):
        here.at = i
        where = f"messages[{i}]"
        pieces = _pieces(m.content, where)
        path, text = _longest(pieces)
        calls = _calls(m, where)
        call: tuple[str, str] | None = None
        if calls:
            call = (calls[0][0], calls[0][1])
        if m.type == "ai":
            for k, (_, _, call_id) in enumerate(calls):
                call_id = _payload.tool_id(call_id, f"{where}.tool_calls[{k}].id")
                if call_id is not None:
                    links.append(ToolLink(i, f"{where}.tool_calls[{k}]", call_id))
        elif m.type == "tool":
            result_id = _payload.tool_id(getattr(m, "tool_call_id", None), f"{where}.tool_call_id")
            if result_id is not None:
                results.append(ToolLink(i, where, result_id))
        strings: list[str] = []
        framing = 0
        if mode == "native":
            strings = [piece for _, piece in pieces] + [_ROLE[m.type]]
            msg_name = _name(m, where)
            if msg_name:
                # OpenAI's framing: a named message costs its name and 1 more token.
                strings.append(msg_name)
            strings += [s for name, args, _ in calls for s in (name, args)]
            framing = TOKENS_PER_MESSAGE + TOKENS_PER_TOOL_CALL * len(calls) + (TOKENS_PER_NAME if msg_name else 0)
            framing += image_tokens(m.content, where)  # as ctxfast.openai counts image parts
        elif mode == "approximate":
            # The pieces as one text (joined by line feeds), as this mode has always measured them.
            chars = sum(len(piece) + 1 for _, piece in pieces) - bool(pieces)
            chars += sum(len(name) + len(args) for name, args, _ in calls)
            framing = _APPROX_PER_MESSAGE + -(-chars // int(_APPROX_CHARS_PER_TOKEN))
        elif mode == "message" and count_fn is not None:
            framing = count_fn(m)
        layer, group = _payload.place(
            i, groups, current, pinned, system=roles[i] == "system", tool_result=m.type in ("tool", "function")
        )
        records.append(Message(i, layer, group, text, strings, framing, call, path=path))
    here.at = None
    _payload.check_tool_pairs(
        links,
        results,
        groups,
        result_field="tool_call_id",
        between=lambda k: f"a {type(messages[k]).__name__}",
    )
    per_call = 0
    if mode == "list" and count_fn is not None:
        # A list counter sees whole exchanges, never a tool result without its call: providers'
        # counting endpoints reject such lists. The exchange's cost rides on its first message.
        # What the counter charges per call whatever the list (a chat model's reply priming,
        # what it says for []) is charged once, as for one request, not once per exchange.
        per_call = empty_cost(count_fn)
        members: dict[str, list[Message]] = {}
        for r in records:
            if r.group is None:
                r.framing = max(0, count_fn([messages[r.index]]) - per_call)
            else:
                members.setdefault(r.group, []).append(r)
        for group_records in members.values():
            group_records[0].framing = max(0, count_fn([messages[r.index] for r in group_records]) - per_call)
    # Digests are counted the way the caller counts messages.
    if mode == "native":
        digest_tokenizer: Tokenizer | Callable[[str], int] | None = tokenizer
        digest_framing = TOKENS_PER_MESSAGE + 1
    elif mode == "approximate":
        digest_tokenizer, digest_framing = Tokenizer.approximate(_APPROX_CHARS_PER_TOKEN), _APPROX_PER_MESSAGE
    else:
        assert count_fn is not None  # "message" and "list" modes always carry a counter
        fn = count_fn
        if mode == "message":
            wrap = lambda text: fn(HumanMessage(content=text))  # noqa: E731
        else:
            wrap = lambda text: max(0, fn([HumanMessage(content=text)]) - per_call)  # noqa: E731
        digest_tokenizer, digest_framing = Tokenizer.from_callable(wrap), 0
    fixed = [_payload.Fixed("<reply priming>", PromptLayer.SYSTEM, tokens=REPLY_PRIMING if mode == "native" else per_call)]
    def origins_of(i: int) -> list[Where]:
        # Where each native-mode string of message i came from: content, role, each call's fields.
        where = f"messages[{i}]"
        origins: list[Where] = []
        _pieces(messages[i].content, where, origins)
        origins.append(Origin(f"{where}.type"))
        if _name(messages[i], where):
            origins.append(Origin(f"{where}.name"))
        for k in range(len(_calls(messages[i], where))):
            origins += [Origin(f"{where}.tool_calls[{k}].name"), Origin(f"{where}.tool_calls[{k}].args")]
        return origins

    kept, result = _payload.fit_messages(
        messages,
        records,
        fixed,
        Budget(max_tokens, reserve),
        _policy(policy, strategy, allow_partial),
        digest_tokenizer,
        digest_framing=digest_framing,
        make_digest=lambda text: HumanMessage(content=text),
        with_text=_with_text,
        origins_of=origins_of,
    )
    out = TrimmedMessages(kept)
    out.fit = result
    return out


class TrimmedMessages(list[Any]):
    """The kept messages, plus ``.fit``: the ``ctxfast.Fit`` with the trace of what left."""

    fit: Any
