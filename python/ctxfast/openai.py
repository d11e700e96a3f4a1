"""OpenAI Chat Completions payloads: ``messages`` (with ``tool_calls`` and ``tool`` messages)
and ``tools`` schemas.

How the request is counted, and how exact each part is:

- **Text messages: exact** for gpt-3.5-turbo/gpt-4/gpt-4o-family snapshots. Each message costs
  3 tokens of framing, plus its role, plus its content, plus ``name`` + 1 when a name is set.
  Every reply is primed with 3 more tokens. These are the constants of OpenAI's token-counting
  cookbook. They reproduce the API's figures there (129 tokens with cl100k_base and 124 with
  o200k_base on its six-message example), and ``tests/test_adapters_openai.py`` checks the
  formula on those cases.
- **Newer models** (gpt-4.1, gpt-5, the o-series): OpenAI publishes no constants. The same 3/1/3
  is assumed, as LangChain assumes it.
- **``tools`` schemas: an estimate, exact on flat schemas.** The cookbook's rules: 7 tokens per
  function plus ``name:description``; 3 for a parameters object; 3 plus ``key:type:description``
  per property; enums −3 + 3 + value per item; 12 once. Nested schemas are counted by their JSON
  text.
- **Assistant ``tool_calls`` and ``tool`` messages: an estimate.** OpenAI documents nothing here.
  Each call costs its name, its arguments and 3 tokens, which reproduces the one public
  API data point.
- **Images: an estimate.** 85 tokens at ``detail: low``, 765 otherwise (a 1024×1024 image).

Tool calls and ``tool`` messages are paired by id (``tool_calls[k].id`` and ``tool_call_id``): a
result always leaves with its call. A ``tool`` message whose call is not in its exchange (a user
message stands between them), one that answers no earlier call or answers a call a second time,
and a call id used twice are refused with ``InvalidArgumentError`` naming the messages: such a
payload is already invalid for the API, and refusing it (rather than merging exchanges) means
every fitted request keeps each result right after its call. A call without a result at the end
of the payload is fine. Calls and results without ids are grouped by position, as before (and
when no call has an id, results are not checked).

A malformed payload gets ``ArgumentTypeError`` or ``InvalidArgumentError`` naming the path
(``messages[3].content[0]``, ``tools[1].function.name``); nested values are read up to
``ctxfast._payload.MAX_DEPTH`` (128) levels.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ctxfast._core import Budget, Fit, Policy, PromptLayer, Tokenizer
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast import _payload
from ctxfast._payload import Fixed, Message, Origin, ToolLink, Where, assign_exchanges

__all__ = ["fit_messages", "message_framing", "REPLY_PRIMING", "TOKENS_PER_MESSAGE"]

#: Framing per message (cookbook: every message is wrapped in start/role/end markers).
TOKENS_PER_MESSAGE = 3
#: Extra per message that has a ``name``.
TOKENS_PER_NAME = 1
#: Every reply is primed with ``<|start|>assistant<|message|>``.
REPLY_PRIMING = 3
#: Per tool call in an assistant message (community estimate, see the module docstring).
TOKENS_PER_TOOL_CALL = 3
# Tool-schema constants of the cookbook: per function 7 on the gpt-4o family (o200k_base),
# 10 on gpt-3.5-turbo / gpt-4 (cl100k_base); the rest are shared.
FUNC_INIT = {"cl100k_base": 10}
FUNC_INIT_DEFAULT = 7
PROP_INIT, PROP_KEY, ENUM_INIT, ENUM_ITEM, FUNC_END = 3, 3, -3, 3, 12
IMAGE_LOW, IMAGE_DEFAULT = 85, 765

_SYSTEM_ROLES = {"system", "developer"}
_NO_CALLS: list[Any] = []  # shared, never appended to


def message_framing(message: dict[str, Any]) -> int:
    """Tokens a message costs beyond its counted strings."""
    framing = TOKENS_PER_MESSAGE
    if message.get("name"):
        framing += TOKENS_PER_NAME
    framing += TOKENS_PER_TOOL_CALL * len(message.get("tool_calls") or ())
    return framing


def _content_strings(content: Any, where: str, origins: list[Where] | None = None) -> tuple[list[str], int]:
    """The strings of a content field and the tokens of its non-text parts; with `origins`, where
    each string came from is appended to it (only to word an error)."""
    if content is None:
        return [], 0
    if isinstance(content, str):
        if origins is not None:
            origins.append(Origin(f"{where}.content"))
        return [content], 0
    if isinstance(content, list):
        strings: list[str] = []
        extra = 0
        for j, part in enumerate(content):
            if not isinstance(part, dict):
                raise ArgumentTypeError(f"{where}.content[{j}] must be a dict, not {type(part).__name__}")
            kind = part.get("type")
            if kind == "text":
                value = part.get("text", "")
                strings.append(value if type(value) is str else _payload.text(value, where, f".content[{j}].text"))
                if origins is not None:
                    origins.append(Origin(f"{where}.content[{j}].text"))
            elif kind == "image_url":
                image = part.get("image_url") or {}
                if isinstance(image, str):
                    image = {"url": image}
                if not isinstance(image, dict):
                    raise ArgumentTypeError(f"{where}.content[{j}].image_url must be a dict or a URL string")
                extra += IMAGE_LOW if image.get("detail") == "low" else IMAGE_DEFAULT
            else:
                strings.append(_payload.as_json(part, where, f".content[{j}]", sort_keys=True))
                if origins is not None:
                    origins.append(Origin(f"{where}.content[{j}]"))
        return strings, extra
    raise ArgumentTypeError(f"{where}.content must be a str, a list of parts or None, not {type(content).__name__}")


def _main_text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for j, p in enumerate(content):
            if isinstance(p, dict) and p.get("type") == "text":
                value = p.get("text", "")
                texts.append(value if type(value) is str else _payload.text(value, where, f".content[{j}].text"))
        return "\n".join(texts)
    return ""


def _read_message(
    m: dict[str, Any], where: str, origins: list[Where] | None = None
) -> tuple[list[str], int, dict[str, str] | None, list[tuple[int, Any]]]:
    """One message's counted strings, the tokens of its non-text parts, its digest meta and its
    tool calls' (index, id); with `origins`, where each string came from is appended to it."""
    strings, extra = _content_strings(m.get("content"), where, origins)
    strings.append(m["role"])
    if origins is not None:
        origins.append(Origin(f"{where}.role"))
    if m.get("name"):
        strings.append(_payload.text(m["name"], where, ".name"))
        if origins is not None:
            origins.append(Origin(f"{where}.name"))
    meta = None
    ids: list[tuple[int, Any]] = _NO_CALLS
    calls = m.get("tool_calls") or _NO_CALLS
    if not isinstance(calls, list):
        raise ArgumentTypeError(f"{where}.tool_calls must be a list, not {type(calls).__name__}")
    for k, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            raise ArgumentTypeError(f"{where}.tool_calls[{k}] must be a dict with a 'function' dict")
        name, arguments = fn.get("name", ""), fn.get("arguments", "")
        if type(name) is not str:
            name = _payload.text(name, where, f".tool_calls[{k}].function.name")
        if type(arguments) is not str:
            arguments = _payload.text(arguments, where, f".tool_calls[{k}].function.arguments")
        strings += [name, arguments]
        if origins is not None:
            origins += [Origin(f"{where}.tool_calls[{k}].function.name"), Origin(f"{where}.tool_calls[{k}].function.arguments")]
        if meta is None:
            meta = {"tool": name, "arguments": arguments}
        if k == 0:
            ids = []
        ids.append((k, call.get("id")))
    return strings, extra, meta, ids


