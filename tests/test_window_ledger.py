"""ContextWindow, seed 002 ("eviction vs rewrite"): every absent span can say why it is absent.

- ``why(key)``: held, or exactly one of evicted_recoverable / evicted_dispensable / rewritten /
  truncated, with the cycle, the rung and the tokens before and after;
- ``rewrite``: tag-or-drop (no provenance -> UntaggedRewriteError), a "compression" that does not
  compress and has no external copy -> BudgetLedgerInconsistency, never compress-then-immediately-
  spend (a rewrite in a cycle that admitted non-recoverable content is deferred to the fit);
- ``discard``, ``mark_stale``, ``digest``;
- the ledger's counters and token totals, which always balance.
"""

from __future__ import annotations

from collections import Counter

import pytest

import ctxfast
from ctxfast import ContextWindow, Policy, PromptLayer, Segment, Tokenizer
from helpers import word_count, words

L = PromptLayer
ABSENT = {"evicted_recoverable", "evicted_dispensable", "rewritten"}
STATUSES = ABSENT | {"held", "truncated"}


def seg(n: int, layer: PromptLayer = L.CONVERSATION, key: str | None = None, score: float = 0.0, **kw) -> Segment:
    return Segment(f"<{key or 'anon'} {n}>", layer, key, score, tokens=n, **kw)


def keys(segments) -> list[str | None]:
    return [s.key for s in segments]


def why_tuple(w: ContextWindow, key: str) -> tuple:
    x = w.why(key)
    return (x.status, x.cycle, x.rung, x.tokens_before, x.tokens_after)


def assert_ledger_consistent(w: ContextWindow) -> None:
    led = w.ledger
    assert led.balanced
    assert led.tokens_held == w.tokens
    assert (
        led.tokens_admitted + led.tokens_surrogates_added
        == led.tokens_held
        + led.tokens_evicted_recoverable
        + led.tokens_evicted_dispensable
        + led.tokens_rewritten_away
        + led.tokens_truncated_away
    )
    tok = w.tokenizer
    assert w.tokens == sum(s.tokens if s.tokens is not None else s.count(tok) for s in w.segments())


# ---- why(): one answer per key --------------------------------------------------------------------


