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
- **Images, audio and files: estimates.** ``image_url``: 85 tokens at ``detail: low``, 765
  otherwise (a 1024×1024 image). ``input_audio``: ``AUDIO_TOKENS_PER_SECOND`` (10) per second,
  the length taken from the base64 data at ``AUDIO_BYTES_PER_SECOND`` (wav 32,000, mp3 16,000
  bytes a second). ``file`` (a PDF): ``FILE_TOKENS`` (1,600) per file. ``refusal`` parts and the
  ``refusal`` field count their text; the legacy ``function_call`` counts like a tool call; an
  ``audio`` reference and ``annotations`` are not counted.

Shapes that would be miscounted are refused before counting (``ctxfast._shapes``): a role
other than ``ROLES`` (with a "did you mean"), a content part type other than ``PART_TYPES``
(naming ``messages[i].content[j]``), a field other than ``FIELDS`` that holds text (``text``
instead of ``content``, ``reasoning_content``...), and OpenAI Responses API items or Gemini
``contents`` (not supported yet by this adapter; support is planned separately).

Tool calls and ``tool`` messages are paired by id (``tool_calls[k].id`` and ``tool_call_id``): a
result always leaves with its call. A ``tool`` message whose call is not in its exchange or
round (a user message, or another assistant message with calls, stands between them), one that
answers no earlier call or answers a call a second time, and a call id used twice are refused
with ``InvalidArgumentError`` naming the messages: such a payload is already invalid for the
API, and refusing it (rather than merging units) means every fitted request keeps each result
right after its call. A call without a result at the end of the payload is fine. Calls and
results without ids are grouped by position, as before (and when no call has an id, results
are not checked).

Agent loops (``ctxfast._rounds``): the current turn, which is never dropped, is the last user
message (the ask) and the newest tool round (the assistant message that made the last tool
calls, its results and anything after them). Each older round after the ask, an assistant
message with ``tool_calls`` and its ``tool`` messages, is a unit of its own, digested or dropped
oldest first like an exchange, so a loop of many rounds fits under ``Policy.agent()`` at any
budget that holds the system prompt, the ask and the newest round.

A truncate rung shortens one string of a message, its longest text (a ``str`` content, a text
part), in a copy: images, ``tool_calls``, ids and the other parts are the caller's own, and
``fit.total`` still counts them.

A malformed payload gets ``ArgumentTypeError`` or ``InvalidArgumentError`` naming the path
(``messages[3].content[0]``, ``tools[1].function.name``); nested values are read up to
``ctxfast._payload.MAX_DEPTH`` (128) levels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ctxfast._core import Budget, Fit, Policy, PromptLayer, Tokenizer
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast import _payload, _shapes
from ctxfast._payload import Fixed, Message, Origin, ToolLink, Where

# The content parts' rules live in _parts.py.
from ctxfast._parts import AUDIO_BYTES_PER_SECOND as AUDIO_BYTES_PER_SECOND
from ctxfast._parts import AUDIO_TOKENS_PER_SECOND as AUDIO_TOKENS_PER_SECOND
from ctxfast._parts import FILE_TOKENS as FILE_TOKENS
from ctxfast._parts import IMAGE_DEFAULT as IMAGE_DEFAULT
from ctxfast._parts import IMAGE_LOW as IMAGE_LOW
from ctxfast._parts import PART_TYPES as PART_TYPES
from ctxfast._parts import Main, content_strings

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
#: The roles of Chat Completions (``function``: the legacy function-calling result).
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: The message fields read (``audio`` and ``annotations`` are known and not counted).
FIELDS = frozenset(
    {"role", "content", "name", "tool_calls", "tool_call_id", "function_call", "refusal", "audio", "annotations"}
)
_SYSTEM_ROLES = {"system", "developer"}
_NO_CALLS: list[Any] = []  # shared, never appended to


def _read_message(
    m: dict[str, Any], where: str, origins: list[Where] | None = None
) -> tuple[list[str], int, dict[str, str] | None, list[tuple[int, Any]], Main | None]:
    """One message's counted strings, the tokens of its non-text parts, its digest meta, its
    tool calls' (index, id) and its longest text field; with `origins`, where each string came
    from is appended to it."""
    strings, extra, main = content_strings(m.get("content"), where, origins)
    strings.append(m["role"])
    if origins is not None:
        origins.append(Origin(f"{where}.role"))
    if m.get("name"):
        strings.append(_payload.text(m["name"], where, ".name"))
        if origins is not None:
            origins.append(Origin(f"{where}.name"))
    refusal = m.get("refusal")
    if refusal:
        strings.append(_payload.text(refusal, where, ".refusal"))
        if origins is not None:
            origins.append(Origin(f"{where}.refusal"))
    meta = None
    ids: list[tuple[int, Any]] = _NO_CALLS
    calls = m.get("tool_calls") or _NO_CALLS
    if not isinstance(calls, list):
        raise ArgumentTypeError(f"{where}.tool_calls must be a list, not {type(calls).__name__}")
    legacy = m.get("function_call")
    fields: list[tuple[str, Any, Any]] = [
        (f".tool_calls[{k}].function", call.get("function") if isinstance(call, dict) else None, call)
        for k, call in enumerate(calls)
    ]
    if legacy:
        fields.append((".function_call", legacy, None))
    for k, (at, fn, call) in enumerate(fields):
        if not isinstance(fn, dict):
            shape = "a dict (name, arguments)" if call is None else "a dict with a 'function' dict"
            raise ArgumentTypeError(f"{where}{at.removesuffix('.function')} must be {shape}")
        name, arguments = fn.get("name", ""), fn.get("arguments", "")
        if type(name) is not str:
            name = _payload.text(name, where, f"{at}.name")
        if type(arguments) is not str:
            arguments = _payload.text(arguments, where, f"{at}.arguments")
        strings += [name, arguments]
        if origins is not None:
            origins += [Origin(f"{where}{at}.name"), Origin(f"{where}{at}.arguments")]
        if meta is None:
            meta = {"tool": name, "arguments": arguments}
        if call is not None:
            if k == 0:
                ids = []
            ids.append((k, call.get("id")))
    return strings, extra, meta, ids, main


