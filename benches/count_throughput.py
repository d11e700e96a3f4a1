"""Counting throughput, single thread, o200k_base and cl100k_base: ctxfast against fastokens (the
fastest exact counter on PyPI) and tiktoken, cold and in a server's steady state, side by side.

Five kinds of text, about 1 MB each: prose (Pride and Prejudice), code (the standard library),
JSON (seeded records), CJK (Wagahai wa neko de aru) and chat (an agent session's messages as
`role: content` lines). Each text is cut in two halves of the same kind:

- **cold**: nothing learnt. ctxfast: `tok.clear_cache()` (the count cache and this thread's piece
  cache) then `count(half, cache=False)`; fastokens: a new `Tokenizer` on the same vocabulary
  before every sample (its caches live in the instance); tiktoken has no cache across calls.
- **steady**: one long-lived instance each, warmed on the first half, counting the second half
  (a new string of a familiar kind, what a server sees). Each sample prefixes a unique line, so
  no contender can reuse a previous call's work by identity or prefix.

Single thread means each contender's own work on one thread: fastokens 0.3 spreads the BPE of a
long text over worker threads of its own unless ``FASTOKENS_BPE_THREADS=1``, which this script
sets (measured: with the default, its process CPU time ran ~2× its calling thread's, and on this
2-core machine its wall time swung with the neighbour's load). ctxfast and tiktoken use the
calling thread alone.

Every count is checked against tiktoken's `encode_ordinary` first. Figures are MB/s of UTF-8,
medians of the samples, contenders interleaved sample by sample (the machine is shared): the
steady ones first, each right after a tiktoken count of the same text, then the cold ones.
"steady, paired" is the median of each sample's own ratio (fastokens' time ÷ ctxfast's, the two
counts a few tens of milliseconds apart): on a shared host whose speed drifts by a quarter
between minutes, it compares the two at the same moment, where the ratio of the two medians
can pair one's fast minute with the other's slow one.
``python benches/count_throughput.py`` prints the table (``--quick``: one sample, what CI runs).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpora  # noqa: E402,F401  (puts tests/ on sys.path)
import reporting  # noqa: E402
from corpora import helpers  # noqa: E402

import ctxfast  # noqa: E402

helpers.use_tiktoken_cache()  # tiktoken reads the rank files in the repository, offline

# Read by fastokens when it first encodes: set before any instance exists (the caller's value wins).
os.environ.setdefault("FASTOKENS_BPE_THREADS", "1")

ENCODINGS = ["o200k_base", "cl100k_base"]
KINDS = ["prose", "code", "json", "cjk", "chat"]
SAMPLES = 9


def chat_corpus(limit: int = 1_000_000) -> str:
    import prompt_cache

    messages, _ = prompt_cache.agent_session(400, seed=5)
    lines = []
    size = 0
    for m in messages:
        content = m.get("content") or "".join(c["function"]["arguments"] for c in m.get("tool_calls", []))
        line = f"{m['role']}: {content}\n"
        lines.append(line)
        size += len(line.encode())
        if size > limit:
            break
    return "".join(lines)


def texts() -> dict[str, str]:
    return {
        "prose": helpers.prose_corpus(),
        "code": helpers.code_corpus(),
        "json": helpers.json_corpus(),
        "cjk": helpers.japanese_corpus(),
        "chat": chat_corpus(),
    }


def halves(text: str) -> tuple[str, str]:
    cut = text.rfind("\n", 0, len(text) // 2) + 1 or len(text) // 2
    return text[:cut], text[cut:]


def fastokens_for(encoding: str) -> Callable[[], Any]:
    """A maker of new fastokens instances on tiktoken's own rank file (ids checked below)."""
    import fastokens

    path = str(helpers.rank_file(encoding))
    return lambda: fastokens.Tokenizer.from_tiktoken(path, encoding=encoding)


def _time(fn: Callable[[], int]) -> tuple[float, int]:
    t = time.perf_counter()
    n = fn()
    return time.perf_counter() - t, n


def alternating(names: dict[str, Any], sample: int) -> list[str]:
    """The names in order on even samples, reversed on odd ones."""
    order = list(names)
    return order if sample % 2 == 0 else order[::-1]