def test_every_absent_key_has_exactly_one_reason():
    """One window, each kind of absence produced, each answered precisely (words = tokens)."""
    w = ContextWindow(3000, tokenizer=word_count, policy=Policy.troubleshooting())
    w.admit(Segment("system prompt here", L.SYSTEM, "sys"))
    for i in range(6):
        w.admit(Segment(words(20, tag=f"u{i}_"), L.CONVERSATION, f"u{i}"))
    for i, score in enumerate([0.9, 0.8, 0.7, 0.6, 0.5, 0.1]):
        w.admit(Segment(words(400, tag=f"r{i}_"), L.RETRIEVED, f"r{i}", score, recoverable=i == 5))
    w.admit(Segment(words(60, tag="doc"), L.RETRIEVED, "doc", 0.95, recoverable=True))
    assert w.tokens == 3 + 120 + 2400 + 60
    assert w.fit() == []
    assert w.cycle == 1
    # cycle 1: the caller discards a chunk and rewrites an exchange (a quiet cycle so far)...
    w.discard("r4")
    assert w.rewrite("u2", "the second exchange, briefly", provenance="summariser-v1") is True
    # ...then a question and a large pinned document arrive: 930 over the ceiling
    w.admit(Segment(words(30, tag="q"), L.CURRENT_TURN, "q"))
    w.admit(Segment(words(1727, tag="pin"), L.PINNED, "pin"))
    assert w.tokens == 3000 + 930
    gone = w.fit()

    # history: the oldest exchanges above the floor (first + last 3), the surrogate among them;
    # retrieval: the lowest scores above the floor (top 4); then one body truncated
    assert keys(gone) == ["u1", None, "r5", "r3"]
    answers = {x.key: x for x in w.ledger_entries()}
    assert set(answers) == {"sys", "q", "pin", "doc"} | {f"u{i}" for i in range(6)} | {f"r{i}" for i in range(6)}
    for key, x in answers.items():
        assert x.status in STATUSES, key
        assert (key in w) == (x.status in {"held", "truncated"}), key
    hist, drop, trunc = Policy.troubleshooting().rung_names
    sur = word_count("[lossy summary of u2 by summariser-v1] the second exchange, briefly")
    assert why_tuple(w, "u1") == ("evicted_dispensable", 1, hist, 20, 0)
    assert why_tuple(w, "u2") == ("rewritten", 1, "rewrite", 20, sur)
    assert w.why("u2").provenance == "summariser-v1"
    assert why_tuple(w, "r4") == ("evicted_dispensable", 1, "discard", 400, 0)
    assert why_tuple(w, "r5") == ("evicted_recoverable", 1, drop, 400, 0)
    assert why_tuple(w, "r3") == ("evicted_dispensable", 1, drop, 400, 0)
    assert why_tuple(w, "r2") == ("truncated", 1, trunc, 400, 400 - (930 - 20 - sur - 800))
    for k in ("sys", "q", "pin", "doc", "u0", "u3", "u4", "u5", "r0", "r1"):
        x = w.why(k)
        assert (x.status, x.rung) == ("held", None), k
        assert x.tokens_before == x.tokens_after
    assert w.why("q").cycle == 1 and w.why("u0").cycle == 0
    assert w.tokens == 3000
    led = w.ledger
    assert (led.evictions, led.discards, led.rewrites, led.truncations) == (4, 1, 1, 1)
    assert w.last_fit.rungs_fired == [hist, drop, trunc]
    assert led.tokens_evicted_recoverable == 400
    assert led.tokens_evicted_dispensable == 20 + sur + 400 + 400
    assert led.tokens_rewritten_away == 20 and led.tokens_surrogates_added == sur
    assert_ledger_consistent(w)


def test_each_status_is_produced_with_its_numbers():
    """One key per status, built in isolation, so each answer can be checked in full."""
    # evicted_recoverable vs evicted_dispensable: the segment's recoverable flag decides
    w = ContextWindow(50)
    w.admit(seg(30, L.RETRIEVED, "refetchable", 0.1, recoverable=True))
    w.admit(seg(30, L.RETRIEVED, "dispensable", 0.2))
    w.admit(seg(30, L.RETRIEVED, "kept", 0.9))
    w.fit()
    assert why_tuple(w, "refetchable") == ("evicted_recoverable", 0, "retrieved.lowest_score_first", 30, 0)
    assert why_tuple(w, "dispensable") == ("evicted_dispensable", 0, "retrieved.lowest_score_first", 30, 0)
    assert why_tuple(w, "kept") == ("held", 0, None, 30, 30)
    assert w.ledger.tokens_evicted_recoverable == 30
    assert w.ledger.tokens_evicted_dispensable == 30

    # truncated: still present, shortened, with both sizes
    w = ContextWindow(700, policy=Policy.troubleshooting())
    body = " ".join(f"w{i}" for i in range(600))
    n = Tokenizer.default().count(body)
    for i in range(5):
        w.admit(Segment(body, L.RETRIEVED, f"c{i}", 0.1 * (i + 1)))
    w.fit()
    x = w.why("c1")
    assert (x.status, x.cycle, x.rung, x.tokens_before) == ("truncated", 0, "retrieval.truncate_chunk_bodies", n)
    assert 128 <= x.tokens_after < n
    assert "c1" in w
    (held,) = [s for s in w.segments() if s.key == "c1"]
    assert held.count(w.tokenizer) == x.tokens_after
    assert body.startswith(held.text)
    assert w.ledger.truncations == len(w.last_fit.truncated) >= 1
    assert w.ledger.tokens_truncated_away == sum(t.tokens_before - t.tokens_after for t in w.last_fit.truncated)
    assert_ledger_consistent(w)


