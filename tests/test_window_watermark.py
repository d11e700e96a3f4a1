"""ContextWindow low watermark (hysteresis) and the stable-prefix report.

Without a watermark, a window at its ceiling evicts a little every turn, so the cut moves every
turn and the provider's cached prompt prefix is lost every turn. With ``low_watermark=f``, an
eviction goes down to ``f * ceiling`` and the next turns append without moving the cut.
``stable_prefix_tokens`` reports the tokens at the front of what is held that did not change since
the previous fit.
"""

from __future__ import annotations

import pytest

import ctxfast
from ctxfast import ContextWindow, PromptLayer, Segment

L = PromptLayer


def seg(n: int, layer: PromptLayer = L.CONVERSATION, key: str | None = None, score: float = 0.0, **kw) -> Segment:
    return Segment(f"<{key or 'anon'} {n}>", layer, key, score, tokens=n, **kw)


def run(watermark: float | None, turns: int = 30, limit: int = 1000) -> list[dict]:
    """System prompt + one 80-token message per turn; per turn: held before, evicted, stable prefix."""
    w = ContextWindow(limit, low_watermark=watermark)
    w.admit(seg(100, L.SYSTEM, "sys"))
    out = []
    for t in range(turns):
        before = w.tokens
        w.admit(seg(80, L.CONVERSATION, f"m{t}"))
        gone = w.fit()
        out.append({"before": before, "gone": [s.key for s in gone], "stable": w.stable_prefix_tokens,
                    "tokens": w.tokens, "ceiling": w.ceiling})
    return out


def kept_prefix(rows: list[dict]) -> int:
    """Turns (after the first) whose stable prefix covers everything held before the turn."""
    return sum(r["stable"] >= r["before"] for r in rows[1:])


def test_without_a_watermark_the_cut_moves_every_turn_once_full():
    rows = run(None)
    full = [r for r in rows if r["gone"]]
    assert len(full) == 30 - 11  # from turn 11 (0-based) on, every turn evicts one message
    assert all(len(r["gone"]) == 1 for r in full)
    assert all(r["stable"] == 100 for r in full)  # only the system prompt survives the cut
    assert all(r["tokens"] <= 1000 for r in rows)


@pytest.mark.parametrize("watermark", [0.5, 0.7, 0.9])
def test_with_a_watermark_eviction_goes_down_to_it_and_then_appends(watermark):
    rows = run(watermark)
    evicting = [r for r in rows if r["gone"]]
    assert evicting, "the window must fill up"
    for r in evicting:
        assert r["tokens"] <= int(1000 * watermark)
        assert r["stable"] == 100
    for r in rows[1:]:
        assert r["tokens"] <= 1000
        if not r["gone"]:
            assert r["stable"] == r["before"]
    assert len(evicting) < len([r for r in run(None) if r["gone"]])


def test_the_watermark_keeps_more_turns_cached():
    without = kept_prefix(run(None))
    with_70 = kept_prefix(run(0.7))
    assert without == 10  # only the turns before the window first fills
    assert with_70 > without + 10


def test_a_watermark_of_one_is_no_watermark():
    assert run(1.0) == run(None)


def test_the_watermark_never_evicts_protected_segments_and_falls_back_to_the_ceiling():
    # the protected set alone is above the watermark: the fit falls back to the real ceiling
    w = ContextWindow(1000, low_watermark=0.5)
    w.admit(seg(700, L.SYSTEM, "sys"))
    w.admit(seg(200, L.CONVERSATION, "a"))
    w.admit(seg(200, L.CONVERSATION, "b"))
    assert [s.key for s in w.fit()] == ["a"]
    assert w.tokens == 900 and "sys" in w


def test_the_watermark_is_validated():
    for bad in (0, -0.5, 1.5, float("nan"), float("inf")):
        with pytest.raises(ctxfast.CtxfastError) as info:
            ContextWindow(1000, low_watermark=bad)
        assert isinstance(info.value, ValueError)
    with pytest.raises(TypeError):
        ContextWindow(1000, low_watermark="0.7")  # type: ignore[arg-type]
    assert ContextWindow(1000, low_watermark=0.7).low_watermark == 0.7


