"""ContextWindow, seed 001 ("the context window"), behaviour by behaviour.

Keyed admission across layers, ordered eviction that never touches the prefix or the current
turn, eviction freeing the key, the honest error when the prefix alone cannot fit, the read-back
API (texts, segments, tokens, last_fit), current-turn demotion and what a cycle is.

Sizes are given with ``tokens=`` wherever the test is about ordering rather than counting, so
the arithmetic is exact and readable.
"""

from __future__ import annotations

import itertools

import pytest

import ctxfast
from ctxfast import ContextWindow, Policy, PromptLayer, Segment, Tokenizer

L = PromptLayer
ALL_LAYERS = [L.SYSTEM, L.TOOLS, L.PINNED, L.CURRENT_TURN, L.CONVERSATION, L.TOOL_RESULT, L.RETRIEVED, L.SUMMARY]
PROTECTED = [L.SYSTEM, L.TOOLS, L.PINNED, L.CURRENT_TURN]

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "def load(path):\n    with open(path, 'rb') as f:\n        return f.read()\n",
    '{"id": 17, "tags": ["alpha", "beta"], "score": 0.731}',
    "Café naïve façade — 日本語のテキスト、絵文字 🎉👍 and Ελληνικά.",
    "    indented\n\n\ttabs\tand   runs   of   spaces    ",
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife." * 7,
]


def seg(n: int, layer: PromptLayer = L.CONVERSATION, key: str | None = None, score: float = 0.0, **kw) -> Segment:
    """A segment of exactly ``n`` tokens (caller-given count), text naming its key."""
    return Segment(f"<{key or 'anon'} {n}>", layer, key, score, tokens=n, **kw)


def keys(segments) -> list[str | None]:
    return [s.key for s in segments]


def held_keys(w: ContextWindow) -> list[str | None]:
    return keys(w.segments())


# ---- counting ---------------------------------------------------------------------------------


def test_default_tokenizer_is_the_embedded_real_one():
    w = ContextWindow(limit_tokens=4096)
    ref = Tokenizer.default()
    assert w.tokenizer.name == ref.name == "o200k_base"
    assert w.tokenizer.is_exact
    total = 0
    for i, text in enumerate(TEXTS):
        assert w.admit(Segment(text, L.RETRIEVED, f"k{i}", 0.5))
        total += ref.count(text)
        assert w.tokens == total
    # the estimate would have said something else for these texts: the default is not it
    assert total != sum(ctxfast.approximate_tokens(t) for t in TEXTS)
    assert w.ledger.tokens_admitted == total


def test_a_bound_count_method_is_a_tokenizer():
    tok = Tokenizer.default()
    by_method = ContextWindow(limit_tokens=4096, tokenizer=tok.count)
    by_default = ContextWindow(limit_tokens=4096)
    for i, text in enumerate(TEXTS):
        by_method.admit(Segment(text, L.CONVERSATION, f"k{i}"))
        by_default.admit(Segment(text, L.CONVERSATION, f"k{i}"))
    assert by_method.tokens == by_default.tokens == sum(tok.count(t) for t in TEXTS)


@pytest.mark.parametrize("limit", [120, 200, 400])
def test_a_bound_count_method_evicts_exactly_like_the_default(limit):
    tok = Tokenizer.default()
    a = ContextWindow(limit, tokenizer=tok.count)
    b = ContextWindow(limit)
    for w in (a, b):
        w.admit(Segment(TEXTS[0], L.SYSTEM))
    for turn in range(6):
        for w in (a, b):
            w.admit(Segment(TEXTS[turn % len(TEXTS)], L.CONVERSATION, f"t{turn}"))
            w.admit(Segment(TEXTS[(turn + 2) % len(TEXTS)], L.RETRIEVED, f"r{turn}", score=(turn * 37 % 10) / 10))
        assert keys(a.fit()) == keys(b.fit())
        assert a.tokens == b.tokens <= limit
        assert held_keys(a) == held_keys(b)


def test_any_str_to_int_callable_counts():
    words = lambda text: len(text.split())  # noqa: E731
    w = ContextWindow(10, tokenizer=words)
    assert w.admit(Segment("one two three four", L.CONVERSATION, "a"))
    assert w.admit(Segment("five six seven eight", L.CONVERSATION, "b"))
    assert w.admit(Segment("nine ten eleven", L.CONVERSATION, "c"))
    assert w.tokens == 11
    assert keys(w.fit()) == ["a"]
    assert w.tokens == 7


