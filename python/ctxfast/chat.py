"""Open models (Llama, Qwen, Mistral, DeepSeek, Gemma...) served by llama.cpp, vLLM or SGLang:
the request is the model's chat template, rendered, and its cost is the count of that render.

``fit_messages`` takes what those servers' ``/v1/chat/completions`` take: OpenAI-style messages
(``system``/``user``/``assistant``/``tool``, assistant ``tool_calls`` whose ``arguments`` are JSON
strings, which are parsed before rendering as vLLM does) and OpenAI ``tools`` schemas. It counts
**the prompt the server will prefill**, exactly:

- the template is rendered in Rust (``ctxfast.ChatTemplate``, set up as transformers' jinja2),
  with the tools, ``add_generation_prompt`` and the template's special tokens;
- the render is tokenized by ``tokenizer`` as transformers' ``apply_chat_template(tokenize=True)``
  tokenizes it: the template's own BOS and control tokens are read as tokens, and nothing else
  is added (``add_special_tokens=False``);
- the render is split at the vocabulary's added tokens, so each piece is counted once and cached:
  a fit that removes an exchange costs a render and a few cache lookups, not a recount.

How the ladder sees the request: every message's share of the render (its framing, its tool
calls as the template prints them, a tool result as the template encodes it), the template's head
(the text before the first message) and the tool schemas (what they add to the render, wherever
the template prints them) as parts that are always sent. The ladder removes by those shares;
then what it kept is rendered and counted again, and when the template's framing makes the kept
request cost more than its shares (Llama 3.1 moves the schemas to the next user message; Mistral
moves the system prompt), the fit runs again under a ceiling lowered by the difference.
``fit.total`` is always the count of the final render, ``fit.prompt`` that render, and the kept
segments' tokens add up to ``fit.total``.

Units are as in ``ctxfast.openai``: exchanges, tool rounds after the last ask, the current turn
protected, a tool result never apart from its call (paired by ``tool_call_id``). A digest is a
user message. A truncate rung shortens a message's ``content`` when it is a string. Content parts
are passed to the template as they are; an image or audio part is refused, because a template
prints a placeholder for it and its real cost is the model's image encoder's.

A message whose text holds one of the vocabulary's added tokens (a user who typed
``<|eot_id|>``) is rendered and counted as the server will read it, as a control token, and a
WARNING is logged naming the message (``ctxfast`` logger).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctxfast._core import Budget, CacheProfile, ChatTemplate, Fit, Policy, PromptLayer, Tokenizer, _fit_template, _reusable_prefix
from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast import _payload, _shapes

__all__ = ["fit_messages", "reusable_prefix", "ROLES"]

#: The roles read. ``developer`` is read as ``system``; templates see it as the caller wrote it.
ROLES = ("system", "developer", "user", "assistant", "tool")
_SYSTEM_ROLES = {"system", "developer"}
#: Content part types a template prints as text.
_TEXT_PARTS = ("text",)
#: Compiled templates, by source, so a template passed as a string compiles once.
_COMPILED: dict[str, ChatTemplate] = {}
_COMPILED_MAX = 32


def _template(template: Any) -> ChatTemplate:
    if isinstance(template, ChatTemplate):
        return template
    if isinstance(template, str):
        compiled = _COMPILED.get(template)
        if compiled is None:
            compiled = ChatTemplate(template)
            if len(_COMPILED) >= _COMPILED_MAX:
                _COMPILED.clear()
            _COMPILED[template] = compiled
        return compiled
    raise ArgumentTypeError(
        f"argument 'template' must be a ctxfast.ChatTemplate or its source (str), not {type(template).__name__}"
    )


def _main_text(m: dict[str, Any], where: str) -> str:
    """The text a rung may shorten (a str content), after checking the content's parts."""
    content = m.get("content")
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise ArgumentTypeError(f"{where}.content must be a str, a list of parts or None, not {type(content).__name__}")
    for j, part in enumerate(content):
        at = f"{where}.content[{j}]"
        if not isinstance(part, dict):
            raise ArgumentTypeError(f"{at} must be a dict, not {type(part).__name__}")
        kind = part.get("type")
        if kind not in _TEXT_PARTS:
            raise InvalidArgumentError(
                f"{at} is a {_payload.preview(kind)} part: chat templates print a placeholder for images and audio, "
                "and their cost is the model's encoder's, which ctxfast does not count; send text parts only"
            )
        _payload.text(part.get("text"), at, ".text")
    return ""


