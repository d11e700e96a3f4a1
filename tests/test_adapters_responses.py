"""Issue 11 item 3: OpenAI Responses API payloads (``ctxfast.openai.fit_responses``).

The property: random Responses conversations (exchanges, agent loops with reasoning items,
parallel calls, outputs as strings or parts) fitted at random budgets under several policies
come out valid (``check_responses``: every output after its call, reasoning never separated from
the item after it, no empty text, kept items the caller's own or a shortened copy, the ask kept),
within the ceiling, with the input untouched; or raise a clean ``Unfittable``. Then the counting
rules, the pairing errors and a CLI round trip.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_support import invoke, write
from ctxfast import ArgumentTypeError, Budget, InvalidArgumentError, Policy, Tokenizer, Unfittable, openai

WORDS = "alpha beta gamma delta weather paris rome file line error build test result".split()
TOOLS = [{"type": "function", "name": "weather", "description": "Get the weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"}}}}]
TRUNCATE = Policy.from_toml_str(
    'name = "t"\n[[rungs]]\nname = "bodies.truncate"\nlayers = ["tool_result", "conversation"]\n'
    'order = "largest"\naction = "truncate"\nmin_tokens = 4\n'
    '[[rungs]]\nname = "history.drop"\nlayers = ["conversation", "tool_result"]\norder = "oldest"\naction = "drop"\n'
) if hasattr(Policy, "from_toml_str") else None
POLICIES: list[Any] = ["agent", "context_window", "ranked", *([TRUNCATE] if TRUNCATE else [])]


def text(r: random.Random, n: int) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(1, n)))


def model_turn(r: random.Random, ids: list[int], calls: int) -> list[dict[str, Any]]:
    """One response's output: maybe reasoning, maybe a message, then `calls` function calls."""
    out: list[dict[str, Any]] = []
    if r.random() < 0.6:
        out.append({"type": "reasoning", "id": f"rs_{len(ids)}", "encrypted_content": "opaque",
                    "summary": [{"type": "summary_text", "text": text(r, 8)}] if r.random() < 0.5 else []})
    if r.random() < 0.3 or not calls:
        out.append({"type": "message", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text(r, 30), "annotations": []}]})
    for _ in range(calls):
        ids.append(len(ids))
        out.append({"type": "function_call", "call_id": f"call_{ids[-1]}", "name": r.choice(["weather", "read"]),
                    "arguments": json.dumps({"q": text(r, 3)})})
    return out


def outputs(r: random.Random, call_ids: list[str]) -> list[dict[str, Any]]:
    out = []
    for cid in call_ids:
        body: Any = text(r, 60) if r.random() < 0.7 else [{"type": "input_text", "text": text(r, 60)}]
        out.append({"type": "function_call_output", "call_id": cid, "output": body})
    return out


def conversation(seed: int) -> list[dict[str, Any]]:
    r = random.Random(seed)
    items: list[dict[str, Any]] = []
    ids: list[int] = []
    if r.random() < 0.3:
        items.append({"role": "developer", "content": text(r, 10)})
    for _ in range(r.randint(0, 3)):
        items.append({"role": "user", "content": text(r, 20)})
        items += model_turn(r, ids, 0)
    items.append({"role": "user", "content": r.choice([text(r, 20), [{"type": "input_text", "text": text(r, 20)},
                                                                     {"type": "input_image", "image_url": "x", "detail": "low"}]])})
    for _ in range(r.randint(0, 5)):
        turn = model_turn(r, ids, r.randint(1, 3))
        items += turn
        items += outputs(r, [t["call_id"] for t in turn if t["type"] == "function_call"])
    if r.random() < 0.5:
        items += model_turn(r, ids, 0)
    return items


def _strings(x: Any) -> list[str]:
    if isinstance(x, str):
        return [x]
    if isinstance(x, dict):
        return [s for v in x.values() for s in _strings(v)]
    if isinstance(x, list):
        return [s for v in x for s in _strings(v)]
    return []


