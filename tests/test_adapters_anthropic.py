"""``ctxfast.anthropic.fit_messages``: ``tool_use`` / ``tool_result`` pairs survive trimming.

Anthropic rejects a request whose ``tool_result`` block has no ``tool_use`` in the previous
assistant message, or whose messages do not start with a user turn. These tests fit generated
agent sessions at many budgets and check what the API checks, plus the documented count:

    total = T(system) + Σ_messages [ 3 + Σ_blocks cost(block) ] + Σ_tools T(json(tool))
          + tool-use system prompt of ``model`` (when tools are given)

    cost(text) = T(text); cost(tool_use) = T(name) + T(json(input, sort_keys));
    cost(tool_result) = T(content) or Σ cost(inner blocks); image/document = 1,600; thinking = 0

``T`` is o200k_base (the default tokenizer), recounted here with tiktoken.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxfast
from ctxfast import ArgumentTypeError, Budget, CtxfastError, InvalidArgumentError, Unfittable
from ctxfast.anthropic import IMAGE_TOKENS, TOOL_SYSTEM_PROMPT, fit_messages
from agent_payloads import pieces
from sessions import anthropic_session, anthropic_tools, assert_anthropic_tool_order

PRESETS = ("agent", "context_window", "troubleshooting", "seven_tier", "ranked")

TOOLS = anthropic_tools()


# ----------------------------------------------------------------------------------------------
# The independent recount and the structure checker


@pytest.fixture(scope="module")
def enc(tiktoken_encodings: dict[str, Any]) -> Any:
    return tiktoken_encodings["o200k_base"]


def _block_cost(b: dict, T) -> int:
    kind = b["type"]
    if kind == "text":
        return T(b["text"])
    if kind == "tool_use":
        return T(b["name"]) + T(json.dumps(b["input"], sort_keys=True))
    if kind == "tool_result":
        c = b.get("content", "")
        return T(c) if isinstance(c, str) else sum(_block_cost(x, T) for x in c)
    if kind in ("image", "document"):
        return IMAGE_TOKENS
    if kind in ("thinking", "redacted_thinking"):
        return 0
    return T(json.dumps(b, sort_keys=True))


def documented_total(system: Any, messages: list[dict], enc: Any, tools: list[dict] | None = None,
                     tool_prompt: int = 0) -> int:
    T = lambda s: len(enc.encode_ordinary(s))  # noqa: E731
    if isinstance(system, list):
        system = "\n".join(b["text"] for b in system)
    n = T(system) if system else 0
    for m in messages:
        c = m["content"]
        n += 3 + (T(c) if isinstance(c, str) else sum(_block_cost(b, T) for b in c))
    if tools:
        n += sum(T(json.dumps(t, sort_keys=True)) for t in tools) + tool_prompt
    return n


def opens_exchange(m: dict) -> bool:
    """A user message opens an exchange unless it holds only tool results."""
    if m["role"] != "user":
        return False
    return isinstance(m["content"], str) or any(b["type"] != "tool_result" for b in m["content"])


def current_start(messages: list[dict]) -> int:
    return max(i for i, m in enumerate(messages) if opens_exchange(m))


def exchanges(messages: list[dict]) -> list[list[int]]:
    out: list[list[int]] = []
    for i, m in enumerate(messages):
        if opens_exchange(m):
            out.append([i])
        elif out:
            out[-1].append(i)
    return out[:-1]


def assert_good_fit(system: Any, inp: list[dict], out: list[dict], fit: ctxfast.Fit, ceiling: int, enc: Any,
                    tools: list[dict] | None = None, tool_prompt: int = 0, *, pinned: bool = False) -> None:
    assert_anthropic_tool_order(out)
    assert fit.total <= ceiling == fit.ceiling
    for i in range(1, len(out)):
        assert out[i]["role"] != out[i - 1]["role"], f"out[{i - 1}] and out[{i}] do not alternate"
    # Each output message is an input message, a digest, or such pieces merged into one user
    # message; a merged piece no longer pays its 3 tokens of framing (the documented upper bound).
    explained, merges = pieces(inp, out, merged=True)
    assert fit.total == documented_total(system, out, enc, tools, tool_prompt) + 3 * merges
    start = current_start(inp)
    assert explained[-(len(inp) - start):] == list(range(start, len(inp))), "the current turn changed"
    kept = [p for p in explained if isinstance(p, int)]
    assert kept == sorted(kept)
    assert all(p.startswith("[compacted]") for p in explained if isinstance(p, str))
    kept_set = set(kept)
    ex = exchanges(inp)
    for members in ex:
        body = members[1:] if pinned and members is ex[0] else members
        present = [i in kept_set for i in body]
        assert all(present) or not any(present), f"exchange at {members[0]} was split"
    if pinned and ex:
        assert ex[0][0] in kept_set


def _protected(system: str, inp: list[dict], enc: Any, tools=None, tool_prompt=0) -> int:
    return documented_total(system, inp[current_start(inp):], enc, tools, tool_prompt)


# ----------------------------------------------------------------------------------------------
# Counting


def test_system_is_counted_in_the_total(enc: Any) -> None:
    msgs = [{"role": "user", "content": "Is the checkout service healthy?"}]
    system = "You are the on-call assistant. Quote error messages exactly. " * 20
    _, bare = fit_messages(None, msgs, 10_000)
    _, with_system = fit_messages(system, msgs, 10_000)
    assert with_system.total - bare.total == len(enc.encode_ordinary(system))
    as_blocks = [{"type": "text", "text": system[:100]}, {"type": "text", "text": system[100:], "cache_control": {"type": "ephemeral"}}]
    _, blocks = fit_messages(as_blocks, msgs, 10_000)
    assert blocks.total == documented_total(as_blocks, msgs, enc)
    assert dict(with_system.trace.start)["system"] == len(enc.encode_ordinary(system))


@pytest.mark.parametrize("model,auto,forced", [
    ("claude-sonnet-4-5-20250929", 496, 588),
    ("claude-opus-4-1-20250805", 313, 315),
    ("claude-sonnet-4-20250514", 313, 315),
    ("claude-3-7-sonnet-20250219", 346, 313),
    ("claude-3-5-haiku-20241022", 264, 355),
    ("claude-opus-4-6", 497, 589),
    ("claude-opus-4-7", 675, 804),
    ("claude-opus-4-8", 290, 410),
    ("claude-sonnet-5", 354, 474),
])
def test_model_adds_the_documented_tool_system_prompt(model: str, auto: int, forced: int, enc: Any) -> None:
    system, msgs = "Be brief.", [{"role": "user", "content": "weather in Paris?"}]
    _, no_model = fit_messages(system, msgs, 100_000, tools=TOOLS)
    assert no_model.total == documented_total(system, msgs, enc, TOOLS)
    for choice, extra in (("auto", auto), ("none", auto), ("any", forced), ("tool", forced)):
        _, f = fit_messages(system, msgs, 100_000, tools=TOOLS, model=model, tool_choice=choice)
        assert f.total - no_model.total == extra, (model, choice)
    # no tools: no tool system prompt, whatever the model
    _, a = fit_messages(system, msgs, 100_000, model=model)
    _, b = fit_messages(system, msgs, 100_000)
    assert a.total == b.total
    assert TOOL_SYSTEM_PROMPT  # the table is public data


def test_unknown_model_adds_nothing() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    _, a = fit_messages(None, msgs, 100_000, tools=TOOLS, model="gpt-4o")
    _, b = fit_messages(None, msgs, 100_000, tools=TOOLS)
    assert a.total == b.total


def test_tool_prompt_is_protected_and_can_make_it_unfittable(enc: Any) -> None:
    system, msgs = anthropic_session(3, 4)
    model = "claude-sonnet-4-5"
    protected = _protected(system, msgs, enc, TOOLS, 496)
    out, fit = fit_messages(system, msgs, protected, tools=TOOLS, model=model)
    assert fit.total == protected and out == msgs[current_start(msgs):]
    with pytest.raises(Unfittable) as info:
        fit_messages(system, msgs, protected - 1, tools=TOOLS, model=model)
    assert info.value.shortfall == 1


def test_images_and_thinking(enc: Any) -> None:
    msgs = [
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
                                     {"type": "text", "text": "What is in this graph?"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "long private reasoning " * 50, "signature": "s"},
                                          {"type": "text", "text": "A latency spike."}]},
        {"role": "user", "content": "When?"},
    ]
    _, fit = fit_messages(None, msgs, 100_000)
    assert fit.total == documented_total(None, msgs, enc)
    assert fit.total > IMAGE_TOKENS


# ----------------------------------------------------------------------------------------------
# Generated sessions


FRACTIONS = (1.0, 0.8, 0.55, 0.35, 0.2, 0.08)


def _ceilings(system: str, msgs: list[dict], enc: Any, tools=None, tool_prompt=0) -> list[int]:
    full = documented_total(system, msgs, enc, tools, tool_prompt)
    floor = _protected(system, msgs, enc, tools, tool_prompt)
    return sorted({int(full * f) for f in FRACTIONS} | {floor - 1, floor, floor + 1, full + 100}, reverse=True)


@pytest.mark.parametrize("seed,turns,mid_loop", [(1, 14, False), (2, 25, True), (3, 7, False), (4, 40, False)])
def test_sessions_default_policy(seed: int, turns: int, mid_loop: bool, enc: Any) -> None:
    system, msgs = anthropic_session(seed, turns, end_mid_loop=mid_loop)
    snapshot = json.dumps(msgs)
    seen = set()
    for ceiling in _ceilings(system, msgs, enc, TOOLS, 313):
        kw = dict(tools=TOOLS, model="claude-sonnet-4-20250514")
        if ceiling < _protected(system, msgs, enc, TOOLS, 313):
            with pytest.raises(Unfittable):
                fit_messages(system, msgs, ceiling, **kw)
            seen.add("unfittable")
            continue
        out, fit = fit_messages(system, msgs, ceiling, **kw)
        assert_good_fit(system, msgs, out, fit, ceiling, enc, TOOLS, 313)
        explained, _ = pieces(msgs, out, merged=True)
        seen.add("digest" if any(isinstance(p, str) for p in explained)
                 else "untouched" if len(out) == len(msgs) else "dropped")
    assert json.dumps(msgs) == snapshot
    assert {"untouched", "digest", "unfittable"} <= seen, seen


@pytest.mark.parametrize("policy", PRESETS)
@pytest.mark.parametrize("pin", [False, True])
def test_sessions_every_preset(policy: str, pin: bool, enc: Any) -> None:
    system, msgs = anthropic_session(21, 16)
    fitted = 0
    for ceiling in _ceilings(system, msgs, enc):
        try:
            out, fit = fit_messages(system, msgs, Budget(ceiling + 512, 512), policy=policy, pin_first_user=pin)
        except Unfittable as e:
            assert e.total > e.ceiling == ceiling
            continue
        fitted += 1
        assert_good_fit(system, msgs, out, fit, ceiling, enc, pinned=pin)
    assert fitted >= 3


def test_pin_first_user(enc: Any) -> None:
    system, msgs = anthropic_session(5, 12)
    first = msgs[0]
    ceiling = _protected(system, msgs, enc) + documented_total(None, [first], enc) + 50
    out, fit = fit_messages(system, msgs, ceiling, pin_first_user=True)
    # The first message stays; the next user message, no longer after an assistant turn once the
    # rest of the first exchange left, is merged into it (a copy) so that roles alternate.
    assert out[0] is first or pieces(msgs, out, merged=True)[0][0] == 0
    assert_good_fit(system, msgs, out, fit, ceiling, enc, pinned=True)
    out2, _ = fit_messages(system, msgs, ceiling)
    assert out2[0] is not first and out2[0]["role"] == "user"


def test_round_trip_unchanged(enc: Any) -> None:
    system, msgs = anthropic_session(6, 9, end_mid_loop=True)
    before = json.dumps(msgs, ensure_ascii=False)
    full = documented_total(system, msgs, enc, TOOLS, 496)
    for budget in (full, Budget(full + 8192, 8192), 10**7):
        out, fit = fit_messages(system, msgs, budget, tools=TOOLS, model="claude-haiku-4-5")
        assert json.dumps(out, ensure_ascii=False) == before
        assert all(a is b for a, b in zip(out, msgs, strict=True))
        assert fit.total == full and not fit.evicted
    assert json.dumps(msgs, ensure_ascii=False) == before


def test_multi_step_exchange_leaves_whole(enc: Any) -> None:
    """A tool_result-only user message continues its exchange; dropping the exchange drops all of it."""
    system, msgs = anthropic_session(8, 10)
    ex = exchanges(msgs)
    long_one = max(ex, key=len)
    assert len(long_one) >= 5  # user, assistant+tool_use, user(tool_result), ..., answer
    for ceiling in _ceilings(system, msgs, enc)[1:-2]:
        out, fit = fit_messages(system, msgs, ceiling, policy="context_window")
        kept = {id(m) for m in out}
        present = [id(msgs[i]) in kept for i in long_one]
        assert all(present) or not any(present)
        assert_anthropic_tool_order(out)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), turns=st.integers(1, 30), fraction=st.floats(0.02, 1.1),
       mid_loop=st.booleans(), pin=st.booleans(), policy=st.sampled_from(PRESETS))
def test_property_any_session(seed: int, turns: int, fraction: float, mid_loop: bool, pin: bool, policy: str,
                              enc: Any) -> None:
    system, msgs = anthropic_session(seed, turns, end_mid_loop=mid_loop)
    ceiling = max(1, int(documented_total(system, msgs, enc) * fraction))
    try:
        out, fit = fit_messages(system, msgs, ceiling, policy=policy, pin_first_user=pin)
    except Unfittable as e:
        assert e.total > ceiling
        return
    assert_good_fit(system, msgs, out, fit, ceiling, enc, pinned=pin)


# ----------------------------------------------------------------------------------------------
# Unfittable and bad input


def test_unfittable_when_system_and_current_turn_exceed(enc: Any) -> None:
    system = "Follow the runbook. " * 400
    msgs = [{"role": "user", "content": "old"}, {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "What changed in the 14:10 deploy?"}]
    protected = _protected(system, msgs, enc)
    with pytest.raises(Unfittable) as info:
        fit_messages(system, msgs, protected - 10)
    e = info.value
    assert e.total == protected and e.ceiling == protected - 10 and e.shortfall == 10
    labels = [label for label, _ in e.components]
    assert "system" in labels and "current_turn" in labels
    out, fit = fit_messages(system, msgs, protected)
    assert out == msgs[2:] and out[0] is msgs[2] and fit.total == protected


U = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    "call,exc,where",
    [
        (lambda: fit_messages(None, "hi", 100), ArgumentTypeError, "messages"),
        (lambda: fit_messages(None, {"role": "user"}, 100), ArgumentTypeError, "messages"),
        (lambda: fit_messages(None, [U, 5], 100), ArgumentTypeError, r"messages\[1\]"),
        (lambda: fit_messages(None, [U, {"role": "system", "content": "x"}], 100), InvalidArgumentError, r"messages\[1\]\.role"),
        (lambda: fit_messages(None, [U, {"content": "x"}], 100), InvalidArgumentError, r"messages\[1\]\.role"),
        (lambda: fit_messages(None, [U, {"role": "assistant", "content": None}], 100), ArgumentTypeError, r"messages\[1\]\.content"),
        (lambda: fit_messages(None, [U, {"role": "assistant", "content": [{"text": "x"}]}], 100), ArgumentTypeError,
         r"messages\[1\]\.content\[0\]"),
        (lambda: fit_messages(None, [U, {"role": "assistant", "content": ["x"]}], 100), ArgumentTypeError,
         r"messages\[1\]\.content\[0\]"),
        (lambda: fit_messages(5, [U], 100), ArgumentTypeError, "system"),
        (lambda: fit_messages(None, [U], -3), InvalidArgumentError, "window"),
        (lambda: fit_messages(None, [U], Budget(10, 10)), InvalidArgumentError, "reserve"),
        (lambda: fit_messages(None, [U], 100, policy="nope"), InvalidArgumentError, "nope"),
        (lambda: fit_messages(None, [U], 100, tokenizer=3.5), ArgumentTypeError, "tokenizer"),
    ],
    ids=["str", "dict", "non-dict", "system role", "no role", "content None", "block without type",
         "block str", "system int", "negative", "reserve=window", "preset", "tokenizer float"],
)
def test_bad_input(call, exc, where) -> None:
    with pytest.raises(exc, match=where) as info:
        call()
    assert isinstance(info.value, CtxfastError)


# ----------------------------------------------------------------------------------------------
# Regressions


def _mixed_session() -> list[dict]:
    """A user turn that returns a tool_result AND asks a follow-up in the same message (valid API
    input; Claude Code and most agent loops send this shape)."""
    pad = "lorem ipsum dolor sit amet " * 40
    return [
        {"role": "user", "content": "first question " + pad},
        {"role": "assistant", "content": [{"type": "text", "text": "checking"},
                                          {"type": "tool_use", "id": "toolu_1", "name": "search_code", "input": {"pattern": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "result " + pad},
                                     {"type": "text", "text": "also, what about y?"}]},
        {"role": "assistant", "content": "answer"},
    ]


def test_tool_result_with_text_continues_its_exchange() -> None:
    """A user message answering a tool_use (even with text beside the result) belongs to the
    exchange of that tool_use, so the pair leaves whole or not at all."""
    msgs = _mixed_session()
    # Alone, the mixed message continues the only exchange, which is the current turn: it cannot
    # be cut, so an impossible budget is refused rather than answered with an orphan.
    with pytest.raises(Unfittable):
        fit_messages("sys", msgs, 400)
    older = [{"role": "user", "content": "earlier " + "x " * 300}, {"role": "assistant", "content": "earlier answer"}]
    out, fit = fit_messages("sys", older + msgs, 500)
    assert_anthropic_tool_order(out)
    assert out[-len(msgs):] == msgs and fit.total <= 500


def test_tool_result_content_of_a_wrong_type_names_the_message() -> None:
    """Regression: int tool_result content raised a bare TypeError, not a CtxfastError naming messages[i]."""
    msgs = [U, {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": 5}]}]
    with pytest.raises(CtxfastError, match=r"messages\[2\]"):
        fit_messages(None, msgs, 100)


def test_a_tool_that_is_not_a_dict_is_rejected() -> None:
    """Regression: a tool given as a str was accepted and counted as JSON text."""
    with pytest.raises(ArgumentTypeError, match=r"tools\[0\]"):
        fit_messages(None, [U], 100, tools=["search_code"])


def test_unserialisable_tool_input_names_the_message() -> None:
    """Regression: a tool_use input json cannot encode raised json's bare TypeError, not a CtxfastError."""
    msgs = [U, {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {"x": object()}}]}]
    with pytest.raises(CtxfastError, match=r"messages\[1\]"):
        fit_messages(None, msgs, 100)


