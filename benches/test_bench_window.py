"""Per-turn latency of a 60-turn agent session: ctxfast.ContextWindow vs LangChain vs pure Python.

Every turn of the session brings: the user's message (the new current turn), 8 retrieved chunks
(from turn 2 on, 4 of them were already retrieved in one of the previous 10 turns: retrieval
recurs), the assistant's tool call and the tool's result (one group), and the assistant's answer.
Text: ``session.complete_turn`` (prose, stdlib code, logs, rows; tool results 200-3,000 tokens).

Contenders, each timed turn by turn (``time.perf_counter_ns`` around the turn's work only):

- ``ctxfast``: ``window.admit_many(turn)`` then ``window.fit()`` on one ContextWindow
  (default policy, limit ``LIMIT``); a fresh tokenizer (and count cache) every round, so every
  turn's text is really counted inside its timing.
- ``ctxfast.wm70``: the same with ``low_watermark=0.7``.
- ``python``: the same design in pure Python (written here, ``PyWindow``): a dict of held keys, a
  list of segments, one tiktoken count per segment at admission, the same policy (conversation
  oldest first, then retrieved lowest score first, groups whole, never the prefix or the current
  turn). ``test_python_window_is_the_same_policy`` checks it evicts exactly what ctxfast evicts.
- ``langchain``: the way people use it: the whole history as messages (each user message carrying
  its turn's retrieved chunks as a context block, the usual RAG shape), and every turn
  ``trim_messages(history, strategy="last", token_counter=<tiktoken counter>, include_system=True,
  start_on="human")``.

Every timed round plays a session of its own (its own seed; the untimed observations use the
``SEED`` session), so no round re-counts a string an earlier round counted.

Reported per contender (``benchmark.extra_info``; ``report_window.py`` prints the table): the
per-turn medians over rounds, their median over turns 5-14 and 50-59, duplicate chunk tokens sent,
what naive re-sending of recurring chunks would cost, and (ctxfast) how many turns keep their cached
prefix, by ``stable_prefix_tokens`` and by comparing the texts sent.

Quick mode (``--benchmark-disable``, CI): one round each, LangChain on the first ``QUICK_LC_TURNS``
turns only; correctness checks run, wall-clock targets are not asserted.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

import ctxfast
import session as sess

TURNS = 60
LIMIT = 32_000
CHUNKS = 8
RECUR = 4  # of each turn's 8 chunks, from turn 2 on
RECUR_WINDOW = 10  # recurring chunks come from the previous this-many turns
SEED = 20250601
EARLY = range(5, 15)  # turns 5-14 (1-based)
LATE = range(50, 60)  # turns 50-59
ROUNDS = {"ctxfast": 21, "ctxfast.wm70": 21, "python": 11, "langchain": 5}
QUICK_LC_TURNS = 16

TARGET_LANGCHAIN = 50.0  # langchain / ctxfast at turns 50-59
TARGET_FLAT = 1.5  # ctxfast turns 50-59 / turns 5-14

L = ctxfast.PromptLayer
PROTECTED = ("system", "tools", "pinned", "current_turn")

#: rows measured in this process, for test_window_targets (the report reads the JSON instead)
RESULTS: dict[str, dict] = {}


# ---- the session ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    key: str
    text: str
    score: float
    recurring: bool


@dataclass
class Turn:
    n: int  # 1-based
    user: str
    chunks: list[Chunk]
    call_text: str
    call_content: str
    tool_call: dict
    result_key: str
    result: str
    result_recoverable: bool
    answer: str


@dataclass
class AgentSession:
    system: str
    tools_json: str
    turns: list[Turn] = field(default_factory=list)


def build_session(turns: int = TURNS, seed: int = SEED) -> AgentSession:
    """Deterministic: same seed, same Python -> same text. Chunk keys recur across turns."""
    out = AgentSession(system=sess.system_prompt(), tools_json=json.dumps(sess.tool_schemas(), indent=2))
    first_seen: dict[str, tuple[int, str]] = {}  # key -> (turn first retrieved, text)
    for t in range(1, turns + 1):
        parts = sess.complete_turn(seed, t)
        fresh = [p for p in parts if p.role == "chunk"]
        (user,) = [p for p in parts if p.role == "user"]
        (call,) = [p for p in parts if p.role == "assistant" and p.tool_call is not None]
        (result,) = [p for p in parts if p.role == "tool"]
        (answer,) = [p for p in parts if p.role == "assistant" and p.tool_call is None]
        rng = random.Random(f"{seed}/recur/{t}")
        pool = sorted(k for k, (seen, _) in first_seen.items() if t - RECUR_WINDOW <= seen < t)
        recurring = rng.sample(pool, min(RECUR, len(pool)))
        n_new = CHUNKS - len(recurring)
        chunks = [Chunk(p.key, p.text, p.score, False) for p in fresh[:n_new]]
        chunks += [Chunk(k, first_seen[k][1], round(rng.uniform(0.3, 0.95), 4), True) for k in recurring]
        chunks.sort(key=lambda c: -c.score)  # a retriever returns best first
        for c in chunks:
            first_seen.setdefault(c.key, (t, c.text))
        out.turns.append(Turn(
            n=t, user=user.text, chunks=chunks, call_text=call.text, call_content=call.content or "",
            tool_call=call.tool_call, result_key=result.key, result=result.text,
            result_recoverable=result.recoverable, answer=answer.text))
    return out


def turn_segments(turn: Turn) -> list:
    """The turn as ctxfast Segments, in arrival order."""
    S = ctxfast.Segment
    g = f"ex{turn.n}"
    segs = [S(turn.user, L.CURRENT_TURN, f"user-{turn.n}")]
    segs += [S(c.text, L.RETRIEVED, c.key, c.score) for c in turn.chunks]
    segs += [
        S(turn.call_text, L.CONVERSATION, f"call-{turn.n}", group=g,
          meta={"tool": turn.tool_call["name"], "arguments": turn.tool_call["args"], "step": turn.n}),
        S(turn.result, L.TOOL_RESULT, turn.result_key, group=g, recoverable=turn.result_recoverable),
        S(turn.answer, L.CONVERSATION, f"answer-{turn.n}", group=g),
    ]
    return segs


# ---- the pure-Python window (same design, same policy) ---------------------------------------------------


class _Item:
    __slots__ = ("seq", "text", "layer", "key", "score", "group", "tokens")

    def __init__(self, seq, text, layer, key, score, group, tokens):
        self.seq, self.text, self.layer, self.key = seq, text, layer, key
        self.score, self.group, self.tokens = score, group, tokens


class PyWindow:
    """What a team would write by hand: a dict of held keys, a list of segments, tiktoken counts
    per segment at admission, the context_window policy, an optional low watermark."""

    HISTORY = ("conversation", "tool_result", "summary")

    def __init__(self, limit: int, enc, low_watermark: float | None = None):
        self.limit = limit
        self.enc = enc
        self.low_watermark = low_watermark
        self.items: list[_Item] = []
        self.keys: dict[str, _Item] = {}
        self.total = 0
        self.seq = 0
        self.current: _Item | None = None

    def admit(self, text: str, layer: str, key: str | None = None, score: float = 0.0, group: str | None = None) -> bool:
        if key is not None and key in self.keys:
            return False
        if layer == "current_turn" and self.current is not None:
            self.current.layer = "conversation"
        n = len(self.enc.encode_ordinary(text))
        item = _Item(self.seq, text, layer, key, score, group, n)
        self.seq += 1
        if layer == "current_turn":
            self.current = item
        self.items.append(item)
        if key is not None:
            self.keys[key] = item
        self.total += n
        return True

    def fit(self) -> list[_Item]:
        if self.total <= self.limit:
            return []
        target = self.limit
        if self.low_watermark is not None and self.low_watermark < 1.0:
            target = max(1, int(self.limit * self.low_watermark))
        gone = self._evict_to(target)
        if self.total > self.limit:  # the watermark was out of reach: the real ceiling
            gone += self._evict_to(self.limit)
        if self.total > self.limit:
            raise ctxfast.ContextWindowExceededError(f"protected segments alone need {self.total} > {self.limit}")
        return gone

    def _evict_to(self, target: int) -> list[_Item]:
        units: dict[Any, list[_Item]] = {}
        for it in self.items:
            units.setdefault(("g", it.group) if it.group is not None else ("s", it.seq), []).append(it)
        free = [u for u in units.values() if not any(m.layer in PROTECTED for m in u)]
        history = [u for u in free if any(m.layer in self.HISTORY for m in u)]
        retrieved = [u for u in free if any(m.layer == "retrieved" for m in u)]
        retrieved.sort(key=lambda u: (max(m.score for m in u), u[0].seq))
        gone: list[_Item] = []
        dropped: set[int] = set()
        for rung in (history, retrieved):
            for u in rung:
                if self.total <= target:
                    break
                if id(u[0]) in dropped:
                    continue
                dropped.add(id(u[0]))
                for m in u:
                    self.total -= m.tokens
                    gone.append(m)
        if gone:
            out = {id(m) for m in gone}
            self.items = [it for it in self.items if id(it) not in out]
            for m in gone:
                if m.key is not None:
                    del self.keys[m.key]
                if m is self.current:
                    self.current = None
        return gone

    def payload(self) -> list[_Item]:
        return self.items


def py_turn_items(turn: Turn) -> list[tuple]:
    g = f"ex{turn.n}"
    items = [(turn.user, "current_turn", f"user-{turn.n}", 0.0, None)]
    items += [(c.text, "retrieved", c.key, c.score, None) for c in turn.chunks]
    items += [(turn.call_text, "conversation", f"call-{turn.n}", 0.0, g),
              (turn.result, "tool_result", turn.result_key, 0.0, g),
              (turn.answer, "conversation", f"answer-{turn.n}", 0.0, g)]
    return items


# ---- LangChain ----------------------------------------------------------------------------------------


def render_context(chunks: list[Chunk]) -> str:
    body = "\n\n".join(f"[{c.key} score={c.score:.4f}]\n{c.text}" for c in chunks)
    return f"<context>\n{body}\n</context>"


def lc_turn_messages(turn: Turn) -> list:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    tc = turn.tool_call
    return [
        HumanMessage(content=render_context(turn.chunks) + "\n\n" + turn.user),
        AIMessage(content=turn.call_content,
                  tool_calls=[{"name": tc["name"], "args": tc["args"], "id": tc["id"], "type": "tool_call"}]),
        ToolMessage(content=turn.result, tool_call_id=tc["id"], name=tc["name"]),
        AIMessage(content=turn.answer),
    ]


def tiktoken_counter(enc) -> Callable[[list], int]:
    """The usual tiktoken-based ``token_counter`` for trim_messages (3 tokens of framing per
    message, plus the tool calls' JSON)."""

    def count(messages) -> int:
        total = 3
        for m in messages:
            content = m.content if isinstance(m.content, str) else json.dumps(m.content)
            total += 3 + len(enc.encode_ordinary(content))
            for tc in getattr(m, "tool_calls", None) or ():
                total += len(enc.encode_ordinary(tc["name"] + json.dumps(tc["args"])))
        return total

    return count


# ---- one session run per contender ---------------------------------------------------------------------


@dataclass
class Run:
    times: list[float]  # seconds per turn
    dup_tokens_sent: int = 0  # tokens of chunks present twice in one request
    resend_avoided: int = 0  # tokens of recurring chunks already held (what naive re-sending costs)
    refused: int = 0
    already_held: int = 0  # recurring chunks whose key was held when they arrived
    stable_lib: int = 0  # turns whose stable_prefix_tokens covers everything held before the turn
    stable_text: int = 0  # turns whose previous request is a prefix of this one (texts)
    evicting_turns: int = 0
    final_tokens: int = 0
    evicted: list[list[str | None]] = field(default_factory=list)


def chunk_tokens(session: AgentSession, enc) -> dict[str, int]:
    out = {}
    for t in session.turns:
        for c in t.chunks:
            if c.key not in out:
                out[c.key] = len(enc.encode_ordinary(c.text))
    return out


def _dups(keys: list[str | None], sizes: dict[str, int]) -> int:
    seen: set[str] = set()
    dup = 0
    for k in keys:
        if k is None or k not in sizes:
            continue
        if k in seen:
            dup += sizes[k]
        seen.add(k)
    return dup


def run_ctxfast(session: AgentSession, sizes: dict[str, int], turns: int = TURNS, *,
                low_watermark: float | None = None, observe: bool = True) -> Run:
    tok = ctxfast.Tokenizer.from_encoding("o200k_base", cache_capacity=4096)  # fresh: nothing counted yet
    w = ctxfast.ContextWindow(LIMIT, tokenizer=tok, low_watermark=low_watermark)
    w.admit(ctxfast.Segment(session.system, L.SYSTEM, "system"))
    w.admit(ctxfast.Segment(session.tools_json, L.TOOLS, "tools"))
    w.fit()
    inputs = [turn_segments(t) for t in session.turns[:turns]]  # fresh Segment objects, built untimed
    run = Run(times=[])
    prev_texts = [s.text for s in w.segments()]
    clock = time.perf_counter_ns
    for turn, segs in zip(session.turns[:turns], inputs):
        if observe:
            held_before = w.tokens
            already = [c for c in turn.chunks if c.key in w]
        t0 = clock()
        admitted = w.admit_many(segs)
        gone = w.fit()
        run.times.append((clock() - t0) / 1e9)
        if not observe:
            continue
        run.refused += admitted.count(False)
        run.already_held += len(already)
        run.resend_avoided += sum(sizes[c.key] for c in already)
        run.evicted.append([s.key for s in gone])
        run.evicting_turns += bool(gone)
        payload = w.segments()
        run.dup_tokens_sent += _dups([s.key for s in payload], sizes)
        texts = [s.text for s in payload]
        if turn.n > 1:
            run.stable_lib += w.stable_prefix_tokens >= held_before
            run.stable_text += texts[: len(prev_texts)] == prev_texts
        prev_texts = texts
        assert w.tokens <= LIMIT
    run.final_tokens = w.tokens
    assert w.ledger.balanced
    return run


def run_python(session: AgentSession, enc, sizes: dict[str, int], turns: int = TURNS, *,
               low_watermark: float | None = None, observe: bool = True) -> Run:
    w = PyWindow(LIMIT, enc, low_watermark)
    w.admit(session.system, "system", "system")
    w.admit(session.tools_json, "tools", "tools")
    inputs = [py_turn_items(t) for t in session.turns[:turns]]
    run = Run(times=[])
    clock = time.perf_counter_ns
    for items in inputs:
        t0 = clock()
        admitted = [w.admit(*it) for it in items]
        gone = w.fit()
        run.times.append((clock() - t0) / 1e9)
        if not observe:
            continue
        run.refused += admitted.count(False)
        run.evicted.append([m.key for m in gone])
        run.evicting_turns += bool(gone)
        run.dup_tokens_sent += _dups([m.key for m in w.payload()], sizes)
    run.final_tokens = w.total
    return run


def run_langchain(session: AgentSession, enc, sizes: dict[str, int], turns: int = TURNS, *, observe: bool = True) -> Run:
    from langchain_core.messages import SystemMessage, trim_messages

    counter = tiktoken_counter(enc)
    tools_tokens = len(enc.encode_ordinary(session.tools_json))  # bound to the model, not a message
    history: list = [SystemMessage(content=session.system)]
    inputs = [lc_turn_messages(t) for t in session.turns[:turns]]
    kw = dict(max_tokens=LIMIT - tools_tokens, token_counter=counter, strategy="last", include_system=True,
              start_on="human", allow_partial=False)
    run = Run(times=[])
    clock = time.perf_counter_ns
    for msgs in inputs:
        t0 = clock()
        history.extend(msgs)
        kept = trim_messages(history, **kw)
        run.times.append((clock() - t0) / 1e9)
        if not observe:
            continue
        # duplicate chunk tokens in the request: each kept user message re-sends its turn's chunks
        keys: list[str | None] = []
        for m in kept:
            if m.type == "human" and isinstance(m.content, str) and m.content.startswith("<context>"):
                keys += [line[1:].split(" score=")[0] for line in m.content.splitlines()
                         if line.startswith("[chunk-") and " score=" in line]
        run.dup_tokens_sent += _dups(keys, sizes)
        run.final_tokens = counter(kept) + tools_tokens
    return run


# ---- fixtures -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def enc(tiktoken_o200k):
    # first use of each encoder pays a one-time set-up: not part of any turn
    tiktoken_o200k.encode_ordinary("warm up")
    ctxfast.Tokenizer.from_encoding("o200k_base", cache_capacity=0).count("warm up")
    return tiktoken_o200k


#: each contender's rounds play their own sessions (no two timed rounds anywhere share a text)
SEED_BASE = {"ctxfast": 1_000, "ctxfast.wm70": 2_000, "python": 3_000, "langchain": 4_000}


def session_for_round(contender: str, i: int) -> AgentSession:
    """Round i of a contender plays a session of its own: every round counts text it has never
    seen, as a live conversation does (no tokenizer or CPU cache gets to re-count the same strings)."""
    return build_session(seed=SEED + SEED_BASE[contender] + i)


@pytest.fixture(scope="module")
def agent_session() -> AgentSession:
    return build_session()


@pytest.fixture(scope="module")
def sizes(agent_session, enc) -> dict[str, int]:
    return chunk_tokens(agent_session, enc)


def summarize(times_by_round: list[list[float]]) -> dict[str, Any]:
    n = min(len(r) for r in times_by_round)
    per_turn = [statistics.median(r[i] for r in times_by_round) for i in range(n)]
    out: dict[str, Any] = {"per_turn": per_turn, "rounds": len(times_by_round), "turns": n}
    if n >= EARLY.stop - 1:
        out["early"] = statistics.median(per_turn[i - 1] for i in EARLY)
    if n >= LATE.stop - 1:
        out["late"] = statistics.median(per_turn[i - 1] for i in LATE)
    return out


# ---- correctness (quick mode too) -----------------------------------------------------------------------


def test_session_shape(agent_session, enc, sizes):
    s = agent_session
    assert len(s.turns) == TURNS
    for t in s.turns:
        assert len(t.chunks) == CHUNKS
        assert len({c.key for c in t.chunks}) == CHUNKS
        recurring = sum(c.recurring for c in t.chunks)
        assert recurring == (0 if t.n == 1 else min(RECUR, 8 * (t.n - 1)))
        assert 150 <= len(enc.encode_ordinary(t.result)) <= 3200
    total = sum(len(enc.encode_ordinary(x)) for t in s.turns for x in (t.user, t.call_text, t.result, t.answer))
    total += sum(sizes.values())
    assert total > 3 * LIMIT, "the session must outgrow the window several times over"
    # the same text twice builds the same session
    assert [c.key for c in build_session(5).turns[4].chunks] == [c.key for c in s.turns[4].chunks]


def test_python_window_is_the_same_policy(agent_session, enc, sizes):
    """The pure-Python contender evicts exactly what ctxfast evicts, turn by turn."""
    for wm in (None, 0.7):
        a = run_ctxfast(agent_session, sizes, low_watermark=wm)
        b = run_python(agent_session, enc, sizes, low_watermark=wm)
        assert a.evicted == b.evicted
        assert a.final_tokens == b.final_tokens
        assert a.refused == b.refused > 0
        assert a.evicting_turns > 10


def test_no_duplicate_tokens_are_sent(agent_session, enc, sizes):
    ctx = run_ctxfast(agent_session, sizes)
    assert ctx.dup_tokens_sent == 0
    assert ctx.resend_avoided > 0
    # every refusal is a recurring chunk already held, and every such chunk is refused
    assert ctx.refused == ctx.already_held > 0
    lc = run_langchain(agent_session, enc, sizes, turns=QUICK_LC_TURNS)
    assert lc.dup_tokens_sent > 0, "the naive RAG shape re-sends recurring chunks"


def test_watermark_keeps_more_turns_cached(agent_session, sizes):
    plain = run_ctxfast(agent_session, sizes)
    wm = run_ctxfast(agent_session, sizes, low_watermark=0.7)
    assert wm.stable_text > plain.stable_text
    assert wm.evicting_turns < plain.evicting_turns


# ---- the benchmark rows --------------------------------------------------------------------------------


def _store(benchmark, contender: str, summary: dict, run: Run, **extra) -> None:
    info = dict(contender=contender, limit=LIMIT, turns=summary["turns"], rounds=summary["rounds"],
                per_turn=summary["per_turn"], early=summary.get("early"), late=summary.get("late"),
                dup_tokens_sent=run.dup_tokens_sent, resend_avoided=run.resend_avoided, refused=run.refused,
                stable_lib=run.stable_lib, stable_text=run.stable_text, evicting_turns=run.evicting_turns,
                final_tokens=run.final_tokens, **extra)
    benchmark.extra_info.update(info)
    RESULTS[contender] = info


@pytest.mark.parametrize("contender", ["ctxfast", "ctxfast.wm70", "python", "langchain"])
def test_session(benchmark, contender, agent_session, enc, sizes, quick):
    benchmark.group = "window-session"
    rounds = 1 if quick else ROUNDS[contender]
    turns = QUICK_LC_TURNS if (quick and contender == "langchain") else TURNS
    wm = 0.7 if contender == "ctxfast.wm70" else None
    if contender.startswith("ctxfast"):
        observed = run_ctxfast(agent_session, sizes, turns, low_watermark=wm)
        fn = lambda s, sz: run_ctxfast(s, sz, turns, low_watermark=wm, observe=False)  # noqa: E731
    elif contender == "python":
        observed = run_python(agent_session, enc, sizes, turns)
        fn = lambda s, sz: run_python(s, enc, sz, turns, observe=False)  # noqa: E731
    else:
        observed = run_langchain(agent_session, enc, sizes, turns)
        fn = lambda s, sz: run_langchain(s, enc, sz, turns, observe=False)  # noqa: E731
    samples: list[list[float]] = []
    sessions = iter(range(10_000))

    def setup():
        s = agent_session if quick else session_for_round(contender, next(sessions))
        return (s, sizes if s is agent_session else {}), {}  # sizes only feed the (untimed) observations

    def one_round(s, sz):
        samples.append(fn(s, sz).times)

    benchmark.pedantic(one_round, setup=setup, rounds=rounds, iterations=1, warmup_rounds=0 if quick else 1)
    if len(samples) > rounds:  # drop the warm-up round
        samples = samples[-rounds:]
    _store(benchmark, contender, summarize(samples), observed,
           naive_resend_total=observed.resend_avoided if contender.startswith("ctxfast") else None)
    if contender.startswith("ctxfast"):
        assert observed.dup_tokens_sent == 0


@pytest.fixture
def full_only(quick):
    if quick:
        pytest.skip("wall-clock targets are checked in full runs only (python benches/report_window.py)")


def test_window_targets(full_only):
    need = {"ctxfast", "langchain"}
    if not need <= RESULTS.keys():
        pytest.skip("run with the test_session rows")
    ctx, lc = RESULTS["ctxfast"], RESULTS["langchain"]
    assert lc["late"] / ctx["late"] >= TARGET_LANGCHAIN
    assert ctx["late"] / ctx["early"] <= TARGET_FLAT
    assert ctx["dup_tokens_sent"] == 0
