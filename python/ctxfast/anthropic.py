"""Anthropic Messages payloads: ``system``, ``messages`` with ``tool_use`` / ``tool_result``
content blocks, and ``tools``.

How exact the counts are: **these are estimates.** Claude 3 and later have no public tokenizer.
Anthropic's own ``count_tokens`` endpoint is documented as an estimate too. By default ctxfast
counts text with the embedded o200k_base vocabulary. Pass ``tokenizer=`` to use something
closer, such as a callable backed by your own calibration. On top of the text:

- each message costs ``TOKENS_PER_MESSAGE`` (3) framing tokens (uncalibrated);
- the known block types (``BLOCK_TYPES``) each have a rule: ``text`` counts its text;
  ``tool_use``, ``server_tool_use`` and ``mcp_tool_use`` their name and JSON input;
  ``tool_result`` its content (a string, or text / image / document / search_result blocks);
  ``search_result`` its title, source and text blocks; a ``document`` its title, context and,
  for a plain-text source, its text (other documents, PDFs, are estimated at
  ``IMAGE_TOKENS``); ``image`` counts ``IMAGE_TOKENS`` (1,600, a large image); ``thinking`` and
  ``redacted_thinking`` count nothing (the API drops earlier turns' thinking); the server-side
  results (``web_search_tool_result``, ``web_fetch_tool_result``, the code-execution results,
  ``mcp_tool_result``, ``container_upload``) count their JSON text, an estimate. Any other
  type is refused (``InvalidArgumentError`` naming ``messages[i].content[j]``);
- with ``tools``, each tool counts its JSON schema. When you pass ``model=``, the tool-use
  system prompt Anthropic documents for that model is added (``TOOL_SYSTEM_PROMPT``, from its
  2026 table).

Leave a margin in ``Budget.reserve`` for the difference.

Shapes that would be miscounted are refused before counting (``ctxfast._shapes``): a role
other than user/assistant (with a "did you mean"; ``system`` is the separate argument), a
message field other than ``role`` and ``content`` that holds text, an OpenAI Chat, Responses API
or Gemini message.

What is guaranteed:

- a ``tool_result`` never precedes its ``tool_use``: the unit holding them leaves whole, or a
  digest replaces it whole;
- ``system`` and the current turn are never dropped. In an agent loop (one ask, then rounds of a
  ``tool_use`` message and its ``tool_result`` message) the current turn is the ask and the
  newest round; each older round is a unit of its own, digested or dropped oldest first
  (``ctxfast._rounds``);
- the payload starts with a user message, and roles alternate as they did in the input: where
  the fit puts two user messages side by side (a digest, a user message in itself, next to
  another user message; a pinned first message whose exchange left), the later one is merged
  into the earlier as text blocks, in a copy (a string content becomes a text block; text never
  goes before ``tool_result`` blocks). A merged digest's 3 tokens of message framing are no
  longer sent, so ``fit.total`` is then an upper bound of what is sent, by 3 per merge;
- a truncate rung shortens one string of a message, its longest text (a text block, a
  ``tool_result``'s content or a text block inside it), in a copy: ``tool_use`` and
  ``tool_result`` blocks, ids, images and the other blocks stay as they were, and no message or
  text block is left empty.

``tool_use`` and ``tool_result`` blocks are paired by id (``tool_use.id`` and
``tool_result.tool_use_id``). A user message holding a ``tool_result`` continues the exchange
of its call. A result whose call is in an earlier exchange or round (a user message without
results, or another tool call, stands between them), a result that answers no earlier
``tool_use`` or answers one a second time, and a ``tool_use`` id used twice are refused with
``InvalidArgumentError`` naming the blocks: the API rejects such a payload anyway, and refusing it
(rather than merging units) means every fitted request keeps each result with its call. A
``tool_use`` without a result at the end is fine. Blocks without ids are grouped by position, as
before (and when no ``tool_use`` has an id, results are not checked).

A malformed payload gets ``ArgumentTypeError`` or ``InvalidArgumentError`` naming the path
(``messages[3].content[0].input``, ``system``, ``tools[1]``); nested values are read up to
``ctxfast._payload.MAX_DEPTH`` (128) levels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ctxfast import _anthropic_cache, _blocks, _payload, _rounds, _shapes
from ctxfast import calibration as _calibration
from ctxfast._blocks import BLOCK_TYPES, IMAGE_TOKENS
from ctxfast._core import Budget, CacheProfile, Fit, Policy, PromptLayer, Tokenizer
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast._payload import Fixed, Message, Origin, ToolLink, Where

__all__ = ["fit_messages", "TOOL_SYSTEM_PROMPT", "TOKENS_PER_MESSAGE", "BLOCK_TYPES", "IMAGE_TOKENS"]

TOKENS_PER_MESSAGE = 3
ROLES = ("user", "assistant")
_OPENAI_ONLY = ("system", "developer", "tool", "function")

TOOL_SYSTEM_PROMPT: dict[str, tuple[int, int]] = {
    "claude-sonnet-5": (354, 474),
    "claude-opus-4-8": (290, 410),
    "claude-opus-4-7": (675, 804),
    "claude-opus-4-6": (497, 589),
    "claude-sonnet-4-6": (497, 589),
    "claude-opus-4-5": (496, 588),
    "claude-sonnet-4-5": (496, 588),
    "claude-haiku-4-5": (496, 588),
    "claude-opus-4-1": (313, 315),
    "claude-opus-4": (313, 315),
    "claude-sonnet-4": (313, 315),
    "claude-3-7-sonnet": (346, 313),
    "claude-3-5-haiku": (264, 355),
    # The older table (2025 docs), for models it alone lists.
    "claude-3-5-sonnet-20240620": (294, 261),
    "claude-3-5-sonnet": (346, 313),
    "claude-3-opus": (530, 281),
    "claude-3-sonnet": (159, 235),
    "claude-3-haiku": (264, 340),
}


def _choice_kind(tool_choice: Any) -> str:
    """"auto" | "any" | "tool" | "none", from the string or the API's {"type": ...} form."""
    if isinstance(tool_choice, dict):
        tool_choice = tool_choice.get("type", "auto")
    if not isinstance(tool_choice, str) or tool_choice not in ("auto", "any", "tool", "none"):
        raise InvalidArgumentError(
            f"argument 'tool_choice' must be auto, any, tool or none, got {_payload.preview(tool_choice)}"
        )
    return str(tool_choice)


