"""``ctxfast fit --format chat``: an open model's request, counted as its rendered chat template.

``--template`` is the model's ``chat_template.jinja``, its ``tokenizer_config.json`` (the
template and the special tokens) or the model folder holding them; ``--tokenizer`` its
``tokenizer.json``. Both are required, and either one alone implies ``--format chat``. A body's
``chat_template_kwargs`` (vLLM's and SGLang's field) are passed to the template.
"""

from __future__ import annotations

from typing import Any

from ctxfast import Budget, ChatTemplate, CtxfastError, Fit, Policy, Tokenizer
from ctxfast import _cli_io as io
from ctxfast._cli_detect import Encoding


def wanted(fmt: str | None, template: str | None, tokenizer: str | None) -> bool:
    return fmt == "chat" or template is not None or tokenizer is not None


def load(template: str | None, tokenizer: str | None) -> tuple[ChatTemplate, Tokenizer, Encoding]:
    """The template and the tokenizer, or a one-line error naming the option."""
    if template is None or tokenizer is None:
        missing = "--template" if template is None else "--tokenizer"
        io.fail(f"--format chat needs {missing}: the model's chat_template.jinja or tokenizer_config.json "
                "(--template) and its tokenizer.json (--tokenizer)")
    try:
        tmpl = ChatTemplate.from_file(template)
    except CtxfastError as e:
        io.fail(f"--template {template}: {e}")
    try:
        tok = Tokenizer.from_file(tokenizer)
    except CtxfastError as e:
        io.fail(f"--tokenizer {tokenizer}: {e}")
    note = f"{tokenizer} (--tokenizer), the rendered chat template counted exactly"
    return tmpl, tok, Encoding(tok.name, "--tokenizer", note)


def fit(data: Any, messages: Any, budget: Budget, policy: Policy, tok: Tokenizer,
        template: ChatTemplate) -> tuple[list[Any], Fit]:
    from ctxfast import chat

    body = data if isinstance(data, dict) else {}
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise CtxfastError("chat_template_kwargs must be an object")
    return chat.fit_messages(messages, budget, template=template, tokenizer=tok, tools=body.get("tools"),
                             policy=policy, template_kwargs=kwargs)
