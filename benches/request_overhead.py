#!/usr/bin/env python
"""What a request costs beyond its fit (issue 14, item 6): a stateless server that builds its
``Segment`` objects afresh from strings every request, with every count already in the cache,
against the warm fit of the same request; and the batch size from which ``count_many`` hands its
misses to a second thread.

    python benches/request_overhead.py            # full timing
    python benches/request_overhead.py --quick    # fewer repetitions (CI)

The request: turn 30 of ``session.py``'s agent session (seed 21): the system prompt, the tool
schemas and the newest 38 parts (tool calls with ``meta``, tool results, answers, retrieved
chunks, the question), 40 segments. Under ``Policy.context_window()`` at three ceilings:

- warm fit: the same ``Segment`` objects every call (each remembers its count);
- stateless: new ``Segment`` objects every call, their counts found in the tokenizer's cache;
- columnar: ``ctxfast.fit_columns`` over lists built from the parts every call, the whole
  request in one crossing, no ``Segment`` per item; the same kept texts. A tool call's arguments
  are passed as the JSON text they arrive as: OpenAI's Chat and Responses APIs send
  ``function.arguments`` as a string, so a server has that text and encodes nothing (the parts
  get it once, as the payload is received: ``wire_parts``). The same column with the arguments
  encoded from a dict every call (what a server holding them as objects, Anthropic's
  ``tool_use.input``, would do) is reported beside it;
- its parts: building the 40 segments, and ``count_many`` of their texts (all cache hits).

The threshold: ``count_many(texts, cache=False)`` over batches of 2-16 texts of 256 B-16 KB, in
two child processes, one with ``RAYON_NUM_THREADS=1``, run alternately; the ratio says from which
batch size the second thread pays. Medians; compare ratios taken in the same run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ctxfast  # noqa: E402
import session as S  # noqa: E402

CEILINGS = (6_000, 8_000, 32_000)
#: Total bytes of a cold batch, split over 2-16 texts.
BATCH_BYTES = (2_048, 4_096, 8_192, 16_384, 32_768, 65_536)
TARGET_RATIO = 3.0


def median_us(f, number: int, repeat: int) -> float:
    xs = []
    for _ in range(repeat):
        t = time.perf_counter_ns()
        for _ in range(number):
            f()
        xs.append((time.perf_counter_ns() - t) / number)
    return statistics.median(xs) / 1000


def request_parts() -> list:
    parts = S.generate(30, seed=21).parts
    return parts[:2] + parts[-38:]


#: What ``Segment(meta=...)`` makes of a tool call's arguments (``bindings/tool_meta.rs``).
_ARGUMENTS = json.JSONEncoder(sort_keys=True, default=repr).encode


def wire_parts(parts: list) -> list:
    """The parts as a server receives them: each tool call's arguments also as JSON text (the
    string OpenAI's APIs send), written as ``Segment(meta=...)`` writes the dict, so both routes
    show the same digests."""
    return [p if p.tool_call is None else replace(p, tool_call={**p.tool_call, "arguments": _ARGUMENTS(p.tool_call["args"])})
            for p in parts]


def columns(parts: list) -> dict:
    """The request as ``fit_columns`` takes it: a list per field, built from the parts."""
    return {
        "texts": [p.text for p in parts],
        "layers": [p.layer for p in parts],
        "keys": [p.key for p in parts],
        "scores": [p.score for p in parts],
        "groups": [p.group for p in parts],
        "recoverable": [p.recoverable for p in parts],
        "stale": [p.stale for p in parts],
        "tools": [None if p.tool_call is None else (p.tool_call["name"], p.tool_call["arguments"], p.turn) for p in parts],
    }


def columns_encoding(parts: list) -> dict:
    """``columns``, the tool calls' arguments encoded from their dicts on every call."""
    cols = columns(parts)
    cols["tools"] = [None if p.tool_call is None else (p.tool_call["name"], _ARGUMENTS(p.tool_call["args"]), p.turn) for p in parts]
    return cols