def _tool_prompt(model: str | None, tool_choice: str) -> int:
    if model is not None and not isinstance(model, str):
        raise ArgumentTypeError(f"argument 'model' must be a str, not {type(model).__name__}")
    if not model:
        return 0
    for prefix in sorted(TOOL_SYSTEM_PROMPT, key=len, reverse=True):
        if model.startswith(prefix):
            auto, forced = TOOL_SYSTEM_PROMPT[prefix]
            return forced if tool_choice in ("any", "tool") else auto
    return 0


def fit_messages(
    system: str | list[dict[str, Any]] | None,
    messages: Sequence[dict[str, Any]],
    budget: Budget | int,
    *,
    tools: Sequence[dict[str, Any]] | None = None,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    model: str | None = None,
    tool_choice: str | dict[str, Any] = "auto",
    pin_first_user: bool = False,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
    cache_breakpoints: bool | int = False,
    calibration: _calibration.Calibration | None = None,
) -> tuple[list[dict[str, Any]], Fit]:
    """Fit a Messages request under ``budget``; returns ``(messages, fit)``.

    ``system`` is never dropped, and it is counted in ``fit.total``. Kept messages are the
    caller's own dicts, unchanged. A digested exchange becomes a user message holding its
    record.

    ``previous`` (the previous turn's ``Fit``) keeps that request's cut while it fits, so the
    cached prefix is read back; ``cache`` is the profile, Anthropic's by default (pick
    ``"anthropic-1h"``, ``"anthropic-haiku-3"`` or ``"anthropic-4096"`` to match the request).
    ``cache_breakpoints=True`` places a ``cache_control`` breakpoint on the last block of the
    fitted payload (a copy of the last message), within the limit of 4 with the caller's own;
    ``fit.cache`` predicts the reads and writes from the breakpoints the payload carries.
    ``calibration`` (a ``ctxfast.Calibration``) adds the offset it learnt from reported usage
    (``fit.calibrate``), and the fit says ``"calibrated"``.
    """
    with _payload.boundary() as here:
        already, marked, front_marked = _anthropic_cache.caller_breakpoints(system, tools, messages)
        place = _anthropic_cache.allowance(cache_breakpoints, already)
        out, result = _fit(
            system, messages, budget, tools, policy, tokenizer, model, tool_choice, pin_first_user, here,
            previous, cache, _Marks(marked, front_marked, place > 0), calibration,
        )
        return (_anthropic_cache.place_last(out) if place else out), result


