"""``ctxfast.fit_columns``: a request given as columns gives the ``Fit`` that ``fit`` gives over
the same rows built as ``Segment`` objects, names a bad row, and counts each text once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxfast
from ctxfast import Budget, PromptLayer, Segment

LAYERS = [PromptLayer.SYSTEM, PromptLayer.CONVERSATION, PromptLayer.TOOL_RESULT, PromptLayer.RETRIEVED,
          PromptLayer.SUMMARY, PromptLayer.CURRENT_TURN]

row = st.fixed_dictionaries({
    "text": st.text(alphabet="ab cd\n", min_size=1, max_size=60),
    "layer": st.sampled_from(LAYERS[1:-1]),
    "key": st.one_of(st.none(), st.sampled_from(["k1", "k2", "k3", "k4", "k5", "k6"])),
    "score": st.floats(0, 1),
    "group": st.one_of(st.none(), st.sampled_from(["g1", "g2"])),
    "tokens": st.one_of(st.none(), st.integers(1, 40)),
    "recoverable": st.booleans(),
    "stale": st.booleans(),
    "tool": st.one_of(st.none(), st.tuples(st.sampled_from(["read", "grep"]), st.sampled_from(["a.py", None]))),
})


def as_segments(rows: list[dict]) -> list[Segment]:
    out = []
    for r in rows:
        meta = None if r["tool"] is None else {"tool": r["tool"][0], "arguments": r["tool"][1]}
        out.append(Segment(r["text"], r["layer"], r["key"], r["score"], tokens=r["tokens"], recoverable=r["recoverable"],
                           stale=r["stale"], group=r["group"], meta=meta))
    return out


def as_columns(rows: list[dict]) -> dict:
    return {
        "texts": [r["text"] for r in rows],
        "layers": [r["layer"] for r in rows],
        "keys": [r["key"] for r in rows],
        "scores": [r["score"] for r in rows],
        "groups": [r["group"] for r in rows],
        "tokens": [r["tokens"] for r in rows],
        "recoverable": [r["recoverable"] for r in rows],
        "stale": [r["stale"] for r in rows],
        "tools": [r["tool"] for r in rows],
    }


def outcome(fit: ctxfast.Fit) -> tuple:
    return ([s.text for s in fit.kept], [e.segment.text for e in fit.evicted], [e.rung for e in fit.evicted],
            fit.total, fit.over_by, str(fit.trace), fit.count_calls, fit.rungs_fired)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(row, min_size=1, max_size=14), window=st.integers(30, 400),
       policy=st.sampled_from(["context_window", "troubleshooting", "seven_tier", "ranked", "agent"]),
       separator=st.sampled_from([None, "\n\n"]))
def test_columns_fit_as_the_same_segments_do(rows, window, policy, separator):
    system = {"text": "You are terse.", "layer": PromptLayer.SYSTEM, "key": None, "score": 0.0, "group": None,
              "tokens": None, "recoverable": False, "stale": False, "tool": None}
    ask = dict(system, text="what now?", layer=PromptLayer.CURRENT_TURN)
    rows = [system, *rows, ask]
    budget = Budget(window)
    try:
        want = ctxfast.fit(as_segments(rows), budget, policy=policy, separator=separator)
    except ctxfast.Unfittable as e:
        with pytest.raises(ctxfast.Unfittable) as got:
            ctxfast.fit_columns(budget=budget, policy=policy, separator=separator, **as_columns(rows))
        assert str(got.value) == str(e)
        return
    got = ctxfast.fit_columns(budget=budget, policy=policy, separator=separator, **as_columns(rows))
    assert outcome(got) == outcome(want)
    # Each segment of the result names its row.
    for s in got.kept:
        if s.meta is not None and "index" in s.meta:
            assert rows[s.meta["index"]]["text"].startswith(s.text[:1])


def test_defaults_are_segment_defaults():
    texts = ["one two three", "four five", "six"]
    want = ctxfast.fit([Segment(t) for t in texts], Budget(4))
    got = ctxfast.fit_columns(texts, Budget(4))
    assert outcome(got) == outcome(want)
    assert [s.meta["index"] for s in got.kept] == [i for i, t in enumerate(texts) if t in [k.text for k in got.kept]]


def test_a_bad_row_is_named():
    texts = ["a", "b", "c"]
    with pytest.raises(ctxfast.InvalidArgumentError, match=r"scores\[2\]"):
        ctxfast.fit_columns(texts, Budget(100), scores=[0.1, 0.2, 1.5])
    with pytest.raises(ctxfast.InvalidArgumentError, match="'layers' has 2 items, expected 3"):
        ctxfast.fit_columns(texts, Budget(100), layers=["system", "conversation"])
    with pytest.raises(ctxfast.ArgumentTypeError, match=r"recoverable\[1\]"):
        ctxfast.fit_columns(texts, Budget(100), recoverable=[False, 1, False])
    with pytest.raises(ctxfast.ArgumentTypeError, match=r"texts\[0\]"):
        ctxfast.fit_columns([b"a"], Budget(100))
    with pytest.raises(ctxfast.InvalidArgumentError, match=r"tokens\[0\]"):
        ctxfast.fit_columns(["a"], Budget(100), tokens=[-1])
    with pytest.raises(ctxfast.InvalidArgumentError, match="empty"):
        ctxfast.fit_columns([], Budget(100))
    with pytest.raises(ctxfast.ArgumentTypeError, match="'texts'"):
        ctxfast.fit_columns("abc", Budget(100))


def test_texts_are_counted_once_through_the_cache():
    tok = ctxfast.Tokenizer.from_encoding("o200k_base", cache_capacity=1000)
    texts = [f"row {i} " * 20 for i in range(8)]
    ctxfast.fit_columns(texts, Budget(10_000), tokenizer=tok)
    misses = tok.cache_info().misses
    ctxfast.fit_columns(texts, Budget(10_000), tokenizer=tok, tokens=[None] * 7 + [5])
    assert tok.cache_info().misses == misses
    # A row with its count given is not counted at all.
    fresh = ctxfast.Tokenizer.from_encoding("o200k_base", cache_capacity=1000)
    ctxfast.fit_columns(["x y z"], Budget(100), tokenizer=fresh, tokens=[3])
    assert fresh.cache_info().misses == 0


def test_a_cache_miss_is_counted_once_and_stored():
    # fit_columns reads the cache itself (hashing each text once) and counts only its misses.
    tok = ctxfast.Tokenizer.from_encoding("o200k_base", cache_capacity=1000)
    texts = [f"miss {i} " * 30 for i in range(5)]
    cold = ctxfast.fit_columns(texts, Budget(10_000), tokenizer=tok)
    info = tok.cache_info()
    assert (info.hits, info.misses, info.entries) == (0, 5, 5)
    assert cold.total == sum(tok.count(t) for t in texts)
    ctxfast.fit_columns(texts, Budget(10_000), tokenizer=tok)
    assert tok.cache_info().misses == 5
    # Without a count cache, and through a callable's own cache, the counts are the same.
    for other in (ctxfast.Tokenizer.from_encoding("o200k_base", cache_capacity=0), lambda s: tok.count(s)):
        assert ctxfast.fit_columns(texts, Budget(10_000), tokenizer=other).total == cold.total


def test_a_previous_fit_is_recognised_across_fit_and_fit_columns():
    # Both routes fingerprint a row alike (text, count, tool call, key): the previous request
    # of either is the unchanged prefix of the other's.
    rows = [{"text": f"turn {i}: " + "words " * 40, "layer": PromptLayer.CONVERSATION, "key": f"k{i}", "score": 0.0,
             "group": None, "tokens": None, "recoverable": False, "stale": False,
             "tool": ("read", f"f{i}.py") if i % 3 == 0 else None} for i in range(12)]
    budget = Budget(100_000)
    by_columns = ctxfast.fit_columns(budget=budget, cache="openai", **as_columns(rows))
    by_segments = ctxfast.fit(as_segments(rows), budget, cache="openai")
    again = ctxfast.fit(as_segments(rows), budget, cache="openai", previous=by_columns)
    assert again.cache.unchanged_prefix == by_columns.total == again.total
    again = ctxfast.fit_columns(budget=budget, cache="openai", previous=by_segments, **as_columns(rows))
    assert again.cache.unchanged_prefix == by_segments.total == again.total
    # A changed tool call is a changed row.
    rows[0]["tool"] = ("read", "other.py")
    changed = ctxfast.fit_columns(budget=budget, cache="openai", previous=by_segments, **as_columns(rows))
    assert changed.cache.unchanged_prefix == 0


def test_a_layer_name_is_read_in_any_case():
    got = ctxfast.fit_columns(["a", "b"], Budget(100), layers=["SYSTEM", "Conversation"])
    assert [s.layer for s in got.kept] == [PromptLayer.SYSTEM, PromptLayer.CONVERSATION]


def test_texts_come_back_from_the_callers_strings():
    # fit_columns borrows the texts for the fit; the Fit reads them back from the caller's str
    # objects (texts(), kept, evicted, a shortened copy), and a surrogate pair is joined as fit joins it.
    pair = "smile \ud83d\ude00 " * 3
    texts = ["system text", pair, "old " * 400, "middle " * 30, "ask"]
    layers = ["system", "conversation", "tool_result", "conversation", "current_turn"]
    segs = [Segment(t, layer) for t, layer in zip(texts, layers)]
    for window in (10_000, 200, 60):
        want = ctxfast.fit(segs, Budget(window), policy="agent")
        got = ctxfast.fit_columns(texts, Budget(window), layers=layers, policy="agent")
        assert got.texts() == want.texts()
        assert outcome(got) == outcome(want)
        assert [(t.original.text, t.segment.text) for t in got.truncated] == [(t.original.text, t.segment.text) for t in want.truncated]
    assert "\U0001F600" in ctxfast.fit_columns(texts, Budget(10_000), layers=layers).texts()[1]
