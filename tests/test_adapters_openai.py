"""``ctxfast.openai.fit_messages``: exact cookbook counts, valid payloads after trimming, bad input.

The checks here are the ones users of other trimmers ask for (research notes, "What users ask
for or complain about"): no orphaned ``tool`` message after trimming, the system prompt and the
current question never dropped or summarised away, tool calls and tool schemas inside the count,
and a failure that raises instead of handing back the untrimmed request.

Every ``fit.total`` is recounted here from the OUTPUT messages with tiktoken and the formula the
module docstring documents, written out independently in ``cookbook_total``:

    total = 3 (reply priming)
          + Σ_messages [ 3 + T(role) + T(content) + (T(name) + 1 if name)
                         + Σ_tool_calls (T(function.name) + T(function.arguments) + 3) ]
          + tools: T(the schemas as a TypeScript namespace) + 9, − 4 with a system message
            (whose text then ends in "\n"), written out again in ``namespace_tools_cost``
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxfast
from ctxfast import (
    ArgumentTypeError,
    Budget,
    ContextWindowExceededError,
    CounterError,
    CtxfastError,
    InvalidArgumentError,
    Policy,
    TextEncodingError,
    Tokenizer,
    Unfittable,
)
from ctxfast.openai import fit_messages
from sessions import OPENAI_TOOLS as TOOLS
from sessions import assert_openai_tool_order, openai_session

ENCODINGS = ("o200k_base", "cl100k_base")
PRESETS = ("agent", "context_window", "troubleshooting", "seven_tier", "ranked")

# ----------------------------------------------------------------------------------------------
# The cookbook's own examples (OpenAI cookbook, "How to count tokens with tiktoken", sections 6-7)

COOKBOOK_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
    },
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    },
]
#: API figures printed in the cookbook: gpt-3.5-turbo / gpt-4 (cl100k_base), gpt-4o (o200k_base).
COOKBOOK_TOTALS = {"cl100k_base": 129, "o200k_base": 124}

WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {
                        "type": "string",
                        "description": "The unit of temperature to return",
                        "enum": ["celsius", "fahrenheit"],
                    },
                },
                "required": ["location"],
            },
        },
    }
]
WEATHER_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]
WEATHER_TOTALS = {"cl100k_base": 105, "o200k_base": 101}

# ----------------------------------------------------------------------------------------------
# The independent recount


def _counter(enc: Any):
    return lambda s: len(enc.encode_ordinary(s))


def _ts_lines(obj: dict, out: list[str]) -> None:
    """An object's properties as the namespace's lines (flat and nested schemas of these tests)."""
    required = obj.get("required", [])
    for key, spec in obj.get("properties", {}).items():
        if spec.get("description"):
            out.append("// " + spec["description"])
        kind = spec.get("type")
        if "enum" in spec:
            ts = " | ".join(f'"{v}"' if isinstance(v, str) else json.dumps(v) for v in spec["enum"])
        elif kind == "array":
            ts = {"integer": "number"}.get(spec["items"]["type"], spec["items"]["type"]) + "[]"
        elif kind == "object":
            inner: list[str] = []
            _ts_lines(spec, inner)
            ts = "{\n" + "".join(line + "\n" for line in inner) + "}"
        else:
            ts = {"integer": "number"}.get(kind, kind or "any")
        out.append(f"{key}{'' if key in required else '?'}: {ts},")


def namespace_tools_cost(tools: list[dict] | None, enc: Any, has_system: bool) -> int:
    """The tools' cost as the module docstring documents it, written out again: the namespace
    text's tokens, + 9, − 4 when the request has a system message."""
    if not tools:
        return 0
    lines = ["namespace functions {", ""]
    for tool in tools:
        fn = tool["function"]
        if fn.get("description"):
            lines.append("// " + fn["description"])
        if (fn.get("parameters") or {}).get("properties"):
            lines.append(f"type {fn['name']} = (_: {{")
            _ts_lines(fn["parameters"], lines)
            lines.append("}) => any;")
        else:
            lines.append(f"type {fn['name']} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return len(enc.encode_ordinary("\n".join(lines))) + 9 - (4 if has_system else 0)


def cookbook_total(messages: list[dict], enc: Any, tools: list[dict] | None = None) -> int:
    """The documented formula, applied to what is actually sent."""
    T = _counter(enc)
    n = 3  # every reply is primed with <|start|>assistant<|message|>
    systems = [k for k, m in enumerate(messages) if m["role"] in ("system", "developer")]
    for k, m in enumerate(messages):
        n += 3 + T(m["role"])
        content = m.get("content")
        if isinstance(content, str):
            # with tools, the first system message's text gains a line feed (the namespace joins it)
            n += T(content + "\n" if tools and systems and k == systems[0] else content)
        elif isinstance(content, list):
            n += sum(T(p["text"]) for p in content if p.get("type") == "text")
        if m.get("name"):
            n += T(m["name"]) + 1
        for call in m.get("tool_calls") or ():
            n += T(call["function"]["name"]) + T(call["function"]["arguments"]) + 3
    return n + namespace_tools_cost(tools, enc, bool(systems))


@pytest.fixture(scope="module")
def encs(tiktoken_encodings: dict[str, Any]) -> dict[str, Any]:
    return tiktoken_encodings


# ----------------------------------------------------------------------------------------------
# Generated agent sessions (tests/sessions.py) and their exchanges


def last_user_index(messages: list[dict]) -> int:
    return max(i for i, m in enumerate(messages) if m["role"] == "user")


def exchanges(messages: list[dict]) -> list[list[int]]:
    """Indices of each complete exchange (user message through the message before the next user)."""
    out: list[list[int]] = []
    for i, m in enumerate(messages):
        if m["role"] == "user":
            out.append([i])
        elif m["role"] != "system" and out:
            out[-1].append(i)
    return out[:-1]  # the last one is the current turn


# ----------------------------------------------------------------------------------------------
# The guarantees, as one checker


def assert_good_fit(inp: list[dict], out: list[dict], fit: ctxfast.Fit, ceiling: int, enc: Any,
                    tools: list[dict] | None = None, *, pinned_first_user: bool = False) -> None:
    assert_openai_tool_order(out)
    assert fit.ceiling == ceiling
    assert fit.total <= ceiling
    assert fit.total == cookbook_total(out, enc, tools), "fit.total is not the documented count of the output"
    assert fit.spare == ceiling - fit.total
    assert fit.count_calls == 1

    # system messages first, the caller's own objects
    systems = [m for m in inp if m["role"] in ("system", "developer")]
    assert [id(m) for m in out[: len(systems)]] == [id(m) for m in systems]
    # the current turn (last user message and everything after it) last, identical objects
    current = inp[last_user_index(inp):]
    assert [id(m) for m in out[-len(current):]] == [id(m) for m in current]

    # every other message is the caller's object, in the original order, or a tagged digest
    position = {id(m): i for i, m in enumerate(inp)}
    kept = [position[id(m)] for m in out if id(m) in position]
    assert kept == sorted(kept) and len(set(kept)) == len(kept)
    digests = [m for m in out if id(m) not in position]
    for d in digests:
        assert set(d) == {"role", "content"} and d["role"] == "user", d
        assert d["content"].startswith("[compacted]"), d["content"][:80]

    # exchanges leave whole (a digest stands for a whole exchange)
    kept_set = set(kept)
    ex = exchanges(inp)
    first_user = ex[0][0] if ex else None
    for members in ex:
        body = [i for i in members if not (pinned_first_user and i == first_user)]
        present = [i in kept_set for i in body]
        assert all(present) or not any(present), f"exchange at {members[0]} was split: {present}"
    for d in digests:
        step = re.match(r"\[compacted\] step (\d+)", d["content"])
        assert step, d["content"][:80]
        members = ex[int(step.group(1)) - 1]
        assert not any(i in kept_set for i in members[1:]), "a digest stands beside its exchange"
        called = {c["function"]["name"] for i in members for c in inp[i].get("tool_calls") or ()}
        assert any(f"{name}(" in d["content"] for name in called), "the digest does not name the tool called"
    if pinned_first_user and first_user is not None:
        assert any(m is inp[first_user] for m in out)


# ----------------------------------------------------------------------------------------------
# Exact counts on the cookbook's examples


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_cookbook_six_messages_exact(encoding: str, encs: dict[str, Any]) -> None:
    out, fit = fit_messages(COOKBOOK_MESSAGES, 10_000, tokenizer=Tokenizer.from_encoding(encoding))
    assert fit.total == COOKBOOK_TOTALS[encoding]
    assert cookbook_total(COOKBOOK_MESSAGES, encs[encoding]) == COOKBOOK_TOTALS[encoding]
    assert all(a is b for a, b in zip(out, COOKBOOK_MESSAGES, strict=True))
    assert fit.evicted == [] and fit.count_calls == 1


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_cookbook_weather_tool_exact(encoding: str, encs: dict[str, Any]) -> None:
    out, fit = fit_messages(WEATHER_MESSAGES, 10_000, tools=WEATHER_TOOLS, tokenizer=Tokenizer.from_encoding(encoding))
    assert fit.total == WEATHER_TOTALS[encoding]
    assert cookbook_total(WEATHER_MESSAGES, encs[encoding], WEATHER_TOOLS) == WEATHER_TOTALS[encoding]
    # the schemas are their own protected layer: removing them removes exactly their cost
    _, bare = fit_messages(WEATHER_MESSAGES, 10_000, tokenizer=Tokenizer.from_encoding(encoding))
    assert fit.total - bare.total == namespace_tools_cost(WEATHER_TOOLS, encs[encoding], True)
    assert dict(fit.trace.start)["tools"] == fit.total - bare.total


def test_hello_is_eight_tokens() -> None:
    # the folk figure: one user message "hello" costs 8 prompt tokens on gpt-4
    _, fit = fit_messages([{"role": "user", "content": "hello"}], 100, tokenizer=Tokenizer.from_encoding("cl100k_base"))
    assert fit.total == 8


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_tool_calls_and_tools_are_counted(encoding: str, encs: dict[str, Any]) -> None:
    """Peer complaint: trimmed prompts overflow because tool calls / schemas are not counted."""
    tok = Tokenizer.from_encoding(encoding)
    args = json.dumps({"pattern": "keepalive_timeout", "path": "services/" + "deep/" * 60})
    with_call = [
        {"role": "user", "content": "find it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "search_code", "arguments": args}},
            {"id": "b", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "a", "content": "x.py:1"},
        {"role": "tool", "tool_call_id": "b", "content": "1 import os"},
    ]
    _, fit = fit_messages(with_call, 100_000, tools=TOOLS, tokenizer=tok)
    assert fit.total == cookbook_total(with_call, encs[encoding], TOOLS)
    T = _counter(encs[encoding])
    call_cost = T("search_code") + T(args) + 3 + T("read_file") + T("{}") + 3
    assert T(args) > 100  # the arguments are a large share of the request
    no_calls = copy.deepcopy(with_call)
    no_calls[1].pop("tool_calls")
    no_calls[2:] = []
    _, fit2 = fit_messages(no_calls, 100_000, tools=TOOLS, tokenizer=tok)
    tool_msgs = sum(3 + T("tool") + T(m["content"]) for m in with_call[2:])
    assert fit.total - fit2.total == call_cost + tool_msgs


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_array_schema_rendered_as_typescript(encoding: str, encs: dict[str, Any]) -> None:
    """Formerly counted by its JSON text (an estimate 20 tokens over on the API's array case):
    an array property is ``T[]`` in the namespace the model reads."""
    T = _counter(encs[encoding])
    spec = {"type": "array", "items": {"type": "string"}, "description": "Paths to read"}
    tool = {"type": "function", "function": {"name": "read_many", "description": "Read files.",
                                             "parameters": {"type": "object", "properties": {"paths": spec}}}}
    msgs = [{"role": "user", "content": "go"}]
    _, with_tool = fit_messages(msgs, 10_000, tools=[tool], tokenizer=Tokenizer.from_encoding(encoding))
    _, bare = fit_messages(msgs, 10_000, tokenizer=Tokenizer.from_encoding(encoding))
    text = ("namespace functions {\n\n// Read files.\ntype read_many = (_: {\n// Paths to read\n"
            "paths?: string[],\n}) => any;\n\n} // namespace functions")
    assert with_tool.total - bare.total == T(text) + 9 == namespace_tools_cost([tool], encs[encoding], False)


# ----------------------------------------------------------------------------------------------
# Generated agent sessions at several budgets

FRACTIONS = (1.0, 0.8, 0.55, 0.35, 0.2, 0.1)


def _protected(inp: list[dict], enc: Any, tools: list[dict] | None) -> int:
    systems = [m for m in inp if m["role"] == "system"]
    return cookbook_total(systems + inp[last_user_index(inp):], enc, tools)


def _ceilings(inp: list[dict], enc: Any, tools: list[dict] | None) -> list[int]:
    full = cookbook_total(inp, enc, tools)
    floor = _protected(inp, enc, tools)
    return sorted({max(1, int(full * f)) for f in FRACTIONS} | {floor, floor + 1, floor - 1, full + 500}, reverse=True)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("seed,turns,mid_loop", [(1, 14, False), (2, 25, True), (3, 8, False)])
def test_sessions_default_policy(seed: int, turns: int, mid_loop: bool, encoding: str, encs: dict[str, Any]) -> None:
    enc = encs[encoding]
    inp = openai_session(seed, turns, end_mid_loop=mid_loop)
    tok = Tokenizer.from_encoding(encoding)
    snapshot = json.dumps(inp)
    outcomes = []
    for ceiling in _ceilings(inp, enc, TOOLS):
        if ceiling < _protected(inp, enc, TOOLS):
            with pytest.raises(Unfittable) as info:
                fit_messages(inp, ceiling, tools=TOOLS, tokenizer=tok)
            assert info.value.ceiling == ceiling
            assert info.value.total == _protected(inp, enc, TOOLS)
            outcomes.append("unfittable")
            continue
        out, fit = fit_messages(inp, ceiling, tools=TOOLS, tokenizer=tok)
        assert_good_fit(inp, out, fit, ceiling, enc, TOOLS)
        originals = {id(m) for m in inp}
        outcomes.append("digested" if any(id(m) not in originals for m in out) else
                        "dropped" if len(out) < len(inp) else "untouched")
    assert json.dumps(inp) == snapshot, "the caller's messages were modified"
    # the budgets exercise every path: nothing to do, digests, whole drops, and Unfittable
    assert {"untouched", "digested", "unfittable"} <= set(outcomes), outcomes


@pytest.mark.parametrize("policy", PRESETS)
def test_sessions_every_preset(policy: str, encs: dict[str, Any]) -> None:
    enc = encs["o200k_base"]
    inp = openai_session(11, 18)
    tok = Tokenizer.default()
    fitted = 0
    for ceiling in _ceilings(inp, enc, TOOLS):
        try:
            out, fit = fit_messages(inp, Budget(ceiling + 1000, 1000), tools=TOOLS, policy=policy, tokenizer=tok)
        except Unfittable as e:
            # a floor or the protected set: a reasoned refusal, never a damaged request
            assert e.total > e.ceiling == ceiling and e.shortfall == e.total - ceiling
            assert any(label == "current_turn" for label, _ in e.components)
            continue
        fitted += 1
        assert_good_fit(inp, out, fit, ceiling, enc, TOOLS)
    assert fitted >= 3


@pytest.mark.parametrize("ceiling_fraction", [0.6, 0.3, 0.12])
def test_pin_first_user_keeps_it(ceiling_fraction: float, encs: dict[str, Any]) -> None:
    enc = encs["o200k_base"]
    inp = openai_session(5, 20)
    first_user = next(m for m in inp if m["role"] == "user")
    ceiling = max(int(cookbook_total(inp, enc) * ceiling_fraction),
                  _protected(inp, enc, None) + cookbook_total([first_user], enc) - 3)
    out, fit = fit_messages(inp, ceiling, pin_first_user=True)
    assert_good_fit(inp, out, fit, ceiling, enc, pinned_first_user=True)
    assert out[1] is first_user
    # without the pin the same budget lets it go
    out2, _ = fit_messages(inp, ceiling)
    assert not any(m is first_user for m in out2)


def test_round_trip_is_byte_identical(encs: dict[str, Any]) -> None:
    inp = openai_session(7, 10, end_mid_loop=True)
    before = json.dumps(inp, ensure_ascii=False)
    full = cookbook_total(inp, encs["o200k_base"], TOOLS)
    for budget in (full, full + 1, 10**7, Budget(full + 4096, 4096)):
        out, fit = fit_messages(inp, budget, tools=TOOLS)
        assert json.dumps(out, ensure_ascii=False) == before
        assert len(out) == len(inp) and all(a is b for a, b in zip(out, inp))
        assert fit.total == full and fit.evicted == [] and fit.truncated == [] and fit.trace.rows == []
    assert json.dumps(inp, ensure_ascii=False) == before


def test_one_token_short_evicts(encs: dict[str, Any]) -> None:
    inp = openai_session(8, 6)
    full = cookbook_total(inp, encs["o200k_base"], TOOLS)
    out, fit = fit_messages(inp, full - 1, tools=TOOLS)
    assert fit.over_by == 1 and fit.total < full and fit.rungs_fired
    assert_good_fit(inp, out, fit, full - 1, encs["o200k_base"], TOOLS)


def test_current_turn_in_progress_is_never_digested(encs: dict[str, Any]) -> None:
    """Peer complaint: the latest user question summarised away mid tool loop."""
    inp = openai_session(9, 12, end_mid_loop=True)
    start = last_user_index(inp)
    assert inp[-1]["role"] == "tool" and inp[start + 1].get("tool_calls")
    ceiling = _protected(inp, encs["o200k_base"], None)
    out, fit = fit_messages(inp, ceiling)
    assert [id(m) for m in out] == [id(inp[0])] + [id(m) for m in inp[start:]]
    assert fit.total == ceiling


def test_deterministic() -> None:
    inp = openai_session(4, 16)
    a = fit_messages(inp, 3000, tools=TOOLS)
    b = fit_messages(copy.deepcopy(inp), 3000, tools=TOOLS)
    assert json.dumps(a[0]) == json.dumps(b[0])
    assert a[1].total == b[1].total and a[1].explain() == b[1].explain()


def test_system_message_in_the_middle_is_protected(encs: dict[str, Any]) -> None:
    inp = openai_session(12, 10)
    note = {"role": "developer", "content": "Operator note: the billing exporter is frozen today."}
    middle = next(i for i in range(len(inp) // 2, len(inp)) if inp[i]["role"] == "user")
    inp.insert(middle, note)
    ceiling = _protected(inp, encs["o200k_base"], None) + cookbook_total([note], encs["o200k_base"]) - 3
    out, fit = fit_messages(inp, ceiling)
    assert any(m is note for m in out)
    assert fit.total <= ceiling
    assert_openai_tool_order(out)


def test_truncate_rung_returns_copies(encs: dict[str, Any]) -> None:
    """A policy that truncates tool results returns shortened copies, never edits the caller's dicts."""
    policy = Policy.from_dict({
        "name": "truncate_results",
        "rungs": [
            {"name": "results.truncate", "layers": ["tool_result"], "order": "oldest", "action": "truncate",
             "min_tokens": 16},
            {"name": "exchanges.drop", "layers": ["conversation", "tool_result"], "order": "oldest", "action": "drop"},
        ],
    })
    inp = openai_session(13, 10)
    snapshot = json.dumps(inp)
    full = cookbook_total(inp, encs["o200k_base"])
    out, fit = fit_messages(inp, int(full * 0.7), policy=policy)
    assert fit.truncated, "the budget was meant to make the truncate rung fire"
    assert json.dumps(inp) == snapshot
    assert fit.total == cookbook_total(out, encs["o200k_base"]) <= int(full * 0.7)
    assert_openai_tool_order(out)
    originals = {m["tool_call_id"]: m for m in inp if m["role"] == "tool"}
    shortened = [m for m in out if m["role"] == "tool" and m is not originals[m["tool_call_id"]]]
    assert shortened
    for m in shortened:
        orig = originals[m["tool_call_id"]]
        assert {k: v for k, v in m.items() if k != "content"} == {k: v for k, v in orig.items() if k != "content"}
        assert orig["content"].startswith(m["content"]) and len(m["content"]) < len(orig["content"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), turns=st.integers(1, 30), fraction=st.floats(0.02, 1.1),
       with_tools=st.booleans(), mid_loop=st.booleans(), pin=st.booleans())
def test_property_any_session_any_budget(seed: int, turns: int, fraction: float, with_tools: bool, mid_loop: bool,
                                         pin: bool, encs: dict[str, Any]) -> None:
    enc = encs["o200k_base"]
    tools = TOOLS if with_tools else None
    inp = openai_session(seed, turns, end_mid_loop=mid_loop)
    ceiling = max(1, int(cookbook_total(inp, enc, tools) * fraction))
    try:
        out, fit = fit_messages(inp, ceiling, tools=tools, pin_first_user=pin)
    except Unfittable as e:
        protected = _protected(inp, enc, tools)
        if pin:
            protected += cookbook_total([next(m for m in inp if m["role"] == "user")], enc) - 3
        assert e.total > ceiling and protected > ceiling
        return
    assert_good_fit(inp, out, fit, ceiling, enc, tools, pinned_first_user=pin)


# ----------------------------------------------------------------------------------------------
# Unfittable: the protected set alone is over the ceiling


def test_unfittable_names_the_protected_parts(encs: dict[str, Any]) -> None:
    enc = encs["o200k_base"]
    inp = openai_session(6, 5)
    protected = _protected(inp, enc, TOOLS)
    with pytest.raises(Unfittable) as info:
        fit_messages(inp, Budget(protected + 999, 1000), tools=TOOLS)
    e = info.value
    assert isinstance(e, ContextWindowExceededError) and isinstance(e, CtxfastError)
    assert (e.ceiling, e.total, e.shortfall) == (protected - 1, protected, 1)
    sizes = {label: n for label, n in e.components if label != "system"}  # system: prompt + priming
    assert sizes["current_turn"] == cookbook_total(inp[last_user_index(inp):], enc) - 3
    assert sizes["tools"] == namespace_tools_cost(TOOLS, enc, any(m["role"] == "system" for m in inp))
    assert sum(n for _, n in e.components) == protected
    message = str(e).replace(",", "")
    assert "current_turn" in message and "system" in message and str(protected - 1) in message


def test_unfittable_huge_current_question() -> None:
    inp = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "why " * 5000}]
    with pytest.raises(Unfittable):
        fit_messages(inp, 1000)


# ----------------------------------------------------------------------------------------------
# Bad input

U = {"role": "user", "content": "hi"}
S = {"role": "system", "content": "Be brief."}


@pytest.mark.parametrize(
    "call,exc,where",
    [
        (lambda: fit_messages("hello", 100), ArgumentTypeError, "messages"),
        (lambda: fit_messages({"role": "user", "content": "hi"}, 100), ArgumentTypeError, "messages"),
        (lambda: fit_messages(None, 100), ArgumentTypeError, "messages"),
        (lambda: fit_messages([S, U, "hi"], 100), ArgumentTypeError, r"messages\[2\]"),
        (lambda: fit_messages([S, U, {"content": "x"}], 100), InvalidArgumentError, r"messages\[2\].*role"),
        (lambda: fit_messages([S, {"role": None, "content": "x"}], 100), InvalidArgumentError, r"messages\[1\]"),
        (lambda: fit_messages([S, U, {"role": "user", "content": 5}], 100), ArgumentTypeError, r"messages\[2\]\.content"),
        (lambda: fit_messages([S, {"role": "user", "content": {"text": "x"}}], 100), ArgumentTypeError, r"messages\[1\]\.content"),
        (lambda: fit_messages([S, {"role": "user", "content": ["x"]}], 100), ArgumentTypeError, r"messages\[1\]\.content\[0\]"),
        (lambda: fit_messages([U], 100, tools=["get_weather"]), ArgumentTypeError, r"tools\[0\]"),
        (lambda: fit_messages([U], 100, tools=[{"type": "function", "function": {}}]), InvalidArgumentError, r"tools\[0\]"),
        (lambda: fit_messages([U], -1), InvalidArgumentError, "window"),
        (lambda: fit_messages([U], 1.5), ArgumentTypeError, "budget"),
        (lambda: fit_messages([U], True), ArgumentTypeError, "budget"),
        (lambda: fit_messages([U], 100, policy="nope"), InvalidArgumentError, "nope"),
        (lambda: fit_messages([U], 100, policy=3), ArgumentTypeError, "policy"),
        (lambda: fit_messages([U], 100, tokenizer="o200k_base"), ArgumentTypeError, "tokenizer"),
        (lambda: fit_messages([S, {"role": "user", "content": "a\ud800b"}], 100), TextEncodingError, "surrogate"),
    ],
    ids=["str", "dict", "None", "non-dict message", "no role", "role None", "content int", "content dict",
         "content part str", "tool str", "tool without name", "negative budget", "float budget", "bool budget",
         "unknown preset", "policy int", "tokenizer str", "lone surrogate"],
)
def test_bad_input_raises_ctxfast_errors(call, exc, where) -> None:
    with pytest.raises(exc, match=where) as info:
        call()
    assert isinstance(info.value, CtxfastError)


def test_reserve_not_below_window() -> None:
    with pytest.raises(InvalidArgumentError, match="reserve"):
        fit_messages([U], Budget(100, 100))


def test_failing_counter_raises_instead_of_returning_the_input() -> None:
    """Peer complaint: a failed step silently hands back the untrimmed request."""
    inp = openai_session(3, 4)
    with pytest.raises(CounterError):
        fit_messages(inp, 500, tokenizer=lambda text: 1 // 0)
    with pytest.raises(CounterError):
        fit_messages(inp, 500, tokenizer=lambda text: len(text) / 4)


@pytest.mark.parametrize(
    "call,where",
    [
        (lambda: fit_messages([U, {"role": "assistant", "content": None, "tool_calls": 5}], 100),
         r"messages\[1\]\.tool_calls"),
        (lambda: fit_messages([U, {"role": "assistant", "content": None, "tool_calls": ["call_1"]}], 100),
         r"messages\[1\]\.tool_calls\[0\]"),
        (lambda: fit_messages([U, {"role": "assistant", "content": None,
                                   "tool_calls": [{"id": "a", "function": "get_weather"}]}], 100),
         r"messages\[1\]\.tool_calls\[0\]"),
        (lambda: fit_messages([U, {"role": "user", "content": [{"type": "image_url", "image_url": 5}]}], 100),
         r"messages\[1\]\.content\[0\]"),
        (lambda: fit_messages([U], 100, tools=[{"type": "function", "function": {"name": "f", "parameters": ["x"]}}]),
         r"tools\[0\]\.parameters"),
        (lambda: fit_messages([U], 100, tools=[{"type": "function",
                                                "function": {"name": "f", "parameters": {"properties": ["x"]}}}]),
         r"tools\[0\]\.parameters\.properties"),
        (lambda: fit_messages([U], 100, tools=[{"type": "function", "function": {
            "name": "f", "parameters": {"properties": {"u": {"type": "string", "enum": 5}}}}}]), r"tools\[0\].*enum"),
    ],
    ids=["tool_calls int", "tool_calls item str", "function str", "image_url int", "parameters list",
         "properties list", "enum int"],
)
def test_malformed_fields_name_the_field(call, where) -> None:
    with pytest.raises(ArgumentTypeError, match=where):
        call()


def test_image_url_as_a_string_counts_like_the_object_form() -> None:
    as_str = [{"role": "user", "content": [{"type": "image_url", "image_url": "https://x/y.png"},
                                           {"type": "text", "text": "what is this?"}]}]
    as_obj = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                                           {"type": "text", "text": "what is this?"}]}]
    low = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u", "detail": "low"}},
                                        {"type": "text", "text": "what is this?"}]}]
    a, b, c = (fit_messages(m, 10_000)[1].total for m in (as_str, as_obj, low))
    assert a == b and a - c == ctxfast.openai.IMAGE_DEFAULT - ctxfast.openai.IMAGE_LOW