def _same_shape(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """b is a shortened copy of a: the same fields and strings, one of them shortened."""
    sa, sb = _strings(a), _strings(b)
    if a.keys() != b.keys() or len(sa) != len(sb):
        return False
    changed = [(x, y) for x, y in zip(sa, sb) if x != y]
    return len(changed) == 1 and len(changed[0][1]) < len(changed[0][0]) and changed[0][0].startswith(changed[0][1][:8])


def check_responses(inp: list[dict[str, Any]], out: list[dict[str, Any]]) -> None:
    """The structural validator: what the API requires of ``input``, and what ctxfast promises."""
    # Align each output item with its input item (itself, or a shortened copy); the rest are digests.
    where: list[int | None] = []
    p = 0
    for o in out:
        k = next((k for k in range(p, len(inp)) if inp[k] is o or inp[k] == o), None)
        if k is None:
            k = next((k for k in range(p, len(inp)) if _same_shape(inp[k], o)), None)
        if k is None:
            assert o.get("role") == "user" and isinstance(o.get("content"), str) and o["content"].strip(), o
        else:
            p = k + 1
        where.append(k)
    kept = {k for k in where if k is not None}
    called: set[str] = set()
    for o in out:
        kind = o.get("type", "message")
        if kind == "function_call":
            called.add(o["call_id"])
        if kind == "function_call_output":
            assert o["call_id"] in called, f"orphan output {o['call_id']}"
        if kind == "message":
            c = o["content"]
            assert (isinstance(c, str) and c.strip()) or (isinstance(c, list) and c), o
            for part in c if isinstance(c, list) else ():
                assert part.get("type") != "input_text" or part["text"].strip(), o
        if kind == "function_call_output" and isinstance(o["output"], str):
            assert o["output"].strip()
    for k, item in enumerate(inp):
        if item.get("type") == "reasoning":
            after = next(j for j in range(k + 1, len(inp) + 1) if j == len(inp) or inp[j].get("type") != "reasoning")
            if after < len(inp) and inp[after].get("role") != "user":
                assert (k in kept) == (after in kept), f"reasoning input[{k}] separated from input[{after}]"
        if item.get("type") == "function_call_output" and k in kept:
            call = next(j for j in range(k) if inp[j].get("call_id") == item["call_id"])
            assert call in kept
    ask = max(k for k, item in enumerate(inp) if item.get("role") == "user")
    assert ask in kept


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), fraction=st.floats(0.05, 1.1), policy=st.sampled_from(POLICIES))
def test_fitted_responses_input_is_always_valid(seed: int, fraction: float, policy: Any) -> None:
    items = conversation(seed)
    before = copy.deepcopy(items)
    full = openai.fit_responses(items, 10**7, instructions="Be brief.", tools=TOOLS)[1].total
    budget = max(1, int(full * fraction))
    try:
        out, fit = openai.fit_responses(items, budget, instructions="Be brief.", tools=TOOLS, policy=policy)
    except Unfittable as e:
        assert e.total > e.ceiling
    else:
        assert fit.total <= fit.ceiling == budget
        check_responses(items, out)
    assert items == before


# ----------------------------------------------------------------------------------------------
# Counting


def test_messages_count_like_chat_messages_and_instructions_like_a_system_message() -> None:
    enc = tiktoken.get_encoding("o200k_base")
    items = [{"role": "user", "content": "What is the weather in Paris?"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]}]
    _, fit = openai.fit_responses(items, 10**6, instructions="Be brief.")
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": "Sunny."}]
    assert fit.total == openai.fit_messages(chat, 10**6)[1].total
    expected = sum(3 + len(enc.encode(m["role"])) + len(enc.encode(m["content"])) for m in chat) + 3
    assert fit.total == expected


