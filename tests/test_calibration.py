"""Issue 13 item 4: calibrated counts (``ctxfast.calibration``, ``fit.calibrate(usage)``).

The provider's reported usage of a sent request teaches a ``Calibration`` the fixed difference
between the server's count and ctxfast's estimate (Anthropic, Gemini); later fits given
``calibration=`` add it and say ``"calibrated"``. The same comparison flags silent truncation.
Unit tests use a stand-in ``Fit`` (the attributes ``calibrate`` reads); the adapter tests use real
fits.
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

import ctxfast
from ctxfast import ArgumentTypeError, Budget, Calibration, CalibrationResult, CtxfastError, InvalidArgumentError
from ctxfast import anthropic, gemini, openai
from ctxfast import calibration as cal


@dataclass
class FakeFit:
    total: int
    exactness: str = "estimate"
    provider: str | None = "anthropic"
    ceiling: int = 100_000
    cache: Any = field(default=None)


# ----------------------------------------------------------------------------------------------
# Reading usage: every provider's shape, as a dict and as an SDK-like object


USAGES: list[tuple[str, str | None, Any, int, int | None]] = [
    ("openai chat", "openai", {"prompt_tokens": 120, "completion_tokens": 9,
                               "prompt_tokens_details": {"cached_tokens": 64}}, 120, 64),
    ("openai chat, no details", "openai", {"prompt_tokens": 120}, 120, None),
    ("responses", "openai-responses", {"input_tokens": 120, "output_tokens": 3,
                                       "input_tokens_details": {"cached_tokens": 32}}, 120, 32),
    # Anthropic's input_tokens leaves the cached tokens out: the prompt is the sum of the three.
    ("anthropic", "anthropic", {"input_tokens": 20, "cache_read_input_tokens": 100,
                                "cache_creation_input_tokens": 5, "output_tokens": 7}, 125, 100),
    ("anthropic, fields alone say so", None, {"input_tokens": 20, "cache_read_input_tokens": 100,
                                              "cache_creation_input_tokens": 0}, 120, 100),
    ("anthropic, no cache", "anthropic", {"input_tokens": 20, "output_tokens": 7}, 20, None),
    ("gemini", "gemini", {"promptTokenCount": 300, "cachedContentTokenCount": 200, "totalTokenCount": 310}, 300, 200),
    ("gemini snake_case", "gemini", {"prompt_token_count": 300, "cached_content_token_count": 0}, 300, 0),
    ("chat response", "openai", {"id": "x", "usage": {"prompt_tokens": 50}}, 50, None),
    ("gemini response", "gemini", {"candidates": [], "usageMetadata": {"promptTokenCount": 70}}, 70, None),
    ("anthropic response", "anthropic", {"type": "message", "usage": {"input_tokens": 4, "cache_read_input_tokens": 6}},
     10, 6),
]


def as_object(value: Any) -> Any:
    """The SDK form: attributes instead of keys, nested too."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: as_object(v) for k, v in value.items()})
    return value


@pytest.mark.parametrize("form", ["dict", "object"])
@pytest.mark.parametrize(("name", "provider", "usage", "prompt", "cached"), USAGES, ids=[u[0] for u in USAGES])
def test_usage_of_every_provider_is_read(form: str, name: str, provider: str | None, usage: Any, prompt: int,
                                         cached: int | None) -> None:
    got = cal.calibrate(FakeFit(prompt, "exact", provider), usage if form == "dict" else as_object(usage))
    assert (got.reported, got.cached_reported) == (prompt, cached)
    assert got.difference == 0 and not got.truncated


def test_sdk_objects_with_unset_cache_fields_read_as_absent() -> None:
    # The Anthropic SDK's Usage carries every field; unused cache fields are None.
    usage = SimpleNamespace(input_tokens=40, output_tokens=2, cache_read_input_tokens=None,
                            cache_creation_input_tokens=None)
    got = cal.calibrate(FakeFit(40), usage)
    assert (got.reported, got.cached_reported) == (40, None)
    # A Gemini SDK response: usage_metadata with snake_case fields.
    response = SimpleNamespace(text="hi", usage_metadata=SimpleNamespace(prompt_token_count=33,
                                                                        cached_content_token_count=None))
    assert cal.calibrate(FakeFit(33, provider="gemini"), response).reported == 33


