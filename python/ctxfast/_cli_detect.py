"""What ``ctxfast fit`` reads from the payload itself: its format, the encoding its model uses,
and the reply budget it asks for.

Detection uses every field that only one provider defines, and guesses nothing. When the
payload carries signals of both formats, or of neither, the caller is asked for ``--format``:
a wrong guess counts the wrong fields (an Anthropic ``system`` read as OpenAI is not counted at
all) and produces a request the provider rejects. OpenAI Responses bodies (``input``,
``instructions``) and Gemini bodies (``contents``) are recognised by those fields (``native_format``)
and fitted by their own adapters, never read as chat messages; ``--format openai`` or
``anthropic`` on such a body is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxfast._core import encoding_name_for_model
from ctxfast._errors import CtxfastError

#: Content blocks only Anthropic Messages defines.
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "document"})
#: Content parts only Chat Completions defines.
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "refusal"})
#: Roles Anthropic's ``messages`` never hold (it has only user and assistant).
_OPENAI_ROLES = frozenset({"system", "developer", "tool", "function"})
#: Message fields only Chat Completions defines.
_OPENAI_MESSAGE_FIELDS = ("tool_calls", "tool_call_id", "function_call")
#: Top-level request fields only one of the two defines.
_ANTHROPIC_FIELDS = ("system", "stop_sequences", "thinking")
_OPENAI_FIELDS = ("max_completion_tokens", "response_format", "parallel_tool_calls", "reasoning_effort")
#: The Responses API's input items and content parts, which are not chat messages.
_RESPONSES_TYPES = frozenset({
    "function_call", "function_call_output", "reasoning", "message", "input_text", "input_image",
    "input_file", "output_text", "custom_tool_call", "custom_tool_call_output",
})
_RESPONSES_PARTS = frozenset({"input_text", "input_image", "input_file", "output_text"})
_GEMINI_FIELDS = ("contents", "systemInstruction", "system_instruction", "generationConfig", "generation_config")

#: How many reasons of one side an error or the header names.
_SHOWN = 2

FORMAT_HELP = (
    "openai, anthropic, responses, gemini or chat. Default: detected from fields only one API defines. Anthropic: system "
    "at the top level, tool_use or tool_result blocks, tools with input_schema, a claude model. "
    "OpenAI: tool_calls, tool, system or developer messages, function tools, a gpt, o1, o3, o4 "
    "or chatgpt model, max_completion_tokens. Signals of both or of neither: an error asking for "
    "--format. responses: an OpenAI Responses API body (input, instructions, or a list of input "
    "items). gemini: a Gemini generateContent body (contents, systemInstruction; counts are "
    "estimates). chat: an open model's request (llama.cpp, vLLM, SGLang), counted as its rendered "
    "chat template; needs --template and --tokenizer, and either one implies it."
)


@dataclass
class Detection:
    """The format chosen and why: ``source`` is ``"--format"`` or ``"detected"``."""

    name: str
    source: str
    reasons: list[str] = field(default_factory=list)


class Refusal(Exception):
    """The payload's format cannot be settled (or is not supported): the message says why."""


def _kind(item: Any) -> str | None:
    """An item's ``type`` when it is a short string (junk of any other type is no signal)."""
    kind = item.get("type") if isinstance(item, dict) else None
    return kind if isinstance(kind, str) and len(kind) <= 64 else None


