#!/usr/bin/env python
"""A soak: a million random ContextWindow operations with the invariants checked, and memory
watched after a warm-up.

    python benches/soak.py                 # 1,000,000 operations (the README's figures)
    python benches/soak.py --ops 20000     # a shorter run
    python benches/soak.py --json out.json # keep the figures

Each operation is one of admit / admit_many / fit / discard / mark_stale / rewrite / digest /
why / to_bytes+from_bytes, drawn at random (seeded) over a rotating set of conversations, so
windows are created, worked and dropped all run long. After every operation the window's own
invariants are checked: the ledger balances, every key ever admitted answers ``why``, what is
held is within the ceiling after a fit, and every held entry has its segment object. Resident
memory is sampled every 10,000 operations; after the warm-up (the first 10 %) it must stay flat:
the run fails if it grows by more than ``--rss-slack-mib`` (default 16 MiB).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import ctxfast
from ctxfast import ContextWindow, PromptLayer as L, Segment

WORDS = ["alpha", "beta", "gamma", "delta", "ledger", "window", "token", "budget", "cache", "rung"]


def rss_mib() -> float:
    """Resident set size of this process, from /proc (Linux)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


class Conversation:
    """One window and what the soak knows about it."""

    def __init__(self, rng: random.Random, serial: int) -> None:
        self.rng = rng
        policy = rng.choice(["context_window", "agent", "troubleshooting", "seven_tier", "ranked"])
        horizon = rng.choice([None, None, 8])
        self.window = ContextWindow(rng.choice([300, 800, 2000]), policy=policy, reserve=50, why_horizon=horizon)
        self.admitted: set[str] = set()
        self.serial = serial
        self.turn = 0
        self.window.admit(Segment("You are a helpful assistant. " + text(rng, 20), L.SYSTEM))

    def key(self) -> str:
        return f"k{self.serial}.{self.rng.randrange(400)}"

    def segment(self) -> Segment:
        rng = self.rng
        layer = rng.choice([L.RETRIEVED, L.RETRIEVED, L.CONVERSATION, L.TOOL_RESULT, L.CURRENT_TURN, L.SUMMARY])
        group = f"ex{self.turn}" if layer in (L.CONVERSATION, L.TOOL_RESULT, L.CURRENT_TURN) else None
        meta = {"tool": "read", "arguments": "a.py"} if layer == L.CONVERSATION and rng.random() < 0.3 else None
        return Segment(
            text(rng, rng.randrange(1, 120)),
            layer,
            key=self.key() if rng.random() < 0.8 else None,
            score=rng.random(),
            recoverable=rng.random() < 0.3,
            stale=rng.random() < 0.2,
            group=group,
            meta=meta,
        )

    def held_keys(self) -> list[str]:
        return [s.key for s in self.window.segments() if s.key is not None]

    def step(self) -> str:
        rng, w = self.rng, self.window
        op = rng.choices(
            ["admit", "admit_many", "fit", "discard", "mark_stale", "rewrite", "digest", "why", "park"],
            weights=[30, 8, 30, 5, 5, 5, 3, 10, 4],
        )[0]
        if op == "admit":
            s = self.segment()
            if w.admit(s) and s.key:
                self.admitted.add(s.key)
        elif op == "admit_many":
            self.turn += 1
            segs = [self.segment() for _ in range(rng.randrange(1, 6))]
            for s, ok in zip(segs, w.admit_many(segs)):
                if ok and s.key:
                    self.admitted.add(s.key)
        elif op == "fit":
            try:
                w.fit()
            except ctxfast.Unfittable:
                pass
            else:
                assert w.tokens <= w.ceiling, "held over the ceiling after a fit"
        elif op in ("discard", "mark_stale", "rewrite", "digest", "why"):
            held = self.held_keys()
            if held:
                k = rng.choice(held)
                if op == "discard":
                    w.discard(k)
                elif op == "mark_stale":
                    w.mark_stale(k)
                elif op == "rewrite":
                    try:
                        w.rewrite(k, text(rng, 3), provenance="soak")
                    except ctxfast.BudgetLedgerInconsistency:
                        pass
                elif op == "digest":
                    try:
                        w.digest(k)
                    except ctxfast.CtxfastError:
                        pass
                else:
                    w.why(k)
        else:
            back = ContextWindow.from_bytes(w.to_bytes())
            assert back.to_bytes() == w.to_bytes(), "a parked window came back different"
            self.window = back
        self.check()
        return op

    def check(self) -> None:
        w = self.window
        assert w.ledger.balanced, "the ledger does not balance"
        assert w._objects_cover_entries(), "a held entry has no segment object"
        if w.why_horizon is None:
            for k in self.rng.sample(sorted(self.admitted), min(3, len(self.admitted))):
                w.why(k)


def soak(ops: int, seed: int, rss_slack_mib: float, live: int = 8) -> dict[str, object]:
    rng = random.Random(seed)
    serial = 0
    convs = [Conversation(random.Random(rng.random()), serial := serial + 1) for _ in range(live)]
    counts: dict[str, int] = {}
    samples: list[tuple[int, float]] = []
    warm_up = max(1, ops // 10)
    start = time.perf_counter()
    for i in range(1, ops + 1):
        c = rng.randrange(live)
        if convs[c].turn > 60 or rng.random() < 1e-4:
            serial += 1
            convs[c] = Conversation(random.Random(rng.random()), serial)
        op = convs[c].step()
        counts[op] = counts.get(op, 0) + 1
        if i % 10_000 == 0 or i == ops:
            samples.append((i, rss_mib()))
    seconds = time.perf_counter() - start
    after = [r for i, r in samples if i >= warm_up] or [samples[-1][1]]
    growth = max(after) - after[0]
    return {
        "ops": ops,
        "seconds": round(seconds, 2),
        "ops_per_second": round(ops / seconds),
        "rss_after_warm_up_mib": round(after[0], 1),
        "rss_peak_mib": round(max(after), 1),
        "rss_end_mib": round(after[-1], 1),
        "growth_mib": round(growth, 1),
        "flat": growth <= rss_slack_mib,
        "windows_created": serial,
        "ops_by_kind": counts,
        "build_profile": ctxfast.build_profile,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--rss-slack-mib", type=float, default=16.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    result = soak(args.ops, args.seed, args.rss_slack_mib)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    print(
        f"\n| operations | time | ops/s | RSS after warm-up | peak | end | growth |\n|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| {result['ops']:,} | {result['seconds']} s | {result['ops_per_second']:,} | "
        f"{result['rss_after_warm_up_mib']} MiB | {result['rss_peak_mib']} MiB | {result['rss_end_mib']} MiB | "
        f"{result['growth_mib']} MiB |",
        file=sys.stderr,
    )
    return 0 if result["flat"] else 1


if __name__ == "__main__":
    sys.exit(main())
