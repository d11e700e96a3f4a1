#!/usr/bin/env python
"""Parking a ContextWindow between turns (issue 14, items 3-4): what a server pays per turn to
put a conversation's state in a store and take it back.

    python benches/park.py            # turn 60 of the window benchmark's session, full timing
    python benches/park.py --quick    # turn 20, fewer repetitions (CI)

At turn N of ``test_bench_window``'s 60-turn agent session (32k window, default policy):

- the warm turn itself (admit_many + fit of turn N+1 on a restored window whose counts are
  cached), timed directly, in the same rounds as the parking figures;
- full park: ``to_bytes()`` + ``from_bytes()`` of the whole state; pickle beside it;
- delta park: ``delta_since(mark)`` after the turn, and resume = ``from_bytes(snapshot, deltas=[d])``;
- the store round trip: ``RedisStore.save`` + ``load`` on loopback (when a server is reachable at
  ``CTXFAST_REDIS_URL`` or ``redis-server`` is on PATH), ``MemoryStore`` beside it;
- sizes: snapshot ÷ raw held text, delta ÷ the turn's new text; memory of 200 restored windows
  (glibc ``mallinfo2`` in use) ÷ their raw held text.

Medians over repetitions; the machine is noisy, so compare ratios taken in the same run.
"""

from __future__ import annotations

import ctypes
import gc
import os
import pickle
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ctxfast  # noqa: E402
import test_bench_window as tb  # noqa: E402
from ctxfast.stores import MemoryStore  # noqa: E402


def median_us(f, n: int) -> float:
    xs = []
    for _ in range(n):
        t = time.perf_counter_ns()
        f()
        xs.append(time.perf_counter_ns() - t)
    return statistics.median(xs) / 1000


