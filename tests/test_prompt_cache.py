"""Cache-aware cuts (issue 13): ``previous=`` keeps the previous request's cut while it fits and
moves it with hysteresis when it must; ``Fit.cache`` reports what the provider's cache will do;
``CacheProfile`` presets and overrides; Anthropic ``cache_breakpoints``; the window's profile.

A session here is a conversation that grows by one exchange a turn, fitted each turn with the
previous turn's ``Fit``: a turn *keeps the prefix* when the messages it sends start with all the
messages the previous turn sent.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxfast
import open_models as om
from ctxfast import (
    ArgumentTypeError,
    Budget,
    CacheProfile,
    ChatTemplate,
    ContextWindow,
    InvalidArgumentError,
    Policy,
    PromptLayer,
    Segment,
    Tokenizer,
    anthropic,
    chat,
    gemini,
    openai,
)
from ctxfast.openai import fit_responses

SYSTEM = "You are the on-call assistant. " * 12


def conversation(exchanges: int, words: int = 120) -> list[dict[str, Any]]:
    """A system prompt, then ``exchanges`` user/assistant pairs, then the current ask."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for i in range(exchanges):
        msgs.append({"role": "user", "content": f"question {i}: " + "why did it fail " * (words // 4)})
        msgs.append({"role": "assistant", "content": f"answer {i}: " + "the pool ran dry " * (words // 4)})
    msgs.append({"role": "user", "content": f"question {exchanges}: and now?"})
    return msgs


def starts_with(longer: list[Any], shorter: list[Any]) -> bool:
    return len(longer) >= len(shorter) and all(a == b for a, b in zip(longer, shorter))


def openai_session(turns: int, budget: Budget, aware: bool, **kwargs: Any) -> list[tuple[list[dict[str, Any]], ctxfast.Fit]]:
    previous = None
    out = []
    for t in range(1, turns + 1):
        sent, fit = openai.fit_messages(conversation(t), budget, previous=previous if aware else None, **kwargs)
        assert fit.total <= budget.ceiling
        out.append((sent, fit))
        previous = fit
    return out


def kept_turns(session: list[tuple[list[dict[str, Any]], ctxfast.Fit]]) -> int:
    # The previous request's messages less its current ask, which this turn answers.
    return sum(1 for (before, _), (now, _) in zip(session, session[1:]) if starts_with(now, before[:-1]))


# --- the stateless adapters -----------------------------------------------------------------


def test_previous_keeps_the_prefix_where_evicting_exactly_moves_it_every_turn() -> None:
    budget = Budget(4000, 200)
    exact, aware = openai_session(40, budget, False), openai_session(40, budget, True)
    assert kept_turns(exact) < 20 < 35 <= kept_turns(aware)
    cuts = [f.cache.cut for _, f in aware]
    assert cuts[0] == "fresh" and {"kept", "moved"} <= set(cuts[1:]) <= {"kept", "moved"}
    assert all(f.cache.cut == "fresh" and not f.cache.previous for _, f in exact)
    # The report agrees with what was sent: a kept cut's unchanged prefix covers the previous request
    # less its ask; a moved one's only the front.
    for (_, before), (_, now) in zip(aware, aware[1:]):
        if now.cache.cut == "kept":
            assert now.cache.unchanged_prefix >= before.total - 40
            assert now.cache.read == now.cache.unchanged_prefix // 128 * 128 or now.cache.unchanged_prefix < 1024
        else:
            assert now.cache.moved and now.cache.unchanged_prefix < now.total // 2


def test_a_moved_cut_goes_below_the_ceiling_so_the_next_turns_append() -> None:
    budget = Budget(4000, 200)
    session = openai_session(40, budget, True)
    moved = [f for _, f in session if f.cache.moved]
    assert moved
    for f in moved:
        assert f.cache.target is not None and f.cache.target < budget.ceiling
        assert f.total <= f.cache.target
        assert f.total <= 0.75 * budget.ceiling


def test_the_trace_has_one_cache_line() -> None:
    _, last = openai_session(30, Budget(4000, 200), True)[-1]
    lines = [line for line in last.explain().splitlines() if line.startswith("cache")]
    assert len(lines) == 1 and str(last.cache) in lines[0]
    _, plain = openai.fit_messages(conversation(3), 4000)
    assert not any(line.startswith("cache") for line in plain.explain().splitlines())


def test_a_previous_fit_of_another_policy_is_not_repeated() -> None:
    budget = Budget(4000, 200)
    _, before = openai_session(30, budget, True)[-1]
    _, after = openai.fit_messages(conversation(31), budget, previous=before, policy=Policy.preset("troubleshooting"))
    assert after.cache.cut != "kept"
    _, same = openai.fit_messages(conversation(31), budget, previous=before)
    assert same.cache.cut == "kept"


def test_every_adapter_plans_against_its_providers_cache() -> None:
    session = om.session(12, seed=3)
    tok = Tokenizer.from_file(str(om.tokenizer_json("qwen2.5")))
    template = ChatTemplate(om.template_source("qwen2.5"), special_tokens=om.FAMILIES["qwen2.5"][1])
    plain = [m for m in conversation(6)]

    def both(call: Any) -> tuple[ctxfast.Fit, ctxfast.Fit]:
        first = call(None)[1]
        return first, call(first)[1]

    cases = {
        "openai": both(lambda p: openai.fit_messages(plain, 100_000, previous=p)),
        "openai-responses": both(lambda p: fit_responses(plain[1:], 100_000, instructions=SYSTEM, previous=p)),
        "anthropic": both(lambda p: anthropic.fit_messages(SYSTEM, plain[1:], 100_000, previous=p)),
        "gemini": both(lambda p: gemini.fit_contents(
            [{"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]} for m in plain[1:]],
            100_000, previous=p)),
        "chat": both(lambda p: chat.fit_messages(session, 100_000, template=template, tokenizer=tok, previous=p)),
    }
    profiles = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic", "gemini": "gemini",
                "chat": "llama.cpp"}
    for provider, (first, second) in cases.items():
        assert first.provider == second.provider == provider
        assert first.cache.profile == second.cache.profile == profiles[provider]
        assert (first.cache.cut, second.cache.cut) == ("fresh", "kept"), provider
        # The same request again: everything is as before.
        assert second.cache.unchanged_prefix == second.total or provider == "anthropic", provider
        assert second.exactness == ("estimate" if provider in ("anthropic", "gemini") else "exact")


def test_the_open_model_prefix_is_the_rendered_prompts() -> None:
    hf = om.hf_tokenizer("qwen2.5")
    tok = Tokenizer.from_file(str(om.tokenizer_json("qwen2.5")))
    template = ChatTemplate(om.template_source("qwen2.5"), special_tokens=om.FAMILIES["qwen2.5"][1])
    session = om.session(30, seed=1)
    asks = [i for i, m in enumerate(session) if m["role"] == "user"]
    previous: tuple[list[int], ctxfast.Fit] | None = None
    checked = 0
    for end in asks[1:]:
        _, fit = chat.fit_messages(session[: end + 1], Budget(4096, 256), template=template, tokenizer=tok,
                                   tools=om.TOOLS, previous=previous[1] if previous else None)
        ids = hf.encode(fit.prompt or "", add_special_tokens=False).ids
        if previous is not None:
            common = next((i for i, (a, b) in enumerate(zip(previous[0], ids)) if a != b), min(len(ids), len(previous[0])))
            assert fit.cache.unchanged_prefix == common
            assert fit.cache.read == common and fit.cache.uncached == fit.total - common
            checked += 1
        previous = (ids, fit)
    assert checked == len(asks) - 2


# --- arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize("previous", ["fit", 3, [], object()])
def test_previous_must_be_a_fit(previous: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="argument 'previous'"):
        openai.fit_messages(conversation(2), 1000, previous=previous)
    with pytest.raises(ArgumentTypeError, match="argument 'previous'"):
        ctxfast.fit([Segment("a")], Budget(10), previous=previous)


@pytest.mark.parametrize("cache", [3, 1.5, ["openai"], b"openai"])
def test_cache_must_be_a_profile_or_its_name(cache: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="argument 'cache'"):
        openai.fit_messages(conversation(2), 1000, cache=cache)
    with pytest.raises(ArgumentTypeError, match="argument 'cache'"):
        ContextWindow(1000, cache=cache)


def test_an_unknown_profile_name_suggests_the_nearest() -> None:
    with pytest.raises(InvalidArgumentError, match='"openai"'):
        CacheProfile("opneai")
    with pytest.raises(InvalidArgumentError, match="unknown cache profile"):
        anthropic.fit_messages(None, conversation(2)[1:], 1000, cache="anthropic-2h")


def test_profiles_take_overrides_and_refuse_nonsense() -> None:
    base = CacheProfile("openai")
    assert (base.style, base.min_prefix, base.increment, base.read_price, base.write_price) == ("automatic", 1024, 128, 0.1, 1.0)
    assert CacheProfile("anthropic").write_price == 1.25 and CacheProfile("anthropic-1h").write_price == 2.0
    assert CacheProfile("anthropic").style == "breakpoints" and CacheProfile("llama.cpp").style == "local"
    assert CacheProfile("none").style == "none"
    custom = CacheProfile("openai", min_prefix=512, read_price=0.25, low_watermark=0.6, lookahead_turns=2)
    assert (custom.min_prefix, custom.read_price, custom.low_watermark, custom.lookahead_turns) == (512, 0.25, 0.6, 2)
    assert eval(repr(custom), {"CacheProfile": CacheProfile}).__repr__() == repr(custom)
    for bad in ({"min_prefix": -1}, {"read_price": -0.1}, {"read_price": float("nan")}, {"write_price": 1e9},
                {"low_watermark": 0.0}, {"low_watermark": 1.5}, {"lookahead_turns": -2}):
        with pytest.raises(InvalidArgumentError):
            CacheProfile("openai", **bad)


def test_a_custom_profile_changes_the_prediction() -> None:
    msgs = conversation(30)
    _, first = openai.fit_messages(msgs, 100_000)
    _, again = openai.fit_messages(msgs, 100_000, previous=first, cache=CacheProfile("openai", read_price=0.5))
    assert again.cache.read > 0
    assert again.cache.cost == pytest.approx(again.cache.uncached + 0.5 * again.cache.read + again.cache.write)
    _, none = openai.fit_messages(msgs, 100_000, previous=first, cache="none")
    assert none.cache.read == 0 and none.cache.uncached == none.total and none.cache.cut == "fresh"


# --- Anthropic breakpoints ------------------------------------------------------------------


def _marks(payload: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(i, j) for i, m in enumerate(payload) if isinstance(m["content"], list)
            for j, b in enumerate(m["content"]) if b.get("cache_control")]


def test_a_breakpoint_goes_on_the_last_block_and_the_callers_dicts_are_untouched() -> None:
    msgs = conversation(4)[1:]
    msgs[-1] = {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]}
    before = copy.deepcopy(msgs)
    out, fit = anthropic.fit_messages(SYSTEM, msgs, 100_000, cache_breakpoints=True)
    assert msgs == before
    assert _marks(out) == [(len(out) - 1, 1)] and out[-1]["content"][1]["cache_control"] == {"type": "ephemeral"}
    assert out[:-1] == msgs[:-1] and all(a is b for a, b in zip(out[:-1], msgs[:-1]))
    # The breakpoint makes the prefix cacheable: the whole request is written.
    assert fit.cache.write == fit.total
    _, plain = anthropic.fit_messages(SYSTEM, msgs, 100_000)
    assert plain.cache.write == 0


def test_a_string_content_becomes_one_marked_text_block() -> None:
    msgs = conversation(2)[1:]
    out, _ = anthropic.fit_messages(None, msgs, 100_000, cache_breakpoints=1)
    assert out[-1]["content"] == [{"type": "text", "text": msgs[-1]["content"], "cache_control": {"type": "ephemeral"}}]


def test_the_callers_breakpoints_count_against_the_limit_of_four() -> None:
    msgs = conversation(6)[1:]
    for i in (0, 2, 4, 6):
        msgs[i] = {"role": "user", "content": [{"type": "text", "text": f"q{i}", "cache_control": {"type": "ephemeral"}}]}
    out, _ = anthropic.fit_messages(None, msgs, 100_000, cache_breakpoints=True)
    assert len(_marks(out)) == 4 and out[-1] is msgs[-1]
    # Three of the caller's, and a new last message: one more fits under the limit.
    fresh = [*msgs[:6], conversation(6)[7], *msgs[7:]]
    out, _ = anthropic.fit_messages(None, fresh, 100_000, cache_breakpoints=True)
    assert len(_marks(out)) == 4 and _marks(out)[-1] == (len(out) - 1, 0)
    out, _ = anthropic.fit_messages(None, fresh, 100_000, cache_breakpoints=0)
    assert len(_marks(out)) == 3


def test_an_already_marked_last_block_is_left_alone() -> None:
    msgs = conversation(2)[1:]
    msgs[-1] = {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}
    out, _ = anthropic.fit_messages(None, msgs, 100_000, cache_breakpoints=True)
    assert out[-1] is msgs[-1]


@pytest.mark.parametrize(("value", "error"), [(-1, InvalidArgumentError), ("yes", ArgumentTypeError), (1.0, ArgumentTypeError)])
def test_cache_breakpoints_refuses_other_values(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="cache_breakpoints"):
        anthropic.fit_messages(None, conversation(2)[1:], 100_000, cache_breakpoints=value)


# --- ContextWindow --------------------------------------------------------------------------


def _window_turns(window: ContextWindow, turns: int) -> list[list[str | None]]:
    window.admit(Segment(SYSTEM, PromptLayer.SYSTEM, key="system"))
    held = []
    for t in range(turns):
        window.admit_many([Segment(f"q{t} " + "why " * 60, PromptLayer.CONVERSATION, key=f"q{t}", group=f"g{t}"),
                           Segment(f"a{t} " + "because " * 60, PromptLayer.CONVERSATION, key=f"a{t}", group=f"g{t}")])
        window.fit()
        held.append([s.key for s in window.segments()])
    return held


def test_a_window_with_a_profile_reports_and_keeps_its_prefix() -> None:
    aware = ContextWindow(3000, cache="openai")
    assert aware.cache is not None and aware.cache.name == "openai" and aware.low_watermark == 0.7
    keys = _window_turns(aware, 40)
    kept = sum(1 for a, b in zip(keys, keys[1:]) if starts_with(b, a))
    plain_keys = _window_turns(ContextWindow(3000), 40)
    plain_kept = sum(1 for a, b in zip(plain_keys, plain_keys[1:]) if starts_with(b, a))
    assert plain_kept < kept and kept >= 34
    report = aware.last_fit.cache
    assert report.profile == "openai" and report.previous
    assert ContextWindow(3000).cache is None


def test_a_window_profile_survives_to_bytes_and_pickle() -> None:
    window = ContextWindow(3000, cache=CacheProfile("anthropic", lookahead_turns=3))
    _window_turns(window, 10)
    for restored in (ContextWindow.from_bytes(window.to_bytes()), pickle.loads(pickle.dumps(window))):
        assert repr(restored.cache) == repr(window.cache)
        assert restored.low_watermark == window.low_watermark


def test_an_explicit_low_watermark_wins_over_the_profiles() -> None:
    assert ContextWindow(3000, cache="openai", low_watermark=0.9).low_watermark == 0.9
    assert ContextWindow(3000, cache="none").low_watermark is None


# --- properties -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 120), min_size=2, max_size=40),
    ceiling=st.integers(60, 2000),
    grow=st.integers(0, 5),
    profile=st.sampled_from(["openai", "anthropic", "llama.cpp", "vllm", "none"]),
)
def test_a_cache_aware_fit_keeps_what_fits_and_loses_nothing(sizes: list[int], ceiling: int, grow: int, profile: str) -> None:
    segs = [Segment("sys " * 10, PromptLayer.SYSTEM)] + [
        Segment(f"m{i} " + "w " * n, PromptLayer.CONVERSATION) for i, n in enumerate(sizes)]
    budget = Budget(ceiling)
    try:
        first = ctxfast.fit(segs[: len(segs) - grow] or segs[:1], budget, cache=profile)
        fit = ctxfast.fit(segs, budget, previous=first, cache=profile)
    except ctxfast.Unfittable:
        return
    assert fit.total <= budget.ceiling
    kept = [s.text for s in fit.kept]
    gone = [e.segment.text for e in fit.evicted] if fit.evicted and hasattr(fit.evicted[0], "segment") else None
    assert segs[0].text in kept
    if gone is not None:
        assert sorted(kept + gone) == sorted(s.text for s in segs)
    again = ctxfast.fit(segs, budget, previous=first, cache=profile)
    assert [s.text for s in again.kept] == kept and again.total == fit.total