def test_empty_messages_rejected() -> None:
    with pytest.raises(InvalidArgumentError, match="messages"):
        fit_messages([], 100)
    with pytest.raises(InvalidArgumentError, match="messages"):
        fit_messages([], 100, tools=TOOLS)


def test_surrogate_error_names_the_message() -> None:
    with pytest.raises(TextEncodingError, match=r"messages\[1\]"):
        fit_messages([S, {"role": "user", "content": "a\ud800b"}], 100)
    with pytest.raises(TextEncodingError, match=r"messages\[2\]"):
        fit_messages([S, U, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\": \"\ud800\"}"}}]}], 100)


def test_trace_merges_layers_that_share_a_label() -> None:
    """Regression: under troubleshooting (conversation and tool_result both labelled 'history') the
    trace listed 'history' twice and each row's layer_after followed only the first layer."""
    inp = openai_session(1, 14)
    full = fit_messages(inp, 10**7)[1].total
    out, fit = fit_messages(inp, full * 9 // 10, policy="troubleshooting")
    assert fit.trace.rows
    labels = [label for label, _ in fit.trace.start]
    assert len(labels) == len(set(labels)), labels
    size = dict(fit.trace.start)["history"]
    for row in fit.trace.rows:
        size -= row["removed"]
        assert row["layer_after"] == size, row


def test_the_encoding_follows_the_model() -> None:
    """Issue 11 item 2: ``model=`` picks the encoding (cl100k_base for gpt-4, o200k_base for
    gpt-4o), the Responses body helper reads the body's model, and an unknown model is named."""
    import tiktoken

    from ctxfast import InvalidArgumentError
    from ctxfast.responses import fit_responses_body

    text = "Quantum chromodynamics régime — naïve façade 😀 " * 20
    msgs = [{"role": "user", "content": text}]
    counts = {}
    for model, name in (("gpt-4-0613", "cl100k_base"), ("gpt-4o-2024-08-06", "o200k_base")):
        _, fit = fit_messages(msgs, 100_000, model=model)
        counts[name] = fit.total
        assert fit.total == 3 + 3 + len(tiktoken.get_encoding(name).encode_ordinary(text)) + 1
        _, body_fit = fit_responses_body({"model": model, "input": text}, 100_000)
        assert body_fit.total == fit_responses_body({"input": text}, 100_000, tokenizer=Tokenizer.for_model(model))[1].total
    assert counts["cl100k_base"] != counts["o200k_base"]
    with pytest.raises(InvalidArgumentError, match="my-model"):
        fit_messages(msgs, 100_000, model="my-model")
    fit_responses_body({"model": "my-model", "input": text}, 100_000)  # the default encoding
