"""Shape checks the adapters run before counting: a payload ctxfast would miscount is refused.

A count is only as good as the fields it reads. A Gemini ``contents`` list read as OpenAI
messages counts almost nothing (its text is in ``parts``), a message with ``text`` instead of
``content`` counts its framing alone, and a typo'd role is sent as it is. So every adapter checks,
per message and before any string is tokenized:

- **the role** is one the API has (OpenAI Chat: system, developer, user, assistant, tool and the
  legacy function; Anthropic: user and assistant, the system prompt being top-level). Anything
  else is an ``InvalidArgumentError`` naming the message, with a "did you mean" when a known role
  is close;
- **no field holds text ctxfast would not count**: a field the API's messages do not have, whose
  value holds a non-empty string (``text``, Gemini's ``parts``, ``reasoning_content``...), is an
  ``InvalidArgumentError`` naming the message and the field, with the likely fix. Unknown fields
  without text (``None``, ``[]``, numbers) are left alone;
- **the API is the adapter's**: an OpenAI Responses API ``input`` item (a top-level ``type`` such
  as ``function_call`` / ``function_call_output`` / ``message``, a ``call_id``, ``input_text``
  parts) and a Gemini ``contents`` entry (role ``model``, ``parts``) are refused with an error
  saying which API it is, that this adapter does not support it yet (support is planned
  separately) and what it does read. A whole request body passed as ``messages`` gets the same
  treatment, or is told which field to pass;
- **content part / block types** are the known ones, each counted by a documented rule (see the
  adapter's module docstring). An unknown type is an ``InvalidArgumentError`` naming
  ``messages[i].content[j]`` and listing the known types. (Its fields are checked first, so junk
  inside it is still named down to the field.)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast._fields import MAX_DEPTH, _step, check_tree, preview

#: The APIs that are refused, and what each adapter reads instead.
RESPONSES = (
    "the OpenAI Responses API ('input' items such as function_call / function_call_output, "
    "'instructions') is not read by this adapter: fit it with ctxfast.openai.fit_responses "
    "(or fit_responses_body for a whole body)"
)
GEMINI = (
    "Gemini's generateContent API ('contents' with 'parts', role 'model') is not read by this "
    "adapter: fit it with ctxfast.gemini.fit_contents (or ctxfast.gemini.fit_body for a whole body)"
)
READS = {
    "openai": "ctxfast.openai.fit_messages reads OpenAI Chat Completions messages (role + content, "
    "assistant tool_calls, tool messages)",
    "chat": "ctxfast.chat.fit_messages reads OpenAI-style chat messages (role + content, assistant "
    "tool_calls, tool messages), as llama.cpp, vLLM and SGLang take them",
    "anthropic": "ctxfast.anthropic.fit_messages reads Anthropic Messages (role user/assistant + content "
    "blocks; the system prompt is the separate 'system' argument)",
}

#: Top-level item types of the Responses API's ``input`` (Chat messages have no top-level type).
RESPONSES_ITEMS = frozenset({
    "message", "function_call", "function_call_output", "reasoning", "item_reference",
    "file_search_call", "web_search_call", "computer_call", "computer_call_output",
    "code_interpreter_call", "image_generation_call", "local_shell_call", "local_shell_call_output",
    "mcp_call", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response",
    "custom_tool_call", "custom_tool_call_output",
})
#: Content part types only the Responses API has.
RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file", "summary_text", "reasoning_text"})


def closest(word: Any, choices: Iterable[str]) -> str | None:
    """The one of `choices` closest to `word` (difflib), if any is close."""
    if not isinstance(word, str) or not word or len(word) > 40:
        return None
    match = difflib.get_close_matches(str.lower(word), list(choices), n=1, cutoff=0.6)
    return match[0] if match else None


def did_you_mean(word: Any, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of `choices`, or ``""``."""
    match = closest(word, choices)
    return f"; did you mean {match!r}?" if match else ""


