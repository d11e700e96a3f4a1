"""ContextWindow under threads.

- Many windows, one per conversation, driven from 8 threads at once, end exactly where the same
  conversations driven one after another end.
- Many threads hammering ONE window (admit / fit / why / texts / segments / ledger / discard /
  mark_stale / rewrite) never see "already borrowed", a panic or a torn state: the ledger always
  balances, and at the end the held tokens are the sum of the held segments' counts.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import ctxfast
from ctxfast import ContextWindow, Policy, PromptLayer, Segment
from helpers import word_count, words

L = PromptLayer
THREADS = 8

#: Words, emoji and code punctuation: the native tokenizer meets several kinds of piece at once.
VOCAB = ("exporter timeout retry queue shipment lane carrier rate config pool drain canary window "
         "token budget policy café 日本語 🎉 def return {} [] 4500ms").split()


def text(rng: random.Random, n: int, tag: str) -> str:
    return f"[{tag}] " + words(n, rng, vocabulary=VOCAB)


# ---- one window per conversation -----------------------------------------------------------------


def conversation(seed: int, tokenizer=None) -> dict:
    """A whole conversation on its own window; everything observable, in order."""
    rng = random.Random(seed)
    policy = ["context_window", "seven_tier", "troubleshooting", "ranked"][seed % 4]
    w = ContextWindow(2500 + 100 * (seed % 7), tokenizer=tokenizer, policy=policy,
                      low_watermark=0.75 if seed % 3 == 0 else None)
    w.admit(Segment(text(rng, 120, "system"), L.SYSTEM, "sys"))
    log = []
    for t in range(14):
        w.admit(Segment(text(rng, rng.randint(10, 60), f"q{t}"), L.CURRENT_TURN, f"q{t}"))
        for r in range(5):
            cid = rng.randrange(25)
            w.admit(Segment(text(random.Random(cid), 80 + cid * 9, f"c{cid}"), L.RETRIEVED, f"c{cid}",
                            rng.random(), recoverable=cid % 2 == 0))
        g = f"ex{t}"
        w.admit(Segment(f"calling tool {t}", L.CONVERSATION, f"call{t}", group=g,
                        meta={"tool": "grep", "arguments": {"t": t}, "step": t}))
        w.admit(Segment(text(rng, rng.randint(50, 400), f"res{t}"), L.TOOL_RESULT, f"res{t}", group=g,
                        stale=rng.random() < 0.3))
        w.admit(Segment(text(rng, rng.randint(20, 90), f"ans{t}"), L.CONVERSATION, f"ans{t}", group=g))
        if t % 4 == 2 and f"ans{t - 1}" in w:
            log.append(("rewrite", w.rewrite(f"ans{t - 1}", "earlier answer, in short", provenance="m")))
        if t % 5 == 3 and f"res{t - 1}" in w:
            log.append(("digest", w.digest(f"res{t - 1}").text))
        if t % 6 == 5:
            held = [s.key for s in w.segments(L.RETRIEVED)]
            if held:
                log.append(("discard", w.discard(held[-1]).key))
        try:
            gone = [(s.key, s.text) for s in w.fit()]
        except ctxfast.ContextWindowExceededError as e:  # deterministic too
            gone = [("unfittable", str(e))]
        log.append((t, gone, w.tokens, w.stable_prefix_tokens))
    whys = [(x.key, x.status, x.cycle, x.rung, x.tokens_before, x.tokens_after) for x in w.ledger_entries()]
    led = w.ledger
    return {
        "log": log,
        "held": [(s.key, s.text, s.layer.label) for s in w.segments()],
        "why": whys,
        "ledger": (led.evictions, led.rewrites, led.digests, led.discards, led.truncations,
                   dict(led.rung_firings), led.tokens_held, led.balanced),
    }


@pytest.mark.parametrize("tokenizer", [None, word_count], ids=["native", "python-callable"])
def test_one_window_per_conversation_from_8_threads_matches_sequential(tokenizer):
    seeds = list(range(40))
    sequential = [conversation(s, tokenizer) for s in seeds]
    assert any(r["ledger"][0] > 0 for r in sequential), "the conversations must evict"
    for _ in range(2):
        with ThreadPoolExecutor(THREADS) as pool:
            concurrent = list(pool.map(lambda s: conversation(s, tokenizer), seeds))
        assert concurrent == sequential


# ---- many threads, one window ----------------------------------------------------------------------

ALLOWED = (ctxfast.UnknownKeyError, ctxfast.BudgetLedgerInconsistency, ctxfast.ContextWindowExceededError)


def _hammer(w: ContextWindow, tid: int, iterations: int, start: threading.Barrier, admitted: set,
            errors: list, lock: threading.Lock) -> None:
    rng = random.Random(tid)
    start.wait()
    for i in range(iterations):
        op = rng.random()
        key = f"k{rng.randrange(60)}"
        try:
            if op < 0.35:
                layer = rng.choice([L.CONVERSATION, L.RETRIEVED, L.TOOL_RESULT, L.RETRIEVED, L.PINNED, L.CURRENT_TURN])
                n = rng.randint(5, 120)
                s = Segment(text(rng, n // 3 + 1, key), layer, key, rng.random(), tokens=n if rng.random() < 0.5 else None,
                            recoverable=rng.random() < 0.3, group=f"g{rng.randrange(8)}" if rng.random() < 0.2 else None)
                if w.admit(s):
                    with lock:
                        admitted.add(key)
            elif op < 0.5:
                try:
                    w.fit()
                except ctxfast.ContextWindowExceededError:
                    pass
                assert w.last_fit is not None
            elif op < 0.62:
                with lock:
                    known = key in admitted
                try:
                    why = w.why(key)
                    assert why.status in {"held", "evicted_recoverable", "evicted_dispensable", "rewritten", "truncated"}
                except KeyError:
                    assert not known
            elif op < 0.7:
                w.texts(rng.choice([L.CONVERSATION, L.RETRIEVED, L.PINNED]))
                segs = w.segments()
                held = [s.key for s in segs if s.key is not None]
                assert len(held) == len(set(held)), "a key is held twice"
            elif op < 0.8:
                led = w.ledger
                assert led.balanced, led
                assert led.tokens_held >= 0
            elif op < 0.86:
                w.discard(key)
            elif op < 0.9:
                w.mark_stale(key)
            elif op < 0.93:
                w.rewrite(key, "a much shorter gist", provenance=f"thread{tid}")
            elif op < 0.96:
                # a tool exchange (call + result in one group), then its digest, racing the others
                g = f"ex-{tid}-{i}"
                w.admit(Segment(f"call {key}", L.CONVERSATION, f"{key}-call", group=g,
                                meta={"tool": "grep", "arguments": {"k": key}, "step": i}))
                if w.admit(Segment(text(rng, 60, key), L.TOOL_RESULT, key, group=g)):
                    with lock:
                        admitted.add(key)
                try:
                    w.digest(key)
                except ctxfast.InvalidArgumentError:
                    pass  # the key is held by something that is not a tool exchange
            else:
                _ = (w.tokens, len(w), key in w, w.cycle, w.stable_prefix_tokens, w.ledger_entries())
        except ALLOWED:
            pass
        except Exception as e:  # noqa: BLE001 - anything else is the failure being tested for
            errors.append((tid, i, type(e).__name__, str(e)))
            return


@pytest.mark.parametrize("tokenizer", [None, word_count], ids=["native", "python-callable"])
@pytest.mark.parametrize("policy", ["context_window", "troubleshooting", "seven_tier"])
def test_many_threads_hammering_one_window(tokenizer, policy):
    w = ContextWindow(3000, tokenizer=tokenizer, policy=policy, low_watermark=0.8 if policy == "seven_tier" else None)
    w.admit(Segment("system prompt", L.SYSTEM, "sys", tokens=200))
    start = threading.Barrier(THREADS)
    admitted: set = {"sys"}
    errors: list = []
    lock = threading.Lock()
    threads = [threading.Thread(target=_hammer, args=(w, t, 1500, start, admitted, errors, lock)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread is stuck (deadlock?)"
    assert errors == [], errors[:5]

    led = w.ledger
    assert led.balanced
    assert led.tokens_held == w.tokens
    tok = w.tokenizer
    segs = w.segments()
    assert len(segs) == len(w)
    assert w.tokens == sum(s.tokens if s.tokens is not None else s.count(tok) for s in segs)
    held = [s.key for s in segs if s.key is not None]
    assert len(held) == len(set(held))
    for k in held:
        assert k in w
    for k in admitted:
        w.why(k)  # every key ever admitted answers
    assert led.fits > 0 and led.admitted > 0
    # and the window still works single-threaded
    try:
        w.fit()
        assert w.tokens <= w.ceiling
    except ctxfast.ContextWindowExceededError:
        pass


def test_fits_on_one_window_serialise_and_each_sees_a_consistent_state():
    """Threads admit their own keys and fit; afterwards every admitted key is accounted for."""
    w = ContextWindow(5000, policy=Policy.context_window())
    start = threading.Barrier(THREADS)

    def worker(tid: int) -> list[str]:
        rng = random.Random(100 + tid)
        start.wait()
        mine = []
        for i in range(150):
            k = f"t{tid}-{i}"
            assert w.admit(Segment(text(rng, rng.randint(10, 150), k), L.RETRIEVED if i % 2 else L.CONVERSATION,
                                   k, rng.random()))
            mine.append(k)
            if i % 7 == 0:
                w.fit()
        return mine

    with ThreadPoolExecutor(THREADS) as pool:
        all_keys = [k for ks in pool.map(worker, range(THREADS)) for k in ks]
    w.fit()
    assert w.tokens <= 5000
    statuses = {k: w.why(k).status for k in all_keys}
    assert set(statuses.values()) <= {"held", "evicted_dispensable"}
    assert sum(s == "held" for s in statuses.values()) == len(w)
    led = w.ledger
    assert led.admitted == len(all_keys) and led.balanced
    assert led.evictions == sum(s == "evicted_dispensable" for s in statuses.values())
    assert led.tokens_admitted == led.tokens_held + led.tokens_evicted_dispensable
