"""``ctxfast.langchain.trim_messages`` against LangChain's own ``trim_messages``.

Each ``test_langchain_*`` case first shows the defect in LangChain's function, then runs
ctxfast's replacement on the same messages with the same ``max_tokens`` and checks that the
result is a request a provider accepts: no ToolMessage without the AIMessage that called it, no
AIMessage tool call without its results, the system message kept, and the last human message
(the current question) kept.

What LangChain does is asserted only on the langchain-core releases it was observed on
(``UPSTREAM_OBSERVED``), so the test documents it and notices when a release in that range
changes it; on any other release only ctxfast's side is asserted (nothing is skipped). After
checking a new release, widen the range.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import langchain_core
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages import trim_messages as lc_trim
from packaging.version import Version

import ctxfast
from ctxfast import (
    ArgumentTypeError,
    CounterError,
    CtxfastError,
    InvalidArgumentError,
    Tokenizer,
    Unfittable,
    UnsupportedOperationError,
)
from ctxfast.langchain import trim_messages
from ctxfast.openai import fit_messages as openai_fit
from sessions import langchain_session

#: langchain-core releases on which the upstream behaviour asserted below was observed: from the
#: first (inclusive) to the second (exclusive).
UPSTREAM_OBSERVED = (Version("1.8.3"), Version("1.9"))
#: True when the installed langchain-core is in that range, so LangChain's side is asserted too.
UPSTREAM_AS_OBSERVED = UPSTREAM_OBSERVED[0] <= Version(langchain_core.__version__) < UPSTREAM_OBSERVED[1]

#: A policy whose first rung shortens tool results (the replacement for allow_partial).
CUT_RESULTS = {"name": "cut_results", "rungs": [
    {"name": "results.truncate", "layers": ["tool_result"], "order": "oldest", "action": "truncate",
     "min_tokens": 24},
    {"name": "exchanges.drop", "layers": ["conversation", "tool_result"], "order": "oldest", "action": "drop"},
]}

# ----------------------------------------------------------------------------------------------
# Counters and sessions

TOK = Tokenizer.default()


def count_list(messages):  # noqa: ANN001 - unannotated, as most user counters are
    """A list counter: OpenAI framing over a list of messages (3 + content + tool calls each, +3)."""
    n = 3
    for m in messages:
        n += 3 + TOK.count(m.content if isinstance(m.content, str) else json.dumps(m.content))
        for tc in getattr(m, "tool_calls", None) or ():
            n += TOK.count(tc["name"]) + TOK.count(json.dumps(tc["args"])) + 3
    return n


def count_one(message: BaseMessage) -> int:
    """A per-message counter. The annotation is a string here (``from __future__ import
    annotations``): LangChain does not recognise it (issue #35629); ctxfast does."""
    return count_list([message]) - 3


class Recorder:
    """Wraps a list counter and keeps every list it was handed."""

    def __init__(self, inner=count_list) -> None:  # noqa: ANN001
        self.inner = inner
        self.calls: list[list[BaseMessage]] = []

    def __call__(self, messages):  # noqa: ANN001
        self.calls.append(list(messages))
        return self.inner(messages)


def structure_defect(out: list[BaseMessage]) -> str | None:
    """None when a provider accepts the order of ``out``, else what is wrong."""
    called: set[str] = set()
    pending: set[str] = set()
    for i, m in enumerate(out):
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in called:
                return f"orphaned ToolMessage at {i} ({m.tool_call_id})"
            pending.discard(m.tool_call_id)
            continue
        if pending:
            return f"tool calls {sorted(pending)} without results before {i}"
        if isinstance(m, AIMessage) and m.tool_calls:
            ids = {tc["id"] for tc in m.tool_calls}
            called |= ids
            pending |= ids
    if pending:
        return f"tool calls {sorted(pending)} without results at the end"
    first_non_system = next((m for m in out if not isinstance(m, SystemMessage)), None)
    if isinstance(first_non_system, AIMessage):
        return "an AI message without the question it answers"
    return None


def assert_ctxfast_ok(inp: list[BaseMessage], out: list[BaseMessage], max_tokens: int) -> None:
    assert structure_defect(out) is None, structure_defect(out)
    assert out[0] is inp[0] and isinstance(out[0], SystemMessage), "the system message was dropped"
    assert out[-1] is inp[-1] and isinstance(out[-1], HumanMessage), "the current question was dropped"
    assert isinstance(out, list) and isinstance(out.fit, ctxfast.Fit)
    assert out.fit.total <= max_tokens
    ids = {id(m) for m in inp}
    for m in out:
        assert id(m) in ids or (isinstance(m, HumanMessage) and m.content.startswith("[compacted]"))


# ----------------------------------------------------------------------------------------------
# LangChain's defects, and ctxfast on the same input


def _orphan_case() -> list[BaseMessage]:
    return [
        SystemMessage("Be brief."),
        HumanMessage("What is in the deploy log?"),
        AIMessage("I will read the deploy log and then the service configuration to compare them. " * 4,
                  tool_calls=[{"name": "tail_logs", "args": {"service": "checkout"}, "id": "call_1", "type": "tool_call"}]),
        ToolMessage("2 errors: 502 upstream", tool_call_id="call_1"),
        AIMessage("Two 502s from the upstream."),
        HumanMessage("What should I do?"),
    ]


def test_langchain_orphans_a_tool_message() -> None:
    msgs = _orphan_case()
    budget = 60
    if UPSTREAM_AS_OBSERVED:
        lc = lc_trim(msgs, max_tokens=budget, token_counter=count_list, strategy="last", include_system=True)
        assert [type(m).__name__ for m in lc] == ["SystemMessage", "ToolMessage", "AIMessage", "HumanMessage"]
        assert structure_defect(lc).startswith("orphaned ToolMessage")
    out = trim_messages(msgs, max_tokens=budget, token_counter=count_list)
    assert_ctxfast_ok(msgs, out, budget)
    assert not any(isinstance(m, ToolMessage) for m in out)


def test_langchain_keeps_an_answer_without_its_question() -> None:
    msgs = [SystemMessage("Be brief."), HumanMessage("Paste of a 3,000-line stack trace: " + "frame " * 300),
            AIMessage("The null pointer comes from the cache layer."), HumanMessage("And the fix?")]
    if UPSTREAM_AS_OBSERVED:
        lc = lc_trim(msgs, max_tokens=60, token_counter=count_list, strategy="last", include_system=True)
        assert [type(m).__name__ for m in lc] == ["SystemMessage", "AIMessage", "HumanMessage"]
        assert structure_defect(lc) == "an AI message without the question it answers"
    out = trim_messages(msgs, max_tokens=60, token_counter=count_list)
    assert_ctxfast_ok(msgs, out, 60)
    assert out == [msgs[0], msgs[3]]


def test_langchain_defaults_drop_the_system_message() -> None:
    msgs = [SystemMessage("You are the on-call assistant. Never suggest deleting a namespace."),
            HumanMessage("q1 " * 30), AIMessage("a1 " * 30), HumanMessage("Can I delete the staging namespace?")]
    if UPSTREAM_AS_OBSERVED:
        lc = lc_trim(msgs, max_tokens=50, token_counter=count_list)  # LangChain's default include_system=False
        assert not any(isinstance(m, SystemMessage) for m in lc)
    out = trim_messages(msgs, max_tokens=50, token_counter=count_list)  # ctxfast's defaults
    assert_ctxfast_ok(msgs, out, 50)


def test_langchain_returns_only_the_system_message() -> None:
    msgs = [SystemMessage("Operating policy. " * 200), HumanMessage("hi"), AIMessage("hello"), HumanMessage("status?")]
    if UPSTREAM_AS_OBSERVED:
        lc = lc_trim(msgs, max_tokens=100, token_counter=count_list, strategy="last", include_system=True)
        assert lc == [msgs[0]]  # no error, and the question is gone
    with pytest.raises(Unfittable) as info:
        trim_messages(msgs, max_tokens=100, token_counter=count_list)
    assert info.value.ceiling == 100 and info.value.total > 100
    assert "system" in str(info.value) and "current_turn" in str(info.value)


def test_langchain_strategy_first_keeps_a_prefix_as_langchain_does() -> None:
    """strategy="first" is LangChain's: the longest prefix that fits (the current question may
    go), except that the prefix never ends inside a tool round."""
    msgs = langchain_session(4, 6)
    budget = count_list(msgs) // 2
    out = trim_messages(msgs, max_tokens=budget, token_counter=count_list, strategy="first")
    assert all(a is b for a, b in zip(out, msgs)) and 0 < len(out) < len(msgs)
    assert count_list(out) <= budget and structure_defect(out) is None
    lc = lc_trim(msgs, max_tokens=budget, token_counter=count_list, strategy="first")
    assert len(out) <= len(lc) and all(a is b for a, b in zip(out, lc))
    assert out == lc or structure_defect(lc) is not None, "only a broken tool round may differ"


def test_langchain_feeds_its_counter_reversed_lists() -> None:
    """Peer complaint (langchain #29637): provider counters reject a ToolMessage before its AIMessage."""
    msgs = langchain_session(2, 12)
    position = {id(m): i for i, m in enumerate(msgs)}

    def out_of_order(call: list[BaseMessage]) -> bool:
        idx = [position[id(m)] for m in call if id(m) in position]
        return idx != sorted(idx)

    if UPSTREAM_AS_OBSERVED:
        rec = Recorder()
        lc_trim(msgs, max_tokens=count_list(msgs) // 3, token_counter=rec, strategy="last", include_system=True)
        assert any(out_of_order(c) for c in rec.calls), "LangChain no longer reverses: update the docs"
        # and it counts by binary search: fewer calls than messages, more messages counted
        assert len(rec.calls) < len(msgs) and sum(map(len, rec.calls)) > len(msgs)
    rec2 = Recorder()
    trim_messages(msgs, max_tokens=count_list(msgs) // 3, token_counter=rec2)
    assert not any(out_of_order(c) for c in rec2.calls)
    # each message counted once (no binary-search re-counting): the calls partition the
    # messages in order, one whole exchange per call, never a tool result without its call
    # (calls on "[compacted]" records count digests with the caller's own counter)
    # (and one call on [] measures what the counter charges per call, e.g. reply priming)
    assert rec2.calls.count([]) == 1
    rec2.calls.remove([])
    counted = [c for c in rec2.calls if not str(c[0].content).startswith("[compacted]")]
    assert [m for c in counted for m in c] == msgs
    assert all(not isinstance(c[0], ToolMessage) for c in rec2.calls)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sessions_langchain_orphans_ctxfast_never(seed: int) -> None:
    msgs = langchain_session(seed, 15)
    full = count_list(msgs)
    lc_defects = 0
    for frac in (0.95, 0.8, 0.6, 0.4, 0.25, 0.1):
        budget = int(full * frac)
        if UPSTREAM_AS_OBSERVED:
            lc = lc_trim(msgs, max_tokens=budget, token_counter=count_list, strategy="last", include_system=True)
            lc_defects += structure_defect(lc) is not None
        try:
            out = trim_messages(msgs, max_tokens=budget, token_counter=count_list)
        except Unfittable as e:
            assert e.total > budget
            continue
        assert_ctxfast_ok(msgs, out, budget)
        assert count_list(out) <= budget  # the user's own counter agrees that it fits
    assert lc_defects >= 1 or not UPSTREAM_AS_OBSERVED


# ----------------------------------------------------------------------------------------------
# token_counter forms


def test_list_counter_is_called_once_per_exchange() -> None:
    msgs = langchain_session(5, 10)
    rec = Recorder()
    budget = count_list(msgs) * 2
    out = trim_messages(msgs, max_tokens=budget, token_counter=rec)
    assert list(out) == msgs and all(a is b for a, b in zip(out, msgs))
    assert rec.calls.pop(0) == []  # what the counter charges per call whatever the list
    # Whole exchanges (a human message and what follows it) or lone system messages, in order.
    assert [m for c in rec.calls for m in c] == msgs
    assert all(isinstance(c[0], (SystemMessage, HumanMessage)) for c in rec.calls)
    # The counter owns framing; its per-call part (count_list's reply priming) is counted once,
    # so the total is the count of the whole list, not the sum over calls.
    assert out.fit.total == count_list(msgs) < sum(count_list(c) for c in rec.calls)


def test_per_message_counter_with_postponed_annotation() -> None:
    msgs = [SystemMessage("Be brief."), HumanMessage("one " * 40), AIMessage("two " * 40), HumanMessage("now?")]
    if UPSTREAM_AS_OBSERVED:
        with pytest.raises(AttributeError):  # LangChain #35629: it calls count_one(list)
            lc_trim(msgs, max_tokens=60, token_counter=count_one)
    out = trim_messages(msgs, max_tokens=60, token_counter=count_one)
    assert out == [msgs[0], msgs[3]]
    assert out.fit.total == count_one(msgs[0]) + count_one(msgs[3])


def test_chat_model_counter() -> None:
    class FakeModel:
        def __init__(self) -> None:
            self.seen: list[int] = []

        def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int:
            if not str(messages[0].content).startswith("[compacted]"):  # digests are counted too
                self.seen.append(len(messages))
            return count_list(messages)

    model = FakeModel()
    msgs = langchain_session(6, 8)
    budget = count_list(msgs) // 2
    out = trim_messages(msgs, max_tokens=budget, token_counter=model)
    assert_ctxfast_ok(msgs, out, budget)
    # One call per exchange (plus one for the system message), each message seen once.
    assert sum(model.seen) == len(msgs) and len(model.seen) < len(msgs)


def test_approximate_counter() -> None:
    msgs = [SystemMessage("Be brief."), HumanMessage("a" * 401), AIMessage("b" * 399), HumanMessage("now?")]
    out = trim_messages(msgs, max_tokens=10_000, token_counter="approximate")
    assert out.fit.total == sum(3 + math.ceil(len(m.content) / 4) for m in msgs)
    small = trim_messages(msgs, max_tokens=20, token_counter="approximate")
    assert small == [msgs[0], msgs[3]] and small.fit.total == (3 + 3) + (3 + 1)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_no_counter_is_exact_openai_framing(encoding: str) -> None:
    """token_counter=None: the OpenAI adapter's count of the same conversation."""
    msgs = langchain_session(7, 9)
    dicts: list[dict[str, Any]] = []
    for m in msgs:
        if isinstance(m, SystemMessage):
            dicts.append({"role": "system", "content": m.content})
        elif isinstance(m, HumanMessage):
            dicts.append({"role": "user", "content": m.content})
        elif isinstance(m, ToolMessage):
            dicts.append({"role": "tool", "content": m.content, "tool_call_id": m.tool_call_id})
        else:
            d: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                d["tool_calls"] = [{"id": tc["id"], "type": "function",
                                    "function": {"name": tc["name"], "arguments": str(tc["args"])}}
                                   for tc in m.tool_calls]
            dicts.append(d)
    tok = Tokenizer.from_encoding(encoding)
    _, oa = openai_fit(dicts, 10**7, tokenizer=tok)
    out = trim_messages(msgs, max_tokens=10**7, tokenizer=tok)
    assert out.fit.total == oa.total
    for frac in (0.5, 0.2):
        budget = int(oa.total * frac)
        oa_out, oa_fit = openai_fit(dicts, budget, tokenizer=tok)
        out = trim_messages(msgs, max_tokens=budget, tokenizer=tok)
        assert out.fit.total == oa_fit.total and len(out) == len(oa_out)
        assert_ctxfast_ok(msgs, out, budget)


def test_strategy_first_keeps_the_oldest_exchanges() -> None:
    msgs = langchain_session(8, 10)
    budget = count_list(msgs) // 3
    out = trim_messages(msgs, max_tokens=budget, token_counter=count_list, strategy="first")
    last = trim_messages(msgs, max_tokens=budget, token_counter=count_list, policy="context_window")
    assert out[1] is msgs[1], "strategy='first' should keep the first exchange"
    assert last[1] is not msgs[1]
    assert count_list(out) <= budget and structure_defect(out) is None
    assert out.fit is None  # a prefix has no policy trace


def test_allow_partial_with_a_policy_is_refused_with_guidance() -> None:
    """With a policy, a truncate rung behind a floorless drop rung would never fire, so the flag
    is refused (without one, allow_partial is LangChain's: see test_langchain_dropin.py)."""
    msgs = langchain_session(3, 4)
    with pytest.raises(UnsupportedOperationError, match="truncate"):
        trim_messages(msgs, max_tokens=500, allow_partial=True, policy="agent")


def test_a_truncate_policy_cuts_bodies_into_copies() -> None:
    """The replacement for allow_partial: a policy whose first rung shortens tool results."""
    policy = ctxfast.Policy.from_dict(CUT_RESULTS)
    msgs = langchain_session(3, 8)
    before = [m.model_dump() for m in msgs]
    full = trim_messages(msgs, max_tokens=10**7).fit.total
    budget = int(full * 0.6)
    out = trim_messages(msgs, max_tokens=budget, policy=policy)
    assert out.fit.truncated and out.fit.total <= budget
    assert structure_defect(out) is None and out[0] is msgs[0] and out[-1] is msgs[-1]
    originals = {id(m) for m in msgs}
    copies = [m for m in out if id(m) not in originals]
    kept = {id(seg) for seg in out.fit.kept}
    assert len(copies) == sum(id(t.segment) in kept for t in out.fit.truncated) >= 1
    for m in copies:
        assert isinstance(m, ToolMessage)
        orig = next(o for o in msgs if isinstance(o, ToolMessage) and o.tool_call_id == m.tool_call_id)
        assert orig.content.startswith(m.content) and len(m.content) < len(orig.content)
        assert {k: v for k, v in m.model_dump().items() if k != "content"} == {
            k: v for k, v in orig.model_dump().items() if k != "content"}
    assert [m.model_dump() for m in msgs] == before


def test_result_carries_the_fit_and_reserve() -> None:
    msgs = langchain_session(9, 6)
    out = trim_messages(msgs, max_tokens=3000, reserve=1000)
    assert isinstance(out, list) and isinstance(out.fit, ctxfast.Fit)
    assert out.fit.ceiling == 2000 and out.fit.total <= 2000
    assert "ceiling 2,000" in out.fit.explain()


def test_pin_first_user() -> None:
    msgs = langchain_session(10, 12)
    budget = count_list([msgs[0], msgs[1], msgs[-1]]) + 40
    out = trim_messages(msgs, max_tokens=budget, token_counter=count_list, pin_first_user=True)
    assert out[1] is msgs[1]
    assert_ctxfast_ok(msgs, out, budget)


# ----------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "kwargs,exc,where",
    [
        (dict(messages="hello", max_tokens=100), ArgumentTypeError, "messages"),
        (dict(messages=5, max_tokens=100), ArgumentTypeError, "messages"),
        (dict(messages=[HumanMessage("x"), 5], max_tokens=100), ArgumentTypeError, r"messages\[1\]"),
        (dict(messages=[{"nope": "x"}], max_tokens=100), ArgumentTypeError, r"messages\[0\]"),
        (dict(messages=[HumanMessage("x")], max_tokens=100, strategy="middle"), InvalidArgumentError, "strategy"),
        (dict(messages=[HumanMessage("x")], max_tokens=100, token_counter=5), InvalidArgumentError, "token_counter"),
        (dict(messages=[HumanMessage("x")], max_tokens=-1), InvalidArgumentError, "window"),
        (dict(messages=[HumanMessage("x")], max_tokens="100"), ArgumentTypeError, "window"),
        (dict(messages=[HumanMessage("x")], max_tokens=100, reserve=100), InvalidArgumentError, "reserve"),
        (dict(messages=[HumanMessage("x")], max_tokens=100, policy="nope"), InvalidArgumentError, "nope"),
    ],
    ids=["str", "int", "int item", "unknown dict item", "strategy", "counter int", "negative", "str budget",
         "reserve=max", "preset"],
)
def test_bad_input(kwargs, exc, where) -> None:
    messages = kwargs.pop("messages")
    with pytest.raises(exc, match=where) as info:
        trim_messages(messages, **kwargs)
    assert isinstance(info.value, CtxfastError)


# ----------------------------------------------------------------------------------------------
# Regressions


def test_include_system_false_lets_the_system_message_go() -> None:
    """Regression: include_system=False was a no-op: the system message stayed protected (Unfittable)."""
    msgs = [SystemMessage("Operating policy. " * 200), HumanMessage("old"), AIMessage("ok"), HumanMessage("status?")]
    out = trim_messages(msgs, max_tokens=100, include_system=False, token_counter=count_list)
    assert out[-1] is msgs[-1] and not any(isinstance(m, SystemMessage) for m in out)


def test_approximate_counter_counts_tool_calls() -> None:
    """Regression: token_counter='approximate' counted message text only; tool_calls cost nothing."""
    args = {"query": "x" * 4000}
    with_call = [HumanMessage("find"), AIMessage("", tool_calls=[{"name": "search", "args": args, "id": "c",
                                                                 "type": "tool_call"}]),
                 ToolMessage("found", tool_call_id="c"), HumanMessage("now?")]
    without = [with_call[0], AIMessage(""), with_call[2], with_call[3]]
    a = trim_messages(with_call, max_tokens=10**6, token_counter="approximate").fit.total
    b = trim_messages(without, max_tokens=10**6, token_counter="approximate").fit.total
    assert a - b >= 1000


def test_digests_are_counted_with_the_users_counter() -> None:
    """Regression: digests were counted with the default o200k tokenizer, not the user's token_counter."""
    def chars(messages):  # noqa: ANN001 - e.g. a character-based budget for a non-OpenAI model
        return sum(10 + len(m.content) for m in messages)

    msgs = langchain_session(2, 10)
    full = sum(chars([m]) for m in msgs)
    budget = int(full * 0.6)
    out = trim_messages(msgs, max_tokens=budget, token_counter=chars)
    assert any(m.content.startswith("[compacted]") for m in out)
    assert out.fit.total == sum(chars([m]) for m in out)
    assert sum(chars([m]) for m in out) <= budget


def test_counter_never_sees_an_orphaned_tool_message() -> None:
    """Regression: the counter was handed a lone [ToolMessage], which provider count endpoints reject."""
    def strict(messages):  # noqa: ANN001 - validates like Anthropic's count_tokens endpoint
        called = {tc["id"] for m in messages for tc in (getattr(m, "tool_calls", None) or ())}
        for m in messages:
            if isinstance(m, ToolMessage) and m.tool_call_id not in called:
                raise ValueError("tool_result without a tool_use in the previous message")
        return count_list(messages)

    msgs = langchain_session(3, 5)
    trim_messages(msgs, max_tokens=count_list(msgs) // 2, token_counter=strict)


@pytest.mark.parametrize("counter", [lambda ms: None, lambda ms: float("nan"), lambda ms: -1, lambda ms: "7"],
                         ids=["None", "NaN", "negative", "str"])
def test_counter_returning_a_non_count_is_a_counter_error(counter) -> None:  # noqa: ANN001
    msgs = [SystemMessage("s"), HumanMessage("x " * 50), AIMessage("y " * 50), HumanMessage("now")]
    with pytest.raises(CounterError):
        trim_messages(msgs, max_tokens=30, token_counter=counter)


def test_fractional_counts_round_up() -> None:
    msgs = [SystemMessage("s"), HumanMessage("now")]
    out = trim_messages(msgs, max_tokens=30, token_counter=lambda ms: 2.1 * len(ms))
    assert out.fit.total == 6  # 3 + 3: never an undercount


def test_a_raising_counter_is_a_counter_error() -> None:
    """Regression: an exception raised by the user's counter escaped bare instead of as CounterError."""
    msgs = [SystemMessage("s"), HumanMessage("x " * 50), AIMessage("y " * 50), HumanMessage("now")]
    with pytest.raises(CounterError):
        trim_messages(msgs, max_tokens=30, token_counter=lambda m: len(m.content))


def test_iterable_annotation_is_a_list_counter() -> None:
    def counter(messages: Iterable[BaseMessage]) -> int:
        return sum(3 + TOK.count(m.content) for m in messages)

    msgs = [SystemMessage("s"), HumanMessage("x " * 50), AIMessage("y " * 50), HumanMessage("now")]
    out = trim_messages(msgs, max_tokens=30, token_counter=counter)
    assert out == [msgs[0], msgs[3]]


def test_truncated_lists_only_bodies_that_were_kept() -> None:
    """Regression: a tool result truncated by one rung and then dropped by the next was listed as truncated."""
    policy = ctxfast.Policy.from_dict(CUT_RESULTS)
    msgs = langchain_session(3, 8)
    full = trim_messages(msgs, max_tokens=10**7).fit.total
    fit = trim_messages(msgs, max_tokens=int(full * 0.6), policy=policy).fit
    kept = {id(seg) for seg in fit.kept}
    assert all(id(t.segment) in kept for t in fit.truncated)


@pytest.mark.parametrize("include_system", [True, False])
def test_start_on_drops_what_stands_before_the_first_human_message(include_system: bool) -> None:
    """Issue 11 item 6: ``start_on`` on the default path, as LangChain applies it (after the
    trim, whatever the budget), and ``.fit`` is the fit of the list returned."""
    msgs = [SystemMessage("Be brief."), AIMessage("Hello! How can I help?"), HumanMessage("What is 2+2?"),
            AIMessage("4."), HumanMessage("And 3+3?")]
    out = trim_messages(msgs, max_tokens=10_000, start_on="human", include_system=include_system,
                        token_counter=None)
    theirs = lc_trim(msgs, max_tokens=10_000, start_on="human", include_system=include_system,
                     token_counter=lambda ms: sum(len(str(m.content)) for m in ms), strategy="last")
    assert [m.content for m in out] == [m.content for m in theirs]
    assert all(any(m is x for x in msgs) for m in out)
    expected = trim_messages([m for m in out], max_tokens=10_000, include_system=include_system)
    assert out.fit is not None and out.fit.total == expected.fit.total
    # Without start_on the greeting stays.
    assert len(trim_messages(msgs, max_tokens=10_000, include_system=include_system)) == len(msgs)