def _tools_parts(tools: Sequence[Any], encoding: str) -> tuple[list[str], list[Where], int]:
    """The cookbook's schema rule as (strings to tokenize, where each came from, constant tokens):
    every term of the rule is a count of some string or a constant, so the strings can join the
    request's one batch."""
    func_init = FUNC_INIT.get(encoding, FUNC_INIT_DEFAULT)
    strings: list[str] = []
    origins: list[Where] = []
    constant = 0

    def joined(i: int, pieces: list[tuple[str, str]]) -> None:
        # "a:b:c" from several fields: each piece remembers where it starts.
        at, out = 0, []
        for value, path in pieces:
            out.append(Origin(path, i, at))
            at += len(value) + 1
        strings.append(":".join(value for value, _ in pieces))
        origins.append(tuple(out))

    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise ArgumentTypeError(f"tools[{i}] must be a dict, not {type(tool).__name__}")
        fn = tool.get("function", tool)
        at = f"tools[{i}].function" if "function" in tool else f"tools[{i}]"
        if not isinstance(fn, dict) or "name" not in fn:
            raise InvalidArgumentError(f"tools[{i}] has no function name")
        name = _payload.text(fn["name"], f"{at}.name")
        desc = _payload.text(fn.get("description", ""), f"{at}.description").removesuffix(".")
        constant += func_init
        joined(i, [(name, f"{at}.name"), (desc, f"{at}.description")])
        params = fn.get("parameters") or {}
        if not isinstance(params, dict):
            raise ArgumentTypeError(f"tools[{i}].parameters must be a dict, not {type(params).__name__}")
        props = params.get("properties") or {}
        if not isinstance(props, dict):
            raise ArgumentTypeError(f"tools[{i}].parameters.properties must be a dict, not {type(props).__name__}")
        if props:
            constant += PROP_INIT
            for key, spec in props.items():
                constant += PROP_KEY
                prop = f"{at}.parameters.properties{_payload._step(key)}"
                key_text = _payload.text(key, prop)
                if not isinstance(spec, dict) or "type" not in spec or spec.get("type") in ("object", "array"):
                    # Nested or unusual schemas: their JSON text, as an estimate.
                    joined(i, [(key_text, prop), (_payload.as_json(spec, prop, sort_keys=True), prop)])
                    continue
                p_desc = _payload.text(spec.get("description", ""), f"{prop}.description").removesuffix(".")
                if "enum" in spec:
                    if not isinstance(spec["enum"], list):
                        raise ArgumentTypeError(f"{prop}: enum must be a list, not {type(spec['enum']).__name__}")
                    constant += ENUM_INIT + ENUM_ITEM * len(spec["enum"])
                    for n, item in enumerate(spec["enum"]):
                        strings.append(_payload.text(item, f"{prop}.enum[{n}]"))
                        origins.append(Origin(f"{prop}.enum[{n}]", i))
                kind = _payload.text(spec["type"], f"{prop}.type")
                joined(i, [(key_text, prop), (kind, f"{prop}.type"), (p_desc, f"{prop}.description")])
    return strings, origins, constant + FUNC_END if tools else 0