def test_calls_outputs_and_reasoning_are_counted_by_their_rules() -> None:
    enc = tiktoken.get_encoding("o200k_base")
    n = lambda s: len(enc.encode(s))  # noqa: E731
    ask = {"role": "user", "content": "hi"}
    base = openai.fit_responses([ask], 10**6)[1].total
    call = {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": '{"city":"Paris"}'}
    out = {"type": "function_call_output", "call_id": "c1", "output": "sunny and warm"}
    rs = {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "zz"}
    total = openai.fit_responses([ask, rs, call, out], 10**6)[1].total
    assert total - base == (3 + n("think")) + (3 + 3 + n("assistant") + n("weather") + n('{"city":"Paris"}')) + (
        3 + n("tool") + n("sunny and warm"))


def test_flat_tools_count_like_chat_tools_and_builtin_tools_by_json() -> None:
    chat_tools = [{"type": "function", "function": {k: v for k, v in TOOLS[0].items() if k != "type"}}]
    ask = {"role": "user", "content": "hi"}
    flat = openai.fit_responses([ask], 10**6, tools=TOOLS)[1].total
    assert flat == openai.fit_messages([ask], 10**6, tools=chat_tools)[1].total
    with_search = openai.fit_responses([ask], 10**6, tools=[{"type": "web_search"}, *TOOLS])[1].total
    assert with_search == flat + len(tiktoken.get_encoding("o200k_base").encode('{"type": "web_search"}'))


def test_images_and_files_are_estimates_and_a_string_input_is_one_user_message() -> None:
    ask = {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    base = openai.fit_responses([ask], 10**6)[1].total
    low = {"role": "user", "content": [{"type": "input_text", "text": "hi"},
                                       {"type": "input_image", "image_url": "u", "detail": "low"}]}
    assert openai.fit_responses([low], 10**6)[1].total == base + 85
    out, fit = openai.fit_responses("hi", 10**6)
    assert out == [{"role": "user", "content": "hi"}] and fit.total == base


def test_a_caller_counter_counts_the_text() -> None:
    _, fit = openai.fit_responses([{"role": "user", "content": "a b c"}], 10**6, tokenizer=lambda s: len(s))
    assert fit.total == 3 + len("user") + len("a b c") + 3


# ----------------------------------------------------------------------------------------------
# Pairing and shapes


CALL = {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"}
OUT = {"type": "function_call_output", "call_id": "c1", "output": "text"}
ASK = {"role": "user", "content": "do it"}


@pytest.mark.parametrize("items,needles", [
    ([ASK, OUT], ["input[1]", "call_id 'c1'", "answers no function_call"]),
    ([ASK, CALL, {**OUT, "call_id": "zz"}], ["input[2]", "'zz'"]),
    ([ASK, CALL, {"role": "user", "content": "wait"}, OUT], ["input[3]", "input[2]", "stands between"]),
    ([ASK, CALL, CALL], ["input[2]", "repeats"]),
    ([ASK, {"type": "function_call", "name": "read", "arguments": "{}"}], ["input[1]", "no 'call_id'"]),
    ([ASK, {"type": "web_search_call", "id": "w"}], ["input[1]", "'web_search_call'", "function_call"]),
    ([{"role": "tool", "content": "x"}], ["input[0].role", "'tool'"]),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}], ["input[0].content[0]", "input_image"]),
    ([{"role": "model", "parts": [{"text": "x"}]}], ["input[0]", "ctxfast.gemini.fit_contents"]),
])
def test_bad_input_is_refused_by_path(items: list[Any], needles: list[str]) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        openai.fit_responses(items, 10**6)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


def test_outputs_answering_a_stored_response_need_previous_response_id() -> None:
    pending = {**OUT, "call_id": "c9", "output": "word " * 200}
    items = [pending, {"role": "user", "content": "old"}, {"role": "assistant", "content": "x " * 100}, ASK]
    with pytest.raises(InvalidArgumentError, match=r"input\[0\].*pass previous_response_id"):
        openai.fit_responses(items, 300)
    out, fit = openai.fit_responses(items, 300, previous_response_id="resp_1")
    assert out == [pending, ASK] and fit.total <= 300
    body = {"previous_response_id": "resp_1", "input": [pending]}
    assert openai.fit_responses_body(body, 1000)[0] == body
    with pytest.raises(ArgumentTypeError, match="previous_response_id"):
        openai.fit_responses(items, 300, previous_response_id=5)  # type: ignore[arg-type]


