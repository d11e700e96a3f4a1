"""A policy-driven replacement for LangChain's ``trim_messages``.

``langchain-core`` is an optional extra: ``pip install "ctxfast[langchain]"``.

It takes the same common arguments. What is different:

- **The system message is never dropped.** With ``include_system=True`` (the default here)
  system messages are protected. LangChain's own function returns only ``[system]`` when the
  system message alone is over the budget. This one raises ``ctxfast.Unfittable`` instead.
- **No orphaned tool results.** An exchange (a human message with every AI and tool message
  after it) leaves whole. Under the default ``Policy.agent()`` an old tool exchange is first
  replaced by a tagged digest, a ``HumanMessage`` that holds no tool blocks. The kept history
  therefore always starts at a human message, and ``start_on``/``end_on`` need not do anything.
- **The current turn stays.** The last human message, and everything after it, is never
  dropped.
- **Counting.** Each message is counted once, not once per binary-search probe.
  ``token_counter`` may be a callable over a list of messages, a callable over one message, a
  chat model (``get_num_tokens_from_messages``), ``"approximate"``, or None. None means exact
  OpenAI framing on the embedded o200k_base vocabulary, or on ``tokenizer=`` when given, all in
  one native batch. A list counter is handed whole exchanges (a tool result always comes with
  its call), and digests are counted with the caller's counter too.
- **``allow_partial=True``** raises ``UnsupportedOperationError``. To cut message bodies, pass a
  policy with a ``truncate`` rung. ``text_splitter`` is not used.
- **``strategy="first"``** keeps the oldest exchanges: newest goes first, but the current turn
  still never goes.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

from ctxfast import _payload
from ctxfast._core import Budget, Policy, PromptLayer, Tokenizer
from ctxfast._errors import ArgumentTypeError, CounterError, InvalidArgumentError, UnsupportedOperationError
from ctxfast._payload import Message, assign_exchanges
from ctxfast.openai import REPLY_PRIMING, TOKENS_PER_MESSAGE, TOKENS_PER_TOOL_CALL

__all__ = ["trim_messages"]

_ROLE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool", "function": "tool", "chat": "user"}
_APPROX_CHARS_PER_TOKEN = 4.0
_APPROX_PER_MESSAGE = 3


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "\n".join(parts)
    return ""


def _tokens(value: Any) -> int:
    """A counter's answer as whole tokens: fractions round up (never an undercount)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise CounterError(f"token_counter must return a number >= 0, it returned {value!r}")
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
            raise CounterError(f"token_counter raised {type(e).__name__}: {e}") from e
        return _tokens(value)

    return call


def _counter(token_counter: Any) -> tuple[str, Callable[[Any], int] | None]:
    """("native" | "approximate" | "message" | "list", the counting function)."""
    if token_counter is None:
        return "native", None
    if isinstance(token_counter, str):
        if token_counter == "approximate":
            return "approximate", None
        raise InvalidArgumentError(f"argument 'token_counter' string must be 'approximate', got {token_counter!r}")
    if hasattr(token_counter, "get_num_tokens_from_messages"):
        return "list", _guarded(token_counter.get_num_tokens_from_messages)
    if callable(token_counter):
        if _takes_one_message(token_counter):
            return "message", _guarded(token_counter)
        return "list", _guarded(token_counter)
    raise ArgumentTypeError(
        "argument 'token_counter' must be a callable, a chat model, 'approximate' or None, "
        f"not {type(token_counter).__name__}"
    )


def _call_text(m: Any) -> str:
    return "".join(f"{c.get('name', '')}{c.get('args', '')}" for c in getattr(m, "tool_calls", None) or ())