def test_unknown_keys_raise_keyerror():
    w = ContextWindow(100)
    w.admit(seg(10, L.CONVERSATION, "known"))
    for call in (
        lambda: w.why("never"),
        lambda: w.discard("never"),
        lambda: w.mark_stale("never"),
        lambda: w.rewrite("never", "x", provenance="m"),
        lambda: w.digest("never"),
    ):
        with pytest.raises(KeyError) as info:
            call()
        assert isinstance(info.value, ctxfast.CtxfastError)
        assert isinstance(info.value, ctxfast.UnknownKeyError)
        assert "never" in str(info.value)
    # a key that was admitted and left still answers; acting on it is an unknown-key error
    w.discard("known")
    assert w.why("known").status == "evicted_dispensable"
    with pytest.raises(KeyError):
        w.discard("known")
    with pytest.raises(KeyError):
        w.rewrite("known", "x", provenance="m")


def test_why_rejects_a_non_string_key():
    w = ContextWindow(100)
    with pytest.raises(TypeError):
        w.why(None)  # type: ignore[arg-type]


# ---- rewrite: tag-or-drop --------------------------------------------------------------------------


def _quiet_window(n: int = 40, **kw) -> ContextWindow:
    """A window holding one long exchange, after a fit (so the current cycle is quiet)."""
    w = ContextWindow(1000, tokenizer=word_count)
    w.admit(Segment(words(n), L.CONVERSATION, "long", 0.4, group="ex", **kw))
    w.admit(Segment("after", L.CONVERSATION, "after"))
    w.fit()
    return w


def test_rewrite_replaces_the_segment_by_a_tagged_lossy_surrogate():
    w = _quiet_window()
    assert w.rewrite("long", "timeout configured", provenance="gpt-x/summarise") is True
    assert "long" not in w
    sur = w.segments()[0]
    # the text itself carries the tag: the model can see what it stands for
    assert sur.text.startswith("[lossy summary of long by gpt-x/summarise]")
    assert sur.text.endswith("timeout configured")
    assert sur.meta == {"lossy": True, "source_key": "long", "provenance": "gpt-x/summarise"}
    assert sur.layer == L.CONVERSATION and sur.group == "ex" and sur.score == 0.4
    assert sur.key is None
    assert keys(w.segments())[1:] == ["after"]
    after = word_count(sur.text)
    x = w.why("long")
    assert (x.status, x.rung, x.tokens_before, x.tokens_after, x.provenance) == ("rewritten", "rewrite", 40, after, "gpt-x/summarise")
    assert x.cycle == 1
    led = w.ledger
    assert led.rewrites == 1 and led.deferred_rewrites == 0 and led.evictions == 0
    assert led.tokens_rewritten_away == 40 and led.tokens_surrogates_added == after
    assert w.tokens == after + 1
    assert_ledger_consistent(w)


@pytest.mark.parametrize("provenance", [None, "", "   "])
def test_rewrite_without_provenance_is_refused(provenance):
    w = _quiet_window()
    before = (w.tokens, keys(w.segments()), why_tuple(w, "long"))
    kwargs = {} if provenance is None else {"provenance": provenance}
    with pytest.raises(ctxfast.UntaggedRewriteError) as info:
        w.rewrite("long", "gist", **kwargs)
    assert isinstance(info.value, ctxfast.CtxfastError)
    assert "long" in str(info.value)
    assert (w.tokens, keys(w.segments()), why_tuple(w, "long")) == before
    assert w.ledger.rewrites == 0


def test_a_rewrite_that_does_not_compress_is_a_ledger_inconsistency():
    w = _quiet_window(n=10)
    # the tag costs 6 words ("[lossy summary of long by m]"), so 4 more words is exactly as big
    for text in (words(4), words(5), words(50)):
        with pytest.raises(ctxfast.BudgetLedgerInconsistency) as info:
            w.rewrite("long", text, provenance="m")
        assert isinstance(info.value, ctxfast.CtxfastError)
        assert "long" in w
    assert w.why("long").status == "held"
    assert w.ledger.rewrites == 0
    assert w.rewrite("long", words(3), provenance="m") is True  # 9 < 10
    assert_ledger_consistent(w)