@pytest.mark.parametrize(("usage", "where", "shown"), [
    ({"prompt_tokens": -3}, "usage.prompt_tokens", "-3"),
    ({"prompt_tokens": True}, "usage.prompt_tokens", "True"),
    ({"prompt_tokens": 12.0}, "usage.prompt_tokens", "12.0"),
    ({"input_tokens": "12"}, "usage.input_tokens", "'12'"),
    ({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": -1}}, "usage.prompt_tokens_details.cached_tokens", "-1"),
    ({"input_tokens": 5, "cache_read_input_tokens": "x"}, "usage.cache_read_input_tokens", "'x'"),
    ({"usageMetadata": {"promptTokenCount": -2}}, "usageMetadata.promptTokenCount", "-2"),
])
def test_bad_usage_values_name_the_field(usage: dict[str, Any], where: str, shown: str) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        cal.calibrate(FakeFit(10), usage)
    assert str(e.value) == f"{where} must be a non-negative int, got {shown}"


def test_usage_without_a_prompt_count_is_refused() -> None:
    for usage in ({}, {"completion_tokens": 3}, {"usage": {"output_tokens": 1}}):
        with pytest.raises(InvalidArgumentError, match="no prompt token count: expected prompt_tokens"):
            cal.calibrate(FakeFit(10), usage)
    for usage in (None, "usage", 12, [1]):
        with pytest.raises(ArgumentTypeError, match="argument 'usage' must be"):
            cal.calibrate(FakeFit(10), usage)
    with pytest.raises(ArgumentTypeError, match="argument 'fit' must be a ctxfast.Fit"):
        cal.calibrate(object(), {"prompt_tokens": 1})  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="argument 'calibration'"):
        cal.calibrate(FakeFit(10), {"prompt_tokens": 1}, "anthropic")  # type: ignore[arg-type]
    assert issubclass(InvalidArgumentError, CtxfastError) and issubclass(ArgumentTypeError, CtxfastError)


# ----------------------------------------------------------------------------------------------
# Learning


def test_the_offset_is_the_median_high_of_recent_observations() -> None:
    c = Calibration("anthropic")
    assert c.offset is None and c.observations == 0 and c.spread == 0
    offsets = []
    for reported in (1_310, 1_290, 1_300, 1_320, 1_900):  # 1,900: an odd request (a misjudged image)
        result = cal.calibrate(FakeFit(1_000), {"input_tokens": reported}, c)
        assert result.learned and result.offset == c.offset
        offsets.append(c.offset)
    # 310, then the median_high of each prefix: 310, 300, 310, 310 (the outlier does not move it)
    assert offsets == [310, 310, 300, 310, 310] and c.observations == 5
    assert c.spread == 590
    assert result.exactness == "estimate" and result.difference == 900
    assert "calibration offset now +310 (5 observations)" in result.message
    # Of two middle values, the larger: the one that leaves more room.
    two = Calibration()
    for reported in (1_010, 1_020):
        two.observe(FakeFit(1_000), {"input_tokens": reported})
    assert two.offset == 20 and two.provider == "anthropic"


def test_the_offset_holds_through_small_jitter() -> None:
    c = Calibration()
    seen = []
    for reported in (1_250, 1_252, 1_248, 1_251, 1_249, 1_270, 1_270, 1_270, 1_270, 1_270):
        c.observe(FakeFit(1_000), {"input_tokens": reported})
        seen.append(c.offset)
    # The median wanders 250..252 and holds the offset; once it reaches 270 (20 > HOLD) it follows.
    assert seen == [250] * 9 + [270]


def test_the_window_forgets_old_observations() -> None:
    c, longer = Calibration(window=3), Calibration()
    for reported in (1_100, 1_100, 1_100, 1_130, 1_130):
        c.observe(FakeFit(1_000), {"input_tokens": reported})
        longer.observe(FakeFit(1_000), {"input_tokens": reported})
    assert (c.offset, c.observations, c.window) == (130, 5, 3)
    assert (longer.offset, longer.window) == (100, cal.WINDOW)
    c.reset()
    assert c.offset is None and c.observations == 0
    with pytest.raises(InvalidArgumentError, match="'window' must be at least 1"):
        Calibration(window=0)
    with pytest.raises(ArgumentTypeError):
        Calibration(provider=3)  # type: ignore[arg-type]


def test_a_calibration_pickles_with_its_observations() -> None:
    c = Calibration("gemini", "gemini-2.5-flash", window=4)
    for reported in (210, 220, 230):
        c.observe(FakeFit(200, provider="gemini"), {"promptTokenCount": reported})
    back = pickle.loads(pickle.dumps(c))
    assert (back.provider, back.model, back.window, back.offset, back.observations) == ("gemini", "gemini-2.5-flash", 4, 20, 3)
    assert repr(back) == "Calibration(provider='gemini', model='gemini-2.5-flash', offset=+20, observations=3)"


def test_a_calibration_refuses_another_provider_or_model() -> None:
    c = Calibration("anthropic", "claude-sonnet-4-5")
    with pytest.raises(InvalidArgumentError, match="this Calibration is for provider 'anthropic', but the fit is for 'gemini'"):
        c.observe(FakeFit(100, provider="gemini"), {"promptTokenCount": 100})
    bound = Calibration()
    bound.observe(FakeFit(100, provider="gemini"), {"promptTokenCount": 110})
    assert bound.provider == "gemini"  # adopted from the first fit, then held to it
    with pytest.raises(InvalidArgumentError, match="provider 'gemini'"):
        bound.observe(FakeFit(100, provider="anthropic"), {"input_tokens": 110})
    assert bound.observations == 1
    with pytest.raises(InvalidArgumentError, match="model 'claude-sonnet-4-5', but the fit is for 'claude-opus-4-1'"):
        anthropic.fit_messages("Be brief.", [{"role": "user", "content": "hi"}], 1_000, model="claude-opus-4-1",
                               calibration=c)


def test_an_exact_count_reports_its_difference_and_learns_nothing() -> None:
    c = Calibration()
    got = cal.calibrate(FakeFit(500, "exact", "openai"), {"prompt_tokens": 503}, c)
    assert (got.reported, got.predicted, got.difference, got.exactness) == (503, 500, 3, "exact")
    assert not got.learned and c.offset is None and got.offset is None
    assert "3 more than the 500 predicted (exact); an exact count: nothing to learn" in got.message


def test_a_calibrated_fit_of_unknown_offset_is_not_learnt() -> None:
    # A calibrated fit this process did not make (its applied offset unknown): checked, not learnt,
    # since learning from it would fold the old offset into the new one.
    c = Calibration()
    got = c.observe(FakeFit(1_300, "calibrated"), {"input_tokens": 1_310})
    assert not got.learned and c.observations == 0 and got.difference == 10
    assert got.message.endswith("the offset applied to this fit is no longer known: not learnt")


def test_a_plain_fit_with_an_approximate_tokenizer_is_an_estimate_it_can_learn_from() -> None:
    segments = [ctxfast.Segment("word " * 200, ctxfast.PromptLayer.CONVERSATION), ctxfast.Segment("ask")]
    fit = ctxfast.fit(segments, Budget(10_000), tokenizer=ctxfast.Tokenizer.approximate())
    assert (fit.provider, fit.exactness) == (None, "estimate")
    c = Calibration()
    assert fit.calibrate({"prompt_tokens": fit.total + 12}, c).learned and c.offset == 12 and c.provider is None


# ----------------------------------------------------------------------------------------------
# Silent truncation


def test_an_exact_count_the_server_cut_is_flagged_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ctxfast"):
        fine = cal.calibrate(FakeFit(5_310, "exact", "openai"), {"prompt_tokens": 5_290})  # within 1 %
        assert not fine.truncated and caplog.records == []
        cut = cal.calibrate(FakeFit(5_310, "exact", "openai"), {"prompt_tokens": 2_048})
    assert cut.truncated and cut.difference == -3_262
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert caplog.records[0].getMessage() == cut.message
    assert cut.message.startswith("silent truncation: the server counted 2,048 prompt tokens, but 5,310 were sent")
    assert "3,262 tokens (61%)" in cut.message


def test_an_estimate_may_over_count_before_it_is_flagged() -> None:
    # An uncalibrated estimate can honestly be 20 % high (images, another tokenizer): 25 % allowed.
    assert not cal.calibrate(FakeFit(10_000), {"input_tokens": 8_000}).truncated
    assert cal.calibrate(FakeFit(10_000), {"input_tokens": 7_400}).truncated
    # The smallest tolerance: a few tokens of framing are never a truncation.
    assert not cal.calibrate(FakeFit(20, "exact"), {"prompt_tokens": 12}).truncated
    assert cal.calibrate(FakeFit(20, "exact"), {"prompt_tokens": 11}).truncated


def test_a_learnt_offset_tightens_the_check_and_a_truncation_is_not_learnt(caplog: pytest.LogCaptureFixture) -> None:
    c = Calibration("anthropic")
    for reported in (10_300, 10_302, 10_298):
        c.observe(FakeFit(10_000), {"input_tokens": reported})
    assert c.offset == 300 and c.spread == 2
    # 8,000 is within 25 % of the raw estimate, but far below the calibrated 10,300.
    with caplog.at_level(logging.WARNING, logger="ctxfast"):
        cut = c.observe(FakeFit(10_000), {"input_tokens": 8_000})
    assert cut.truncated and not cut.learned and c.observations == 3 and c.offset == 300
    assert "10,300 were sent (calibrated count)" in caplog.records[0].getMessage() == cut.message


def test_cached_tokens_are_compared_with_the_fits_prediction() -> None:
    fit = FakeFit(2_000, cache=SimpleNamespace(read=1_536, write=0, uncached=464, unchanged_prefix=1_536,
                                               profile="anthropic"))
    got = cal.calibrate(fit, {"input_tokens": 500, "cache_read_input_tokens": 1_500, "cache_creation_input_tokens": 0})
    assert (got.reported, got.cached_reported, got.cached_predicted) == (2_000, 1_500, 1_536)
    assert "1,500 cached (1,536 predicted)" in got.message
    assert isinstance(got, CalibrationResult) and "reported=2000" in repr(got)
    # The "none" profile predicts nothing about a server's cache.
    fit.cache.profile = "none"
    assert cal.calibrate(fit, {"input_tokens": 2_000}).cached_predicted is None


# ----------------------------------------------------------------------------------------------
# The adapters apply what was learnt (real fits)

SYSTEM = "You are a careful assistant."
TOOLS = [{"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}]


def chat(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out += [{"role": "user", "content": f"question {i} " + "word " * 40},
                {"role": "assistant", "content": f"answer {i} " + "word " * 40}]
    return [*out, {"role": "user", "content": "and now?"}]


def test_fits_carry_their_label_and_provider() -> None:
    _, a = anthropic.fit_messages(SYSTEM, chat(2), 10_000)
    _, g = gemini.fit_contents([{"role": "user", "parts": [{"text": "hi"}]}], 10_000)
    _, o = openai.fit_messages([{"role": "user", "content": "hi"}], 10_000)
    assert [(f.provider, f.exactness) for f in (a, g, o)] == [("anthropic", "estimate"), ("gemini", "estimate"),
                                                               ("openai", "exact")]
    result = o.calibrate({"prompt_tokens": o.total})
    assert isinstance(result, CalibrationResult) and result.exactness == "exact" and result.difference == 0


def test_anthropic_fits_add_the_learnt_offset_and_say_calibrated() -> None:
    c = Calibration("anthropic", "claude-sonnet-4-5")
    messages = chat(3)
    _, first = anthropic.fit_messages(SYSTEM, messages, 10_000, tools=TOOLS, model="claude-sonnet-4-5", calibration=c)
    assert first.exactness == "estimate"  # nothing learnt yet
    for extra in (250, 251, 249):  # the server's hidden overhead, with a little noise
        first.calibrate({"input_tokens": first.total + extra}, c)
    assert c.offset == 250
    kept, again = anthropic.fit_messages(SYSTEM, messages, 10_000, tools=TOOLS, model="claude-sonnet-4-5", calibration=c)
    assert again.exactness == "calibrated" and again.total == first.total + 250 and kept == messages
    part = again.kept[-1]  # the last fixed part: what the server adds, in the protected SYSTEM layer
    assert (part.text, part.layer, part.tokens) == ("<calibration>", ctxfast.PromptLayer.SYSTEM, 250)
    # Calibrating a calibrated fit takes the applied offset back out: the offset stays put.
    result = again.calibrate({"input_tokens": first.total + 252}, c)
    assert (result.predicted, result.difference, result.learned, c.offset) == (again.total, 2, True, 250)
    # A budget that holds the estimate but not the estimate plus the offset now evicts.
    tight = first.total + 100
    _, plain = anthropic.fit_messages(SYSTEM, messages, tight, tools=TOOLS, model="claude-sonnet-4-5")
    _, calibrated = anthropic.fit_messages(SYSTEM, messages, tight, tools=TOOLS, model="claude-sonnet-4-5", calibration=c)
    assert not plain.evicted and calibrated.evicted and calibrated.total <= tight


def test_a_negative_offset_widens_the_budget() -> None:
    c = Calibration("gemini")
    contents = [{"role": "user" if i % 2 == 0 else "model", "parts": [{"text": f"turn {i} " + "word " * 50}]}
                for i in range(7)]
    _, first = gemini.fit_contents(contents, 100_000, calibration=c)
    first.calibrate({"usageMetadata": {"promptTokenCount": first.total - 40}}, c)
    assert c.offset == -40
    # Just under the estimate: it evicts without the calibration, and fits whole with it.
    budget = Budget(first.total - 20, 0)
    _, plain = gemini.fit_contents(contents, budget)
    kept, calibrated = gemini.fit_contents(contents, budget, calibration=c)
    assert plain.evicted and not calibrated.evicted and kept == contents
    assert calibrated.exactness == "calibrated" and calibrated.total == first.total
    assert calibrated.ceiling == budget.ceiling + 40
    result = calibrated.calibrate({"promptTokenCount": first.total - 40}, c)
    assert (result.predicted, result.difference, c.offset) == (first.total - 40, 0, -40)
    body, whole = gemini.fit_body({"contents": contents, "generationConfig": {}}, budget, calibration=c)
    assert whole.exactness == "calibrated" and body["contents"] == contents


def test_the_adapters_refuse_a_wrong_calibration_argument() -> None:
    with pytest.raises(ArgumentTypeError, match="argument 'calibration' must be a ctxfast.Calibration"):
        gemini.fit_contents([{"role": "user", "parts": [{"text": "hi"}]}], 100, calibration=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="provider 'anthropic', but the fit is for 'gemini'"):
        gemini.fit_contents([{"role": "user", "parts": [{"text": "hi"}]}], 100, calibration=Calibration("anthropic"))


def test_the_names_are_exported() -> None:
    assert {"Calibration", "CalibrationResult"} <= set(ctxfast.__all__)
    assert ctxfast.Calibration is cal.Calibration and (Calibration.__doc__ or "").strip()
