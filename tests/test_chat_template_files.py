"""``ChatTemplate.from_file``: a ``chat_template.jinja``, a ``tokenizer_config.json`` (one template
or a list of named ones, and its special tokens), or a model folder holding either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ctxfast
from ctxfast import ChatTemplate

SOURCE = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
HELLO = [{"role": "user", "content": "hi"}]


def test_a_jinja_file(tmp_path: Path) -> None:
    path = tmp_path / "chat_template.jinja"
    path.write_text(SOURCE)
    t = ChatTemplate.from_file(path)
    assert t.source == SOURCE and t.special_tokens == {}
    assert t.render(HELLO, bos_token="<s>") == "<s>[user]hi"


def test_a_config_with_named_templates(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps({
        "bos_token": {"content": "<s>", "lstrip": False}, "eos_token": "</s>",
        "chat_template": [{"name": "default", "template": SOURCE}, {"name": "tool_use", "template": "T"}],
    }))
    t = ChatTemplate.from_file(path)
    assert t.special_tokens == {"bos_token": "<s>", "eos_token": "</s>"}
    assert t.render(HELLO) == "<s>[user]hi"
    assert ChatTemplate.from_file(path, name="tool_use").source == "T"
    with pytest.raises(ctxfast.InvalidArgumentError, match='no chat template named "rag".*default, tool_use'):
        ChatTemplate.from_file(path, name="rag")


def test_a_folder_whose_config_has_no_template_keeps_its_special_tokens(tmp_path: Path) -> None:
    """Regression: the template in chat_template.jinja and a tokenizer_config.json without a
    ``chat_template`` (Llama 3.2's, as packaged) lost the config's special tokens, so the BOS the
    template prints was missing from the render and from the count."""
    (tmp_path / "chat_template.jinja").write_text(SOURCE)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<|begin_of_text|>"}))
    t = ChatTemplate.from_file(tmp_path)
    assert t.special_tokens == {"bos_token": "<|begin_of_text|>"}
    assert t.render(HELLO) == "<|begin_of_text|>[user]hi"


def test_bad_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(ctxfast.CtxfastError, match="missing.jinja"):
        ChatTemplate.from_file(tmp_path / "missing.jinja")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ctxfast.TokenizerLoadError, match="bad.json: not JSON"):
        ChatTemplate.from_file(tmp_path / "bad.json")
    (tmp_path / "plain.json").write_text("{}")
    with pytest.raises(ctxfast.InvalidArgumentError, match="no 'chat_template'"):
        ChatTemplate.from_file(tmp_path / "plain.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ctxfast.InvalidArgumentError, match="no chat_template.jinja or tokenizer_config.json"):
        ChatTemplate.from_file(empty)
    (tmp_path / "broken.jinja").write_text("{% for %}")
    with pytest.raises(ctxfast.TemplateError, match="failed to compile"):
        ChatTemplate.from_file(tmp_path / "broken.jinja")


def test_a_template_that_loops_for_ever_is_refused() -> None:
    """Regression: a render cannot be interrupted (the GIL is released and MiniJinja has no
    check), and a nested loop of 8.1 billion steps hung the caller. Renders run on a fuel budget
    (``rust/template/mod.rs``, ``FUEL``): the template is refused with a ``TemplateError``."""
    import time

    hog = ChatTemplate("{% for i in range(90000) %}{% for j in range(90000) %}{% endfor %}{% endfor %}")
    start = time.perf_counter()
    with pytest.raises(ctxfast.TemplateError, match="fuel"):
        hog.render(HELLO)
    assert time.perf_counter() - start < 30
    # A long real render is well inside the budget.
    big = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(20_000)]
    assert ChatTemplate(SOURCE).render(big).count("[user]") == 10_000