def test_counting_happens_at_admission_once():
    calls: list[str] = []

    def counter(text: str) -> int:
        calls.append(text)
        return len(text.split())

    w = ContextWindow(100, tokenizer=Tokenizer.from_callable(counter, cache_capacity=0))
    w.admit(Segment("alpha beta gamma", L.CONVERSATION, "a"))
    w.admit(Segment("delta epsilon", L.RETRIEVED, "b", 0.3))
    assert calls == ["alpha beta gamma", "delta epsilon"]
    for _ in range(3):
        w.fit()
        w.texts(L.CONVERSATION)
        _ = w.tokens
    assert len(calls) == 2, "fit() and the read-backs must not recount held segments"


# ---- keyed admission --------------------------------------------------------------------------


def test_pinned_then_retrieved_with_the_same_key_is_refused():
    w = ContextWindow(limit_tokens=4096)
    page = "Page twelve of the runbook: restart the exporter, then drain the queue."
    assert w.admit(Segment(page, L.PINNED, "p12")) is True
    assert w.admit(Segment(page, L.RETRIEVED, "p12", 0.9)) is False
    assert w.texts(L.PINNED) == [page]
    assert w.texts(L.RETRIEVED) == []
    assert w.tokens == Tokenizer.default().count(page)
    assert w.ledger.refused_duplicates == 1
    assert w.ledger.admitted == 1


@pytest.mark.parametrize("first,second", list(itertools.product(ALL_LAYERS, ALL_LAYERS)),
                         ids=lambda l: l.label)
def test_keys_match_across_every_pair_of_layers(first, second):
    w = ContextWindow(1000)
    assert w.admit(seg(5, first, "same"))
    before = (w.tokens, held_keys(w))
    refused = seg(7, second, "same", 0.5)
    assert w.admit(refused) is False
    assert (w.tokens, held_keys(w)) == before
    assert w.segments()[0].layer == first
    assert w.why("same").admissions == 1


def test_a_refused_duplicate_keeps_the_first_copy_and_its_score():
    w = ContextWindow(1000)
    w.admit(seg(10, L.RETRIEVED, "c1", 0.2))
    assert not w.admit(seg(10, L.RETRIEVED, "c1", 0.95))
    (held,) = w.segments(L.RETRIEVED)
    assert held.score == 0.2


def test_key_none_is_never_deduplicated():
    w = ContextWindow(1000)
    for layer in ALL_LAYERS:
        if layer == L.CURRENT_TURN:
            continue
        assert w.admit(Segment("ok, thanks", layer))
        assert w.admit(Segment("ok, thanks", layer))
    assert len(w) == 14
    assert w.ledger.refused_duplicates == 0
    assert w.tokens == 14 * Tokenizer.default().count("ok, thanks")


def test_int_keys_are_keys():
    w = ContextWindow(1000)
    assert w.admit(seg(3, L.RETRIEVED, None, 0.1).replace(key=42))
    assert not w.admit(seg(3, L.PINNED, "42"))
    assert "42" in w
    assert w.why("42").status == "held"


# ---- fit: what leaves, in which order ----------------------------------------------------------


def _mixed_window(limit: int) -> ContextWindow:
    w = ContextWindow(limit)
    w.admit(seg(40, L.SYSTEM, "sys"))
    w.admit(seg(30, L.TOOLS, "tools"))
    w.admit(seg(20, L.PINNED, "pin"))
    w.admit(seg(10, L.CONVERSATION, "c1"))
    w.admit(seg(10, L.RETRIEVED, "r_mid", 0.5))
    w.admit(seg(10, L.CONVERSATION, "c2"))
    w.admit(seg(10, L.RETRIEVED, "r_low", 0.1))
    w.admit(seg(10, L.TOOL_RESULT, "tr3"))
    w.admit(seg(10, L.RETRIEVED, "r_high", 0.9))
    w.admit(seg(10, L.SUMMARY, "sum4"))
    w.admit(seg(10, L.RETRIEVED, "r_low2", 0.1))
    w.admit(seg(15, L.CURRENT_TURN, "q"))
    return w  # 40+30+20+15 = 105 protected, 80 evictable, 185 held