def test_wrong_argument_types_are_named() -> None:
    with pytest.raises(ArgumentTypeError, match="fit_responses_body"):
        openai.fit_responses({"input": [ASK]}, 1000)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="instructions"):
        openai.fit_responses([ASK], 1000, instructions=["x"])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="'input' is empty"):
        openai.fit_responses([], 1000)


def test_reasoning_leaves_with_its_call_and_outputs_with_their_calls() -> None:
    big = "word " * 300
    items = [ASK,
             {"type": "reasoning", "id": "rs_1", "summary": []}, CALL, {**OUT, "output": big},
             {"type": "reasoning", "id": "rs_2", "summary": []},
             {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c2", "output": "short"}]
    out, fit = openai.fit_responses(items, 120, policy="context_window")
    assert items[1] not in out and items[2] not in out and items[3] not in out
    assert out[-3:] == items[-3:] and fit.total <= 120
    check_responses(items, out)


def test_body_helper_keeps_the_other_fields() -> None:
    body = {"model": "gpt-5", "instructions": "Be brief.", "input": [ASK], "store": False, "tools": TOOLS}
    fitted, fit = openai.fit_responses_body(body, 10**6)
    assert fitted == body and fitted is not body
    assert fit.total == openai.fit_responses([ASK], 10**6, instructions="Be brief.", tools=TOOLS)[1].total


def _fits(call: Any) -> bool:
    try:
        call()
    except Unfittable:
        return False
    return True


def test_cli_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    items = conversation(7)
    body = {"model": "gpt-5", "instructions": "Be brief.", "tools": TOOLS, "max_output_tokens": 50, "input": items}
    full = openai.fit_responses_body(body, 10**7)[1].total
    # The smallest window of a few that fits: something is removed, and the rest comes out.
    window = next(w for w in (full * k // 10 + 50 for k in range(3, 11))
                  if _fits(lambda: openai.fit_responses_body(body, Budget(w, 50))))
    assert window < full + 50
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", body)
    res = invoke(["fit", "p.json", "--window", str(window), "-o", "out.json"], monkeypatch, capsys)
    assert res.code == 0, res.err
    assert res.out.startswith("format   responses, detected by top-level 'input'")
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    expected, _ = openai.fit_responses_body(body, Budget(window, 50), tokenizer=Tokenizer.default())
    assert out == expected and {k: v for k, v in out.items() if k != "input"} == {
        k: v for k, v in body.items() if k != "input"}
    check_responses(items, out["input"])
    res = invoke(["fit", "p.json", "--window", str(window), "--format", "responses", "-q"], monkeypatch, capsys)
    assert res.code == 0, res.err


def test_the_validator_catches_what_it_checks() -> None:
    rs = {"type": "reasoning", "id": "rs", "summary": []}
    items = [ASK, rs, CALL, OUT]
    for broken in ([ASK, OUT], [ASK, CALL, OUT], [ASK, rs, OUT], [rs, CALL, OUT], [ASK, rs, CALL, {**OUT, "output": " "}]):
        with pytest.raises(AssertionError):
            check_responses(items, broken)
    check_responses(items, items)


@pytest.mark.parametrize("policy", ["agent", "context_window", "ranked"])
def test_without_a_user_message_the_last_unit_is_protected(policy: str) -> None:
    """Regression: with no ask nothing was protected, and a small budget returned an empty input."""
    items = [CALL, {**OUT, "output": "word " * 200}]
    with pytest.raises(Unfittable):
        openai.fit_responses(items, 50, policy=policy)
    assert openai.fit_responses(items, 500, policy=policy)[0] == items
