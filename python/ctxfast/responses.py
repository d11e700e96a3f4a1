"""OpenAI Responses API payloads: ``instructions``, ``input`` items and flat ``tools``. The public
entry points are ``ctxfast.openai.fit_responses`` and ``ctxfast.openai.fit_responses_body``.

How the request is counted (the Chat Completions rules of ``ctxfast.openai``, item by item):

- **``instructions``**: a system message (3 tokens of framing, the role, the text). Never dropped.
- **Message items** (role user / assistant / system / developer; content a string or
  ``input_text`` / ``output_text`` / ``refusal`` / ``input_image`` / ``input_file`` parts): 3 tokens
  of framing, the role and the text, as a Chat message. Exact for text where the Chat count is
  (OpenAI publishes no Responses constants; the Chat ones are assumed). ``input_image``:
  ``IMAGE_LOW`` (85) at ``detail: low``, else ``IMAGE_DEFAULT`` (765), an estimate;
  ``input_file``: ``FILE_TOKENS`` (1,600), an estimate.
- **``function_call`` / ``custom_tool_call``**: counted as a Chat assistant message making one call
  (3 + ``assistant`` + 3 + name + arguments / input); **``function_call_output`` /
  ``custom_tool_call_output``** as a ``tool`` message (3 + ``tool`` + the output, a string or parts);
  **``reasoning``**: 3 + its ``summary`` and ``content`` texts (``encrypted_content`` is opaque and
  not counted). All **estimates**.
- **``tools``**: function tools by the same schema rule as Chat ``tools`` (``ctxfast.openai``);
  other tools (``web_search``, ``custom``, ...) by their JSON text, an estimate.
- 3 tokens of reply priming.

Any other item type is refused (``InvalidArgumentError`` naming ``input[i]``): it would be miscounted.

What is guaranteed of the returned ``input``: every ``function_call_output`` follows its
``function_call`` (paired by ``call_id``, never sent alone); a ``reasoning`` item stays with the
items after it up to the next user turn (they leave together, as the API requires); no item or
text is left empty. Units are the Chat ones (``ctxfast._rounds``): exchanges from a user message,
and in an agent loop each older model turn (reasoning, messages and calls) with its outputs is a
round, digested or dropped oldest first; the ask and the newest round are protected. An output
whose ``call_id`` matches no call in ``input`` is refused, unless ``previous_response_id`` is given:
then it answers a call of the stored response, is never dropped (the API needs it) and stands
alone in the current turn. The stored conversation itself is on the server and not counted.
"""

from __future__ import annotations

import re

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxfast import _payload, _shapes
from ctxfast._core import Budget, CacheProfile, Fit, Policy, PromptLayer, Tokenizer, encoding_name_for_model
from ctxfast._errors import ArgumentTypeError, CtxfastError, InvalidArgumentError
from ctxfast._parts import FILE_TOKENS, IMAGE_DEFAULT, IMAGE_LOW
from ctxfast._payload import Fixed, Message, ToolLink

__all__ = ["fit_responses", "fit_responses_body", "ITEM_TYPES", "PART_TYPES"]

TOKENS_PER_ITEM = 3
TOKENS_PER_CALL = 3
REPLY_PRIMING = 3
ROLES = ("user", "assistant", "system", "developer")
PART_TYPES = ("input_text", "output_text", "refusal", "input_image", "input_file")
ITEM_TYPES = ("message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output", "reasoning")
_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_MESSAGE_FIELDS = frozenset({"type", "role", "content", "id", "status"})


def _kind(item: Any, where: str) -> str:
    if not isinstance(item, dict):
        raise ArgumentTypeError(f"{where} must be a dict, not {type(item).__name__}")
    if "type" not in item and ("parts" in item or item.get("role") == "model"):
        raise InvalidArgumentError(f"{where} is a Gemini 'contents' entry: fit it with ctxfast.gemini.fit_contents")
    kind = item.get("type", "message" if "role" in item else None)
    if kind in ITEM_TYPES:
        return kind  # type: ignore[no-any-return]
    if kind is None:
        raise InvalidArgumentError(f"{where} has no 'type' and no 'role' (item types: {', '.join(ITEM_TYPES)})")
    if not isinstance(kind, str):
        raise ArgumentTypeError(f"{where}.type must be a str ({', '.join(ITEM_TYPES)})")
    raise InvalidArgumentError(
        f"{where} has the item type {_payload.preview(kind)}{_shapes.did_you_mean(kind, ITEM_TYPES)}, which ctxfast "
        f"cannot count: it fits {', '.join(ITEM_TYPES)} items"
    )


