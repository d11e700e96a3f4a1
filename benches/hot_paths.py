#!/usr/bin/env python
"""The calls where the Python/Rust crossing is a large share of the time, timed in this
interpreter: what to compare between two builds of the extension (e.g. the abi3 wheel against a
version-specific one).

    python benches/hot_paths.py                    # medians as JSON on stdout
    python benches/hot_paths.py --compare A B      # run two interpreters (venvs), alternating

With ``--compare``, each interpreter runs this script several times, alternating, and the table
gives each path's median in both and the ratio B / A.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable


def _median_ns(fn: Callable[[], object], number: int, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(number):
            fn()
        times.append((time.perf_counter_ns() - start) / number)
    return statistics.median(times)


def measure() -> dict[str, float]:
    import ctxfast
    import ctxfast.openai
    from ctxfast import Budget, ContextWindow, Policy, PromptLayer as L, Segment, Tokenizer

    tok = Tokenizer.default()
    sentence = "The quick brown fox jumps over the lazy dog, again and again."
    segs = [Segment(f"chunk {i} " * 8, L.RETRIEVED, key=f"k{i}", score=(i % 100) / 100) for i in range(10_000)]
    segs.append(Segment("question", L.CURRENT_TURN))
    budget = Budget(40_000)
    policy = Policy.context_window()
    ctxfast.fit(segs, budget, policy)  # counts remembered: the warm fit below counts nothing
    texts = [f"text number {i} with a few words" for i in range(200)]
    messages = [{"role": "system", "content": "You are helpful."}]
    for i in range(40):
        messages += [{"role": "user", "content": f"question {i} " * 5}, {"role": "assistant", "content": f"answer {i} " * 9}]
    messages.append({"role": "user", "content": "and now?"})

    def window_turn() -> None:
        w = ContextWindow(2_000)
        w.admit(Segment("system", L.SYSTEM))
        for i in range(12):
            w.admit(Segment(f"turn text {i % 5}", L.RETRIEVED, key=f"r{i}"))
        w.fit()

    return {
        "count, short, cache=False": _median_ns(lambda: tok.count(sentence, cache=False), 20_000),
        "count, short, cached": _median_ns(lambda: tok.count(sentence), 50_000),
        "count_many, 200 short texts": _median_ns(lambda: tok.count_many(texts), 2_000),
        "Segment()": _median_ns(lambda: Segment("a short text", L.CONVERSATION, key="k", score=0.5), 50_000),
        "fit, warm, 10,001 segments": _median_ns(lambda: ctxfast.fit(segs, budget, policy), 30),
        "ContextWindow turn (13 admits + fit)": _median_ns(window_turn, 2_000),
        "openai.fit_messages, 82 messages": _median_ns(lambda: ctxfast.openai.fit_messages(messages, 600), 300),
    }


def compare(a: str, b: str, rounds: int) -> None:
    runs: dict[str, list[dict[str, float]]] = {a: [], b: []}
    for _ in range(rounds):
        for python in (a, b):
            out = subprocess.run([python, __file__], capture_output=True, text=True, check=True).stdout
            runs[python].append(json.loads(out))
    names = list(runs[a][0])
    print(f"| path | {a} | {b} | B / A |\n|---|---:|---:|---:|")
    for name in names:
        ma = statistics.median(r[name] for r in runs[a])
        mb = statistics.median(r[name] for r in runs[b])
        print(f"| {name} | {ma / 1000:,.2f} µs | {mb / 1000:,.2f} µs | {mb / ma:.3f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", nargs=2, metavar=("PYTHON_A", "PYTHON_B"))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare, args.rounds)
    else:
        print(json.dumps(measure()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