def overhead(quick: bool) -> list[dict]:
    parts = wire_parts(request_parts())
    tok = ctxfast.Tokenizer.default()
    policy = ctxfast.Policy.context_window()
    texts = [p.text for p in parts]
    tok.count_many(texts)  # every count in the cache, as a server's later requests find them
    warm_segments = S.to_segments(parts)
    number, repeat = (20, 3) if quick else (300, 9)
    rows = []
    for ceiling in CEILINGS:
        budget = ctxfast.Budget(ceiling)
        warm = lambda: ctxfast.fit(warm_segments, budget, policy=policy, tokenizer=tok)  # noqa: E731
        fresh = lambda: ctxfast.fit(S.to_segments(parts), budget, policy=policy, tokenizer=tok)  # noqa: E731
        columnar = lambda: ctxfast.fit_columns(budget=budget, policy=policy, tokenizer=tok, **columns(parts))  # noqa: E731
        encoding = lambda: ctxfast.fit_columns(budget=budget, policy=policy, tokenizer=tok, **columns_encoding(parts))  # noqa: E731
        assert [s.text for s in warm().kept] == [s.text for s in fresh().kept] == [s.text for s in columnar().kept]
        assert str(warm().trace) == str(columnar().trace) == str(encoding().trace)
        rows.append({
            "ceiling": ceiling,
            "segments": len(parts),
            "bytes": sum(len(t.encode()) for t in texts),
            "warm_us": median_us(warm, number, repeat),
            "stateless_us": median_us(fresh, number, repeat),
            "columnar_us": median_us(columnar, number, repeat),
            "encoding_us": median_us(encoding, number, repeat),
            "build_us": median_us(lambda: S.to_segments(parts), number, repeat),
            "count_hits_us": median_us(lambda: tok.count_many(texts), number, repeat),
        })
    return rows


def _threshold_child(quick: bool) -> dict[str, float]:
    """In a child: count_many(cache=False) over each batch shape, medians in µs."""
    source = (HERE.parent / "tests" / "data" / "corpora" / "pride_and_prejudice.txt").read_text(encoding="utf-8")
    tok = ctxfast.Tokenizer.default()
    out = {}
    offset = 0
    for total in BATCH_BYTES:
        for n in (2, 4, 16):
            size = total // n
            texts = []
            for _ in range(n):
                texts.append(source[offset:offset + size])
                offset = (offset + size) % (len(source) - size)
            tok.count_many(texts, cache=False)
            out[f"{total}/{n}"] = median_us(lambda: tok.count_many(texts, cache=False), 5 if quick else 20, 5 if quick else 9)
    return out


def threshold(quick: bool) -> list[dict]:
    rounds = 1 if quick else 3
    samples: dict[str, dict[str, list[float]]] = {"1": {}, "2": {}}
    for _ in range(rounds):
        for threads in ("1", "2"):
            env = dict(os.environ, RAYON_NUM_THREADS=threads)
            cmd = [sys.executable, __file__, "--child"] + (["--quick"] if quick else [])
            got = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
            for k, v in got.items():
                samples[threads].setdefault(k, []).append(v)
    rows = []
    for k in samples["1"]:
        one, two = statistics.median(samples["1"][k]), statistics.median(samples["2"][k])
        total, n = (int(x) for x in k.split("/"))
        rows.append({"bytes": total, "texts": n, "one_thread_us": one, "two_threads_us": two, "speedup": one / two})
    return rows


def report(rows: list[dict], thresholds: list[dict]) -> str:
    lines = ["| ceiling | warm fit | stateless: new Segments | ratio | stateless: fit_columns | ratio "
             "| fit_columns, arguments encoded | ratio | build 40 Segments | count_many, all hits |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ratio = lambda k: f"{r[k] / r['warm_us']:.2f}×"  # noqa: E731
        lines.append(f"| {r['ceiling']:,} | {r['warm_us']:.1f} µs | {r['stateless_us']:.1f} µs | {ratio('stateless_us')} | "
                     f"{r['columnar_us']:.1f} µs | {ratio('columnar_us')} | {r['encoding_us']:.1f} µs | {ratio('encoding_us')} | "
                     f"{r['build_us']:.1f} µs | {r['count_hits_us']:.1f} µs |")
    lines += ["", "| cold batch | texts | 1 thread | 2 threads | 1 ÷ 2 |", "|---:|---:|---:|---:|---:|"]
    for t in thresholds:
        lines.append(f"| {t['bytes']:,} B | {t['texts']} | {t['one_thread_us']:.0f} µs | {t['two_threads_us']:.0f} µs | {t['speedup']:.2f}× |")
    return "\n".join(lines)


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    if "--child" in sys.argv:
        print(json.dumps(_threshold_child(quick)))
    else:
        print(report(overhead(quick), threshold(quick)))
