"""Gemini ``generateContent`` payloads: ``systemInstruction``, ``contents`` with ``parts``, and
``tools[].functionDeclarations``.

How exact the counts are: **every count is an estimate.** Gemini's tokenizer is not public (its
``countTokens`` endpoint is the exact figure). By default ctxfast counts text with the embedded
o200k_base vocabulary; pass ``tokenizer=`` (a ``ctxfast.Tokenizer`` or a ``str -> int`` callable,
e.g. one calibrated on ``countTokens``) and the text counts are yours. On top of the text:

- each content costs ``TOKENS_PER_CONTENT`` (3) framing tokens plus its role (uncalibrated);
  ``systemInstruction`` counts like a content;
- ``text`` parts count their text (``thought`` parts too); ``functionCall`` its name and the JSON
  of ``args``, plus ``TOKENS_PER_CALL`` (3); ``functionResponse`` its name and the JSON of
  ``response``, plus 3; ``executableCode`` / ``codeExecutionResult`` their code / output;
- ``inlineData`` / ``fileData``: ``MEDIA_TOKENS`` (258, Google's documented cost of one image up to
  384 px, or one PDF page); inline ``audio/*`` at ``AUDIO_TOKENS_PER_SECOND`` (32) a second, the
  length taken from the base64 data at 16,000 bytes a second. Video, long PDFs and large images
  cost more than this: leave a margin in ``Budget.reserve``;
- ``tools`` count the JSON text of each ``functionDeclarations`` entry (and of any other tool).

A content without ``role`` is a ``user`` content. snake_case keys (``inline_data``,
``function_call``, ``system_instruction``...) are read like the camelCase ones. An unknown part is refused (``InvalidArgumentError`` naming ``contents[i].parts[j]``).

Pairing: a ``functionResponse`` answers the ``functionCall`` with the same ``id`` when it has one,
else the ``functionCall`` of the same name in the previous ``model`` content (the k-th response
named f answers the k-th call named f). A call and its response are always in one unit: a
response that answers no call is refused, and so is one with a ``user`` text content between it
and its call. Units are the Chat ones (``ctxfast._rounds``): exchanges from a user content that is
not only function responses, and in an agent loop each older round (a ``model`` content with calls
and the responses after it); the ask and the newest round are protected. A digest is a ``user``
content with one text part.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxfast import _payload, _shapes
from ctxfast import calibration as _calibration
from ctxfast._core import Budget, CacheProfile, Fit, Policy, PromptLayer, Tokenizer
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast._payload import Fixed, Message, ToolLink

__all__ = ["fit_contents", "fit_body", "PART_TYPES"]

TOKENS_PER_CONTENT = 3
TOKENS_PER_CALL = 3
MEDIA_TOKENS = 258
AUDIO_TOKENS_PER_SECOND = 32
_AUDIO_BYTES_PER_SECOND = 16_000
ROLES = ("user", "model")
PART_TYPES = ("text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode",
              "codeExecutionResult")
_SNAKE = {"inline_data": "inlineData", "file_data": "fileData", "function_call": "functionCall",
          "function_response": "functionResponse", "executable_code": "executableCode",
          "code_execution_result": "codeExecutionResult"}
_PART_META = frozenset({"thought", "thoughtSignature", "thought_signature", "videoMetadata", "video_metadata",
                        "partMetadata", "mediaResolution"})


def _field(part: dict[str, Any], where: str) -> tuple[str, Any]:
    """The part's one data field (camelCase name) and its value."""
    found = [(k, _SNAKE.get(k, k)) for k in part if _SNAKE.get(k, k) in PART_TYPES]
    if len(found) != 1:
        if found:
            raise InvalidArgumentError(f"{where} has {len(found)} data fields; a part holds one of {', '.join(PART_TYPES)}")
        other = [k for k in part if k not in _PART_META]
        near = _shapes.did_you_mean(other[0], PART_TYPES) if other else ""
        raise InvalidArgumentError(
            f"{where} has no part field ctxfast counts ({', '.join(PART_TYPES)}){near}, so it cannot be counted"
        )
    key, name = found[0]
    return name, part[key]