def test_a_growing_rewrite_is_allowed_when_an_external_copy_exists():
    w = _quiet_window(n=10, recoverable=True)
    assert w.rewrite("long", words(50), provenance="m") is True
    x = w.why("long")
    assert x.status == "rewritten" and (x.tokens_before, x.tokens_after) == (10, 56)
    assert w.segments()[0].recoverable
    assert_ledger_consistent(w)


def test_the_surrogate_frees_the_key():
    w = _quiet_window()
    w.rewrite("long", "gist", provenance="m")
    # the original can be fetched again: it is a different segment from its surrogate
    assert w.admit(Segment(words(40), L.RETRIEVED, "long", 0.9))
    assert w.why("long").status == "held" and w.why("long").admissions == 2


# ---- never compress-then-immediately-spend ---------------------------------------------------------


def test_a_rewrite_in_a_busy_cycle_is_deferred_to_the_fit():
    w = _quiet_window(n=40)
    held_before = w.tokens  # 41
    w.admit(Segment(words(20, tag="new"), L.RETRIEVED, "fresh-read", 0.5))  # non-recoverable
    assert w.rewrite("long", "gist of it", provenance="m") is False
    # nothing happened yet
    assert "long" in w
    assert w.why("long").status == "held"
    assert w.ledger.rewrites == 0 and w.ledger.deferred_rewrites == 1
    assert w.tokens == held_before + 20
    gone = w.fit()
    # that fit counted the original...
    assert w.last_fit.total == held_before + 20
    assert "long" in keys(w.last_fit.kept)
    # ...and the surrogate replaced it as the fit returned; it is not reported as evicted
    assert gone == []
    assert "long" not in w
    sur = w.segments()[0]
    assert sur.meta["source_key"] == "long" and sur.text.endswith("gist of it")
    x = w.why("long")
    assert (x.status, x.cycle, x.rung, x.tokens_before) == ("rewritten", 1, "rewrite", 40)
    assert x.tokens_after == word_count(sur.text)
    assert w.ledger.rewrites == 1 and w.ledger.evictions == 0
    assert w.tokens == x.tokens_after + 1 + 20
    assert_ledger_consistent(w)


def test_the_deferred_original_is_what_makes_that_fit_evict():
    w = ContextWindow(70, tokenizer=word_count)
    w.admit(Segment(words(40), L.PINNED, "long"))
    w.fit()
    w.admit(Segment(words(10, tag="x"), L.RETRIEVED, "low", 0.1))
    w.admit(Segment(words(25, tag="y"), L.RETRIEVED, "high", 0.9))
    assert w.rewrite("long", "gist", provenance="m") is False
    # 40 + 10 + 25 = 75 > 70: the fit counts the original and makes room for it. Had the
    # surrogate (7 words) been spent first, 7 + 35 would fit and nothing would leave.
    assert keys(w.fit()) == ["low"]
    assert w.last_fit.over_by == 5 and w.last_fit.total == 65
    assert w.why("long").status == "rewritten"
    assert w.tokens == 7 + 25
    assert_ledger_consistent(w)


def test_a_deferred_rewrite_whose_original_the_fit_evicted_is_dropped():
    w = ContextWindow(60, tokenizer=word_count)
    w.admit(Segment(words(40), L.CONVERSATION, "long"))
    w.fit()
    w.admit(Segment(words(30, tag="n"), L.RETRIEVED, "new", 0.5))
    assert w.rewrite("long", "gist", provenance="m") is False
    assert keys(w.fit()) == ["long"]
    x = w.why("long")
    assert (x.status, x.rung) == ("evicted_dispensable", "conversation.oldest_first")
    assert w.ledger.rewrites == 0
    assert not any((s.meta or {}).get("lossy") for s in w.segments())
    assert_ledger_consistent(w)