def _content(content: Any, where: str, field: str) -> tuple[list[str], int, tuple[tuple[Any, ...], str] | None]:
    """Strings, non-text tokens and the longest text (path, text) of a content / output field."""
    if isinstance(content, str):
        return [content], 0, ((field,), content)
    if not isinstance(content, list):
        raise ArgumentTypeError(f"{where}.{field} must be a str or a list of parts, not {type(content).__name__}")
    strings: list[str] = []
    extra = 0
    best: tuple[tuple[Any, ...], str] | None = None
    for j, part in enumerate(content):
        at = f"{where}.{field}[{j}]"
        if not isinstance(part, dict):
            raise ArgumentTypeError(f"{at} must be a dict, not {type(part).__name__}")
        kind = part.get("type")
        if kind in ("input_text", "output_text", "refusal"):
            key = "refusal" if kind == "refusal" else "text"
            value = _payload.text(part.get(key, ""), at, f".{key}")
            strings.append(value)
            if key == "text" and (best is None or len(value) > len(best[1])):
                best = ((field, j, "text"), value)
        elif kind == "input_image":
            extra += IMAGE_LOW if part.get("detail") == "low" else IMAGE_DEFAULT
        elif kind == "input_file":
            extra += FILE_TOKENS
        else:
            raise _shapes.unknown_part(part, at, PART_TYPES, "content part")
    return strings, extra, best


def _read(item: dict[str, Any], kind: str, where: str) -> tuple[list[str], int, tuple[tuple[Any, ...], str] | None]:
    """One item's counted strings, the tokens beyond them and its truncatable text."""
    if kind == "message":
        role = item.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise _shapes.unknown_role(role, where, ROLES, "a Responses API message")
        _shapes.check_fields(item, where, _MESSAGE_FIELDS, "Responses API", "Put the text in 'content'.")
        strings, extra, best = _content(item.get("content", ""), where, "content")
        return [*strings, role], TOKENS_PER_ITEM + extra, best
    if kind in _CALLS:
        args = _CALLS[kind]
        name = _payload.text(item.get("name", ""), where, ".name")
        value = item.get(args, "")
        value = value if isinstance(value, str) else _payload.as_json(value, where, f".{args}")
        return ["assistant", name, value], TOKENS_PER_ITEM + TOKENS_PER_CALL, None
    if kind in _OUTPUTS:
        strings, extra, best = _content(item.get("output", ""), where, "output")
        return ["tool", *strings], TOKENS_PER_ITEM + extra, best
    strings = []
    for key in ("summary", "content"):
        pieces = item.get(key) or []
        if not isinstance(pieces, list):
            raise ArgumentTypeError(f"{where}.{key} must be a list, not {type(pieces).__name__}")
        for j, piece in enumerate(pieces):
            if not isinstance(piece, dict):
                raise ArgumentTypeError(f"{where}.{key}[{j}] must be a dict, not {type(piece).__name__}")
            strings.append(_payload.text(piece.get("text", ""), f"{where}.{key}[{j}]", ".text"))
    return strings, TOKENS_PER_ITEM, None


def _tools(tools: Sequence[Any], has_system: bool) -> tuple[list[str], list[_payload.Where], int]:
    """Function tools rendered as the Chat ``tools`` are (``ctxfast.openai``: the namespace the
    API renders), paths naming each tool's own index; any other (built-in) tool by its JSON text,
    an estimate."""
    from ctxfast._openai_schema import tools_parts

    strings: list[str] = []
    origins: list[_payload.Where] = []
    functions: list[Any] = []
    index_of: list[int] = []  # a function tool's index in `tools`
    for i, tool in enumerate(tools):
        at = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise ArgumentTypeError(f"{at} must be a dict, not {type(tool).__name__}")
        if tool.get("type", "function") != "function":
            strings.append(_payload.as_json(tool, at, sort_keys=True))
            origins.append(_payload.Origin(at, i))
            continue
        functions.append(tool)
        index_of.append(i)

    def moved(text: str) -> str:
        # The renderer names tools by their place among the function tools.
        return _FUNCTION_INDEX.sub(lambda m: f"tools[{index_of[int(m.group(1))]}]", text, count=1)

    try:
        s, o, constant = tools_parts(functions, None, has_system)
    except CtxfastError as e:
        raise type(e)(moved(str(e))) from None
    strings += s
    for w in o:
        pieces = (w,) if isinstance(w, _payload.Origin) else w
        shifted = tuple(_payload.Origin(moved(p.path), index_of[p.item] if isinstance(p.item, int) and p.item < len(index_of) else p.item, p.start) for p in pieces)
        origins.append(shifted[0] if isinstance(w, _payload.Origin) else shifted)
    return strings, origins, constant