def _quote(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _model(data: Any) -> str | None:
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else None


def _model_family(model: str) -> str:
    """``openai/gpt-4o`` and ``ft:gpt-4o:org::id`` name the model ``gpt-4o``."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return name[3:] if name.startswith("ft:") else name


def _is_openai_model(model: str) -> bool:
    name = _model_family(model)
    if name.startswith(("gpt-", "chatgpt-")):
        return True
    return any(name == p or name.startswith(p + "-") for p in ("o1", "o3", "o4"))


def native_format(data: Any) -> tuple[str, str] | None:
    """``("responses" | "gemini", why)`` for a body (or bare list) of those APIs, else None."""
    if isinstance(data, dict):
        for key in _GEMINI_FIELDS:
            if key in data:
                return "gemini", f"top-level {key!r}"
        for key in ("input", "instructions"):
            if key in data:
                return "responses", f"top-level {key!r}"
        return None
    for i, m in enumerate(data if isinstance(data, list) else ()):
        if not isinstance(m, dict):
            continue
        if ("parts" in m and "content" not in m) or m.get("role") == "model":
            return "gemini", f"item {i} is a Gemini content ('parts')"
        # Chat messages have no "type"; every Responses input item can have one.
        if _kind(m) in _RESPONSES_TYPES - _RESPONSES_PARTS:
            return "responses", f"item {i} is a Responses {_kind(m)!r} item"
    return None


def _unsupported(data: Any, messages: Any) -> str | None:
    """What makes a chat body read as another API's, if anything (``native_format``'s bodies, or
    Responses items and parts inside 'messages')."""
    native = native_format(data)
    if native is not None:
        return f"{'a Gemini generateContent' if native[0] == 'gemini' else 'an OpenAI Responses API'} body ({native[1]})"
    for m in messages if isinstance(messages, list) else ():
        if not isinstance(m, dict):
            continue
        if "parts" in m and "content" not in m:
            return "a Gemini body (messages with 'parts')"
        if _kind(m) in _RESPONSES_TYPES:
            return f"OpenAI Responses API input items ('type': {_kind(m)!r})"
        content = m.get("content")
        for part in content if isinstance(content, list) else ():
            if _kind(part) in _RESPONSES_PARTS:
                return f"OpenAI Responses API content parts ('type': {_kind(part)!r})"
    return None


def signals(data: Any, messages: Any) -> tuple[list[str], list[str]]:
    """(Anthropic reasons, OpenAI reasons): the fields found that only one format defines, the
    first of each kind (the first 'tool' message, not all of them)."""
    anthropic: list[str] = []
    openai: list[str] = []
    seen: set[str] = set()

    def note(side: list[str], kind: str, reason: str) -> None:
        if kind not in seen:
            seen.add(kind)
            side.append(reason)

    if isinstance(data, dict):
        for key in _ANTHROPIC_FIELDS:
            if data.get(key) is not None:
                note(anthropic, key, f"top-level {key!r}")
        for key in _OPENAI_FIELDS:
            if data.get(key) is not None:
                note(openai, key, f"top-level {key!r}")
        model = _model(data)
        if model is not None and _model_family(model).startswith("claude"):
            note(anthropic, "model", f"model {_quote(model)}")
        elif model is not None and _is_openai_model(model):
            note(openai, "model", f"model {_quote(model)}")
        tools = data.get("tools")
        for i, tool in enumerate(tools if isinstance(tools, list) else ()):
            if not isinstance(tool, dict):
                continue
            if "input_schema" in tool:
                note(anthropic, "input_schema", f"tools[{i}] has input_schema")
            elif "function" in tool or "parameters" in tool:
                note(openai, "function tool", f"tools[{i}] is a function tool")
        choice = data.get("tool_choice")
        if _kind(choice) in ("any", "tool", "auto", "none"):
            note(anthropic, "tool_choice", f"tool_choice of type {_kind(choice)!r}")
        elif choice == "required" or _kind(choice) in ("function", "allowed_tools", "custom"):
            note(openai, "tool_choice", "an OpenAI tool_choice")
    for i, m in enumerate(messages if isinstance(messages, list) else ()):
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if isinstance(role, str) and role in _OPENAI_ROLES:
            note(openai, f"role {role}", f"messages[{i}] has role {role!r}")
        for key in _OPENAI_MESSAGE_FIELDS:
            if m.get(key) is not None:
                note(openai, key, f"messages[{i}] has {key}")
        content = m.get("content")
        for j, part in enumerate(content if isinstance(content, list) else ()):
            kind = _kind(part)
            if kind is None:
                continue
            if kind in _ANTHROPIC_BLOCKS or (kind == "image" and "source" in part):
                note(anthropic, f"block {kind}", f"messages[{i}].content[{j}] is a {kind} block")
            elif "cache_control" in part:
                note(anthropic, "cache_control", f"messages[{i}].content[{j}] has cache_control")
            elif kind in _OPENAI_PARTS:
                note(openai, f"part {kind}", f"messages[{i}].content[{j}] is an {kind} part")
    return anthropic, openai


def _few(reasons: list[str]) -> str:
    shown = ", ".join(reasons[:_SHOWN])
    more = len(reasons) - _SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def check_supported(data: Any, messages: Any) -> None:
    """Raises ``Refusal`` when a body read as chat messages (``--format openai`` or
    ``anthropic``) is another API's: its fields would go uncounted."""
    other = _unsupported(data, messages)
    if other is not None:
        raise Refusal(
            f"this is {other}, which is not a chat body: Responses API bodies are fitted with "
            "--format responses, Gemini ones with --format gemini (both detected without --format)"
        )