def test_a_model_that_is_not_a_str_is_an_argument_type_error() -> None:
    """Regression: model=4 raised AttributeError ('int' object has no attribute 'startswith')."""
    with pytest.raises(ArgumentTypeError, match="model"):
        fit_messages(None, [U], 100, tools=TOOLS, model=4)


def test_tool_choice_in_the_api_dict_form_is_counted_as_forced() -> None:
    """Regression: tool_choice={'type': 'any'} was taken for 'auto' (496, not 588, tokens on claude-sonnet-4-5)."""
    _, auto = fit_messages(None, [U], 10_000, tools=TOOLS, model="claude-sonnet-4-5", tool_choice="auto")
    _, forced = fit_messages(None, [U], 10_000, tools=TOOLS, model="claude-sonnet-4-5",
                             tool_choice={"type": "any"})  # type: ignore[arg-type]
    assert forced.total - auto.total == 588 - 496


def test_empty_messages_rejected() -> None:
    with pytest.raises(InvalidArgumentError, match="messages"):
        fit_messages("You are helpful.", [], 100)


def test_kept_messages_are_the_callers_objects(enc: Any) -> None:
    system, msgs = anthropic_session(9, 20)
    copies = copy.deepcopy(msgs)
    out, fit = fit_messages(system, msgs, int(documented_total(system, msgs, enc) * 0.4))
    ids = {id(m) for m in msgs}
    for m in out:
        if id(m) in ids:
            assert m == copies[msgs.index(m)]
    assert msgs == copies
    assert sum(id(m) in ids for m in out) >= len(msgs[current_start(msgs):])