def test_recoverable_admissions_do_not_make_a_cycle_busy():
    w = _quiet_window()
    w.admit(Segment(words(20, tag="r"), L.RETRIEVED, "refetchable", 0.5, recoverable=True))
    assert not w.admit(Segment(words(20, tag="r"), L.RETRIEVED, "after", 0.5))  # a refused duplicate neither
    assert w.rewrite("long", "gist", provenance="m") is True
    assert w.why("long").status == "rewritten"


def test_the_cycle_after_a_fit_is_quiet_again():
    w = _quiet_window()
    w.admit(Segment(words(5, tag="n"), L.CONVERSATION, "n1"))
    assert w.rewrite("long", "gist", provenance="m") is False
    w.admit(Segment(words(50, tag="z"), L.CONVERSATION, "big"))
    w.fit()
    assert w.why("long").status == "rewritten"
    assert w.rewrite("big", "gist of big", provenance="m") is True


def test_a_second_deferred_rewrite_of_the_same_key_replaces_the_first():
    w = _quiet_window()
    w.admit(Segment(words(5, tag="n"), L.CONVERSATION, "n1"))
    assert w.rewrite("long", "first gist", provenance="m1") is False
    assert w.rewrite("long", "second gist", provenance="m2") is False
    w.fit()
    lossy = [s for s in w.segments() if (s.meta or {}).get("lossy")]
    assert len(lossy) == 1 and lossy[0].text.endswith("second gist")
    assert w.why("long").provenance == "m2"
    assert w.ledger.rewrites == 1 and w.ledger.deferred_rewrites == 2
    assert_ledger_consistent(w)


def test_a_deferred_rewrite_does_not_land_on_a_later_segment_with_the_same_key():
    w = ContextWindow(1000, tokenizer=word_count)
    w.admit(Segment(words(100), L.CONVERSATION, "a"))
    w.fit()
    w.admit(Segment(words(10, tag="n"), L.CONVERSATION, "n"))
    assert w.rewrite("a", "summary of the old a", provenance="m") is False
    w.discard("a")  # the caller drops the original instead
    fresh = Segment("brand new content for a", L.CONVERSATION, "a")
    assert w.admit(fresh)
    w.fit()
    # expected: the new "a" is untouched; the pending rewrite died with its original
    assert "a" in w
    assert w.why("a").status == "held"
    assert fresh.text in w.texts(L.CONVERSATION)
    assert not any("summary of the old a" in t for t in w.texts(L.CONVERSATION))


# ---- discard --------------------------------------------------------------------------------------


@pytest.mark.parametrize("recoverable,status", [(True, "evicted_recoverable"), (False, "evicted_dispensable")])
def test_discard_records_like_an_eviction_and_frees_the_key(recoverable, status):
    w = ContextWindow(1000)
    s = seg(30, L.RETRIEVED, "last-turn-chunk", 0.7, recoverable=recoverable)
    w.admit(s)
    w.admit(seg(10, L.CONVERSATION, "c"))
    w.fit()
    out = w.discard("last-turn-chunk")
    assert out is s
    assert "last-turn-chunk" not in w
    assert why_tuple(w, "last-turn-chunk") == (status, 1, "discard", 30, 0)
    led = w.ledger
    assert led.discards == 1 and led.evictions == 0
    if recoverable:
        assert led.tokens_evicted_recoverable == 30
    else:
        assert led.tokens_evicted_dispensable == 30
    assert w.tokens == 10
    assert w.admit(seg(30, L.RETRIEVED, "last-turn-chunk", 0.7))
    assert_ledger_consistent(w)


def test_discard_needs_no_fit_and_does_not_start_a_cycle():
    w = ContextWindow(1000)
    w.admit(seg(30, L.RETRIEVED, "x", 0.7))
    w.discard("x")
    assert w.cycle == 0 and w.ledger.fits == 0
    assert w.why("x").cycle == 0