@pytest.mark.parametrize(
    "limit,expected",
    [
        (185, []),
        (184, ["c1"]),
        (175, ["c1"]),
        (174, ["c1", "c2"]),
        (155, ["c1", "c2", "tr3"]),
        (145, ["c1", "c2", "tr3", "sum4"]),
        (135, ["c1", "c2", "tr3", "sum4", "r_low"]),
        # ties in score leave in admission order
        (125, ["c1", "c2", "tr3", "sum4", "r_low", "r_low2"]),
        (115, ["c1", "c2", "tr3", "sum4", "r_low", "r_low2", "r_mid"]),
        (105, ["c1", "c2", "tr3", "sum4", "r_low", "r_low2", "r_mid", "r_high"]),
    ],
)
def test_fit_evicts_conversation_oldest_first_then_retrieved_lowest_score_first(limit, expected):
    w = _mixed_window(limit)
    gone = w.fit()
    assert keys(gone) == expected
    assert [e.segment.key for e in w.last_fit.evicted] == expected
    assert w.tokens <= limit
    held = held_keys(w)
    for k in ("sys", "tools", "pin", "q"):
        assert k in held
    assert set(held).isdisjoint(expected)
    # admission order of what stays is preserved
    order = keys(_mixed_window(10_000).segments())
    assert held == [k for k in order if k not in expected]


def test_fit_returns_the_objects_that_were_admitted():
    w = ContextWindow(50)
    a = seg(30, L.CONVERSATION, "a", meta={"turn": 1})
    b = seg(30, L.CONVERSATION, "b")
    w.admit(a)
    w.admit(b)
    (gone,) = w.fit()
    assert gone is a
    assert gone.meta == {"turn": 1}
    assert w.segments() == [b]


def test_fit_when_everything_fits_removes_nothing():
    w = _mixed_window(10_000)
    before = held_keys(w)
    assert w.fit() == []
    assert held_keys(w) == before
    assert w.last_fit.evicted == []
    assert w.ledger.fits == 1 and w.ledger.fits_that_evicted == 0


@pytest.mark.parametrize("protected", PROTECTED, ids=lambda l: l.label)
def test_protected_layers_are_never_evicted_even_when_they_are_the_largest(protected):
    w = ContextWindow(100)
    big = seg(90, protected, "big")
    w.admit(big)
    for i in range(5):
        w.admit(seg(5, L.CONVERSATION, f"c{i}"))
        w.admit(seg(5, L.RETRIEVED, f"r{i}", 0.1 * i))
    gone = w.fit()
    assert "big" not in keys(gone)
    assert "big" in w
    assert w.tokens <= 100
    assert all(s.layer not in PROTECTED for s in gone)


@pytest.mark.parametrize("protected", PROTECTED, ids=lambda l: l.label)
def test_a_group_with_a_protected_member_is_protected(protected):
    w = ContextWindow(60)
    w.admit(seg(30, protected, "p", group="g"))
    w.admit(seg(30, L.CONVERSATION, "c_in_group", group="g"))
    w.admit(seg(10, L.CONVERSATION, "c_alone"))
    assert keys(w.fit()) == ["c_alone"]
    assert held_keys(w) == ["p", "c_in_group"]
    # the group is protected as a whole: its unprotected member cannot be taken to make room
    tight = ContextWindow(50)
    tight.admit(seg(30, protected, "p", group="g"))
    tight.admit(seg(30, L.CONVERSATION, "c_in_group", group="g"))
    with pytest.raises(ctxfast.ContextWindowExceededError):
        tight.fit()
    assert held_keys(tight) == ["p", "c_in_group"]


def test_a_group_leaves_whole():
    w = ContextWindow(100)
    w.admit(seg(20, L.CONVERSATION, "call", group="ex1"))
    w.admit(seg(10, L.CONVERSATION, "later"))
    w.admit(seg(50, L.TOOL_RESULT, "result", group="ex1"))
    w.admit(seg(25, L.CONVERSATION, "answer", group="ex1"))
    assert keys(w.fit()) == ["call", "result", "answer"]
    assert held_keys(w) == ["later"]


# ---- eviction frees the key --------------------------------------------------------------------


def test_eviction_frees_the_key():
    w = ContextWindow(40)
    w.admit(seg(30, L.RETRIEVED, "chunk-7", 0.2))
    w.admit(seg(30, L.RETRIEVED, "chunk-8", 0.8))
    assert keys(w.fit()) == ["chunk-7"]
    assert "chunk-7" not in w
    assert w.why("chunk-7").status == "evicted_dispensable"
    # the model no longer has it: it is admissible again
    assert w.admit(seg(5, L.RETRIEVED, "chunk-7", 0.9))
    assert "chunk-7" in w
    why = w.why("chunk-7")
    assert why.status == "held" and why.admissions == 2 and why.tokens_before == 5
    # and a duplicate of the re-admitted copy is refused again
    assert not w.admit(seg(5, L.PINNED, "chunk-7"))