def _read(
    messages: Sequence[Any], here: _payload.Cursor, pin_first_user: bool
) -> tuple[list[PromptLayer], list[str | None], list[str], list[tuple[str, str] | None]]:
    """Per message: its layer, its exchange group, the text a rung may shorten and its first
    tool call; after the shape checks and the call/result pairing check."""
    roles: list[str] = []
    calls: list[tuple[str, str] | None] = []
    links: list[_payload.ToolLink] = []
    results: list[_payload.ToolLink] = []
    texts: list[str] = []
    for i, m in enumerate(messages):
        here.at = i
        where = f"messages[{i}]"
        role = _shapes.checked_role(m, where, "chat", ROLES, "a chat")
        roles.append("system" if role in _SYSTEM_ROLES else role)
        texts.append(_main_text(m, where))
        first: tuple[str, str] | None = None
        tool_calls = m.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            raise ArgumentTypeError(f"{where}.tool_calls must be a list, not {type(tool_calls).__name__}")
        for k, call in enumerate(tool_calls):
            at = f"{where}.tool_calls[{k}]"
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                raise ArgumentTypeError(f"{at} must be a dict with a 'function' dict")
            name = _payload.text(fn.get("name", ""), at, ".function.name")
            arguments = fn.get("arguments", "")
            arguments = arguments if isinstance(arguments, str) else _payload.as_json(arguments, at, ".function.arguments")
            first = first or (name, arguments)
            call_id = _payload.tool_id(call.get("id"), at, ".id")
            if call_id is not None and role == "assistant":
                links.append(_payload.ToolLink(i, at, call_id))
        calls.append(first)
        if role == "tool":
            result_id = _payload.tool_id(m.get("tool_call_id"), where, ".tool_call_id")
            if result_id is not None:
                results.append(_payload.ToolLink(i, where, result_id))
    here.at = None
    groups, current, pinned = _payload.assign_units(
        roles, lambda i: True, lambda i: bool(messages[i].get("tool_calls")), pin_first_user
    )
    _payload.protect_last_unit(groups, current)
    _payload.check_tool_pairs(
        links, results, groups, result_field="tool_call_id", between=lambda k: _shapes.with_article(messages[k]["role"]) + " message"
    )
    layers = []
    for i in range(len(messages)):
        layer, groups[i] = _payload.place(
            i, groups, current, pinned, system=roles[i] == "system", tool_result=roles[i] == "tool"
        )
        layers.append(layer)
    return layers, groups, texts, calls