def _policy(policy: Policy | str | None, strategy: str, allow_partial: bool) -> Policy:
    if strategy not in ("last", "first"):
        raise InvalidArgumentError(f"argument 'strategy' must be 'last' or 'first', got {strategy!r}")
    base = _payload.resolve_policy(policy) if policy is not None or strategy == "last" else None
    if base is None:
        base = Policy.from_dict(
            {
                "name": "keep_first",
                "rungs": [
                    {"name": "exchanges.drop_newest", "layers": ["conversation", "tool_result", "summary"], "order": "newest"}
                ],
            }
        )
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
    messages: Sequence[Any],
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
) -> list[Any]:
    """Trim ``messages`` (LangChain ``BaseMessage`` objects) to ``max_tokens`` by policy.

    Returns the kept messages, the caller's own objects, in order. Digests come back as new
    ``HumanMessage`` objects. The ``ctxfast.Fit`` with its trace is attached to the returned
    list as ``.fit`` (the list is a ``TrimmedMessages``, a ``list`` subclass).
    """
    try:
        from langchain_core.messages import HumanMessage
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError('ctxfast.langchain needs langchain-core: pip install "ctxfast[langchain]"') from e
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ArgumentTypeError(f"argument 'messages' must be a list of messages, not {type(messages).__name__}")
    del end_on, start_on, text_splitter  # see the module docstring
    roles: list[str] = []
    for i, m in enumerate(messages):
        kind = getattr(m, "type", None)
        if kind not in _ROLE:
            raise ArgumentTypeError(f"messages[{i}] must be a LangChain BaseMessage, not {type(m).__name__}")
        role = _ROLE[kind]
        if role == "system" and not include_system:
            role = "other"  # evictable like any message before the first human one
        roles.append(role)
    groups, current, pinned = assign_exchanges(roles, lambda i: True, pin_first_user)
    mode, count_fn = _counter(token_counter)
    records: list[Message] = []
    for i, m in enumerate(messages):
        text = _text(m.content)
        calls = list(getattr(m, "tool_calls", None) or ())
        meta = None
        if calls:
            first = calls[0]
            meta = {"tool": str(first.get("name", "")), "arguments": str(first.get("args", ""))}
        strings: list[str] = []
        framing = 0
        if mode == "native":
            strings = [text, _ROLE[m.type]] + [s for c in calls for s in (str(c.get("name", "")), str(c.get("args", "")))]
            framing = TOKENS_PER_MESSAGE + TOKENS_PER_TOOL_CALL * len(calls)
        elif mode == "approximate":
            chars = len(text) + len(_call_text(m))
            framing = _APPROX_PER_MESSAGE + -(-chars // int(_APPROX_CHARS_PER_TOKEN))
        elif mode == "message" and count_fn is not None:
            framing = count_fn(m)
        layer, group = _payload.place(
            i, groups, current, pinned, system=roles[i] == "system", tool_result=m.type in ("tool", "function")
        )
        records.append(Message(i, layer, group, text, strings, framing, meta))
    if mode == "list" and count_fn is not None:
        # A list counter sees whole exchanges, never a tool result without its call: providers'
        # counting endpoints reject such lists. The exchange's cost rides on its first message.
        members: dict[str, list[Message]] = {}
        for r in records:
            if r.group is None:
                r.framing = count_fn([messages[r.index]])
            else:
                members.setdefault(r.group, []).append(r)
        for group_records in members.values():
            group_records[0].framing = count_fn([messages[r.index] for r in group_records])
    # Digests are counted the way the caller counts messages.
    if mode == "native":
        digest_tokenizer: Tokenizer | Callable[[str], int] | None = tokenizer
        digest_framing = TOKENS_PER_MESSAGE + 1
    elif mode == "approximate":
        digest_tokenizer, digest_framing = Tokenizer.approximate(_APPROX_CHARS_PER_TOKEN), _APPROX_PER_MESSAGE
    else:
        assert count_fn is not None  # "message" and "list" modes always carry a counter
        fn = count_fn
        wrap = (lambda text: fn(HumanMessage(content=text))) if mode == "message" else (lambda text: fn([HumanMessage(content=text)]))
        digest_tokenizer, digest_framing = Tokenizer.from_callable(wrap), 0
    fixed = [_payload.Fixed("<reply priming>", PromptLayer.SYSTEM, tokens=REPLY_PRIMING if mode == "native" else 0)]
    kept, result = _payload.fit_messages(
        messages,
        records,
        fixed,
        Budget(max_tokens, reserve),
        _policy(policy, strategy, allow_partial),
        digest_tokenizer,
        digest_framing=digest_framing,
        make_digest=lambda text: HumanMessage(content=text),
        with_text=lambda m, text: m.model_copy(update={"content": text}),
    )
    out = TrimmedMessages(kept)
    out.fit = result
    return out


class TrimmedMessages(list):  # type: ignore[type-arg]
    """The kept messages, plus ``.fit``: the ``ctxfast.Fit`` with the trace of what left."""

    fit: Any