class _Marks:
    """Which parts of the request end with a cache breakpoint, for the core's cache report."""

    def __init__(self, messages: list[int], front: bool, last: bool) -> None:
        self.messages, self.front, self.last = messages, front, last

    def parts(self, records: int) -> list[int]:
        # The fixed parts follow the records: <system>, then <tool schemas>.
        parts = [*self.messages, *([records - 1] if self.last and records else [])]
        return parts + ([records, records + 1] if self.front else [])


def _fit(
    system: str | list[dict[str, Any]] | None,
    messages: Sequence[dict[str, Any]],
    budget: Budget | int,
    tools: Sequence[dict[str, Any]] | None,
    policy: Policy | str | None,
    tokenizer: Tokenizer | Callable[[str], int] | None,
    model: str | None,
    tool_choice: str | dict[str, Any],
    pin_first_user: bool,
    here: _payload.Cursor,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
    marks: _Marks | None = None,
    calibration: Any = None,
) -> tuple[list[dict[str, Any]], Fit]:
    _shapes.refuse_body(messages, "anthropic")
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise ArgumentTypeError(f"argument 'messages' must be a list of dicts, not {type(messages).__name__}")
    tool_list = _payload.sequence_arg(tools, "tools")
    blocks: list[list[dict[str, Any]]] = []
    roles: list[str] = []
    for i, m in enumerate(messages):
        here.at = i
        _check_message(m, f"messages[{i}]")
        roles.append(m["role"])
        blocks.append(_blocks.blocks(m["content"], f"messages[{i}]"))

    def opens_exchange(i: int) -> bool:
        # A user message answering a tool_use (holding any tool_result) continues that exchange,
        # even when it also carries text: opening a new one could strand the result.
        return not any(b["type"] == "tool_result" for b in blocks[i])

    def makes_calls(i: int) -> bool:
        return any(b["type"] == "tool_use" for b in blocks[i])

    groups, current, pinned = _payload.assign_units(roles, opens_exchange, makes_calls, pin_first_user)
    _payload.protect_last_unit(groups, current)  # no ask: the last unit is the current turn
    records: list[Message] = []
    calls: list[ToolLink] = []
    results: list[ToolLink] = []
    for i, m in enumerate(messages):
        here.at = i
        strings: list[str] = []
        extra = 0
        call: tuple[str, str] | None = None
        role = roles[i]
        for j, b in enumerate(blocks[i]):
            where = f"messages[{i}].content[{j}]"
            s, e = _blocks.block_strings(b, where)
            strings += s
            extra += e
            kind = b["type"]
            if kind == "tool_use":
                if call is None:
                    call = (s[0], s[1])
                call_id = _payload.tool_id(b.get("id"), where, ".id")
                if call_id is not None and role == "assistant":
                    calls.append(ToolLink(i, where, call_id))
            elif kind == "tool_result":
                result_id = _payload.tool_id(b.get("tool_use_id"), where, ".tool_use_id")
                if result_id is not None and role == "user":
                    results.append(ToolLink(i, where, result_id))
        main = _blocks.longest_text(m["content"], blocks[i])
        path, text = main if main is not None else (None, "")
        layer, group = _payload.place(i, groups, current, pinned, system=False, tool_result=not opens_exchange(i))
        records.append(Message(i, layer, group, text, strings, TOKENS_PER_MESSAGE + extra, call, path=path))

    def origins_of(i: int) -> list[Where]:
        origins: list[Where] = []
        for j, b in enumerate(blocks[i]):
            _blocks.block_strings(b, f"messages[{i}].content[{j}]", origins)
        return origins

    here.at = None
    _payload.check_tool_pairs(
        calls,
        results,
        groups,
        result_field="tool_use_id",
        between=lambda k: "a user message" if roles[k] == "user" else "an assistant message",
    )
    tok = _payload.resolve_tokenizer(tokenizer)
    here.at = "system"
    sys_text, sys_origin = _blocks.system_text(system)
    choice = _choice_kind(tool_choice)
    tool_texts = []
    tool_origins: list[Where] = []
    for k, t in enumerate(tool_list):
        here.at = f"tools[{k}]"
        if not isinstance(t, dict) or "name" not in t:
            raise ArgumentTypeError(f"tools[{k}] must be a dict with a 'name'")
        tool_texts.append(_payload.as_json(t, f"tools[{k}]", sort_keys=True))
        tool_origins.append(Origin(f"tools[{k}]", k))
    here.at = None
    # The table's first column covers both auto and none (with tools given).
    prompt = _tool_prompt(model, choice)
    fixed = [
        Fixed("<system>", PromptLayer.SYSTEM, [sys_text] if sys_text else [], where="system", origins=[sys_origin]),
        Fixed("<tool schemas>", PromptLayer.TOOLS, tool_texts, prompt if tool_texts else 0, "tools", tool_origins),
    ]
    # Where each output message came from, shortened copies included, for the alternation pass.
    origin = {id(m): i for i, m in enumerate(messages)}

    def with_text(m: dict[str, Any], path: tuple[Any, ...], text: str) -> dict[str, Any]:
        copy: dict[str, Any] = _rounds.replace_at(m, path, text)
        origin[id(copy)] = origin[id(m)]
        return copy

    # After the marks' parts (<system>, <tool schemas>): a learnt offset is the last fixed part.
    budget, exactness, pending = _calibration.apply(calibration, fixed, budget, "anthropic", model)
    out, result = _payload.fit_messages(
        messages,
        records,
        fixed,
        budget,
        policy,
        tok,
        digest_framing=TOKENS_PER_MESSAGE,
        with_text=with_text,
        origins_of=origins_of,
        previous=previous, cache=cache, cache_default="anthropic", provider="anthropic",
        exactness=exactness or "estimate", breakpoints=marks.parts(len(records)) if marks else None,
    )
    _calibration.settle(pending, result)
    if result.evicted:
        # Only a removal can put two user messages side by side.
        out = _rounds.merge_user_runs(out, origin)
    return out, result