_FUNCTION_INDEX = re.compile(r"tools\[(\d+)\]")


def fit_responses(
    input: str | Sequence[dict[str, Any]],
    budget: Budget | int,
    *,
    instructions: str | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    pin_first_user: bool = False,
    previous_response_id: str | None = None,
    model: str | None = None,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
) -> tuple[list[dict[str, Any]], Fit]:
    """Fit a Responses API request under ``budget``; returns ``(input_items, fit)``.

    ``instructions``, the tool schemas and the current turn are never dropped; exchanges and
    older rounds leave whole or become a digest (a user message). Kept items are the caller's own
    dicts; a truncated one is a copy with one text shortened. ``input`` as a string is one user
    message. ``model`` picks the encoding when ``tokenizer`` is not given (``Tokenizer.for_model``;
    an unknown model is an ``InvalidArgumentError``). The counting rules, and which counts are
    estimates, are in the module docstring. ``previous`` (the previous turn's ``Fit``) keeps its
    cut while it fits, for OpenAI's prompt cache; ``cache`` is the profile, OpenAI's by default."""
    if tokenizer is None and model is not None:
        tokenizer = Tokenizer.for_model(model)
    with _payload.boundary() as here:
        return _fit(
            input, budget, instructions, tools, policy, tokenizer, pin_first_user, previous_response_id, here,
            previous, cache,
        )


def fit_responses_body(
    body: Mapping[str, Any],
    budget: Budget | int,
    *,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
) -> tuple[dict[str, Any], Fit]:
    """Fit a whole ``responses.create`` body: returns ``(body, fit)``, the body a copy with the fitted
    ``input`` and every other field as it was. The body's ``model`` picks the encoding when ctxfast
    knows it and ``tokenizer`` is not given; otherwise o200k_base counts it. ``previous`` and
    ``cache`` are ``fit_responses``'."""
    if not isinstance(body, Mapping):
        raise ArgumentTypeError(f"argument 'body' must be a dict, not {type(body).__name__}")
    items, result = fit_responses(
        body.get("input", []), budget, instructions=body.get("instructions"), tools=body.get("tools"),
        policy=policy, tokenizer=tokenizer, previous_response_id=body.get("previous_response_id"),
        model=_known_model(body.get("model")), previous=previous, cache=cache,
    )
    return {**body, "input": items}, result


