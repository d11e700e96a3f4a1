"""The 115-message agent request (``agent_request.py``: a system prompt, 4 tool schemas, an ask,
the plan, 56 tool rounds; ~38k tokens) through the adapters, warm, side by side with LangChain's
``trim_messages``; issue 11's one-crossing target.

Contenders (one pytest-benchmark group per ceiling, ``agent115-<ceiling>``; ceilings 8k, 32k and
1M, where nothing is removed):

- ``ctxfast.openai``: ``ctxfast.openai.fit_messages(messages, Budget(ceiling), tools=...)`` with a
  warm tokenizer (a server re-sending a conversation it counted on earlier turns): the whole call,
  Python included.
- ``ctxfast.openai.core``: the same request's one crossing alone, ``_core._fit_chat_fast`` (read,
  count, fit, return the kept order): the part of the call spent in the core.
- ``ctxfast.openai.python-reader``: the same call through the full Python reader
  (``openai._fit``), which the fast path declines to for payloads it does not read exactly
  (images, audio, legacy fields); it also crosses once (``_fit_records``).
- ``ctxfast.langchain``: ``ctxfast.langchain.trim_messages`` on the same conversation as LangChain
  messages (``convert_to_messages``), default counter, warm.
- ``langchain``: ``langchain_core.messages.trim_messages`` with the counter its docs recommend
  (OpenAI framing in tiktoken) and the arguments they recommend for chat history
  (``strategy="last"``, ``include_system``, ``start_on="human"``, ``end_on=("human", "tool")``).

Each row records what came out (``outcome``: valid, or the defect) and the kept messages. The
in-core share is ``core`` over ``ctxfast.openai`` (``report_agent.py``). Quick mode runs each body
once with the same checks.
"""

from __future__ import annotations

from typing import Any

import pytest

import agent_request
import ctxfast
from test_bench_adapters import TiktokenCounter, dict_defect, lc_defect

CEILINGS = [8_000, 32_000, 1_000_000]
CONTENDERS = ["ctxfast.openai", "ctxfast.openai.core", "ctxfast.openai.python-reader", "ctxfast.langchain",
              "langchain"]
ROUNDS = {"ctxfast.openai": 300, "ctxfast.openai.core": 300, "ctxfast.openai.python-reader": 100,
          "ctxfast.langchain": 100, "langchain": 10}


def _k(n: int) -> str:
    return f"{n // 1000}k"


@pytest.fixture(scope="module")
def case(tiktoken_o200k: Any) -> dict[str, Any]:
    from langchain_core.messages import convert_to_messages

    from ctxfast import openai

    messages, tools = agent_request.request()
    tok = ctxfast.Tokenizer.from_encoding("o200k_base", cache_capacity=1 << 16)
    with_tools = openai.fit_messages(messages, 10**9, tools=tools, tokenizer=tok)[1].total
    without = openai.fit_messages(messages, 10**9, tokenizer=tok)[1].total
    return {"messages": messages, "tools": tools, "tok": tok, "lc": convert_to_messages(messages),
            "tools_tokens": with_tools - without, "enc": tiktoken_o200k}


@pytest.mark.parametrize("ceiling", CEILINGS, ids=_k)
@pytest.mark.parametrize("contender", CONTENDERS)
def test_agent_request(benchmark: Any, case: dict[str, Any], quick: bool, ceiling: int, contender: str) -> None:
    from langchain_core.messages import trim_messages as lc_trim

    import ctxfast.langchain as cl
    from ctxfast import _openai_fast, _payload, openai
    from ctxfast._core import _fit_chat_fast

    msgs, tools, tok = case["messages"], case["tools"], case["tok"]
    budget = ctxfast.Budget(ceiling)
    lc_max = ceiling - case["tools_tokens"]
    rounds = 1 if quick else ROUNDS[contender]
    benchmark.group = f"agent115-{_k(ceiling)}"
    extra: dict[str, Any] = {"contender": contender, "ceiling": ceiling, "messages": len(msgs)}

    if contender.startswith("ctxfast.openai"):
        out, fit = openai.fit_messages(msgs, budget, tools=tools, tokenizer=tok)
        defect = dict_defect(msgs, out)
        assert defect is None and fit.total <= ceiling, defect
        extra.update(outcome="valid", kept=len(out), total=fit.total)
        if contender == "ctxfast.openai":
            fn = lambda: openai.fit_messages(msgs, budget, tools=tools, tokenizer=tok)  # noqa: E731
        elif contender == "ctxfast.openai.core":
            schemas = _openai_fast._schemas(tools, None)
            assert schemas is not None
            policy = _payload.resolve_policy(None)
            assert _fit_chat_fast(msgs, schemas[0], schemas[1], budget, policy, tok) is not None
            fn = lambda: _fit_chat_fast(msgs, schemas[0], schemas[1], budget, policy, tok)  # noqa: E731
        else:
            def fn() -> Any:
                with _payload.boundary() as here:
                    return openai._fit(msgs, budget, tools, None, tok, False, None, None, here)
            slow_out, slow_fit = fn()
            assert slow_out == out and slow_fit.total == fit.total
    elif contender == "ctxfast.langchain":
        trimmed = cl.trim_messages(case["lc"], max_tokens=lc_max, tokenizer=tok)
        defect = lc_defect(case["lc"], trimmed)
        assert defect is None, defect
        extra.update(outcome="valid", kept=len(trimmed), total=trimmed.fit.total + case["tools_tokens"])
        fn = lambda: cl.trim_messages(case["lc"], max_tokens=lc_max, tokenizer=tok)  # noqa: E731
    else:
        kw = dict(max_tokens=lc_max, strategy="last", include_system=True, start_on="human", end_on=("human", "tool"))
        trimmed = lc_trim(case["lc"], token_counter=TiktokenCounter(case["enc"]), **kw)
        defect = lc_defect(case["lc"], trimmed)
        extra.update(outcome=defect or "valid", kept=len(trimmed),
                     total=TiktokenCounter(case["enc"])(trimmed) + case["tools_tokens"])
        fn = lambda: lc_trim(case["lc"], token_counter=TiktokenCounter(case["enc"]), **kw)  # noqa: E731
    benchmark.extra_info.update(extra)
    benchmark.pedantic(fn, rounds=rounds, warmup_rounds=0 if quick else 3)