def measure(encoding: str, kind: str, text: str, samples: int) -> dict[str, Any]:
    import tiktoken

    tk = tiktoken.get_encoding(encoding)
    first, second = halves(text)
    ours = ctxfast.Tokenizer.from_encoding(encoding)
    new_fast = fastokens_for(encoding)
    steady_fast = new_fast()
    steady_fast.encode(first)
    ours.count(first, cache=False)

    def fast_count(tok: Any, t: str) -> int:
        return len(tok.encode(t))

    def cold_ours(t: str) -> int:
        ours.clear_cache()
        return ours.count(t, cache=False)

    steady: dict[str, Callable[[str], int]] = {
        "ctxfast steady": lambda t: ours.count(t, cache=False),
        "fastokens steady": lambda t: fast_count(steady_fast, t),
    }
    def fresh_fast() -> Callable[[str], int]:
        tok = new_fast()
        return lambda t: fast_count(tok, t)

    # Each cold contender is made before its count, outside the timing: ctxfast's clear is part
    # of its cold count, a new fastokens instance's construction is not a count.
    cold: dict[str, Callable[[], Callable[[str], int]]] = {
        "ctxfast cold": lambda: cold_ours,
        "fastokens cold": fresh_fast,
    }
    times: dict[str, list[float]] = {k: [] for k in [*steady, *cold, "tiktoken"]}

    def timed(name: str, fn: Callable[[str], int], body: str, expected: int) -> None:
        took, n = _time(lambda: fn(body))
        assert n == expected, f"{name} counted {n} tokens on {encoding} {kind}, tiktoken {expected}"
        times[name].append(took)

    bodies = [f"{s:08d} {kind}\n" + second for s in range(samples)]
    expected = [len(tk.encode_ordinary(b)) for b in bodies]
    # Steady first, while both long-lived instances hold only what the first half taught them.
    # Each steady count runs right after a tiktoken count of the same text (timed: tiktoken's
    # column), so both contenders start from the same CPU caches: a new fastokens instance
    # (hundreds of MB built) flushes them, and whoever was timed after it paid for that
    # (measured: ctxfast steady on prose 186 MB/s when it always followed one, 270 otherwise).
    for s, body in enumerate(bodies):
        for name in alternating(steady, s):
            timed("tiktoken", lambda t: len(tk.encode_ordinary(t)), body, expected[s])
            timed(name, steady[name], body, expected[s])
    # Cold, in alternating order.
    for s, body in enumerate(bodies):
        for name in alternating(cold, s):
            timed(name, cold[name](), body, expected[s])
    mb = len(second.encode()) / 1e6
    # Each sample's two steady counts ran back to back: the median of their ratios leaves out
    # the slow and fast phases of a shared machine that a ratio of medians keeps.
    paired = statistics.median(f / o for o, f in zip(times["ctxfast steady"], times["fastokens steady"]))
    return {"encoding": encoding, "kind": kind, "mb": mb, "steady paired": paired,
            **{k: mb / statistics.median(v) for k, v in times.items()}}


def run(quick: bool = False) -> list[dict[str, Any]]:
    corpus = texts()
    samples = 1 if quick else SAMPLES
    return [measure(enc, kind, corpus[kind], samples) for enc in ENCODINGS for kind in KINDS]


def report(rows: list[dict[str, Any]]) -> str:
    out = []
    for enc in ENCODINGS:
        out += [f"**{enc}**, MB/s (ctxfast ÷ fastokens)", "",
                "| text (MB) | ctxfast cold | fastokens cold | ctxfast steady | fastokens steady | steady, paired | tiktoken |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for r in (r for r in rows if r["encoding"] == enc):
            cold = r["ctxfast cold"] / r["fastokens cold"]
            steady = r["ctxfast steady"] / r["fastokens steady"]
            out.append(f"| {r['kind']} ({r['mb']:.2f}) | **{r['ctxfast cold']:.0f}** ({cold:.2f}×) | "
                       f"{r['fastokens cold']:.0f} | **{r['ctxfast steady']:.0f}** ({steady:.2f}×) | "
                       f"{r['fastokens steady']:.0f} | {r['steady paired']:.2f}× | {r['tiktoken']:.0f} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    reporting.runner_main(__doc__ or "", run, report)