# ---- mark_stale ---------------------------------------------------------------------------------


def _seven_tier_turns(stale: str | None) -> tuple[list, ContextWindow]:
    w = ContextWindow(300, policy=Policy.seven_tier())
    w.admit(seg(10, L.SYSTEM, "sys"))
    for i in range(3):
        w.admit(seg(50, L.CONVERSATION, f"c{i}"))
    w.admit(seg(50, L.TOOL_RESULT, "tr1"))
    w.admit(seg(50, L.TOOL_RESULT, "tr2"))
    assert w.fit() == []
    if stale:
        w.mark_stale(stale)
    w.admit(seg(60, L.CURRENT_TURN, "q"))
    return w.fit(), w


def test_mark_stale_makes_seven_tier_take_it_first():
    gone, w = _seven_tier_turns(stale=None)
    assert keys(gone) == ["c0"]
    assert w.why("c0").rung == "recent_turns"

    gone, w = _seven_tier_turns(stale="tr2")
    assert keys(gone) == ["tr2"]
    assert gone[0].stale
    x = w.why("tr2")
    assert (x.status, x.rung) == ("evicted_dispensable", "stale_tool_results")
    assert w.last_fit.rungs_fired == ["stale_tool_results"]
    assert "c0" in w


def test_mark_stale_flags_the_held_segment():
    w = ContextWindow(1000)
    w.admit(seg(10, L.TOOL_RESULT, "r", meta={"call": 1}))
    w.mark_stale("r")
    w.mark_stale("r")  # idempotent
    (s,) = w.segments()
    assert s.stale and s.key == "r" and s.meta == {"call": 1}
    assert w.why("r").status == "held"
    assert w.tokens == 10
    assert_ledger_consistent(w)


# ---- digest -------------------------------------------------------------------------------------


def _tool_exchange(w: ContextWindow, step: int, result: str, *, group: str | None = None, recoverable=False) -> None:
    group = group or f"ex{step}"
    w.admit(Segment(f"Let me read the config (step {step}).", L.CONVERSATION, f"call{step}", group=group,
                    meta={"tool": "read_file", "arguments": {"path": f"conf/{step}.yaml"}, "step": step}))
    w.admit(Segment(result, L.TOOL_RESULT, f"result{step}", group=group, recoverable=recoverable))


def test_digest_replaces_a_tool_exchange_by_its_record():
    w = ContextWindow(100_000)
    w.admit(Segment("You are an operations assistant.", L.SYSTEM))
    w.admit(Segment("why does the exporter time out?", L.CONVERSATION, "u1"))
    result = "\n".join(f"timeout_ms: {4500 + i}" for i in range(200))
    _tool_exchange(w, 3, result)
    w.admit(Segment("The timeout is 4500 ms.", L.CONVERSATION, "u2"))
    w.fit()
    before = w.tokens
    record = w.digest("result3")
    assert record.text.startswith("[compacted] step 3")
    assert "read_file" in record.text and "conf/3.yaml" in record.text
    assert record.layer == L.CONVERSATION and record.group == "ex3" and record.key is None
    assert record.meta == {"lossy": True, "source_key": "result3", "provenance": "digest"}
    held = w.segments()
    assert keys(held) == [None, "u1", None, "u2"]
    assert held[2] == record
    n = record.count(w.tokenizer)
    for k in ("call3", "result3"):
        x = w.why(k)
        assert (x.status, x.rung, x.tokens_after, x.provenance, x.cycle) == ("rewritten", "digest", n, "digest", 1)
    tok = w.tokenizer
    assert w.why("result3").tokens_before == tok.count(result)
    assert w.tokens == before - tok.count(result) - w.why("call3").tokens_before + n
    assert w.ledger.digests == 1 and w.ledger.rewrites == 0 and w.ledger.evictions == 0
    assert_ledger_consistent(w)