def _in_use() -> int:
    class M(ctypes.Structure):
        _fields_ = [(f, ctypes.c_size_t) for f in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = M
    m = libc.mallinfo2()
    return int(m.uordblks + m.hblkhd)


def _redis_client():
    try:
        import redis
    except ImportError:
        return None, None
    url = os.environ.get("CTXFAST_REDIS_URL")
    proc = None
    if not url and shutil.which("redis-server"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"redis://127.0.0.1:{port}/0"
    if not url:
        return None, None
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            return client, proc
        except redis.ConnectionError:
            time.sleep(0.05)
    return None, proc


def run(quick: bool) -> dict:
    at = 20 if quick else 60
    reps = 30 if quick else 300
    sess = tb.build_session(at + 2)
    tok = ctxfast.Tokenizer.from_encoding("o200k_base")
    w = ctxfast.ContextWindow(tb.LIMIT if hasattr(tb, "LIMIT") else 32_000, tokenizer=tok)
    for turn in sess.turns[:at]:
        w.admit_many(tb.turn_segments(turn))
        w.fit()
    nxt = tb.turn_segments(sess.turns[at])
    raw = sum(len(s.text.encode()) for s in w.segments())
    snap = w.to_bytes()
    row: dict = {"turn": at, "held": len(w.segments()), "raw_bytes": raw, "snapshot_bytes": len(snap)}

    def warm_turn():
        c = ctxfast.ContextWindow.from_bytes(snap, tokenizer=tok)
        c.admit_many(nxt)
        c.fit()
        return c
    after = warm_turn()  # the next turn's counts are now cached on its segments
    mark_window = ctxfast.ContextWindow.from_bytes(snap, tokenizer=tok)
    mark = mark_window.revision
    mark_window.admit_many(nxt)
    mark_window.fit()
    delta = mark_window.delta_since(mark)
    row["delta_bytes"] = len(delta)
    row["turn_new_bytes"] = sum(len(s.text.encode()) for s in nxt if after.why(s.key).admissions >= 1) if nxt else 0

    # Every figure below is taken in the same rounds, one sample of each per round, so a busy
    # spell on the machine falls on all of them alike; the medians are compared as ratios.
    # The warm turn is timed directly: admit_many + fit of the next turn on a window restored
    # beforehand (outside the timer), its counts already cached.
    # In a server's order: the turn, its delta, the next request's resume; then the whole-state
    # forms. (An op timed right after pickle's round trip paid glibc's consolidation of the
    # window pickle had just dropped: delta_since there took ~100 µs, ~25 µs after the turn.)
    ops = {
        "delta_since_us": lambda: mark_window.delta_since(mark),
        "resume_us": lambda: ctxfast.ContextWindow.from_bytes(snap, tokenizer=tok, deltas=[delta]),
        "to_bytes_us": w.to_bytes,
        "from_bytes_us": lambda: ctxfast.ContextWindow.from_bytes(snap, tokenizer=tok),
        "pickle_us": lambda: pickle.loads(pickle.dumps(w)),
    }
    samples: dict = {k: [] for k in ["turn_us", *ops, "drop_us"]}
    for _ in range(reps):
        fresh = ctxfast.ContextWindow.from_bytes(snap, tokenizer=tok)
        t = time.perf_counter_ns()
        fresh.admit_many(nxt)
        fresh.fit()
        samples["turn_us"].append(time.perf_counter_ns() - t)
        for k, f in ops.items():
            t = time.perf_counter_ns()
            out = f()
            samples[k].append(time.perf_counter_ns() - t)
            # What an op returns is released after the timer stops, as the turn's window is: a
            # window's release belongs to the end of its request (timed apart, as drop_us).
            if k == "resume_us":
                t = time.perf_counter_ns()
                del out
                samples["drop_us"].append(time.perf_counter_ns() - t)
            out = None
    for k, xs in samples.items():
        row[k] = statistics.median(xs) / 1000
    restore_only = row["from_bytes_us"]
    row["park_resume_us"] = row["delta_since_us"] + row["resume_us"]

    mem = MemoryStore(tokenizer=tok, compact_every=10**6)
    co = mem.new(ctxfast.ContextWindow.from_bytes(snap, tokenizer=tok))
    mem.save("c", co)

    def store_turn(store, conv):
        got = store.load(conv)
        got.window.admit_many(nxt)
        got.window.fit()
        store.save(conv, got)
        store.delete(conv)
        fresh = store.new(ctxfast.ContextWindow.from_bytes(snap, tokenizer=tok))
        store.save(conv, fresh)
    row["memory_store_us"] = median_us(lambda: store_turn(mem, "c"), max(10, reps // 5)) - restore_only - row["turn_us"]
    client, proc = _redis_client()
    if client is not None:
        from ctxfast.stores import RedisStore
        rs = RedisStore(client, prefix=f"bench-{os.getpid()}:", tokenizer=tok, compact_every=10**6)
        rs.save("c", rs.new(ctxfast.ContextWindow.from_bytes(snap, tokenizer=tok)))
        loaded = rs.load("c")
        row["redis_load_us"] = median_us(lambda: rs.load("c"), max(10, reps // 5))
        loaded.window.admit_many(nxt)
        loaded.window.fit()
        d = loaded.window.delta_since(loaded.revision)
        row["redis_save_delta_us"] = median_us(lambda: rs._write("x", None, "e:1", d, True) and rs.delete("x"), max(10, reps // 5))
        rs.delete("c")
        if proc is not None:
            proc.terminate()

    gc.collect()
    before = _in_use()
    keep = [ctxfast.ContextWindow.from_bytes(snap, tokenizer=tok) for _ in range(200)]
    gc.collect()
    row["memory_per_window_bytes"] = (_in_use() - before) / len(keep)
    row["memory_ratio"] = row["memory_per_window_bytes"] / raw
    del keep
    return row


def report(row: dict) -> str:
    lines = [f"Turn {row['turn']}: {row['held']} held segments, {row['raw_bytes']:,} bytes of raw text.", "",
             "| | value |", "|---|---:|"]
    for k in ("turn_us", "to_bytes_us", "from_bytes_us", "pickle_us", "delta_since_us", "resume_us", "drop_us", "park_resume_us",
              "memory_store_us", "redis_load_us", "redis_save_delta_us"):
        if k in row:
            lines.append(f"| {k} | {row[k]:.0f} µs |")
    lines.append(f"| park + resume ÷ warm turn | {row['park_resume_us'] / max(row['turn_us'], 1e-9):.2f}× |")
    lines.append(f"| memory per restored window | {row['memory_per_window_bytes'] / 1024:.0f} KiB |")
    lines.append(f"| snapshot ÷ raw text | {row['snapshot_bytes'] / row['raw_bytes']:.2f}× ({row['snapshot_bytes']:,} B) |")
    lines.append(f"| delta ÷ the turn's new text | {row['delta_bytes'] / max(row['turn_new_bytes'], 1):.2f}× ({row['delta_bytes']:,} B) |")
    lines.append(f"| memory per restored window ÷ raw text | {row['memory_ratio']:.2f}× |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run("--quick" in sys.argv)))
