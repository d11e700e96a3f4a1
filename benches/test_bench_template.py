"""Rendering a chat template: ``ctxfast.ChatTemplate.render`` (MiniJinja in Rust) side by side with
transformers' jinja2 renderer (``render_jinja_template``, what ``apply_chat_template(tokenize=False)``
runs), on a 50-message Llama 3.1 request with the parity test's two tool schemas. Both renders
are checked identical first. Group ``template-llama31-50``; quick mode runs each body once.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import ctxfast

TESTS = Path(__file__).resolve().parents[1] / "tests"
SOURCE = (TESTS / "data" / "chat_templates" / "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text(encoding="utf-8")
SPECIAL = {"bos_token": "<|begin_of_text|>"}


def _request() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    sys.path.insert(0, str(TESTS))
    from test_chat_template_parity import TOOLS

    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful assistant."}]
    for i in range(24):
        msgs.append({"role": "user", "content": f"Question {i}: what does the log say about the retry storm? " * 3})
        msgs.append({"role": "assistant", "content": f"Answer {i}: the pool was exhausted; raise the limit and add jitter. " * 4})
    msgs.append({"role": "user", "content": "Summarise."})
    return msgs, TOOLS


@pytest.mark.parametrize("contender", ["ctxfast", "transformers"])
def test_render(benchmark: Any, quick: bool, contender: str) -> None:
    from transformers.utils.chat_template_utils import render_jinja_template

    msgs, tools = _request()
    template = ctxfast.ChatTemplate(SOURCE, special_tokens=SPECIAL)

    def ours() -> str:
        return template.render(msgs, tools=tools, date_string="26 Jul 2024")

    def theirs() -> str:
        return render_jinja_template([msgs], tools=tools, chat_template=SOURCE, add_generation_prompt=True,
                                     date_string="26 Jul 2024", **SPECIAL)[0][0]

    assert ours() == theirs()
    benchmark.group = "template-llama31-50"
    benchmark.extra_info.update(contender=contender, messages=len(msgs), chars=len(ours()))
    benchmark.pedantic(ours if contender == "ctxfast" else theirs, rounds=1 if quick else 500, warmup_rounds=0 if quick else 5)