def test_digest_by_the_call_key_is_the_same_record():
    a, b = ContextWindow(10_000), ContextWindow(10_000)
    for w in (a, b):
        _tool_exchange(w, 7, "rows: " + ", ".join(str(i) for i in range(300)))
    assert a.digest("call7").text == b.digest("result7").text


def test_digest_of_something_that_is_not_a_tool_exchange_is_refused():
    w = ContextWindow(10_000)
    w.admit(Segment("just a message", L.CONVERSATION, "m"))
    w.admit(Segment("a chunk", L.RETRIEVED, "r", 0.5))
    for k in ("m", "r"):
        with pytest.raises(ctxfast.CtxfastError) as info:
            w.digest(k)
        assert isinstance(info.value, ValueError)
    assert w.ledger.digests == 0 and w.tokens == w.ledger.tokens_admitted


def test_digest_never_grows_a_non_recoverable_exchange():
    w = ContextWindow(10_000)
    w.admit(Segment("c", L.CONVERSATION, "c", group="g", tokens=2,
                    meta={"tool": "grep", "arguments": {"q": "x"}, "step": 1}))
    w.admit(Segment("r", L.TOOL_RESULT, "r", group="g", tokens=2))
    try:
        w.digest("r")
    except ctxfast.BudgetLedgerInconsistency:
        pass
    assert w.tokens <= 4
    for k in ("c", "r"):
        x = w.why(k)
        assert x.status == "held" or x.tokens_after < 4


# ---- counters ------------------------------------------------------------------------------------


def test_the_counters_match_what_happened():
    w = ContextWindow(200, tokenizer=word_count)
    w.admit(Segment(words(20, tag="s"), L.SYSTEM, "sys"))
    expected_evictions = fits_that_evicted = 0
    history = []
    for turn in range(8):
        w.admit(Segment(words(30, tag=f"u{turn}_"), L.CONVERSATION, f"u{turn}"))
        w.admit(Segment(words(15, tag=f"r{turn}_"), L.RETRIEVED, f"r{turn}", (turn % 3) / 3))
        w.admit(Segment(words(15, tag=f"r{turn}_"), L.PINNED, f"r{turn}"))  # refused
        if turn == 3:
            w.discard("r3")
        if turn == 5:
            assert w.rewrite("u4", "gist", provenance="m") is False  # busy: deferred
        if turn == 6:
            w.mark_stale("r6")
        gone = w.fit()
        history.append(keys(gone))
        expected_evictions += len(gone)
        fits_that_evicted += bool(gone)
        assert_ledger_consistent(w)
        assert w.tokens <= 200
    # the u4 surrogate (no key) is the oldest conversation unit by turn 7
    assert history == [[], [], [], [], ["u0"], ["u1", "u2"], ["u3"], [None, "u5"]]
    led = w.ledger
    assert led.admitted == 1 + 16
    assert led.refused_duplicates == 8
    assert led.fits == 8
    assert led.evictions == expected_evictions
    assert led.discards == 1
    assert led.deferred_rewrites == 1
    assert led.rewrites == 1 and w.why("u4").status == "rewritten" and w.why("u4").cycle == 5
    assert led.truncations == 0
    assert led.fits_that_evicted == fits_that_evicted >= 1
    entries = w.ledger_entries()
    assert keys_of(entries) == sorted(keys_of(entries))
    assert led.tokens_admitted == 20 + 8 * 45


def keys_of(whys) -> list[str]:
    return [x.key for x in whys]


def test_evictions_count_segments_of_a_group():
    w = ContextWindow(60)
    w.admit(seg(20, L.CONVERSATION, "call", group="ex"))
    w.admit(seg(20, L.TOOL_RESULT, "res", group="ex"))
    w.admit(seg(20, L.CONVERSATION, "ans", group="ex"))
    w.admit(seg(20, L.RETRIEVED, "r", 0.5))
    assert keys(w.fit()) == ["call", "res", "ans"]
    led = w.ledger
    assert led.evictions == 3
    assert led.fits_that_evicted == 1
    assert w.last_fit.rungs_fired == ["conversation.oldest_first"]