def holds_text(value: Any, limit: int = 10_000) -> bool:
    """Whether `value` is or contains a non-empty str. Bounded: a value too big or too deep to
    walk (a self-referential dict, say) is taken to hold text."""
    stack = [(value, 0)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > limit or depth > MAX_DEPTH:
            return True
        if isinstance(node, str):
            if node:
                return True
        elif isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend((v, depth + 1) for v in node)
    return False


def refuse_body(value: Any, api: str) -> None:
    """A whole request body passed where the message list belongs: say which field to pass."""
    if not isinstance(value, Mapping):
        return
    if "contents" in value:
        raise ArgumentTypeError(f"argument 'messages' is a Gemini request body (it has 'contents'): {GEMINI}; {READS[api]}")
    if "input" in value or "instructions" in value:
        raise ArgumentTypeError(
            f"argument 'messages' is an OpenAI Responses request body (it has 'input' or 'instructions'): "
            f"{RESPONSES}; {READS[api]}"
        )
    if "messages" in value:
        fix = "body['messages']" if api == "openai" else "body.get('system') and body['messages']"
        raise ArgumentTypeError(f"argument 'messages' is a whole request body: pass {fix}, a list of message dicts")


def refuse_foreign(m: dict[str, Any], where: str, api: str) -> None:
    """Refuse a Responses API item or a Gemini ``contents`` entry given as a message."""
    kind = m.get("type")
    if api == "anthropic" and kind == "message" and "role" in m:
        raise InvalidArgumentError(
            f"{where} is an Anthropic API response object (type 'message'), not a message: pass only its "
            "role and content, e.g. {'role': r['role'], 'content': r['content']}"
        )
    if kind is not None or "call_id" in m:
        named = f"type {preview(kind)}" if isinstance(kind, str) and kind in RESPONSES_ITEMS else (
            "a 'call_id'" if "call_id" in m else f"a top-level 'type' ({preview(kind)})"
        )
        raise InvalidArgumentError(
            f"{where} is an OpenAI Responses API input item ({named}), not a message: {RESPONSES}; {READS[api]}"
        )
    if "parts" in m or m.get("role") == "model":
        named = "role 'model'" if m.get("role") == "model" else "'parts'"
        raise InvalidArgumentError(f"{where} is a Gemini 'contents' entry ({named}), not a message: {GEMINI}; {READS[api]}")


def refuse_responses_part(kind: Any, where: str, api: str) -> None:
    if isinstance(kind, str) and kind in RESPONSES_PARTS:
        raise InvalidArgumentError(
            f"{where} is an {kind!r} part, which only the OpenAI Responses API has: {RESPONSES}; {READS[api]}"
        )


def checked_role(m: Any, where: str, api: str, roles: tuple[str, ...], api_name: str) -> str:
    """A chat message's role, after the checks every chat-style adapter runs first: a dict, not
    another API's item (``refuse_foreign``), a role that is one of ``roles``."""
    if not isinstance(m, dict):
        raise ArgumentTypeError(f"{where} must be a dict, not {type(m).__name__}")
    refuse_foreign(m, where, api)
    role = m.get("role")
    if role is None:
        raise InvalidArgumentError(f"{where} has no 'role' (one of {', '.join(roles)})")
    if not isinstance(role, str) or role not in roles:
        raise unknown_role(role, where, roles, api_name)
    return role


def with_article(word: str) -> str:
    """``"an assistant"``, ``"a user"``: the roles, as an error names them (of the chat roles
    only "assistant" takes "an": "a user", "a system", "a developer", "a tool")."""
    return f"an {word}" if word == "assistant" else f"a {word}"


def unknown_role(role: Any, where: str, known: tuple[str, ...], api_name: str, hint: str = "") -> InvalidArgumentError:
    """The error for a role the API does not have."""
    if not isinstance(role, str):
        return InvalidArgumentError(f"{where}.role must be a str ({', '.join(known)}), not {type(role).__name__}")
    return InvalidArgumentError(
        f"{where}.role {preview(role)} is not {api_name} role ({', '.join(known)}){did_you_mean(role, known)}{hint}"
    )


def check_fields(m: dict[str, Any], where: str, known: frozenset[str], api_name: str, fix: str) -> None:
    """Refuse a field the API's messages do not have when it holds text: ctxfast would not count
    it, and the provider would reject it or ignore it."""
    for key in m:
        if key in known:
            continue
        if not holds_text(m[key]):
            continue
        near = closest(key, sorted(known))
        hint = f"Did you mean {near!r}?" if near else fix
        raise InvalidArgumentError(
            f"{where}{_step(key)} holds text, but {api_name} messages have no {preview(key)} field, so ctxfast "
            f"would not count it. {hint} (the fields ctxfast reads: {', '.join(sorted(known))})"
        )


def unknown_part(part: dict[str, Any], where: str, known: tuple[str, ...], what: str) -> InvalidArgumentError:
    """The error for a content part / block of an unknown type. Its fields are checked first, so
    junk inside it is named down to the field rather than reported as an unknown type."""
    check_tree(part, where, strict_json=True)
    kind = part.get("type")
    if not isinstance(kind, str):
        return InvalidArgumentError(f"{where}.type must be a str naming the {what} type ({', '.join(known)})")
    near = closest(kind, known)
    return InvalidArgumentError(
        f"{where} has an unknown {what} type {preview(kind)}{f' (did you mean {near!r}?)' if near else ''}: "
        f"ctxfast counts only the known types ({', '.join(known)}), so it cannot count this one"
    )
