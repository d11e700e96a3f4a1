"""Anthropic Messages payloads: ``system``, ``messages`` with ``tool_use`` / ``tool_result``
content blocks, and ``tools``.

How exact the counts are: **these are estimates.** Claude 3 and later have no public tokenizer.
Anthropic's own ``count_tokens`` endpoint is documented as an estimate too. By default ctxfast
counts text with the embedded o200k_base vocabulary. Pass ``tokenizer=`` to use something
closer, such as a callable backed by your own calibration. On top of the text:

- each message costs ``TOKENS_PER_MESSAGE`` (3) framing tokens (uncalibrated);
- ``tool_use`` blocks count their name and their JSON input; ``tool_result`` blocks count
  their content;
- with ``tools``, each tool counts its JSON schema. When you pass ``model=``, the tool-use
  system prompt Anthropic documents for that model is added (``TOOL_SYSTEM_PROMPT``, from its
  2026 table);
- images count ``IMAGE_TOKENS`` (1,600, a large image).

Leave a margin in ``Budget.reserve`` for the difference.

What is guaranteed:

- a ``tool_result`` never precedes its ``tool_use``: the exchange holding them leaves whole, or
  a digest replaces it whole;
- ``system`` and the current turn are never dropped;
- the payload still starts with a user message.

``tool_use`` and ``tool_result`` blocks are paired by id (``tool_use.id`` and
``tool_result.tool_use_id``). A user message holding a ``tool_result`` continues the exchange
of its call. A result whose call is in an earlier exchange (a user message without results
stands between them), a result that answers no earlier ``tool_use`` or answers one a second time,
and a ``tool_use`` id used twice are refused with ``InvalidArgumentError`` naming the blocks: the
API rejects such a payload anyway, and refusing it (rather than merging exchanges) means every
fitted request keeps each result with its call. A ``tool_use`` without a result at the end is
fine. Blocks without ids are grouped by position, as before (and when no ``tool_use`` has an
id, results are not checked).

A malformed payload gets ``ArgumentTypeError`` or ``InvalidArgumentError`` naming the path
(``messages[3].content[0].input``, ``system``, ``tools[1]``); nested values are read up to
``ctxfast._payload.MAX_DEPTH`` (128) levels.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ctxfast import _payload
from ctxfast._core import Budget, Fit, Policy, PromptLayer, Tokenizer
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast._payload import Fixed, Message, Origin, ToolLink, Where, assign_exchanges

__all__ = ["fit_messages", "TOOL_SYSTEM_PROMPT", "TOKENS_PER_MESSAGE"]

TOKENS_PER_MESSAGE = 3
IMAGE_TOKENS = 1600
#: Tool-use system prompt tokens by model prefix: (auto/none, any/tool), Anthropic's 2026 table.
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


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        for j, b in enumerate(content):
            if not isinstance(b, dict) or "type" not in b:
                raise ArgumentTypeError(f"{where}.content[{j}] must be a content block dict with a 'type'")
        return content
    raise ArgumentTypeError(f"{where}.content must be a str or a list of blocks, not {type(content).__name__}")


def _json(value: Any, where: str) -> str:
    return _payload.as_json(value, where, sort_keys=True)


def _block_strings(
    block: dict[str, Any], where: str, origins: list[Where] | None = None, depth: int = 0
) -> tuple[list[str], int]:
    """A block's strings and the tokens of its non-text content; with `origins`, where each
    string came from is appended to it (only to word an error)."""
    kind = block["type"]
    if kind == "text":
        value = block.get("text", "")
        if origins is not None:
            origins.append(Origin(f"{where}.text"))
        return [value if type(value) is str else _payload.text(value, where, ".text")], 0
    if kind == "tool_use":
        name = block.get("name", "")
        if type(name) is not str:
            name = _payload.text(name, where, ".name")
        if origins is not None:
            origins += [Origin(f"{where}.name"), Origin(f"{where}.input")]
        return [name, _payload.as_json(block.get("input", {}), where, ".input", sort_keys=True)], 0
    if kind == "tool_result":
        inner = block.get("content", "")
        if isinstance(inner, str):
            if origins is not None:
                origins.append(Origin(f"{where}.content"))
            return [inner], 0
        if not isinstance(inner, list):
            raise ArgumentTypeError(f"{where}.content must be a str or a list of blocks, not {type(inner).__name__}")
        if depth >= _payload.MAX_DEPTH:
            raise InvalidArgumentError(f"{where} nests tool results more than {_payload.MAX_DEPTH} levels deep")
        strings: list[str] = []
        extra = 0
        for k, b in enumerate(inner):
            if not isinstance(b, dict) or "type" not in b:
                raise ArgumentTypeError(f"{where}.content[{k}] must be a content block dict with a 'type'")
            s, e = _block_strings(b, f"{where}.content[{k}]", origins, depth + 1)
            strings += s
            extra += e
        return strings, extra
    if kind in ("image", "document"):
        return [], IMAGE_TOKENS
    if kind in ("thinking", "redacted_thinking"):
        # Earlier turns' thinking blocks are not counted by the API.
        return [], 0
    if origins is not None:
        origins.append(Origin(where))
    return [_json(block, where)], 0


def _system_text(system: Any) -> tuple[str, Where]:
    """The system prompt's text, and where each of its pieces came from."""
    if system is None:
        return "", Origin("system")
    if isinstance(system, str):
        return system, Origin("system")
    if isinstance(system, list):
        pieces: list[str] = []
        origins: list[Origin] = []
        at = 0
        for j, b in enumerate(system):
            if not isinstance(b, dict):
                raise ArgumentTypeError(f"system[{j}] must be a text block dict, not {type(b).__name__}")
            piece = _payload.text(b.get("text", ""), f"system[{j}].text")
            origins.append(Origin(f"system[{j}].text", j, at))
            pieces.append(piece)
            at += len(piece) + 1
        return "\n".join(pieces), tuple(origins) or Origin("system")
    raise ArgumentTypeError(f"argument 'system' must be a str, a list of text blocks or None, not {type(system).__name__}")


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
) -> tuple[list[dict[str, Any]], Fit]:
    """Fit a Messages request under ``budget``; returns ``(messages, fit)``.

    ``system`` is never dropped, and it is counted in ``fit.total``. Kept messages are the
    caller's own dicts, unchanged. A digested exchange becomes a user message holding its
    record.
    """
    with _payload.boundary() as here:
        return _fit(system, messages, budget, tools, policy, tokenizer, model, tool_choice, pin_first_user, here)


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
) -> tuple[list[dict[str, Any]], Fit]:
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise ArgumentTypeError(f"argument 'messages' must be a list of dicts, not {type(messages).__name__}")
    tool_list = _payload.sequence_arg(tools, "tools")
    blocks: list[list[dict[str, Any]]] = []
    roles: list[str] = []
    for i, m in enumerate(messages):
        here.at = i
        if not isinstance(m, dict):
            raise ArgumentTypeError(f"messages[{i}] must be a dict, not {type(m).__name__}")
        role = m.get("role")
        if not isinstance(role, str) or role not in ("user", "assistant"):
            raise InvalidArgumentError(
                f"messages[{i}].role must be 'user' or 'assistant', got {_payload.preview(role)}"
            )
        roles.append(role)
        blocks.append(_blocks(m.get("content", ""), f"messages[{i}]"))

    def opens_exchange(i: int) -> bool:
        # A user message answering a tool_use (holding any tool_result) continues that exchange,
        # even when it also carries text: opening a new one could strand the result.
        return not any(b["type"] == "tool_result" for b in blocks[i])

    groups, current, pinned = assign_exchanges(roles, opens_exchange, pin_first_user)
    records: list[Message] = []
    calls: list[ToolLink] = []
    results: list[ToolLink] = []
    for i, m in enumerate(messages):
        here.at = i
        strings: list[str] = []
        texts: list[str] = []
        extra = 0
        meta = None
        role = roles[i]
        for j, b in enumerate(blocks[i]):
            where = f"messages[{i}].content[{j}]"
            s, e = _block_strings(b, where)
            strings += s
            extra += e
            kind = b["type"]
            if kind == "text":
                texts.append(s[0])
            elif kind == "tool_use":
                if meta is None:
                    meta = {"tool": s[0], "arguments": s[1]}
                call_id = _payload.tool_id(b.get("id"), where, ".id")
                if call_id is not None and role == "assistant":
                    calls.append(ToolLink(i, where, call_id))
            elif kind == "tool_result":
                result_id = _payload.tool_id(b.get("tool_use_id"), where, ".tool_use_id")
                if result_id is not None and role == "user":
                    results.append(ToolLink(i, where, result_id))
        text = "\n".join(texts)
        only_results = not opens_exchange(i) and not text.strip()
        if only_results:
            text = "\n".join(strings)
        layer, group = _payload.place(i, groups, current, pinned, system=False, tool_result=only_results)
        records.append(Message(i, layer, group, text, strings, TOKENS_PER_MESSAGE + extra, meta))

    def origins_of(i: int) -> list[Where]:
        origins: list[Where] = []
        for j, b in enumerate(blocks[i]):
            _block_strings(b, f"messages[{i}].content[{j}]", origins)
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
    sys_text, sys_origin = _system_text(system)
    choice = _choice_kind(tool_choice)
    tool_texts = []
    tool_origins: list[Where] = []
    for k, t in enumerate(tool_list):
        here.at = f"tools[{k}]"
        if not isinstance(t, dict) or "name" not in t:
            raise ArgumentTypeError(f"tools[{k}] must be a dict with a 'name'")
        tool_texts.append(_json(t, f"tools[{k}]"))
        tool_origins.append(Origin(f"tools[{k}]", k))
    here.at = None
    # The table's first column covers both auto and none (with tools given).
    prompt = _tool_prompt(model, choice)
    fixed = [
        Fixed("<system>", PromptLayer.SYSTEM, [sys_text] if sys_text else [], where="system", origins=[sys_origin]),
        Fixed("<tool schemas>", PromptLayer.TOOLS, tool_texts, prompt if tool_texts else 0, "tools", tool_origins),
    ]
    return _payload.fit_messages(
        messages,
        records,
        fixed,
        budget,
        policy,
        tok,
        digest_framing=TOKENS_PER_MESSAGE,
        origins_of=origins_of,
    )