def test_truncation_counters_under_troubleshooting():
    w = ContextWindow(700, policy=Policy.troubleshooting())
    w.admit(seg(10, L.SYSTEM, "sys"))
    body = " ".join(f"w{i}" for i in range(600))
    for i in range(5):
        w.admit(Segment(body, L.RETRIEVED, f"r{i}", 0.1 * (i + 1)))
    gone = w.fit()
    led = w.ledger
    assert keys(gone) == ["r0"]
    assert led.evictions == 1
    assert led.truncations == len(w.last_fit.truncated) == 4
    assert w.last_fit.rungs_fired == ["retrieval.drop_lowest_ranked_chunk", "retrieval.truncate_chunk_bodies"]
    assert w.tokens == 700
    assert [w.why(f"r{i}").status for i in range(5)] == ["evicted_dispensable"] + ["truncated"] * 4
    assert_ledger_consistent(w)


def test_rung_firings_count_what_each_rung_did():
    # one unit (a group of 3 segments) dropped by the history rung
    w = ContextWindow(60)
    for k in ("call", "res", "ans"):
        w.admit(seg(20, L.CONVERSATION if k != "res" else L.TOOL_RESULT, k, group="ex"))
    w.admit(seg(20, L.RETRIEVED, "r", 0.5))
    w.fit()
    assert w.last_fit.ledger.rung_firings == {"conversation.oldest_first": 1}
    assert w.ledger.rung_firings == {"conversation.oldest_first": 1}
    # drops and truncations, per rung, accumulated over fits
    w = ContextWindow(700, policy=Policy.troubleshooting())
    w.admit(seg(10, L.SYSTEM, "sys"))
    body = " ".join(f"w{i}" for i in range(600))
    for i in range(5):
        w.admit(Segment(body, L.RETRIEVED, f"r{i}", 0.1 * (i + 1)))
    w.fit()
    assert w.ledger.rung_firings == {"retrieval.drop_lowest_ranked_chunk": 1, "retrieval.truncate_chunk_bodies": 4}
    rows = Counter(r["rung"] for r in w.last_fit.trace.rows)
    w.admit(Segment(body, L.RETRIEVED, "r5", 0.9))
    w.fit()
    rows += Counter(r["rung"] for r in w.last_fit.trace.rows)  # one trace row per removal
    assert w.ledger.rung_firings == dict(rows)
    assert sum(w.ledger.rung_firings.values()) == w.ledger.evictions + w.ledger.truncations == 8


def test_ledger_repr_and_entries():
    w = ContextWindow(100)
    w.admit(seg(10, L.CONVERSATION, "b"))
    w.admit(seg(10, L.CONVERSATION, "a"))
    assert [x.key for x in w.ledger_entries()] == ["a", "b"]
    assert "balanced" in repr(w.ledger)
    assert "status='held'" in repr(w.why("a"))


def test_a_held_key_is_refused_before_it_is_counted():
    # Issue 14: a recurring chunk (a retrieval hit already held) costs a lookup, not a count.
    calls = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text.split())

    w = ContextWindow(1000, Tokenizer.from_callable(count))
    assert w.admit(Segment("first chunk", PromptLayer.RETRIEVED, key="k"))
    assert calls == ["first chunk"]
    assert not w.admit(Segment("the same chunk again", PromptLayer.RETRIEVED, key="k"))
    assert w.admit_many([Segment("again and again", PromptLayer.RETRIEVED, key="k"),
                         Segment("a new one", PromptLayer.RETRIEVED, key="k2")]) == [False, True]
    assert calls == ["first chunk", "a new one"]
    assert w.ledger.refused_duplicates == 2
    # A freed key is counted again when it comes back.
    w.discard("k")
    assert w.admit(Segment("back", PromptLayer.RETRIEVED, key="k")) and calls[-1] == "back"
