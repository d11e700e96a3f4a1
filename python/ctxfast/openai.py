"""OpenAI Chat Completions payloads: ``messages`` (with ``tool_calls`` and ``tool`` messages)
and ``tools`` schemas.

How the request is counted, and how exact each part is:

- **Text messages: exact** for gpt-3.5-turbo/gpt-4/gpt-4o-family snapshots. Each message costs
  3 tokens of framing, plus its role, plus its content, plus ``name`` + 1 when a name is set.
  Every reply is primed with 3 more tokens. These are the constants of OpenAI's token-counting
  cookbook. They reproduce the API's figures there (129 tokens with cl100k_base and 124 with
  o200k_base on its six-message example), and ``tests/test_adapters_openai.py`` checks the
  formula on those cases; ``tests/test_openai_counts.py`` on 13 more API counts (LiteLLM's).
- **Newer models** (gpt-4.1, gpt-5, the o-series): OpenAI publishes no constants. The same 3/1/3
  is assumed, as LangChain assumes it.
- **``tools``: rendered as the API renders them, then tokenized** (``ctxfast._openai_schema``):
  the schemas become the TypeScript namespace the model reads (``namespace functions {`` ...
  ``type name = (_: {`` ... ``}) => any;``: descriptions as ``//`` comments, ``?`` on optional
  properties, enums as ``"a" | "b"``, arrays as ``T[]``, nested objects inline), tokenized as one
  string, plus 9 tokens, minus 4 when the request has a system (or developer) message (the
  namespace joins it, and its text gets a trailing line feed). Checked against the 18 schema
  cases whose counts LiteLLM's tests took from the API: 13 exact, 5 one token over (a
  property with no description right after ``{``), and exact on the cookbook's weather example
  (105 on cl100k_base, 101 on o200k_base). Defaults, examples, type lists and
  ``anyOf`` follow openai/harmony's renderer, unmeasured: an estimate.
- **``tool_choice``**: ``"none"`` adds 1 token; naming a function adds 7 plus the name's tokens
  (API counts: 66 → 67 and 66 → 75); ``"auto"`` adds nothing; ``"required"`` and
  ``allowed_tools`` are unmeasured and counted as ``"auto"``. All constants are in
  ``ctxfast._openai_schema.OVERHEADS``.
- **Assistant ``tool_calls`` and ``tool`` messages: an estimate.** OpenAI documents nothing here.
  Each call costs its name, its arguments and 3 tokens, which reproduces the one public
  API data point.
- **Images** (``image_url``), OpenAI's published tile rule: ``detail: low`` is 85; ``high`` and
  ``auto`` (counted as high, an upper bound) scale the image to fit 2,048×2,048, then its
  shortest side down to 768, and cost 170 per 512-px tile plus 85, never scaling up (a 1×1
  PNG is 255, an API count). The size comes from ``image_sizes=`` (``{url: (w, h)}`` or a
  callable) or from the header of a ``data:`` URL (PNG, JPEG, GIF, WebP); then the count is
  exact by the rule. A URL of unknown size costs 765 (the 1,024×1,024 case): an estimate.
  Per-model image multipliers (gpt-4o-mini, the patch-based models) are not applied.
- **Audio and files: estimates.** ``input_audio``: ``AUDIO_TOKENS_PER_SECOND`` (10) per second,
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

from ctxfast._core import Budget, CacheProfile, Fit, Policy, PromptLayer, Tokenizer
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast import _openai_fast, _payload, _shapes
from ctxfast._framing import OPENAI_CHAT
from ctxfast._payload import Fixed, Message, Origin, ToolLink, Where

# The content parts' rules live in _parts.py.
from ctxfast._parts import AUDIO_BYTES_PER_SECOND as AUDIO_BYTES_PER_SECOND
from ctxfast._parts import AUDIO_TOKENS_PER_SECOND as AUDIO_TOKENS_PER_SECOND
from ctxfast._parts import FILE_TOKENS as FILE_TOKENS
from ctxfast._parts import IMAGE_DEFAULT as IMAGE_DEFAULT
from ctxfast._parts import IMAGE_LOW as IMAGE_LOW
from ctxfast._parts import PART_TYPES as PART_TYPES
from ctxfast._parts import ImageSizes, Main, content_strings
from ctxfast._openai_schema import OVERHEADS as OVERHEADS
from ctxfast._openai_schema import tools_parts

__all__ = ["fit_messages", "message_framing", "REPLY_PRIMING", "TOKENS_PER_MESSAGE"]

# The framing constants come from the core's one table (``ctxfast._framing``), which the fast
# path (``_fit_chat_fast``) reads too.
#: Framing per message (cookbook: every message is wrapped in start/role/end markers).
TOKENS_PER_MESSAGE = OPENAI_CHAT["per_message"]
#: Extra per message that has a ``name``.
TOKENS_PER_NAME = OPENAI_CHAT["per_name"]
#: Every reply is primed with ``<|start|>assistant<|message|>``.
REPLY_PRIMING = OPENAI_CHAT["reply_priming"]
#: Per tool call in an assistant message (community estimate, see the module docstring).
TOKENS_PER_TOOL_CALL = OPENAI_CHAT["per_tool_call"]
#: The roles of Chat Completions (``function``: the legacy function-calling result).
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: The message fields read (``audio`` and ``annotations`` are known and not counted).
FIELDS = frozenset(
    {"role", "content", "name", "tool_calls", "tool_call_id", "function_call", "refusal", "audio", "annotations"}
)
_SYSTEM_ROLES = {"system", "developer"}
_NO_CALLS: list[Any] = []  # shared, never appended to


def _read_message(
    m: dict[str, Any], where: str, origins: list[Where] | None = None, sizes: ImageSizes | None = None
) -> tuple[list[str], int, tuple[str, str] | None, list[tuple[int, Any]], Main | None]:
    """One message's counted strings, the tokens of its non-text parts, its first tool call
    (name, arguments), its tool calls' (index, id) and its longest text field; with `origins`, where each string came
    from is appended to it."""
    strings, extra, main = content_strings(m.get("content"), where, origins, sizes)
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
    first: tuple[str, str] | None = None
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
        if first is None:
            first = (name, arguments)
        if call is not None:
            if k == 0:
                ids = []
            ids.append((k, call.get("id")))
    return strings, extra, first, ids, main


def message_framing(message: dict[str, Any]) -> int:
    """Tokens a message costs beyond its counted strings."""
    framing = TOKENS_PER_MESSAGE
    if message.get("name"):
        framing += TOKENS_PER_NAME
    framing += TOKENS_PER_TOOL_CALL * (len(message.get("tool_calls") or ()) + bool(message.get("function_call")))
    return framing


def fit_messages(
    messages: Sequence[dict[str, Any]],
    budget: Budget | int,
    *,
    tools: Sequence[dict[str, Any]] | None = None,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    pin_first_user: bool = False,
    tool_choice: str | dict[str, Any] | None = None,
    image_sizes: ImageSizes | None = None,
    model: str | None = None,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
) -> tuple[list[dict[str, Any]], Fit]:
    """Fit a Chat Completions request under ``budget``; returns ``(messages, fit)``.

    System/developer messages, the tool schemas and the current turn (the last user message,
    and in an agent loop the newest tool round) are never dropped. Exchanges and older tool
    rounds leave whole, or are replaced by a tagged digest under the default ``Policy.agent()``.
    Kept messages are the caller's own dicts, unchanged; a truncated one is a copy with one
    text shortened. ``fit.total`` is the request's prompt tokens, framing and tools included.

    ``tool_choice`` is the request's own (``"auto"``, ``"none"``, ``"required"`` or a dict
    naming a function): naming one costs tokens. ``image_sizes`` gives images' sizes
    (``{url: (width, height)}`` or a callable returning one or None) for the tile rule.
    ``model`` (the request's own) picks the encoding when ``tokenizer`` is not given
    (``Tokenizer.for_model``: o200k_base for gpt-4o and later, cl100k_base for gpt-4 and
    gpt-3.5-turbo); a model ctxfast does not know is an ``InvalidArgumentError``.

    ``previous`` (the previous turn's ``Fit``) keeps that request's cut while it fits, so
    OpenAI's automatic prompt cache reads its prefix; when the cut must move it moves far enough
    for the next turns to append (``Fit.cache`` reports it). ``cache`` is the profile
    (``CacheProfile`` or name), OpenAI's by default.
    """
    if tokenizer is None and model is not None:
        tokenizer = Tokenizer.for_model(model)
    with _payload.boundary() as here:
        fast = _openai_fast.fit(messages, budget, tools, policy, tokenizer, pin_first_user, tool_choice, previous, cache)
        if fast is not None:
            return fast
        return _fit(
            messages, budget, tools, policy, tokenizer, pin_first_user, tool_choice, image_sizes, here, previous, cache
        )


def _fit(
    messages: Sequence[dict[str, Any]],
    budget: Budget | int,
    tools: Sequence[dict[str, Any]] | None,
    policy: Policy | str | None,
    tokenizer: Tokenizer | Callable[[str], int] | None,
    pin_first_user: bool,
    tool_choice: str | dict[str, Any] | None,
    image_sizes: ImageSizes | None,
    here: _payload.Cursor,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
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
        read.append(_read_message(m, where, None, image_sizes))
    has_system = "system" in roles
    padded = -1
    if tool_list and has_system:
        # The namespace joins the first system message, whose text then ends in a line feed
        # (hmarr: "the first system message is padded with a trailing newline").
        padded = roles.index("system")
        if isinstance(messages[padded].get("content"), str):
            read[padded][0][0] += "\n"
        else:
            padded = -1
    groups, current, pinned = _payload.assign_units(
        roles, lambda i: True, lambda i: bool(read[i][3]) or bool(messages[i].get("function_call")), pin_first_user
    )
    _payload.protect_last_unit(groups, current)  # no ask: the last unit is the current turn
    records: list[Message] = []
    calls: list[ToolLink] = []
    results: list[ToolLink] = []
    for i, m in enumerate(messages):
        here.at = i
        where = f"messages[{i}]"
        strings, extra, call, ids, main = read[i]
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
        if i == padded:
            path = None  # its counted text is no longer `text` itself (and system is never cut)
        records.append(Message(i, layer, group, text, strings, message_framing(m) + extra, call, path=path))
    here.at = None
    _payload.check_tool_pairs(
        calls, results, groups, result_field="tool_call_id",
        between=lambda k: _shapes.with_article(messages[k]["role"]) + " message",
    )
    here.at = "tools"
    tok = _payload.resolve_tokenizer(tokenizer)
    schema_strings, schema_origins, schema_tokens = tools_parts(tool_list, tool_choice, has_system)
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
        previous=previous, cache=cache, cache_default="openai", provider="openai",
    )


def _check_message(m: Any, where: str) -> None:
    """The shape checks (``_shapes``): a dict, not a Responses item or a Gemini entry, a Chat
    role, no field holding text that would not be counted."""
    _shapes.checked_role(m, where, "openai", ROLES, "an OpenAI Chat")
    _shapes.check_fields(m, where, FIELDS, "OpenAI Chat", "Put the message's text in 'content', or remove the field.")


def _origins_of(m: dict[str, Any], i: int) -> list[Where]:
    origins: list[Where] = []
    _read_message(m, f"messages[{i}]", origins)
    return origins


# The Responses API lives in its own module; these are its public names here.
from ctxfast.responses import fit_responses as fit_responses  # noqa: E402
from ctxfast.responses import fit_responses_body as fit_responses_body  # noqa: E402