def detect(data: Any, messages: Any, given: str | None) -> Detection:
    """The payload's format: ``given`` (``--format``) when set, else what its fields say.

    Raises ``Refusal``, without ``given``, when the fields say both formats or neither."""
    if given is not None:
        return Detection(given, "--format")
    anthropic, openai = signals(data, messages)
    if anthropic and openai:
        raise Refusal(
            f"the payload looks like both formats: Anthropic ({_few(anthropic)}) and OpenAI "
            f"({_few(openai)}); pass --format openai or --format anthropic"
        )
    if anthropic:
        return Detection("anthropic", "detected", anthropic)
    if openai:
        return Detection("openai", "detected", openai)
    raise Refusal(
        "cannot tell OpenAI from Anthropic: no field only one of them defines (a top-level "
        "'system', tool_use blocks, a 'tool' message, a model name...); pass --format openai "
        "or --format anthropic"
    )


def describe_format(d: Detection) -> str:
    if d.source == "--format":
        return f"{d.name} (--format)"
    more = f" (+{len(d.reasons) - 1} more)" if len(d.reasons) > 1 else ""
    return f"{d.name}, detected by {d.reasons[0]}{more}" if d.reasons else f"{d.name}, detected"


# ----------------------------------------------------------------------------------------------
# The encoding a model counts with

#: Model families on o200k_base, checked before the cl100k ones (``gpt-4o`` starts with ``gpt-4``).
DEFAULT_ENCODING = "o200k_base"
ENCODINGS = ("o200k_base", "cl100k_base")


@dataclass
class Encoding:
    """The encoding chosen and why: ``source`` is ``--encoding``, ``model``, ``default`` or
    ``estimate`` (Anthropic: Claude's tokenizer is not public)."""

    name: str
    source: str
    note: str


def encoding_for_model(model: str) -> str | None:
    """The embedded encoding of a model name, or None for a model ctxfast does not know: the
    core's table (``ctxfast.encoding_name_for_model``, tiktoken's families), one for the library
    and the command line."""
    try:
        return encoding_name_for_model(model)
    except CtxfastError:
        return None


def choose_encoding(fmt: str, data: Any, given: str | None) -> Encoding:
    if given is not None:
        return Encoding(given, "--encoding", f"{given} (--encoding)")
    if fmt == "anthropic":
        return Encoding(DEFAULT_ENCODING, "estimate",
                        f"{DEFAULT_ENCODING}, an estimate: Claude's tokenizer is not public")
    if fmt == "gemini":
        return Encoding(DEFAULT_ENCODING, "estimate",
                        f"{DEFAULT_ENCODING}, an estimate: Gemini's tokenizer is not public")
    model = _model(data)
    if model is None:
        return Encoding(DEFAULT_ENCODING, "default",
                        f"{DEFAULT_ENCODING}, the default: the payload names no model (set --encoding)")
    known = encoding_for_model(model)
    if known is None:
        return Encoding(DEFAULT_ENCODING, "default",
                        f"{DEFAULT_ENCODING}, the default: model {_quote(model)} is not one ctxfast knows "
                        "(set --encoding)")
    return Encoding(known, "model", f"{known}, the encoding of {_quote(model)}")


# ----------------------------------------------------------------------------------------------
# The reply budget


def payload_reserve(fmt: str, data: Any) -> tuple[int, str] | tuple[None, str]:
    """``(tokens, field)`` the payload reserves for the reply, or ``(None, why not)``.

    OpenAI's ``max_completion_tokens`` supersedes its older ``max_tokens``; Anthropic's is
    ``max_tokens``; Responses' is ``max_output_tokens``, Gemini's ``generationConfig.maxOutputTokens``.
    A field of the wrong type raises ``Refusal``."""
    keys = {"openai": ("max_completion_tokens", "max_tokens"), "chat": ("max_completion_tokens", "max_tokens"), "responses": ("max_output_tokens",),
            "gemini": ("maxOutputTokens", "max_output_tokens")}.get(fmt, ("max_tokens",))
    source = data if isinstance(data, dict) else None
    if fmt == "gemini" and source is not None:
        config = source.get("generationConfig", source.get("generation_config"))
        source = config if isinstance(config, dict) else None
    for key in keys:
        value = source.get(key) if source is not None else None
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            shown = _quote(value) if isinstance(value, str) else type(value).__name__
            if isinstance(value, int) and not isinstance(value, bool):
                shown = "a negative number" if value < 0 else shown
            raise Refusal(f"{key} must be a whole number of tokens >= 0, got {shown}; or pass --reserve")
        return value, key
    return None, f"the payload sets no {' or '.join(keys)}"