# ---- the prefix that cannot fit alone -----------------------------------------------------------


def _snapshot(w: ContextWindow) -> tuple:
    led = w.ledger
    return (
        w.tokens,
        len(w),
        w.cycle,
        [(s.key, s.layer, s.text) for s in w.segments()],
        [(x.key, x.status, x.cycle, x.rung, x.tokens_before, x.tokens_after) for x in w.ledger_entries()],
        (led.admitted, led.fits, led.evictions, led.rewrites, led.discards, led.tokens_held, dict(led.rung_firings)),
        w.stable_prefix_tokens,
    )


@pytest.mark.parametrize(
    "prefix",
    [
        [(80, L.SYSTEM)],
        [(40, L.SYSTEM), (40, L.TOOLS), (30, L.PINNED)],
        [(60, L.TOOLS), (60, L.PINNED)],
    ],
)
def test_a_prefix_that_cannot_fit_alone_raises_and_changes_nothing(prefix):
    w = ContextWindow(100, reserve=25)  # ceiling 75
    w.admit(seg(10, L.CONVERSATION, "c0"))
    w.admit(seg(10, L.RETRIEVED, "r0", 0.5))
    w.fit()
    first_fit = w.last_fit
    for i, (n, layer) in enumerate(prefix):
        w.admit(seg(n, layer, f"p{i}"))
    w.admit(seg(10, L.CONVERSATION, "c1"))
    before = _snapshot(w)
    with pytest.raises(ctxfast.ContextWindowExceededError) as info:
        w.fit()
    err = info.value
    assert isinstance(err, ctxfast.CtxfastError)
    assert isinstance(err, ctxfast.Unfittable)
    assert err.ceiling == 75
    assert err.total == sum(n for n, _ in prefix)
    assert err.shortfall == err.total - 75
    assert sorted(n for _, n in err.components) == sorted(n for n, _ in prefix)
    assert _snapshot(w) == before
    assert w.last_fit is first_fit
    # and the window still works once the caller fixes the prefix
    for i in range(len(prefix)):
        w.discard(f"p{i}")
    assert w.fit() == []
    assert w.cycle == 2


def test_the_current_turn_alone_over_the_ceiling_raises():
    w = ContextWindow(100)
    w.admit(seg(150, L.CURRENT_TURN, "q"))
    with pytest.raises(ctxfast.ContextWindowExceededError):
        w.fit()
    assert "q" in w


# ---- read-back: texts, segments, tokens, last_fit ----------------------------------------------


def test_texts_segments_and_tokens():
    w = ContextWindow(10_000)
    w.admit(Segment("system prompt", L.SYSTEM))
    w.admit(Segment("chunk one", L.RETRIEVED, "r1", 0.4))
    w.admit(Segment("hello", L.CONVERSATION, "c1"))
    w.admit(Segment("chunk two", L.RETRIEVED, "r2", 0.6))
    w.admit(Segment("question?", L.CURRENT_TURN, "q"))
    assert w.texts(L.RETRIEVED) == ["chunk one", "chunk two"]
    assert w.texts("retrieved") == ["chunk one", "chunk two"]
    assert w.texts(L.SUMMARY) == []
    assert [s.text for s in w.segments()] == ["system prompt", "chunk one", "hello", "chunk two", "question?"]
    assert keys(w.segments(L.RETRIEVED)) == ["r1", "r2"]
    assert keys(w.segments("current_turn")) == ["q"]
    assert keys(w.segments(None)) == keys(w.segments())
    tok = Tokenizer.default()
    assert w.tokens == sum(tok.count(s.text) for s in w.segments()) == w.ledger.tokens_held
    assert len(w) == 5
    assert "r1" in w and "nope" not in w
    with pytest.raises(ctxfast.CtxfastError):
        w.texts("no_such_layer")
    with pytest.raises(ValueError):
        w.segments("no_such_layer")