def test_stable_prefix_tokens_between_fits():
    w = ContextWindow(200)
    assert w.stable_prefix_tokens == 0
    w.admit(seg(50, L.SYSTEM, "sys"))
    w.admit(seg(50, L.CONVERSATION, "a"))
    w.fit()
    assert w.stable_prefix_tokens == 0  # nothing was sent before
    w.admit(seg(50, L.CONVERSATION, "b"))
    w.fit()
    assert w.stable_prefix_tokens == 100  # sys + a unchanged, b appended
    w.admit(seg(60, L.CONVERSATION, "c"))
    w.fit()  # a leaves: the prefix survives only up to the cut
    assert w.stable_prefix_tokens == 50
    w.discard("c")
    w.fit()
    assert w.stable_prefix_tokens == 100  # sys + b; c went from the end


def test_a_rewrite_moves_the_cut_at_the_surrogate():
    w = ContextWindow(1000, tokenizer=lambda s: len(s.split()))
    w.admit(Segment("system words here", L.SYSTEM, "sys"))
    w.admit(Segment(" ".join(["x"] * 40), L.CONVERSATION, "a"))
    w.admit(Segment(" ".join(["y"] * 40), L.CONVERSATION, "b"))
    w.fit()
    w.rewrite("b", "short", provenance="m")
    w.fit()
    assert w.stable_prefix_tokens == 43


def _chat(demote: bool) -> list[tuple[int, int]]:
    """(held before the turn, stable prefix after its fit) per turn of a chat loop."""
    w = ContextWindow(100_000)
    w.admit(seg(100, L.SYSTEM, "sys"))
    out = []
    for t in range(6):
        before = w.tokens
        w.admit(seg(20, L.CURRENT_TURN if demote else L.CONVERSATION, f"q{t}"))
        w.admit(seg(60, L.CONVERSATION, f"a{t}"))
        w.fit()
        out.append((before, w.stable_prefix_tokens))
    return out


def test_appending_a_chat_turn_keeps_the_whole_prefix():
    assert all(stable == before for before, stable in _chat(demote=False)[1:])


def test_demoting_the_previous_current_turn_does_not_move_the_cut():
    # turn t holds 100 + 80*t before its admissions; nothing is evicted, no text changes
    assert _chat(demote=True)[1:] == [(100 + 80 * t, 100 + 80 * t) for t in range(1, 6)]


def test_marking_a_segment_stale_does_not_move_the_cut():
    w = ContextWindow(1000)
    w.admit(seg(100, L.SYSTEM, "sys"))
    w.admit(seg(200, L.TOOL_RESULT, "r"))
    w.admit(seg(50, L.CONVERSATION, "a"))
    w.fit()
    w.mark_stale("r")
    w.admit(seg(50, L.CONVERSATION, "b"))
    w.fit()
    assert w.stable_prefix_tokens == 350


def watermark_session() -> ContextWindow:
    """A 1,000-token window with a 0.7 watermark: a system prompt, then 12 turns, fitted after each."""
    w = ContextWindow(1000, low_watermark=0.7)
    w.admit(seg(100, L.SYSTEM, "sys"))
    for t in range(12):
        w.admit(seg(80, L.CONVERSATION, f"m{t}"))
        w.fit()
    return w


def test_a_watermark_fit_keeps_the_window_within_the_real_ceiling():
    w = watermark_session()
    f = w.last_fit
    assert f.evicted, "the last fit is the one that evicted down to the watermark"
    assert f.total == w.tokens <= 700


def test_a_watermark_fit_reports_the_real_ceiling():
    w = watermark_session()
    f = w.last_fit
    assert f.ceiling == w.ceiling == 1000
    assert f.over_by == 60
    assert "window 1,000" in f.explain() or "window 1000" in f.explain()
