"""``openai.fit_messages``'s one-crossing fast path (``_core._fit_chat_fast``) against its full
Python reader (``openai._fit``): wherever the fast path answers, the two must return the same
messages and the same ``Fit``, or raise the same ``Unfittable``; wherever it cannot read a
payload exactly it must decline (return None), so the full reader words the error.

The conversations are ``agent_payloads``' (older exchanges, agent loops, parallel calls,
developer notes), with images removed so the fast path takes them (images go to the full reader,
which applies the tile rule), under every preset and truncating policies, with and without tool
schemas, at budgets from 2 % to 110 %.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_payloads as ap
from ctxfast import Budget, Tokenizer, Unfittable, _openai_fast, _payload, openai
from ctxfast._core import _fit_chat_fast
from test_agent_payload_properties import POLICIES

TOOLS = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                      "parameters": {"type": "object", "properties": {
                                          "path": {"type": "string", "description": "Where"},
                                          "lines": {"type": "integer"}}, "required": ["path"]}}},
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "mode": {"type": "string", "enum": ["fast", "deep"]}}}}},
]


def text_only(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with image parts removed (a part list left with no text becomes a string)."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            parts = [p for p in content if p.get("type") == "text"]
            m = {**m, "content": parts or "(image removed)"}
        out.append(m)
    return out


def slow(messages: Any, budget: Any, **kw: Any) -> tuple[list[dict[str, Any]], Any]:
    """The full Python reader alone."""
    with _payload.boundary() as here:
        return openai._fit(messages, budget, kw.get("tools"), kw.get("policy"), kw.get("tokenizer"),
                           kw.get("pin_first_user", False), kw.get("tool_choice"), None, here)


def fast_declines(messages: Any, **kw: Any) -> bool:
    schemas = _openai_fast._schemas(kw.get("tools") or [], kw.get("tool_choice"))
    assert schemas is not None
    got = _fit_chat_fast(messages, schemas[0], schemas[1], Budget(10**9), _payload.resolve_policy(None),
                         Tokenizer.from_encoding("o200k_base"))
    return got is None


def same_fit(a: Any, b: Any) -> None:
    assert (a.total, a.ceiling, a.over_by, a.count_calls) == (b.total, b.ceiling, b.over_by, b.count_calls)
    assert a.explain() == b.explain()
    assert a.texts() == b.texts()
    assert a.rungs_fired == b.rungs_fired
    assert a.ledger.removed == b.ledger.removed and a.ledger.rung_firings == b.ledger.rung_firings
    assert [(s.layer, s.group, s.meta) for s in a.kept] == [(s.layer, s.group, s.meta) for s in b.kept]
    assert [(e.rung, e.tokens, e.action) for e in a.evicted] == [(e.rung, e.tokens, e.action) for e in b.evicted]
    assert [(t.rung, t.tokens_before, t.tokens_after) for t in a.truncated] == [
        (t.rung, t.tokens_before, t.tokens_after) for t in b.truncated]


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), fraction=st.floats(0.02, 1.1), policy=st.sampled_from(range(len(POLICIES))),
       pin=st.booleans(), tools=st.booleans(), choice=st.sampled_from([None, "auto", "none"]))
def test_the_fast_path_and_the_full_reader_agree(seed: int, fraction: float, policy: int, pin: bool, tools: bool,
                                                 choice: Any, tiktoken_encodings: dict[str, Any]) -> None:
    inp = text_only(ap.openai(ap.draw(random.Random(seed))))
    kw: dict[str, Any] = {"policy": POLICIES[policy], "pin_first_user": pin, "tool_choice": choice,
                          "tools": TOOLS if tools else None}
    assert not fast_declines(inp, **kw), "the fast path should read this payload"
    snapshot = copy.deepcopy(inp)
    ceiling = max(1, int(ap.openai_total(inp, tiktoken_encodings["o200k_base"]) * fraction))
    budget = Budget(ceiling + 100, 100)
    try:
        out, fit = openai.fit_messages(inp, budget, **kw)
    except Unfittable as e:
        with pytest.raises(Unfittable) as slow_error:
            slow(inp, budget, **kw)
        assert str(slow_error.value) == str(e)
        return
    slow_out, slow_fit = slow(inp, budget, **kw)
    assert out == slow_out
    assert all(a is b for a, b in zip(out, slow_out) if any(a is m for m in inp)), "kept messages are the caller's"
    same_fit(fit, slow_fit)
    assert inp == snapshot


DECLINED = {
    "an image part": {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
    "a legacy function_call": {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
    "an unknown field": {"role": "user", "content": "hi", "reasoning_content": "hmm"},
    "a function role": {"role": "function", "name": "f", "content": "42"},
    "a non-str name": {"role": "user", "content": "hi", "name": 7},
    "a lone surrogate": {"role": "user", "content": "bad \ud800 text"},
    "a str subclass": {"role": "user", "content": type("S", (str,), {})("hi")},
    "a call without arguments": {"role": "assistant", "content": None,
                                 "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}]},
}


@pytest.mark.parametrize("case", sorted(DECLINED))
def test_the_fast_path_declines_what_it_does_not_read_exactly(case: str) -> None:
    messages = [{"role": "system", "content": "s"}, DECLINED[case], {"role": "user", "content": "now"}]
    assert fast_declines(messages)
    # ... and the full reader does the request (or refuses it with its own message).
    try:
        out, _ = openai.fit_messages(messages, 10_000)
    except Exception as e:  # noqa: BLE001 - the full reader's own error
        assert type(e).__module__.startswith("ctxfast")
    else:
        assert out


def test_a_pairing_the_full_reader_refuses_is_declined_then_refused_by_name() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "user", "content": "wait"},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ]
    assert fast_declines(messages)
    with pytest.raises(Exception, match=r"messages\[3\].*messages\[2\]"):
        openai.fit_messages(messages, 10_000)


def test_the_fast_path_reads_an_agent_request_and_its_fit_makes_segments_only_when_asked() -> None:
    messages = text_only(ap.openai(ap.draw(random.Random(7), max_old=2, max_rounds=6)))
    assert not fast_declines(messages, tools=TOOLS)
    out, fit = openai.fit_messages(messages, 10**6, tools=TOOLS)
    assert out == messages and all(a is b for a, b in zip(out, messages))
    kept = fit.kept
    assert [s.meta for s in kept][-2:] == [{"fixed": "<tool schemas>"}, {"fixed": "<reply priming>"}]
    assert [s.meta["index"] for s in kept[:-2]] == list(range(len(messages)))


def test_a_repeated_string_in_one_batch_is_counted_once() -> None:
    tok = Tokenizer.from_encoding("o200k_base")
    tok.clear_cache()
    before = tok.cache_info()
    assert tok.count_many(["same text", "other", "same text", "same text"]).tolist() == [2, 1, 2, 2]
    after = tok.cache_info()
    assert after.entries == 2 and after.misses - before.misses <= 4
    assert tok.count_many(["same text", "other"]).tolist() == [2, 1]
    assert tok.cache_info().misses == after.misses, "a warm batch is all hits"


def test_the_schema_cache_key_follows_content_not_identity() -> None:
    from collections import OrderedDict

    from ctxfast._core import _fingerprint

    a = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    b = copy.deepcopy(a)
    assert _fingerprint(a) == _fingerprint(b) is not None
    b[0]["function"]["name"] = "g"
    assert _fingerprint(a) != _fingerprint(b)
    assert len({_fingerprint(v) for v in (1, True, 1.0, "1", [1], (1,), {"1": 1}, None)}) == 8
    assert _fingerprint({"a": 1, "b": 2}) != _fingerprint({"b": 2, "a": 1}), "key order is rendered"
    assert _fingerprint(OrderedDict(a=1)) is None and _fingerprint({"k": object()}) is None
    deep: Any = []
    for _ in range(200):
        deep = [deep]
    assert _fingerprint(deep) is None
    # A schema edited in place renders again: the cache never serves the old rendering.
    tools = copy.deepcopy(TOOLS)
    msgs = [{"role": "user", "content": "hi"}]
    before = openai.fit_messages(msgs, 10_000, tools=tools)[1].total
    tools[0]["function"]["description"] = "Read a file from the repository, by path, with line numbers"
    assert openai.fit_messages(msgs, 10_000, tools=tools)[1].total > before