def fit_messages(
    messages: Sequence[dict[str, Any]],
    budget: Budget | int,
    *,
    template: ChatTemplate | str,
    tokenizer: Tokenizer | Callable[[str], int],
    tools: Sequence[dict[str, Any]] | None = None,
    policy: Policy | str | None = None,
    add_generation_prompt: bool = True,
    pin_first_user: bool = False,
    template_kwargs: Mapping[str, Any] | None = None,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
) -> tuple[list[dict[str, Any]], Fit]:
    """Fit an open model's chat request under ``budget``; returns ``(messages, fit)``.

    ``template`` is the model's ``ChatTemplate`` (``ChatTemplate.from_file`` on its
    ``tokenizer_config.json`` brings the special tokens too) or its Jinja source; ``tokenizer``
    the model's (``Tokenizer.from_file("tokenizer.json")``). ``template_kwargs`` are passed to the
    template as the server passes ``chat_template_kwargs`` (``enable_thinking``,
    ``date_string``...). ``fit.total`` is the exact token count of ``fit.prompt``, the prompt
    the server prefills; kept messages are the caller's own dicts (a digest is a new user
    message, a truncated message a copy with a shorter ``content``).

    ``previous`` (the previous turn's ``Fit``) keeps its cut while the rendered prompt fits, so
    the server's KV cache is reused; ``fit.cache.unchanged_prefix`` is measured on the rendered
    prompts' token ids. ``cache`` is the profile, ``"llama.cpp"`` (prefix reuse) by default.
    """
    started = _payload.telemetry.now()  # the span's start, when OpenTelemetry listens
    with _payload.boundary() as here:
        tmpl = _template(template)
        if tokenizer is None:
            raise ArgumentTypeError(
                "argument 'tokenizer' is required: the model's own, e.g. ctxfast.Tokenizer.from_file('tokenizer.json')"
            )
        _shapes.refuse_body(messages, "chat")
        if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
            raise ArgumentTypeError(f"argument 'messages' must be a list of dicts, not {type(messages).__name__}")
        if not messages:
            raise InvalidArgumentError("argument 'messages' is empty: there is no request to fit")
        tool_list = _payload.sequence_arg(tools, "tools")
        layers, groups, texts, calls = _read(messages, here, pin_first_user)
        # As the caller gave them: a template tells None from [] (Llama 3.1 prints its tool
        # preamble for any list, empty or not).
        context: dict[str, Any] = {"tools": None if tools is None else list(tool_list), "documents": None}
        context["add_generation_prompt"] = bool(add_generation_prompt)
        if template_kwargs is not None:
            if not isinstance(template_kwargs, Mapping):
                raise ArgumentTypeError(f"argument 'template_kwargs' must be a dict, not {type(template_kwargs).__name__}")
            for key, value in template_kwargs.items():
                if key == "messages":
                    raise InvalidArgumentError("template_kwargs cannot set 'messages'")
                context[key] = value
        budget = _payload.resolve_budget(budget)
        order, digests, cut, result, flagged = _fit_template(
            tmpl, list(messages), layers, groups, texts, calls, context, budget,
            _payload.resolve_policy(policy), _payload.resolve_tokenizer(tokenizer), previous=previous, cache=cache,
        )
        for i, token in flagged:
            _payload.log.warning(
                "ctxfast: messages[%d] contains %r, one of the model's control tokens: the server will read it as "
                "that token, not as text", i, token,
            )
        out = _payload.rebuild(
            messages, order, digests, cut, lambda i: ("content",),
            lambda text: {"role": "user", "content": text}, _payload.replace_at,
        )
        _payload.log_fit(len(messages), len(out), result, started)
        return out, result


def reusable_prefix(previous: Fit | str, current: Fit | str, tokenizer: Tokenizer) -> int:
    """Tokens of ``current``'s prompt that a server's prompt cache (llama.cpp's ``cache_prompt``,
    vLLM's and SGLang's prefix caching) reuses from ``previous``: their common prefix, in tokens.
    Each is a ``Fit`` from ``fit_messages`` (its ``prompt``) or a rendered prompt. The rest of
    ``current`` is re-prefilled: for Mistral, whose template prints the system prompt and the
    tools just before the last user message, that is most of them, every turn."""

    def prompt(value: Fit | str, name: str) -> str:
        if isinstance(value, Fit):
            if value.prompt is None:
                raise InvalidArgumentError(f"argument {name!r} is a Fit without a prompt: pass one from chat.fit_messages")
            return value.prompt
        if isinstance(value, str):
            return value
        raise ArgumentTypeError(f"argument {name!r} must be a Fit or a str, not {type(value).__name__}")

    return _reusable_prefix(prompt(previous, "previous"), prompt(current, "current"), tokenizer)