def _check_message(m: Any, where: str) -> None:
    """The shape checks (``_shapes``): a dict with a user/assistant role and content, and no other
    field holding text; not an OpenAI, Responses API or Gemini message."""
    if not isinstance(m, dict):
        raise ArgumentTypeError(f"{where} must be a dict, not {type(m).__name__}")
    _shapes.refuse_foreign(m, where, "anthropic")
    role = m.get("role")
    if not isinstance(role, str) or role not in ROLES:
        hint = ""
        if role == "system":
            hint = ". The system prompt is not a message: pass it as fit_messages(system, messages, ...)"
        elif isinstance(role, str) and role in _OPENAI_ONLY:
            hint = ". That is an OpenAI Chat role: for an OpenAI payload use ctxfast.openai.fit_messages"
        if role is None:
            raise InvalidArgumentError(f"{where}.role is missing: an Anthropic message's role is user or assistant")
        raise _shapes.unknown_role(role, where, ROLES, "an Anthropic Messages", hint)
    _shapes.check_fields(
        m, where, _FIELDS, "Anthropic",
        "Put its text in a block of 'content', or remove the field (for an OpenAI Chat payload use ctxfast.openai).",
    )
    if "content" not in m:
        raise InvalidArgumentError(f"{where} has no 'content': an Anthropic message needs a string or a list of blocks")


_FIELDS = frozenset({"role", "content"})