def message_framing(message: dict[str, Any]) -> int:
    """Tokens a message costs beyond its counted strings."""
    framing = TOKENS_PER_MESSAGE
    if message.get("name"):
        framing += TOKENS_PER_NAME
    framing += TOKENS_PER_TOOL_CALL * (len(message.get("tool_calls") or ()) + bool(message.get("function_call")))
    return framing


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

    System/developer messages, the tool schemas and the current turn (the last user message,
    and in an agent loop the newest tool round) are never dropped. Exchanges and older tool
    rounds leave whole, or are replaced by a tagged digest under the default ``Policy.agent()``.
    Kept messages are the caller's own dicts, unchanged; a truncated one is a copy with one
    text shortened. ``fit.total`` is the request's prompt tokens, framing and tools included.
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
    _shapes.refuse_body(messages, "openai")
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise ArgumentTypeError(f"argument 'messages' must be a list of dicts, not {type(messages).__name__}")
    tool_list = _payload.sequence_arg(tools, "tools")
    roles: list[str] = []
    read = []
    for i, m in enumerate(messages):
        here.at = i
        where = f"messages[{i}]"
        _check_message(m, where)
        role = m["role"]
        roles.append("system" if role in _SYSTEM_ROLES else role)
        read.append(_read_message(m, where))
    groups, current, pinned = _payload.assign_units(
        roles, lambda i: True, lambda i: bool(read[i][3]) or bool(messages[i].get("function_call")), pin_first_user
    )
    records: list[Message] = []
    calls: list[ToolLink] = []
    results: list[ToolLink] = []
    for i, m in enumerate(messages):
        here.at = i
        where = f"messages[{i}]"
        strings, extra, meta, ids, main = read[i]
        role = m["role"]
        for k, raw in ids:
            call_id = _payload.tool_id(raw, where, f".tool_calls[{k}].id")
            if call_id is not None and role == "assistant":
                calls.append(ToolLink(i, f"{where}.tool_calls[{k}]", call_id))
        if role == "tool":
            result_id = _payload.tool_id(m.get("tool_call_id"), where, ".tool_call_id")
            if result_id is not None:
                results.append(ToolLink(i, where, result_id))
        is_result = role in ("tool", "function")
        layer, group = _payload.place(i, groups, current, pinned, system=roles[i] == "system", tool_result=is_result)
        path, text = main if main is not None else (None, "")
        records.append(Message(i, layer, group, text, strings, message_framing(m) + extra, meta, path=path))
    here.at = None
    _payload.check_tool_pairs(
        calls, results, groups, result_field="tool_call_id", between=lambda k: _a(messages[k]["role"]) + " message"
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


def _a(word: str) -> str:
    return f"an {word}" if word == "assistant" else f"a {word}"  # the roles: system, user, tool...


def _check_message(m: Any, where: str) -> None:
    """The shape checks (``_shapes``): a dict, not a Responses item or a Gemini entry, a Chat
    role, no field holding text that would not be counted."""
    if not isinstance(m, dict):
        raise ArgumentTypeError(f"{where} must be a dict, not {type(m).__name__}")
    _shapes.refuse_foreign(m, where, "openai")
    role = m.get("role")
    if role is None:
        raise InvalidArgumentError(f"{where} has no 'role' (one of {', '.join(ROLES)})")
    if not isinstance(role, str) or role not in ROLES:
        raise _shapes.unknown_role(role, where, ROLES, "an OpenAI Chat")
    _shapes.check_fields(m, where, FIELDS, "OpenAI Chat", "Put the message's text in 'content', or remove the field.")


def _origins_of(m: dict[str, Any], i: int) -> list[Where]:
    origins: list[Where] = []
    _read_message(m, f"messages[{i}]", origins)
    return origins


# The Responses API lives in its own module; these are its public names here.
from ctxfast.responses import fit_responses as fit_responses  # noqa: E402
from ctxfast.responses import fit_responses_body as fit_responses_body  # noqa: E402