def _fit(
    input: Any, budget: Budget | int, instructions: Any, tools: Any, policy: Any, tokenizer: Any,
    pin_first_user: bool, previous: Any, here: _payload.Cursor, previous_fit: Fit | None = None, cache: Any = None,
) -> tuple[list[dict[str, Any]], Fit]:
    if previous is not None and not isinstance(previous, str):
        raise ArgumentTypeError(f"argument 'previous_response_id' must be a str or None, not {type(previous).__name__}")
    if isinstance(input, Mapping):
        raise ArgumentTypeError(
            "argument 'input' is a dict: pass the body's 'input' list, or the whole body to fit_responses_body"
        )
    items: Sequence[Any] = [{"role": "user", "content": input}] if isinstance(input, str) else input
    if isinstance(items, (bytes, bytearray)) or not isinstance(items, Sequence):
        raise ArgumentTypeError(f"argument 'input' must be a str or a list of dicts, not {type(input).__name__}")
    if instructions is not None and not isinstance(instructions, str):
        raise ArgumentTypeError(f"argument 'instructions' must be a str or None, not {type(instructions).__name__}")
    tool_list = _payload.sequence_arg(tools, "tools")
    kinds: list[str] = []
    read = []
    for i, item in enumerate(items):
        here.at = f"input[{i}]"
        kinds.append(_kind(item, here.at))
        read.append(_read(item, kinds[i], here.at))
    roles, starts = _roles(items, kinds)
    groups, current, pinned = _payload.assign_units(roles, lambda i: True, lambda i: starts[i], pin_first_user)
    pending = _pending(items, kinds) if previous else set()
    for i in pending:
        groups[i], current[i] = None, True  # answers a stored call: kept, alone
    _payload.protect_last_unit(groups, current)
    records: list[Message] = []
    calls: list[ToolLink] = []
    results: list[ToolLink] = []
    for i, item in enumerate(items):
        where = here.at = f"input[{i}]"
        strings, framing, best = read[i]
        if kinds[i] in _CALLS or kinds[i] in _OUTPUTS:
            call_id = _payload.tool_id(item.get("call_id"), where, ".call_id")
            if call_id is None:
                raise InvalidArgumentError(f"{where} ({kinds[i]}) has no 'call_id': calls and outputs are paired by it")
            if i not in pending:
                (calls if kinds[i] in _CALLS else results).append(ToolLink(i, where, call_id))
        layer, group = _payload.place(
            i, groups, current, pinned, system=roles[i] == "system", tool_result=kinds[i] in _OUTPUTS
        )
        path, text = best if best is not None else (None, "")
        call: tuple[str, str] | None = None
        if kinds[i] in _CALLS:
            call = (strings[1], strings[2])
        records.append(Message(i, layer, group, text, strings, framing, call, path=path))
    here.at = None
    _pair(calls, results, groups, roles)
    here.at = "tools"
    tok = _payload.resolve_tokenizer(tokenizer)
    schema_strings, schema_origins, schema_tokens = _tools(tool_list, instructions is not None or "system" in roles)
    here.at = None
    fixed = [
        Fixed("<tool schemas>", PromptLayer.TOOLS, schema_strings, schema_tokens, "tools", schema_origins),
        Fixed("<reply priming>", PromptLayer.SYSTEM, tokens=REPLY_PRIMING),
    ]
    if instructions:
        fixed.insert(0, Fixed("<instructions>", PromptLayer.SYSTEM, [instructions, "system"], TOKENS_PER_ITEM,
                              "instructions"))
    return _payload.fit_messages(
        items, records, fixed, budget, policy, tok, digest_framing=TOKENS_PER_ITEM + 1, input_name="input",
        previous=previous_fit, cache=cache, cache_default="openai", provider="openai-responses",
    )


def _roles(items: Sequence[Any], kinds: list[str]) -> tuple[list[str], list[bool]]:
    """Chat-like roles for ``assign_units``, and which items open a model turn that makes calls.

    A model turn is a run of reasoning, assistant messages and calls with no user message, output
    or system message inside: one response's output. It counts as one assistant message making
    calls (so a reasoning item and the call after it are always in one round), opened at its first
    item."""
    roles: list[str] = []
    starts = [False] * len(items)
    run_start: int | None = None
    for i, kind in enumerate(kinds):
        if kind == "message":
            role = items[i]["role"]
            role = "system" if role in ("system", "developer") else role
        else:
            role = "tool" if kind in _OUTPUTS else "assistant"
        roles.append(role)
        if role != "assistant":
            run_start = None
            continue
        if run_start is None:
            run_start = i
        if kind in _CALLS:
            starts[run_start] = True
    return roles, starts


def _pending(items: Sequence[Any], kinds: list[str]) -> set[int]:
    """Outputs whose call_id no call in ``input`` has (with previous_response_id: the stored
    response's calls)."""
    called = {item.get("call_id") for item, kind in zip(items, kinds) if kind in _CALLS}
    return {i for i, kind in enumerate(kinds) if kind in _OUTPUTS and items[i].get("call_id") not in called}


def _pair(calls: list[ToolLink], results: list[ToolLink], groups: list[str | None], roles: list[str]) -> None:
    """Every output answers a call before it, in the same unit (``check_tool_pairs``)."""
    known = {c.id: c for c in calls}
    for r in results:
        c = known.get(r.id)
        if c is None or c.message > r.message:
            raise InvalidArgumentError(
                f"{r.where} (call_id {_payload.preview(r.id)}) answers no function_call before it in 'input': "
                "an output must follow its call (if it answers a stored response's call, pass "
                "previous_response_id)"
            )
    try:
        _payload.check_tool_pairs(calls, results, groups, result_field="call_id",
                                  between=lambda k: f"a {roles[k]} item")
    except InvalidArgumentError as e:
        raise InvalidArgumentError(str(e).replace("messages[", "input[")) from None


def _known_model(model: Any) -> str | None:
    """A body's model when ctxfast knows its encoding, else None (the default encoding)."""
    if not isinstance(model, str):
        return None
    try:
        encoding_name_for_model(model)
    except CtxfastError:
        return None
    return model