def _media(value: Any, where: str, inline: bool) -> int:
    if not isinstance(value, dict):
        raise ArgumentTypeError(f"{where} must be a dict (mimeType and {'data' if inline else 'fileUri'})")
    mime = value.get("mimeType", value.get("mime_type", ""))
    data = value.get("data", "")
    if inline and isinstance(mime, str) and mime.startswith("audio/") and isinstance(data, str):
        return max(1, -(-len(data) * 3 // 4 * AUDIO_TOKENS_PER_SECOND // _AUDIO_BYTES_PER_SECOND))
    return MEDIA_TOKENS


def _read(content: Any, where: str) -> tuple[str, list[str], int, Any, list[tuple[str, str, Any, int]]]:
    """(role, counted strings, tokens beyond them, (path, text) of the longest text or None, and
    the function parts as (kind, name, id, part index))."""
    if not isinstance(content, dict):
        raise ArgumentTypeError(f"{where} must be a dict, not {type(content).__name__}")
    if "content" in content or "parts" not in content:
        raise InvalidArgumentError(
            f"{where} is not a Gemini content (it has no 'parts'): Chat messages go to ctxfast.openai.fit_messages, "
            "Anthropic ones to ctxfast.anthropic.fit_messages"
        )
    role = content.get("role", "user")
    if not isinstance(role, str) or role not in ROLES:
        hint = "; Gemini calls it 'model'" if role == "assistant" else " (a system prompt goes in system_instruction)"
        raise _shapes.unknown_role(role, where, ROLES, "a Gemini", hint)
    _shapes.check_fields(content, where, frozenset({"role", "parts"}), "Gemini", "Put the text in 'parts'.")
    parts = content["parts"]
    if not isinstance(parts, list):
        raise ArgumentTypeError(f"{where}.parts must be a list, not {type(parts).__name__}")
    strings = [role]
    extra = TOKENS_PER_CONTENT
    best = None
    functions: list[tuple[str, str, Any, int]] = []
    for j, part in enumerate(parts):
        at = f"{where}.parts[{j}]"
        if not isinstance(part, dict):
            raise ArgumentTypeError(f"{at} must be a dict, not {type(part).__name__}")
        kind, value = _field(part, at)
        if kind == "text":
            text = _payload.text(value, at, ".text")
            strings.append(text)
            if best is None or len(text) > len(best[1]):
                best = (("parts", j, "text"), text)
        elif kind in ("inlineData", "fileData"):
            extra += _media(value, f"{at}.{kind}", kind == "inlineData")
        elif kind in ("executableCode", "codeExecutionResult"):
            if not isinstance(value, dict):
                raise ArgumentTypeError(f"{at}.{kind} must be a dict")
            key = "code" if kind == "executableCode" else "output"
            strings.append(_payload.text(value.get(key, ""), f"{at}.{kind}", f".{key}"))
        else:
            if not isinstance(value, dict):
                raise ArgumentTypeError(f"{at}.{kind} must be a dict (name, {'args' if kind == 'functionCall' else 'response'})")
            name = value.get("name")
            if not isinstance(name, str) or not name:
                raise InvalidArgumentError(f"{at}.{kind}.name must be a non-empty str")
            body_key = "args" if kind == "functionCall" else "response"
            strings += [name, _payload.as_json(value.get(body_key) or {}, f"{at}.{kind}", f".{body_key}", sort_keys=True)]
            extra += TOKENS_PER_CALL
            functions.append((kind, name, _payload.tool_id(value.get("id"), f"{at}.{kind}", ".id"), j))
    return role, strings, extra, best, functions


def fit_contents(
    contents: Sequence[dict[str, Any]],
    budget: Budget | int,
    *,
    system_instruction: Any = None,
    tools: Sequence[dict[str, Any]] | None = None,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    pin_first_user: bool = False,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
    calibration: _calibration.Calibration | None = None,
) -> tuple[list[dict[str, Any]], Fit]:
    """Fit a Gemini request under ``budget``; returns ``(contents, fit)``. All counts are estimates
    on o200k_base unless ``tokenizer=`` is yours (see the module docstring).

    ``system_instruction`` (``{"parts": [{"text": ...}]}`` or a str), the tools and the current
    turn are never dropped. Kept contents are the caller's own dicts; a truncated one is a copy
    with one text part shortened. ``previous`` (the previous turn's ``Fit``) keeps its cut while
    it fits, for Gemini's implicit cache; ``cache`` is the profile, ``"gemini"`` by default.
    ``calibration`` (a ``ctxfast.Calibration``) adds the offset it learnt from reported usage
    (``fit.calibrate``), and the fit says ``"calibrated"``."""
    with _payload.boundary() as here:
        return _fit(contents, budget, system_instruction, tools, policy, tokenizer, pin_first_user, here, previous, cache,
                    calibration)


def fit_body(
    body: Mapping[str, Any],
    budget: Budget | int,
    *,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
    calibration: _calibration.Calibration | None = None,
) -> tuple[dict[str, Any], Fit]:
    """Fit a whole ``generateContent`` body: returns ``(body, fit)``, a copy with the fitted
    ``contents`` and every other field as it was (``previous``, ``cache`` and ``calibration`` as
    in ``fit_contents``)."""
    if not isinstance(body, Mapping):
        raise ArgumentTypeError(f"argument 'body' must be a dict, not {type(body).__name__}")
    system = body.get("systemInstruction", body.get("system_instruction"))
    contents, result = fit_contents(body.get("contents", []), budget, system_instruction=system,
                                    tools=body.get("tools"), policy=policy, tokenizer=tokenizer,
                                    previous=previous, cache=cache, calibration=calibration)
    return {**body, "contents": contents}, result


def _system(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value, "system"]
    if not isinstance(value, dict) or not isinstance(value.get("parts"), list):
        raise ArgumentTypeError("argument 'system_instruction' must be a str or a dict with a 'parts' list")
    texts = []
    for j, part in enumerate(value["parts"]):
        if not isinstance(part, dict) or "text" not in part:
            raise InvalidArgumentError(f"system_instruction.parts[{j}] must be a text part ({{'text': ...}})")
        texts.append(_payload.text(part["text"], f"system_instruction.parts[{j}]", ".text"))
    return [*texts, "system"]


def _tools(tools: Sequence[Any]) -> tuple[list[str], list[_payload.Where]]:
    strings: list[str] = []
    origins: list[_payload.Where] = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise ArgumentTypeError(f"tools[{i}] must be a dict, not {type(tool).__name__}")
        decls = tool.get("functionDeclarations", tool.get("function_declarations"))
        if decls is None:
            strings.append(_payload.as_json(tool, f"tools[{i}]", sort_keys=True))
            origins.append(_payload.Origin(f"tools[{i}]", i))
            continue
        if not isinstance(decls, list):
            raise ArgumentTypeError(f"tools[{i}].functionDeclarations must be a list")
        for k, decl in enumerate(decls):
            at = f"tools[{i}].functionDeclarations[{k}]"
            strings.append(_payload.as_json(decl, at, sort_keys=True))
            origins.append(_payload.Origin(at, i))
    return strings, origins


def _fit(
    contents: Any, budget: Budget | int, system: Any, tools: Any, policy: Any, tokenizer: Any,
    pin_first_user: bool, here: _payload.Cursor, previous: Fit | None = None, cache: Any = None,
    calibration: Any = None,
) -> tuple[list[dict[str, Any]], Fit]:
    if isinstance(contents, Mapping):
        raise ArgumentTypeError("argument 'contents' is a dict: pass body['contents'], or the whole body to fit_body")
    if isinstance(contents, (str, bytes)) or not isinstance(contents, Sequence):
        raise ArgumentTypeError(f"argument 'contents' must be a list of dicts, not {type(contents).__name__}")
    tool_list = _payload.sequence_arg(tools, "tools")
    read = []
    for i, c in enumerate(contents):
        here.at = f"contents[{i}]"
        read.append(_read(c, here.at))
    roles = ["assistant" if r[0] == "model" else "user" for r in read]
    # A user content of function responses alone continues its call's exchange (like a tool message).
    opens = [not (r[4] and all(f[0] == "functionResponse" for f in r[4]) and len(r[4]) == len(c["parts"]))
             for r, c in zip(read, contents)]
    makes = [any(f[0] == "functionCall" for f in r[4]) for r in read]
    groups, current, pinned = _payload.assign_units(roles, lambda i: opens[i], lambda i: makes[i], pin_first_user)
    _payload.protect_last_unit(groups, current)
    calls, results = _links(read)
    records = []
    for i, (role, strings, extra, best, functions) in enumerate(read):
        here.at = f"contents[{i}]"
        only_results = bool(functions) and not opens[i]
        layer, group = _payload.place(i, groups, current, pinned, system=False, tool_result=only_results)
        path, text = best if best is not None else (None, "")
        first = next((f for f in functions if f[0] == "functionCall"), None)
        call: tuple[str, str] | None = None
        if first is not None:
            # The digest's tool facts: the first call's name and its args as counted (their JSON).
            args = contents[i]["parts"][first[3]]
            args = args.get("functionCall", args.get("function_call", {})).get("args") or {}
            call = (first[1], _payload.as_json(args, here.at, sort_keys=True))
        records.append(Message(i, layer, group, text, strings, extra, call, path=path))
    here.at = None
    try:
        _payload.check_tool_pairs(calls, results, groups, result_field="functionResponse",
                                  between=lambda k: f"a {read[k][0]} content")
    except InvalidArgumentError as e:
        # The synthetic pairing keys mean nothing to the caller: the paths say which parts.
        text = re.sub(r" \(functionResponse '\\x00[^)]*\)", "", str(e))
        raise InvalidArgumentError(text.replace("messages[", "contents[")) from None
    here.at = "tools"
    tool_strings, tool_origins = _tools(tool_list)
    here.at = "system_instruction"
    system_strings = _system(system)
    here.at = None
    fixed = [Fixed("<tool schemas>", PromptLayer.TOOLS, tool_strings, 0, "tools", tool_origins)]
    if system_strings:
        fixed.insert(0, Fixed("<system instruction>", PromptLayer.SYSTEM, system_strings, TOKENS_PER_CONTENT,
                              "system_instruction"))
    budget, exactness, pending = _calibration.apply(calibration, fixed, budget, "gemini")
    out, result = _payload.fit_messages(
        contents, records, fixed, budget, policy, tokenizer, digest_framing=TOKENS_PER_CONTENT + 1,
        make_digest=lambda text: {"role": "user", "parts": [{"text": text}]}, input_name="contents",
        previous=previous, cache=cache, cache_default="gemini", provider="gemini",
        exactness=exactness or "estimate",
    )
    _calibration.settle(pending, result)
    return out, result


def _links(read: list[Any]) -> tuple[list[ToolLink], list[ToolLink]]:
    """Calls and responses with pairing keys: the ``id`` when set, else the previous model content's
    index, the name and the order among same-named parts (ids starting with a NUL byte, so they
    never meet a caller's own)."""
    calls: list[ToolLink] = []
    results: list[ToolLink] = []
    last_model: int | None = None
    for i, (role, _s, _e, _b, functions) in enumerate(read):
        seen: dict[str, int] = {}
        for kind, name, fid, j in functions:
            k = seen[kind + name] = seen.get(kind + name, -1) + 1
            where = f"contents[{i}].parts[{j}].{kind}"
            if kind == "functionCall":
                calls.append(ToolLink(i, where, fid if fid is not None else f"\0{i}:{name}#{k}"))
                continue
            if fid is None and last_model is None:
                raise InvalidArgumentError(
                    f"{where} (name {_payload.preview(name)}) answers no functionCall: no model content comes before it"
                )
            key = fid if fid is not None else f"\0{last_model}:{name}#{k}"
            if not any(c.id == key for c in calls):
                before = "with that id" if fid is not None else f"named {_payload.preview(name)} in contents[{last_model}]"
                raise InvalidArgumentError(
                    f"{where} answers no functionCall {before}: a function response must answer a call "
                    "of the model content before it"
                )
            results.append(ToolLink(i, where, key))
        if role == "model":
            last_model = i
    return calls, results
