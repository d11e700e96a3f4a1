"""Correct code a user writes: ``tests/test_typing.py`` checks it with ``mypy --strict`` (no
error allowed) and then runs it, so every line here is also correct at run time.

The first block is the friction report's ``user_good.py`` (report #11): caps built beforehand,
``trim_messages(...).fit``. The rest uses each entry point the way the README does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

import ctxfast
from ctxfast import (
    Budget,
    ContextWindow,
    Eviction,
    Fit,
    Policy,
    PresetName,
    PromptLayer as L,
    Segment,
    Tokenizer,
    Unfittable,
    Why,
    anthropic,
    fit,
    openai,
)
from ctxfast.langchain import TrimmedMessages, trim_messages

# --- report #11: caps built beforehand, whichever key type ------------------------------------
caps: dict[str, int] = {"retrieved": 14_000}
by_name = Budget(32_000, 4_000, caps=caps)
layer_caps: dict[L, int] = {L.RETRIEVED: 14_000}
by_layer = Budget(32_000, 4_000, caps=layer_caps)
mixed_caps: dict[L | str, int] = {L.RETRIEVED: 14_000, "summary": 2_000}
Budget(32_000, 4_000, mixed_caps)
Budget(32_000, 4_000, caps={L.RETRIEVED: 14_000, "summary": 2_000})  # a literal may mix them
Budget(32_000, caps={})
Budget(32_000)
read_back: dict[L, int] = by_name.caps
assert read_back == by_layer.caps == {L.RETRIEVED: 14_000}

history: list[BaseMessage] = [
    SystemMessage("You are terse."),
    HumanMessage("What is 2 + 2?"),
    AIMessage("4."),
    HumanMessage("And 3 + 3?"),
]
trimmed = trim_messages(history, max_tokens=100)
kept_messages: list[BaseMessage] = trimmed  # a TrimmedMessages is a list
typed: TrimmedMessages = trimmed
print(trimmed.fit.total, typed.fit.explain().splitlines()[0])

# --- presets by name: a Literal, so a typo is a type error ------------------------------------
agent: Policy = Policy.preset("agent")
name: PresetName = "ranked"
assert Policy.preset(name) == Policy.ranked()
configured: str = "troubleshooting"  # read from a config file: fit() takes any preset name
assert Policy.preset("default") == Policy.context_window()


def policy_for(preset: PresetName) -> Policy:
    return Policy.preset(preset)


# --- segments, fit and what comes back ----------------------------------------------------------
segments = [
    Segment("You are a support engineer.", L.SYSTEM),
    Segment('{"name": "lookup"}', L.TOOLS),
    *[Segment(f"chunk {i} " * 50, L.RETRIEVED, key=f"c{i}", score=i / 10) for i in range(5)],
    *[Segment(f"turn {i} " * 30, group=f"ex{i}") for i in range(6)],  # CONVERSATION by default
    Segment("Why does the build fail?", L.CURRENT_TURN),
]
assert segments[3].layer is L.RETRIEVED and segments[8].layer == L.CONVERSATION
budget = Budget(window=1_200, reserve=200, caps={L.RETRIEVED: 300})
result: Fit = fit(segments, budget, Policy.troubleshooting())
also: Fit = fit(segments, budget, configured)
sent: list[Segment] = result.kept
texts: list[str] = result.texts()
over: dict[L, int] = result.cap_overruns
first: Eviction | None = result.evicted[0] if result.evicted else None
if first is not None and first.action == "digest":
    print("digested", first.segment.key)
for row in result.trace.rows:
    removed: int = row["removed"]
    assert row["action"] in ("drop", "truncate", "digest") and removed >= 0
print(result.total, result.spare, result.count_calls, result.ledger.removed)
print(result.explain())

try:
    fit(segments, Budget(10))
except Unfittable as e:
    print("unfittable, short by", e.shortfall)

# --- counting -----------------------------------------------------------------------------------
tok = Tokenizer.default()
n: int = tok.count("hello world")
counts: npt.NDArray[np.int64] = tok.count_many(["a", "b c"])
head: str = tok.truncate("hello world " * 20, 5)
by_callable = Tokenizer.from_callable(lambda s: len(s.split()))
assert n == 2 and int(counts.sum()) == 3 and tok.count(head) <= 5 and by_callable.count("a b") == 2
assert ctxfast.approximate_tokens("abcd") == 1

# --- ContextWindow ------------------------------------------------------------------------------
window = ContextWindow(limit_tokens=400, reserve=50, tokenizer=tok.count, policy="context_window")
window.admit(Segment("You are terse.", L.SYSTEM))
admitted: list[bool] = window.admit_many([Segment(f"chunk {i} " * 40, L.RETRIEVED, key=f"k{i}") for i in range(4)])
window.admit(Segment("the question", L.CURRENT_TURN))
evicted: list[Segment] = window.fit()
answer: Why = window.why("k0")
if answer.status == "evicted_dispensable" and answer.cause == "rung":
    print("k0 left by", answer.rung)
saved: bytes = window.to_bytes()
restored = ContextWindow.from_bytes(saved)
assert restored.tokens == window.tokens and window.ledger.balanced

# --- the adapters -------------------------------------------------------------------------------
chat: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "hi"},
]
fitted, chat_fit = openai.fit_messages(chat, Budget(8_000, reserve=1_000))
claude, claude_fit = anthropic.fit_messages("You are terse.", [{"role": "user", "content": "hi"}], 8_000)
assert fitted == chat and claude_fit.total > 0 and chat_fit.ceiling == 7_000

tool_round: list[BaseMessage] = [
    HumanMessage("read a.py"),
    AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.py"}, "id": "call_1"}]),
    ToolMessage("print('a')", tool_call_id="call_1"),
]
assert len(trim_messages(tool_round, max_tokens=1_000)) == 3