def test_last_fit_is_the_fit_with_its_trace():
    w = ContextWindow(100, reserve=20)
    assert w.last_fit is None
    w.admit(seg(30, L.SYSTEM, "sys"))
    w.admit(seg(20, L.CONVERSATION, "c1"))
    w.admit(seg(20, L.CONVERSATION, "c2"))
    w.admit(seg(20, L.RETRIEVED, "r1", 0.3))
    gone = w.fit()
    f = w.last_fit
    assert isinstance(f, ctxfast.Fit)
    assert f.ceiling == 80 == w.ceiling
    assert f.total == w.tokens == 70
    assert f.over_by == 10
    assert f.spare == 10
    assert keys(f.kept) == held_keys(w)
    assert [e.segment.key for e in f.evicted] == keys(gone) == ["c1"]
    assert f.evicted[0].rung == "conversation.oldest_first"
    assert f.evicted[0].tokens == 20
    assert len(f.trace.rows) == 1
    text = f.explain()
    assert "conversation.oldest_first" in text and "c1" in text
    assert str(f.trace) == text or "c1" in str(f.trace)
    # a later fit replaces it
    w.fit()
    assert w.last_fit is not f
    assert w.last_fit.evicted == []


# ---- the current turn --------------------------------------------------------------------------


def test_a_new_current_turn_demotes_the_previous_one():
    w = ContextWindow(10_000)
    w.admit(seg(5, L.SYSTEM, "sys"))
    w.admit(seg(10, L.CURRENT_TURN, "q1", group="turn1", meta={"n": 1}))
    w.admit(seg(10, L.CONVERSATION, "a1", group="turn1"))
    assert keys(w.segments(L.CURRENT_TURN)) == ["q1"]
    assert w.admit(seg(10, L.CURRENT_TURN, "q2"))
    assert keys(w.segments(L.CURRENT_TURN)) == ["q2"]
    assert keys(w.segments(L.CONVERSATION)) == ["q1", "a1"]
    demoted = w.segments()[1]
    assert demoted.key == "q1" and demoted.layer == L.CONVERSATION
    assert demoted.group == "turn1" and demoted.meta == {"n": 1} and demoted.text == "<q1 10>"
    assert w.why("q1").layer == L.CONVERSATION
    assert w.tokens == 35  # demotion moves nothing and recounts nothing
    assert held_keys(w) == ["sys", "q1", "a1", "q2"]


def test_a_demoted_turn_is_evictable_and_the_new_one_is_not():
    w = ContextWindow(40)
    w.admit(seg(25, L.CURRENT_TURN, "q1"))
    w.admit(seg(25, L.CURRENT_TURN, "q2"))
    assert keys(w.fit()) == ["q1"]
    assert held_keys(w) == ["q2"]


def test_a_refused_current_turn_demotes_nothing():
    w = ContextWindow(1000)
    w.admit(seg(10, L.CURRENT_TURN, "q1"))
    assert not w.admit(seg(10, L.CURRENT_TURN, "q1"))
    assert keys(w.segments(L.CURRENT_TURN)) == ["q1"]


# ---- cycles --------------------------------------------------------------------------------------


def test_a_cycle_is_the_admissions_since_the_previous_fit():
    w = ContextWindow(1000)
    assert w.cycle == 0
    w.admit(seg(10, L.CONVERSATION, "a"))
    w.admit(seg(10, L.CONVERSATION, "b"))
    assert w.why("a").cycle == w.why("b").cycle == 0
    w.fit()
    assert w.cycle == 1
    w.admit(seg(10, L.CONVERSATION, "c"))
    assert w.why("c").cycle == 1
    w.fit()
    w.fit()  # an empty cycle is still a cycle
    assert w.cycle == 3
    w.admit(seg(10, L.CONVERSATION, "d"))
    assert w.why("d").cycle == 3
    assert w.ledger.fits == 3


def test_evictions_record_the_cycle_of_the_fit_that_made_them():
    w = ContextWindow(30)
    w.admit(seg(20, L.CONVERSATION, "a"))
    w.fit()  # cycle 0: fits
    w.admit(seg(20, L.CONVERSATION, "b"))
    w.fit()  # cycle 1: a leaves
    assert w.why("a").status == "evicted_dispensable"
    assert w.why("a").cycle == 1
    assert w.why("a").rung == "conversation.oldest_first"
    assert (w.why("a").tokens_before, w.why("a").tokens_after) == (20, 0)


def test_the_default_policy_is_context_window():
    w = ContextWindow(100)
    assert w.policy == Policy.context_window()
    assert w.policy.name == "context_window"
    assert w.limit_tokens == 100 and w.reserve == 0 and w.ceiling == 100 and w.low_watermark is None
