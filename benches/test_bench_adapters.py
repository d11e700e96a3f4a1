"""The provider adapters against LangChain's ``trim_messages``, on one realistic agent request.

Input: ``session.generate(60)`` — the request at turn 60 of a seeded agent session: a ~1.5k-token
system prompt, 12 tool schemas, 59 complete turns (user message with its retrieved context, an
assistant tool call, the tool's result, the answer) and the current question. About 215k tokens,
trimmed to whole-request ceilings of 8k, 32k and 128k (``CEILINGS``). The tool schemas count
against every contender's ceiling: ctxfast.openai counts them itself (``tools=``); the LangChain
rows get ``max_tokens = ceiling - <tool-schema tokens>`` because LangChain binds tools to the
model, not to the message list.

Contenders (one pytest-benchmark group per ceiling, ``adapters-t60-<ceiling>``):

- ``ctxfast.openai``: ``ctxfast.openai.fit_messages(dicts, Budget(ceiling), tools=...)`` with a
  tokenizer that has no count cache (``cache_capacity=0``): every string counted every round.
- ``ctxfast.openai.warm``: a server's steady state. The same history, counted on earlier turns
  (cached), plus a current question never seen before (a new variant every round).
- ``ctxfast.langchain``: ``ctxfast.langchain.trim_messages(messages, max_tokens=...)``,
  ``token_counter=None`` (exact OpenAI framing, counted in Rust), no count cache.
- ``ctxfast.langchain+tiktoken``: the same call with LangChain's counter below.
- ``langchain``: ``langchain_core.messages.trim_messages(messages, max_tokens=...,
  token_counter=<tiktoken counter>, strategy="last", include_system=True, start_on="human",
  end_on=("human", "tool"))`` — the arguments LangChain's docs recommend for chat history.
  The counter is what ``ChatOpenAI.get_num_tokens_from_messages`` does, in plain tiktoken: per
  message 3 + role + content + (name + args + 3 per tool call), plus 3 priming.
- ``langchain.defaults``: the same without the mitigations (``strategy="last"`` and LangChain's
  defaults, ``include_system=False``, no ``start_on``/``end_on``) — how it is often called.

Every row records in ``extra_info``: what came out (``outcome``: valid / the defect; ``total``:
the whole request, recounted with tiktoken and OpenAI framing, tool schemas included; ``kept``
messages) and how much counting it did (``counter_calls``, ``messages_counted``,
``texts_tokenized``; for ctxfast ``count_calls`` is ``fit.count_calls`` and ``texts_tokenized`` the
tokenizer's cache misses on a cleared cache).

Quick mode (``pytest benches --benchmark-disable``, what CI runs): every body once, same checks.
``benches/report_adapters.py`` runs this file and prints the Markdown table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import ctxfast
import session as sess

TURNS = 60
CEILINGS = [8_000, 32_000, 128_000]
CONTENDERS = ["ctxfast.openai", "ctxfast.openai.warm", "ctxfast.langchain", "ctxfast.langchain+tiktoken", "langchain",
              "langchain.defaults"]
#: Rounds per contender in full mode (fixed, so the run's length is predictable: ~15 s).
ROUNDS = {"ctxfast.openai": 25, "ctxfast.openai.warm": 150, "ctxfast.langchain": 25,
          "ctxfast.langchain+tiktoken": 12, "langchain": 7, "langchain.defaults": 7}
ENCODING = "o200k_base"
_variants = iter(range(1, 10**9))  # never-seen current questions for the warm row

_ROLE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def _k(n: int) -> str:
    return f"{n // 1000}k"


class TiktokenCounter:
    """A LangChain ``token_counter`` over a list of messages: OpenAI framing in plain tiktoken.

    Also notes how it was called: invocations, messages handed over, texts tokenized, and calls
    whose list had a ToolMessage before the AIMessage that called it (reversed input).
    """

    def __init__(self, enc: Any) -> None:
        self.enc = enc
        self.calls = self.messages = self.tokenized = self.reversed = 0

    def _t(self, text: str) -> int:
        self.tokenized += 1
        return len(self.enc.encode_ordinary(text))

    def __call__(self, messages) -> int:  # noqa: ANN001 - LangChain passes a list
        self.calls += 1
        self.messages += len(messages)
        n = 3
        called: set[str] = set()
        flagged = False
        for m in messages:
            content = m.content if isinstance(m.content, str) else json.dumps(m.content)
            n += 3 + self._t(_ROLE.get(m.type, m.type)) + self._t(content)
            for tc in getattr(m, "tool_calls", None) or ():
                called.add(tc["id"])
                n += self._t(tc["name"]) + self._t(json.dumps(tc["args"])) + 3
            if m.type == "tool" and m.tool_call_id not in called:
                flagged = True
        self.reversed += flagged
        return n


# ---- what came out ------------------------------------------------------------------------------


def _defect(inp: list, out: list, *, is_tool: Callable[[Any], bool], answers: Callable[[Any], Any],
            calls: Callable[[Any], list], orphan: str) -> str | None:
    """None when a provider accepts ``out`` as the trimmed ``inp``, else what is wrong. ``is_tool``,
    ``answers`` (the call id a tool message answers) and ``calls`` (the ids a message calls) read
    one message of either form."""
    called, pending = set(), set()
    for m in out:
        if is_tool(m):
            if answers(m) not in called:
                return orphan
            pending.discard(answers(m))
            continue
        if pending:
            return "tool call without its result"
        for call_id in calls(m):
            called.add(call_id)
            pending.add(call_id)
    if pending:
        return "tool call without its result"
    if out[0] is not inp[0]:
        return "system prompt dropped"
    if out[-1] is not inp[-1]:
        return "current question dropped"
    return None


def dict_defect(inp: list[dict], out: list[dict]) -> str | None:
    return _defect(inp, out, is_tool=lambda m: m["role"] == "tool", answers=lambda m: m["tool_call_id"],
                   calls=lambda m: [c["id"] for c in m.get("tool_calls") or ()], orphan="orphaned tool message")


def lc_defect(inp: list, out: list) -> str | None:
    if not out:
        return "empty result"
    return _defect(inp, out, is_tool=lambda m: m.type == "tool", answers=lambda m: m.tool_call_id,
                   calls=lambda m: [tc["id"] for tc in getattr(m, "tool_calls", None) or ()],
                   orphan="orphaned ToolMessage")


def dict_total(messages: list[dict], enc: Any) -> int:
    """Cookbook framing over OpenAI dicts (tool schemas added separately)."""
    t = lambda s: len(enc.encode_ordinary(s))  # noqa: E731
    n = 3
    for m in messages:
        n += 3 + t(m["role"]) + t(m.get("content") or "")
        for c in m.get("tool_calls") or ():
            n += t(c["function"]["name"]) + t(c["function"]["arguments"]) + 3
    return n


# ---- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def enc(tiktoken_o200k):
    return tiktoken_o200k


@pytest.fixture(scope="module")
def case(enc) -> dict[str, Any]:
    s = sess.generate(TURNS)
    dicts = s.dicts()
    from ctxfast.openai import fit_messages

    with_tools = fit_messages(dicts, 10**9, tools=s.tools)[1].total
    without = fit_messages(dicts, 10**9)[1].total
    return {"session": s, "dicts": dicts, "messages": s.langchain_messages(), "tools": s.tools,
            "tools_tokens": with_tools - without, "full": with_tools}


def _fresh_current(case: dict[str, Any]) -> list[dict]:
    """The same history with a current question (and its retrieved context) never seen before."""
    s = case["session"]
    parts = sess.open_turn(s.seed, s.turns, next(_variants))
    return case["dicts"][:-1] + [{"role": "user", "content": sess.user_content(parts)}]


def _tag(benchmark, ceiling: int, contender: str, **extra: Any) -> None:
    benchmark.group = f"adapters-t{TURNS}-{_k(ceiling)}"
    benchmark.extra_info.update(contender=contender, ceiling=ceiling, baseline=contender == "langchain",
                                scenario="adapters", **extra)


# ---- the benchmark ------------------------------------------------------------------------------


@pytest.mark.parametrize("ceiling", CEILINGS, ids=_k)
@pytest.mark.parametrize("contender", CONTENDERS)
def test_adapters(benchmark, case, enc, quick, ceiling: int, contender: str) -> None:
    from langchain_core.messages import trim_messages as lc_trim

    import ctxfast.langchain as cl
    import ctxfast.openai as co

    rounds = 1 if quick else ROUNDS[contender]
    warmup = 0 if quick else 1
    budget = ctxfast.Budget(ceiling)
    lc_max = ceiling - case["tools_tokens"]
    msgs, dicts, tools = case["messages"], case["dicts"], case["tools"]

    if contender in ("ctxfast.openai", "ctxfast.openai.warm"):
        if contender == "ctxfast.openai":
            tok = ctxfast.Tokenizer.from_encoding(ENCODING, cache_capacity=0)
            inputs = lambda: ((dicts,), {})  # noqa: E731
        else:
            tok = ctxfast.Tokenizer.from_encoding(ENCODING, cache_capacity=1 << 16)
            co.fit_messages(dicts, budget, tools=tools, tokenizer=tok)  # earlier turns counted the history
            inputs = lambda: ((_fresh_current(case),), {})  # noqa: E731
        probe_in = inputs()[0][0]
        if contender == "ctxfast.openai":  # what one cold call tokenizes: a cleared cache's misses
            counting = ctxfast.Tokenizer.from_encoding(ENCODING, cache_capacity=1 << 16)
            counting.clear_cache()
        else:  # what one steady-state call tokenizes: the warm tokenizer's new misses
            counting = tok
        before = counting.cache_info().misses
        out, fit = co.fit_messages(probe_in, budget, tools=tools, tokenizer=counting)
        texts = counting.cache_info().misses - before
        defect = dict_defect(probe_in, out)
        total = dict_total(out, enc) + case["tools_tokens"]
        assert defect is None, defect
        assert fit.total == total <= ceiling
        _tag(benchmark, ceiling, contender, outcome="valid", total=total, kept=len(out), count_calls=fit.count_calls,
             texts_tokenized=texts, digests=sum(1 for m in out if str(m.get("content", "")).startswith("[compacted]")))
        benchmark.pedantic(lambda d: co.fit_messages(d, budget, tools=tools, tokenizer=tok), setup=inputs,
                           rounds=rounds, warmup_rounds=warmup)
        return

    if contender in ("ctxfast.langchain", "ctxfast.langchain+tiktoken"):
        if contender == "ctxfast.langchain":
            tok = ctxfast.Tokenizer.from_encoding(ENCODING, cache_capacity=0)
            counting = ctxfast.Tokenizer.from_encoding(ENCODING, cache_capacity=1 << 16)
            counting.clear_cache()
            before = counting.cache_info().misses
            out = cl.trim_messages(msgs, max_tokens=lc_max, tokenizer=counting)
            extra = {"count_calls": out.fit.count_calls, "texts_tokenized": counting.cache_info().misses - before}
            fn = lambda: cl.trim_messages(msgs, max_tokens=lc_max, tokenizer=tok)  # noqa: E731
        else:
            counter = TiktokenCounter(enc)
            out = cl.trim_messages(msgs, max_tokens=lc_max, token_counter=counter)
            extra = {"count_calls": out.fit.count_calls, "counter_calls": counter.calls,
                     "messages_counted": counter.messages, "texts_tokenized": counter.tokenized,
                     "reversed_calls": counter.reversed}
            fn = lambda: cl.trim_messages(msgs, max_tokens=lc_max, token_counter=TiktokenCounter(enc))  # noqa: E731
        defect = lc_defect(msgs, out)
        total = TiktokenCounter(enc)(out) + case["tools_tokens"]
        assert defect is None, defect
        assert total <= ceiling and out.fit.total <= lc_max
        _tag(benchmark, ceiling, contender, outcome="valid", total=total, kept=len(out), **extra)
        benchmark.pedantic(fn, rounds=rounds, warmup_rounds=warmup)
        return

    # LangChain's own function, as its docs recommend calling it for chat history, or bare
    if contender == "langchain":
        kw = dict(max_tokens=lc_max, strategy="last", include_system=True, start_on="human", end_on=("human", "tool"))
    else:
        kw = dict(max_tokens=lc_max, strategy="last")
    counter = TiktokenCounter(enc)
    out = lc_trim(msgs, token_counter=counter, **kw)
    defect = lc_defect(msgs, out)
    total = TiktokenCounter(enc)(out) + case["tools_tokens"] if out else 0
    outcome = defect or ("valid" if total <= ceiling else f"over by {total - ceiling:,}")
    _tag(benchmark, ceiling, contender, outcome=outcome, total=total, kept=len(out), counter_calls=counter.calls,
         messages_counted=counter.messages, texts_tokenized=counter.tokenized, reversed_calls=counter.reversed)
    benchmark.pedantic(lambda: lc_trim(msgs, token_counter=TiktokenCounter(enc), **kw), rounds=rounds,
                       warmup_rounds=warmup)


def test_session_shape(case) -> None:
    """The request is what the docstring says: 60 turns, over every ceiling, with tool traffic."""
    dicts = case["dicts"]
    assert sum(m["role"] == "user" for m in dicts) == TURNS
    assert sum(bool(m.get("tool_calls")) for m in dicts) == TURNS - 1
    assert case["full"] > 1.5 * max(CEILINGS)
    assert len(case["messages"]) == len(dicts)
