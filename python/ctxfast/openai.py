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
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ctxfast._core import Budget, Fit, Policy, PromptLayer, Tokenizer
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast import _payload
from ctxfast._payload import Fixed, Message, assign_exchanges

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


def message_framing(message: dict[str, Any]) -> int:
    """Tokens a message costs beyond its counted strings."""
    framing = TOKENS_PER_MESSAGE
    if message.get("name"):
        framing += TOKENS_PER_NAME
    framing += TOKENS_PER_TOOL_CALL * len(message.get("tool_calls") or ())
    return framing


def _content_strings(content: Any, where: str) -> tuple[list[str], int]:
    """The strings of a content field and the tokens of its non-text parts."""
    if content is None:
        return [], 0
    if isinstance(content, str):
        return [content], 0
    if isinstance(content, list):
        strings: list[str] = []
        extra = 0
        for j, part in enumerate(content):
            if not isinstance(part, dict):
                raise ArgumentTypeError(f"{where}.content[{j}] must be a dict, not {type(part).__name__}")
            kind = part.get("type")
            if kind == "text":
                strings.append(str(part.get("text", "")))
            elif kind == "image_url":
                image = part.get("image_url") or {}
                if isinstance(image, str):
                    image = {"url": image}
                if not isinstance(image, dict):
                    raise ArgumentTypeError(f"{where}.content[{j}].image_url must be a dict or a URL string")
                extra += IMAGE_LOW if image.get("detail") == "low" else IMAGE_DEFAULT
            else:
                strings.append(json.dumps(part, sort_keys=True))
        return strings, extra
    raise ArgumentTypeError(f"{where}.content must be a str, a list of parts or None, not {type(content).__name__}")


def _main_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _tools_parts(tools: Sequence[Any], encoding: str) -> tuple[list[str], int]:
    """The cookbook's schema rule as (strings to tokenize, constant tokens): every term of the
    rule is a count of some string or a constant, so the strings can join the request's one batch."""
    func_init = FUNC_INIT.get(encoding, FUNC_INIT_DEFAULT)
    strings: list[str] = []
    constant = 0
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise ArgumentTypeError(f"tools[{i}] must be a dict, not {type(tool).__name__}")
        fn = tool.get("function", tool)
        if not isinstance(fn, dict) or "name" not in fn:
            raise InvalidArgumentError(f"tools[{i}] has no function name")
        desc = str(fn.get("description", "")).removesuffix(".")
        constant += func_init
        strings.append(f"{fn['name']}:{desc}")
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
                if not isinstance(spec, dict) or "type" not in spec or spec.get("type") in ("object", "array"):
                    # Nested or unusual schemas: their JSON text, as an estimate.
                    strings.append(f"{key}:{json.dumps(spec, sort_keys=True)}")
                    continue
                p_desc = str(spec.get("description", "")).removesuffix(".")
                if "enum" in spec:
                    if not isinstance(spec["enum"], list):
                        raise ArgumentTypeError(f"tools[{i}] property {key!r}: enum must be a list")
                    constant += ENUM_INIT + ENUM_ITEM * len(spec["enum"])
                    strings += [str(item) for item in spec["enum"]]
                strings.append(f"{key}:{spec['type']}:{p_desc}")
    return strings, constant + FUNC_END if tools else 0


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
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise ArgumentTypeError(f"argument 'messages' must be a list of dicts, not {type(messages).__name__}")
    roles: list[str] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise ArgumentTypeError(f"messages[{i}] must be a dict, not {type(m).__name__}")
        role = m.get("role")
        if not isinstance(role, str):
            raise InvalidArgumentError(f"messages[{i}] has no 'role'")
        roles.append("system" if role in _SYSTEM_ROLES else "user" if role == "user" else role)
    groups, current, pinned = assign_exchanges(roles, lambda i: True, pin_first_user)
    records: list[Message] = []
    for i, m in enumerate(messages):
        strings, extra = _content_strings(m.get("content"), f"messages[{i}]")
        strings.append(m["role"])
        if m.get("name"):
            strings.append(str(m["name"]))
        meta = None
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list):
            raise ArgumentTypeError(f"messages[{i}].tool_calls must be a list, not {type(calls).__name__}")
        for k, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                raise ArgumentTypeError(f"messages[{i}].tool_calls[{k}] must be a dict with a 'function' dict")
            name, arguments = str(fn.get("name", "")), str(fn.get("arguments", ""))
            strings += [name, arguments]
            if meta is None:
                meta = {"tool": name, "arguments": arguments}
        layer, group = _payload.place(
            i, groups, current, pinned, system=roles[i] == "system", tool_result=m["role"] == "tool"
        )
        records.append(
            Message(i, layer, group, _main_text(m.get("content")), strings, message_framing(m) + extra, meta)
        )
    tok = _payload.resolve_tokenizer(tokenizer)
    schema_strings, schema_tokens = _tools_parts(tools or (), tok.name)
    fixed = [
        Fixed("<tool schemas>", PromptLayer.TOOLS, schema_strings, schema_tokens, "tools"),
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
    )
