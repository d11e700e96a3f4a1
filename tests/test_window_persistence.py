"""ContextWindow persistence: to_bytes()/from_bytes() and pickle carry the whole state.

A server parks a session in a store and resumes it on another process: the restored window must
answer why() the same, hold the same segments in the same order with the same counts, keep its
counters, policy, pending rewrites and stable-prefix bookkeeping, and then behave identically on
the same next turns. The "another process" part is tested for real (a subprocess reading the bytes
from a file).
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ctxfast
from ctxfast import ContextWindow, Policy, PromptLayer, Segment, Tokenizer

L = PromptLayer
HERE = Path(__file__).resolve()

LEDGER_FIELDS = [
    "admitted", "refused_duplicates", "fits", "fits_that_evicted", "evictions", "rewrites",
    "deferred_rewrites", "digests", "truncations", "discards", "rung_firings", "tokens_admitted",
    "tokens_held", "tokens_surrogates_added", "tokens_evicted_recoverable", "tokens_evicted_dispensable",
    "tokens_rewritten_away", "tokens_truncated_away", "balanced",
]


# ---- a session, and how to compare two windows -------------------------------------------------------


def prose(tag: str, n: int) -> str:
    """Deterministic text of about ``n`` words, different per tag."""
    vocab = ["exporter", "timeout", "retry", "queue", "shipment", "lane", "carrier", "rate",
             "config", "pool", "drain", "canary", "window", "token", "budget", "policy"]
    h = sum(map(ord, tag))
    return f"[{tag}] " + " ".join(vocab[(h + i * 7) % len(vocab)] for i in range(n))


def play_turn(w: ContextWindow, t: int) -> dict:
    """One agent turn: question, retrieval (some chunks recur), a tool exchange, an answer, then
    fit; with a caller action now and then. Returns what an observer can see."""
    events: list = []
    if t % 4 == 3 and f"answer{t - 1}" in w:  # a quiet cycle: nothing admitted since the last fit
        events.append(("rewrite-now", w.rewrite(f"answer{t - 1}", f"answer {t - 1} in short", provenance="summariser")))
    events.append(w.admit(Segment(prose(f"q{t}", 25 + t % 7), L.CURRENT_TURN, f"q{t}", meta={"turn": t})))
    for r in range(4):
        cid = (t * 3 + r * 5) % 11  # recurring chunk ids
        events.append(w.admit(Segment(prose(f"chunk{cid}", 60 + 10 * r), L.RETRIEVED, f"chunk{cid}",
                                      round(((t + 1) * (r + 3) % 17) / 17, 3), recoverable=cid % 3 == 0)))
    g = f"ex{t}"
    w.admit(Segment(f"calling search for turn {t}", L.CONVERSATION, f"call{t}", group=g,
                    meta={"tool": "search_code", "arguments": {"q": f"term{t}"}, "step": t}))
    w.admit(Segment(prose(f"result{t}", 80 + 13 * (t % 5)), L.TOOL_RESULT, f"result{t}", group=g,
                    recoverable=t % 2 == 0))
    w.admit(Segment(prose(f"answer{t}", 30), L.CONVERSATION, f"answer{t}", group=g))
    if t % 4 == 1 and f"answer{t - 1}" in w:
        events.append(("rewrite", w.rewrite(f"answer{t - 1}", f"answer {t - 1}, briefly", provenance="summariser")))
    if t % 5 == 2 and f"result{t - 1}" in w:
        events.append(("digest", w.digest(f"result{t - 1}").text))
    if t % 6 == 3:
        held = [s.key for s in w.segments(L.RETRIEVED)]
        if held:
            events.append(("discard", w.discard(held[0]).key))
    if t % 3 == 0 and f"result{t}" in w:
        w.mark_stale(f"result{t}")
    gone = w.fit()
    return {
        "events": events,
        "gone": [(s.key, s.text) for s in gone],
        "stable_prefix": w.stable_prefix_tokens,
        "tokens": w.tokens,
        "last_fit": (w.last_fit.total, w.last_fit.ceiling, [(e.segment.key, e.rung, e.tokens) for e in w.last_fit.evicted]),
    }


def build(turns: int = 8, **kw) -> ContextWindow:
    return build_with_pending(turns, **kw)[0]


def build_with_pending(turns: int = 8, **kw) -> tuple[ContextWindow, str]:
    """The scripted session after ``turns`` turns, plus the key of its pending (deferred) rewrite."""
    w = ContextWindow(kw.pop("limit", 1600), **kw)
    w.admit(Segment(prose("system", 40), L.SYSTEM, "sys"))
    w.admit(Segment(prose("tools", 30), L.TOOLS, "tools"))
    w.admit(Segment(prose("pinned", 20), L.PINNED, "pin", meta={"source": "runbook", "page": 12}))
    for t in range(turns):
        play_turn(w, t)
    # leave a deferred rewrite pending: new non-recoverable content, then a rewrite
    w.admit(Segment(prose("late", 15), L.CONVERSATION, "late"))
    held = [s.key for s in w.segments() if s.key and s.key.startswith(("answer", "result", "chunk"))]
    assert held, "the scripted session must still hold something to rewrite"
    assert w.rewrite(held[-1], "the latest one, briefly", provenance="summariser") is False
    return w, held[-1]


def state(w: ContextWindow) -> dict:
    tok = w.tokenizer
    led = w.ledger
    return {
        "limit": (w.limit_tokens, w.reserve, w.ceiling, w.low_watermark),
        "cycle": w.cycle,
        "tokens": w.tokens,
        "len": len(w),
        "stable_prefix": w.stable_prefix_tokens,
        "policy": (w.policy.name, w.policy.to_dict(), w.policy.rung_names),
        "tokenizer": tok.name,
        "segments": [
            (s.text, s.layer.label, s.key, s.score, s.recoverable, s.stale, s.group, s.level, s.covers, s.meta,
             s.tokens, s.count(tok))
            for s in w.segments()
        ],
        "why": [
            (x.key, x.status, x.cycle, x.rung, x.tokens_before, x.tokens_after, x.provenance, x.layer.label, x.admissions)
            for x in w.ledger_entries()
        ],
        "ledger": {f: getattr(led, f) for f in LEDGER_FIELDS},
    }


def transcript(w: ContextWindow, start: int = 8, turns: int = 6) -> dict:
    """The same next turns on any window; everything observable, JSON-friendly."""
    out = {"turns": [play_turn(w, t) for t in range(start, start + turns)]}
    out["state"] = state(w)
    return json.loads(json.dumps(out, default=repr))


# ---- round trips ------------------------------------------------------------------------------------


@pytest.fixture(params=[
    {},
    {"low_watermark": 0.7},
    {"policy": "seven_tier", "reserve": 300},
    {"policy": Policy.troubleshooting(), "limit": 1300},
], ids=["default", "watermark", "seven_tier", "troubleshooting"])
def window_kwargs(request) -> dict:
    return dict(request.param)


def test_the_session_exercises_every_kind_of_state(window_kwargs):
    w = build(**window_kwargs)
    led = w.ledger
    assert led.evictions > 0 and led.rewrites > 0 and led.digests > 0 and led.discards > 0
    assert led.refused_duplicates > 0 and led.deferred_rewrites > 0
    assert led.fits_that_evicted > 0
    assert led.balanced


def test_to_bytes_round_trips_the_whole_state(window_kwargs):
    w = build(**window_kwargs)
    data = w.to_bytes()
    assert isinstance(data, bytes)
    back = ContextWindow.from_bytes(data)
    assert state(back) == state(w)
    assert back.policy == w.policy
    assert back.to_bytes() == data


def test_pickle_round_trips_the_whole_state(window_kwargs):
    w = build(**window_kwargs)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(w, protocol=protocol))
        assert state(back) == state(w)


def test_restored_windows_behave_identically_on_the_next_turns(window_kwargs):
    w, pending = build_with_pending(**window_kwargs)
    from_bytes = ContextWindow.from_bytes(w.to_bytes())
    from_pickle = pickle.loads(pickle.dumps(w))
    expected = transcript(w)
    assert transcript(from_bytes) == expected
    assert transcript(from_pickle) == expected
    # the pending deferred rewrite survived: the first resumed fit decided it (landed, or its
    # original was evicted by that fit)
    (answer,) = [x for x in expected["state"]["why"] if x[0] == pending]
    assert answer[2] >= 8 and answer[1] != "held"


_CHILD = textwrap.dedent(
    """
    import importlib.util, json, pickle, sys
    spec = importlib.util.spec_from_file_location("window_persistence_child", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import ctxfast
    raw = open(sys.argv[3], "rb").read()
    w = ctxfast.ContextWindow.from_bytes(raw) if sys.argv[2] == "bytes" else pickle.loads(raw)
    before = mod.state(w)
    print(json.dumps({"before": json.loads(json.dumps(before, default=repr)), "after": mod.transcript(w)}))
    """
)


@pytest.mark.parametrize("how", ["bytes", "pickle"])
def test_a_window_restored_in_another_process_behaves_identically(window_kwargs, how, tmp_path):
    w = build(**window_kwargs)
    path = tmp_path / "session.bin"
    path.write_bytes(w.to_bytes() if how == "bytes" else pickle.dumps(w))
    here = json.loads(json.dumps(state(w), default=repr))
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(HERE), how, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    child = json.loads(proc.stdout)
    assert child["before"] == here
    assert child["after"] == transcript(w)


def test_why_answers_survive_for_absent_keys():
    w = build()
    gone = [x for x in w.ledger_entries() if x.status != "held"]
    assert {x.status for x in gone} >= {"evicted_dispensable", "rewritten"}
    back = ContextWindow.from_bytes(w.to_bytes())
    for x in gone:
        y = back.why(x.key)
        assert (y.status, y.cycle, y.rung, y.tokens_before, y.tokens_after, y.provenance) == (
            x.status, x.cycle, x.rung, x.tokens_before, x.tokens_after, x.provenance)
    with pytest.raises(KeyError):
        back.why("never-admitted")


def test_restored_keys_still_refuse_duplicates_and_free_on_eviction():
    w = ContextWindow(100)
    w.admit(Segment("a", L.RETRIEVED, "k1", 0.2, tokens=60))
    w.admit(Segment("b", L.RETRIEVED, "k2", 0.9, tokens=30))
    back = ContextWindow.from_bytes(w.to_bytes())
    assert not back.admit(Segment("a again", L.PINNED, "k1", tokens=5))
    back.admit(Segment("c", L.RETRIEVED, "k3", 0.5, tokens=30))
    assert [s.key for s in back.fit()] == ["k1"]
    assert back.admit(Segment("a", L.RETRIEVED, "k1", 0.2, tokens=10))


def test_the_embedded_tokenizer_comes_along_and_a_callable_must_be_given_again():
    for tok in (Tokenizer.from_encoding("cl100k_base"), Tokenizer.approximate(3.0)):
        w = ContextWindow(1000, tokenizer=tok)
        w.admit(Segment("hello there, general kenobi", L.CONVERSATION, "h"))
        back = ContextWindow.from_bytes(w.to_bytes())
        assert back.tokenizer.name == tok.name
        assert back.tokens == w.tokens
        back.admit(Segment("more words arrive", L.CONVERSATION, "m"))
        assert back.tokens == w.tokens + tok.count("more words arrive")

    w = ContextWindow(1000, tokenizer=word_count)
    w.admit(Segment("hello there", L.CONVERSATION, "h"))
    with pytest.raises(ctxfast.CtxfastError, match="tokenizer"):
        ContextWindow.from_bytes(w.to_bytes())
    back = ContextWindow.from_bytes(w.to_bytes(), tokenizer=word_count)
    assert state(back) == state(w)
    back.admit(Segment("three more words", L.CONVERSATION, "m"))
    assert back.tokens == 5
    # pickle takes a module-level function along
    assert state(pickle.loads(pickle.dumps(w))) == state(w)
    # and a bound count method of a ctxfast Tokenizer round-trips either way
    tok = Tokenizer.default()
    w = ContextWindow(1000, tokenizer=tok.count)
    w.admit(Segment("hello there", L.CONVERSATION, "h"))
    assert state(ContextWindow.from_bytes(w.to_bytes(), tokenizer=tok.count)) == state(w)
    assert state(pickle.loads(pickle.dumps(w))) == state(w)


# Not helpers.word_count: a child process loads this module by its path, without tests/ on sys.path.
def word_count(text: str) -> int:
    return len(text.split())


def test_meta_that_json_cannot_hold_needs_pickle():
    w = ContextWindow(1000)
    w.admit(Segment("x", L.CONVERSATION, "x", meta={"when": {1, 2, 3}}))
    with pytest.raises(ctxfast.CtxfastError, match="pickle"):
        w.to_bytes()
    back = pickle.loads(pickle.dumps(w))
    assert back.segments()[0].meta == {"when": {1, 2, 3}}


def test_last_fit_is_not_part_of_the_parked_state():
    """Documented here so a change is noticed: the Fit (trace) is per call, not session state."""
    w = build()
    assert w.last_fit is not None
    assert ContextWindow.from_bytes(w.to_bytes()).last_fit is None


# ---- bad input --------------------------------------------------------------------------------------


def _doc() -> dict:
    return json.loads(build(turns=3).to_json())


GARBAGE = {
    "empty": b"",
    "text": b"not a window at all",
    "binary": bytes(range(256)),
    "json-list": b"[1, 2, 3]",
    "json-empty-object": b"{}",
    "other-format": json.dumps({"format": "something/1"}).encode(),
    "format-not-a-string": json.dumps({"format": 7}).encode(),
    "truncated": None,  # filled in below
    "no-core": None,
    "core-wrong-type": None,
    "core-missing-field": None,
    "policy-broken": None,
    "metas-not-a-dict": None,
    "meta-id-not-a-number": None,
    "unknown-encoding": None,
}


def _garbage(name: str) -> bytes:
    if GARBAGE.get(name) is not None:
        return GARBAGE[name]
    doc = _doc()
    if name == "truncated":
        return json.dumps(doc).encode()[:-17]
    if name == "no-core":
        del doc["core"]
    elif name == "core-wrong-type":
        doc["core"] = [1, 2]
    elif name == "core-missing-field":
        del doc["core"]["entries"]
    elif name == "policy-broken":
        doc["core"]["policy"] = {"rungs": "nope"}
    elif name == "metas-not-a-dict":
        doc["metas"] = "[1, 2]"
    elif name == "meta-id-not-a-number":
        doc["metas"] = json.dumps({"abc": 1})
    elif name == "unknown-encoding":
        doc["tokenizer"] = ["encoding", "no_such_encoding"]
    return json.dumps(doc).encode()


@pytest.mark.parametrize("name", list(GARBAGE))
def test_from_bytes_on_garbage_raises_a_ctxfast_error(name):
    with pytest.raises(ctxfast.CtxfastError):
        ContextWindow.from_bytes(_garbage(name))


@pytest.mark.parametrize("value", [None, 42, 3.5, ["list"]])
def test_from_bytes_wants_bytes(value):
    with pytest.raises(ctxfast.CtxfastError) as info:
        ContextWindow.from_bytes(value)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)


def _corrupt(field: str, value) -> bytes:
    doc = _doc()
    doc[field] = value
    return json.dumps(doc).encode()


def test_from_bytes_with_corrupt_metas_raises_a_ctxfast_error():
    with pytest.raises(ctxfast.CtxfastError):
        ContextWindow.from_bytes(_corrupt("metas", "{not json"))


def test_from_bytes_with_a_malformed_tokenizer_field_raises_a_ctxfast_error():
    with pytest.raises(ctxfast.CtxfastError):
        ContextWindow.from_bytes(_corrupt("tokenizer", 5))


def test_from_bytes_with_an_unknown_tokenizer_kind_is_refused():
    with pytest.raises(ctxfast.CtxfastError):
        ContextWindow.from_bytes(_corrupt("tokenizer", ["zzz", 1]))


def test_truncated_segments_round_trip_shortened():
    w = ContextWindow(700, policy="troubleshooting")
    w.admit(Segment("sys", L.SYSTEM, tokens=10))
    body = " ".join(f"w{i}" for i in range(600))
    for i in range(5):
        w.admit(Segment(body, L.RETRIEVED, f"r{i}", 0.1 * (i + 1), meta={"i": i}))
    w.fit()
    assert w.ledger.truncations == 4
    for back in (ContextWindow.from_bytes(w.to_bytes()), pickle.loads(pickle.dumps(w))):
        assert state(back) == state(w)
        assert [back.why(f"r{i}").status for i in range(5)] == ["evicted_dispensable"] + ["truncated"] * 4
        assert back.texts(L.RETRIEVED) == w.texts(L.RETRIEVED)
        assert all(body.startswith(t) and t != body for t in back.texts(L.RETRIEVED))