def fit_messages(
    messages: Sequence[dict[str, Any]],
    budget: Budget | int,
    *,
    tools: Sequence[dict[str, Any]] | None = None,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    pin_first_user: bool = False,
) -> tuple[list[dict[str, Any]], Fit]:
    """Fit a Chat Completions request under ``budget``; returns ``(messages, fit)``.

    System/developer messages, the tool schemas and the current turn (the last user message
    and everything after it) are never dropped. Exchanges leave whole, or are replaced by a
    tagged digest under the default ``Policy.agent()``. Kept messages are the caller's own
    dicts, unchanged. ``fit.total`` is the request's prompt tokens, framing and tools
    included.
    """
    with _payload.boundary() as here:
        return _fit(messages, budget, tools, policy, tokenizer, pin_first_user, here)


def _fit(
    messages: Sequence[dict[str, Any]],
    budget: Budget | int,
    tools: Sequence[dict[str, Any]] | None,
    policy: Policy | str | None,
    tokenizer: Tokenizer | Callable[[str], int] | None,
    pin_first_user: bool,
    here: _payload.Cursor,
) -> tuple[list[dict[str, Any]], Fit]:
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise ArgumentTypeError(f"argument 'messages' must be a list of dicts, not {type(messages).__name__}")
    tool_list = _payload.sequence_arg(tools, "tools")
    roles: list[str] = []
    for i, m in enumerate(messages):
        here.at = i
        if not isinstance(m, dict):
            raise ArgumentTypeError(f"messages[{i}] must be a dict, not {type(m).__name__}")
        role = m.get("role")
        if role is None:
            raise InvalidArgumentError(f"messages[{i}] has no 'role'")
        if not isinstance(role, str):
            raise InvalidArgumentError(f"messages[{i}].role must be a str, not {type(role).__name__}")
        roles.append("system" if role in _SYSTEM_ROLES else "user" if role == "user" else role)
    groups, current, pinned = assign_exchanges(roles, lambda i: True, pin_first_user)
    records: list[Message] = []
    calls: list[ToolLink] = []
    results: list[ToolLink] = []
    for i, m in enumerate(messages):
        here.at = i
        where = f"messages[{i}]"
        strings, extra, meta, ids = _read_message(m, where)
        role = m["role"]
        for k, raw in ids:
            call_id = _payload.tool_id(raw, where, f".tool_calls[{k}].id")
            if call_id is not None and role == "assistant":
                calls.append(ToolLink(i, f"{where}.tool_calls[{k}]", call_id))
        if role == "tool":
            result_id = _payload.tool_id(m.get("tool_call_id"), where, ".tool_call_id")
            if result_id is not None:
                results.append(ToolLink(i, where, result_id))
        layer, group = _payload.place(i, groups, current, pinned, system=roles[i] == "system", tool_result=role == "tool")
        records.append(
            Message(i, layer, group, _main_text(m.get("content"), where), strings, message_framing(m) + extra, meta)
        )
    here.at = None
    _payload.check_tool_pairs(
        calls, results, groups, result_field="tool_call_id", between=lambda k: f"a {messages[k]['role']} message"
    )
    here.at = "tools"
    tok = _payload.resolve_tokenizer(tokenizer)
    schema_strings, schema_origins, schema_tokens = _tools_parts(tool_list, tok.name)
    here.at = None
    fixed = [
        Fixed("<tool schemas>", PromptLayer.TOOLS, schema_strings, schema_tokens, "tools", schema_origins),
        Fixed("<reply priming>", PromptLayer.SYSTEM, tokens=REPLY_PRIMING),
    ]
    return _payload.fit_messages(
        messages,
        records,
        fixed,
        budget,
        policy,
        tok,
        digest_framing=TOKENS_PER_MESSAGE + 1,  # a user message: framing + its role
        origins_of=lambda i: _origins_of(messages[i], i),
    )


def _origins_of(m: dict[str, Any], i: int) -> list[Where]:
    origins: list[Where] = []
    _read_message(m, f"messages[{i}]", origins)
    return origins
