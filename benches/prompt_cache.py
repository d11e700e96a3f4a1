"""Prompt caching: what a 60-turn agent session pays in uncached prompt tokens, cache-aware cuts
(``previous=``) against evicting exactly to fit, side by side.

Three ways a serving path fits the same session turn after turn:

- **the stateless OpenAI adapter** (``openai.fit_messages``), 32k window, OpenAI's profile: a
  system prompt, four tool schemas, one user ask, then one tool round per turn (an assistant
  message calling a tool, the tool's result, 300-1,400 tokens), the newest result waiting;
- **``ContextWindow``** on the same session's segments, 32k limit, ``cache="openai"`` (its
  hysteresis) against no cache profile;
- **the open-model adapter** (``chat.fit_messages``) with Qwen2.5's chat template and tokenizer
  on ``open_models.session``, 8k window, the llama.cpp profile (a server's KV prefix reuse).

Measured from outside, not from ``Fit.cache``: a turn keeps the prefix when everything the
previous request sent is the start of what this one sends (the message dicts, or for the open
model the rendered prompt's token ids, tokenized by the ``tokenizers`` package). The uncached
tokens of a turn are its total less what the cache reads of that common prefix: OpenAI's rule
(nothing under 1,024 tokens, then 128-token steps), a KV cache's whole prefix. The chat
adapters' message tokens are ctxfast's exact counts.

``python benches/prompt_cache.py`` prints the table (``--quick``: fewer turns, what CI runs).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpora  # noqa: E402,F401  (puts tests/ on sys.path)
import reporting  # noqa: E402
import session as sess  # noqa: E402

import ctxfast  # noqa: E402
from ctxfast import Budget, ContextWindow, PromptLayer, Segment, openai  # noqa: E402

TURNS = 60
WINDOW = 32_000
RESERVE = 1_000
OPEN_WINDOW = 8_192
OPEN_RESERVE = 256


def openai_cached(prefix_tokens: int) -> int:
    """What OpenAI's automatic cache reads of a shared prefix: nothing under 1,024, then
    128-token steps."""
    return 0 if prefix_tokens < 1024 else 1024 + (prefix_tokens - 1024) // 128 * 128


def agent_session(turns: int, seed: int = 60) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(messages, tools)`` of the whole session; turn ``t`` sends the first ``3 + 2 t``."""
    rng = random.Random(seed)
    thing, env = "rate-engine", "prod"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": sess.system_prompt()},
        {"role": "user", "content": sess._user_message(rng, 1, thing, env)},
        {"role": "assistant", "content": "I will read the code, the logs and the tests before changing anything."},
    ]
    for r in range(turns):
        content, call, result, _ = sess._tool_call_and_result(rng, r + 1, rng.randint(300, 1400), thing, env)
        messages.append({"role": "assistant", "content": content, "tool_calls": [
            {"id": call["id"], "type": "function",
             "function": {"name": call["name"], "arguments": json.dumps(call["args"])}}]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return messages, sess.tool_schemas()[:4]


def _common(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _row(path: str, mode: str, turns: list[tuple[bool, int, int]]) -> dict[str, Any]:
    later = turns[1:]  # the first turn has no previous request
    return {
        "path": path, "mode": mode, "turns": len(turns),
        "kept_prefix": sum(1 for k, _, _ in later if k), "of": len(later),
        "uncached": sum(u for _, u, _ in turns), "sent": sum(t for _, _, t in turns),
    }


def run_openai(turns: int, cache_aware: bool, window: int = WINDOW) -> dict[str, Any]:
    messages, tools = agent_session(turns)
    budget = Budget(window, RESERVE)
    previous: tuple[list[dict[str, Any]], ctxfast.Fit] | None = None
    out: list[tuple[bool, int, int]] = []
    for t in range(1, turns + 1):
        request = messages[: 3 + 2 * t]
        sent, fit = openai.fit_messages(request, budget, tools=tools,
                                        previous=previous[1] if previous and cache_aware else None)
        assert fit.total <= budget.ceiling
        if previous is None:
            out.append((False, fit.total, fit.total))
        else:
            common = _common(previous[0], sent)
            shared = openai.fit_messages(sent[:common], Budget(10**9), tools=tools)[1].total if common else 0
            shared -= openai.REPLY_PRIMING if common else 0
            out.append((common == len(previous[0]), fit.total - openai_cached(shared), fit.total))
        previous = (sent, fit)
    return _row(f"openai.fit_messages ({window // 1000}k)", "cache-aware" if cache_aware else "evict exactly", out)


def _segments(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[list[Segment]]:
    """The session as the window admits it: the fixed start, then one group per tool round."""
    start = [
        Segment(json.dumps(tools), PromptLayer.TOOLS, key="tools"),
        Segment(messages[0]["content"], PromptLayer.SYSTEM, key="system"),
        Segment(messages[1]["content"], PromptLayer.PINNED, key="ask"),
        Segment(messages[2]["content"], PromptLayer.CONVERSATION, key="plan"),
    ]
    rounds = [start]
    for r in range((len(messages) - 3) // 2):
        call, result = messages[3 + 2 * r], messages[4 + 2 * r]
        text = (call["content"] or "") + call["tool_calls"][0]["function"]["arguments"]
        rounds.append([
            Segment(text, PromptLayer.CONVERSATION, key=f"call{r}", group=f"r{r}"),
            Segment(result["content"], PromptLayer.TOOL_RESULT, key=f"result{r}", group=f"r{r}"),
        ])
    return rounds


def run_window(turns: int, cache_aware: bool, window: int = WINDOW) -> dict[str, Any]:
    messages, tools = agent_session(turns)
    rounds = _segments(messages, tools)
    tok = ctxfast.Tokenizer.default()
    held_window = ContextWindow(window, tok, reserve=RESERVE, cache="openai" if cache_aware else None)
    held_window.admit_many(rounds[0])
    before: list[str] | None = None
    out: list[tuple[bool, int, int]] = []
    for t in range(1, turns + 1):
        held_window.admit_many(rounds[t])
        held_window.fit()
        held = held_window.segments()
        keys = [s.key for s in held]
        total = held_window.tokens
        if before is None:
            out.append((False, total, total))
        else:
            common = _common(before, keys)
            shared = sum(tok.count(s.text) for s in held[:common])
            out.append((common == len(before), total - openai_cached(shared), total))
        before = keys
    return _row(f"ContextWindow ({window // 1000}k)", "cache-aware" if cache_aware else "evict exactly", out)


def run_open_model(turns: int, cache_aware: bool, window: int = OPEN_WINDOW) -> dict[str, Any]:
    import open_models as om
    from ctxfast import ChatTemplate, Tokenizer, chat

    family = "qwen2.5"
    tok = Tokenizer.from_file(str(om.tokenizer_json(family)))
    template = ChatTemplate(om.template_source(family), special_tokens=om.FAMILIES[family][1])
    hf = om.hf_tokenizer(family)
    session = om.session(turns, seed=1)
    asks = [i for i, m in enumerate(session) if m["role"] == "user"]
    budget = Budget(window, OPEN_RESERVE)
    previous: tuple[list[int], ctxfast.Fit] | None = None
    out: list[tuple[bool, int, int]] = []
    for end in asks[1:]:
        request = session[: end + 1]
        _, fit = chat.fit_messages(request, budget, template=template, tokenizer=tok, tools=om.TOOLS,
                                   previous=previous[1] if previous and cache_aware else None)
        ids = hf.encode(fit.prompt or "", add_special_tokens=False).ids
        assert len(ids) == fit.total and fit.total <= budget.ceiling
        if previous is None:
            out.append((False, fit.total, fit.total))
        else:
            common = _common(previous[0], ids)
            out.append((common == len(previous[0]), fit.total - common, fit.total))
        previous = (ids, fit)
    return _row(f"chat.fit_messages, Qwen2.5 ({window // 1024}k)", "cache-aware" if cache_aware else "evict exactly", out)


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Quick mode (CI) is 30 turns in half-size windows: still under pressure from turn ~15."""
    turns, scale = (30, 2) if quick else (TURNS, 1)
    rows = []
    for fn, window in ((run_openai, WINDOW), (run_window, WINDOW), (run_open_model, OPEN_WINDOW)):
        for aware in (False, True):
            rows.append(fn(turns, aware, window // scale))
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    lines = ["| path | cuts | turns keeping the prefix | uncached prompt tokens | vs evict exactly | tokens sent |",
             "|---|---|---:|---:|---:|---:|"]
    base: dict[str, int] = {}
    for r in rows:
        if r["mode"] == "evict exactly":
            base[r["path"]] = r["uncached"]
        ratio = r["uncached"] / base[r["path"]] if base.get(r["path"]) else 1.0
        share = 100 * r["kept_prefix"] / r["of"] if r["of"] else 0
        lines.append(f"| {r['path']} | {r['mode']} | {r['kept_prefix']} of {r['of']} ({share:.0f}%) | "
                     f"{r['uncached']:,} | {ratio:.2f}x | {r['sent']:,} |")
    return "\n".join(lines)


if __name__ == "__main__":
    reporting.runner_main(__doc__ or "", run, report)
