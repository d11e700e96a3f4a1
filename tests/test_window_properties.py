"""ContextWindow properties (hypothesis, stateful): random sessions of admit / fit / rewrite /
discard / mark_stale / digest under every built-in policy (and one with a digest rung), with and
without a low watermark.

After every step: the ledger balances and agrees with what is held; every key ever admitted
answers why() with a status that matches whether it is held; no key is held twice. After every
successful fit: the held total is within the ceiling, no protected segment left through the fit,
and the counters match what the fits and the caller did. rewrite() is checked against a model
(tag-or-drop, not-smaller, deferred in a busy cycle).
"""

from __future__ import annotations

import pickle

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import ctxfast
from ctxfast import ContextWindow, Policy, PromptLayer, Segment
from helpers import word_count, words

L = PromptLayer
PROTECTED = {L.SYSTEM, L.TOOLS, L.PINNED, L.CURRENT_TURN}
LAYERS = [L.SYSTEM, L.TOOLS, L.PINNED, L.CURRENT_TURN, L.CONVERSATION, L.TOOL_RESULT, L.RETRIEVED, L.SUMMARY]
KEYS = [f"k{i}" for i in range(8)]
ABSENT = {"evicted_recoverable", "evicted_dispensable", "rewritten"}

DIGEST_POLICY = {
    "name": "digest_first",
    "rungs": [
        {"name": "digest_tools", "layers": ["tool_result"], "order": "oldest", "action": "digest"},
        {"name": "history", "layers": ["conversation", "tool_result", "summary"], "order": "oldest", "action": "drop"},
        {"name": "retrieval", "layers": ["retrieved"], "order": "lowest_score", "action": "drop"},
    ],
}


def policy_for(name: str) -> Policy:
    return Policy.from_dict(DIGEST_POLICY) if name == "digest_first" else Policy.preset(name)


class WindowMachine(RuleBasedStateMachine):
    @initialize(
        limit=st.integers(150, 1500),
        reserve=st.integers(0, 100),
        policy=st.sampled_from(["context_window", "troubleshooting", "seven_tier", "ranked", "digest_first"]),
        watermark=st.sampled_from([None, None, 0.7]),
        system=st.integers(0, 60),
    )
    def setup(self, limit, reserve, policy, watermark, system):
        self.w = ContextWindow(limit, tokenizer=word_count, policy=policy_for(policy), reserve=reserve,
                               low_watermark=watermark)
        self.ever: set[str] = set()
        self.busy = False  # non-recoverable content admitted since the last successful fit
        self.pending: set[str] = set()
        self.discards = 0
        self.rewrites = 0
        self.drops = 0
        self.digest_calls = 0
        self.step = 0
        if system:
            self.w.admit(Segment(words(system, tag="system", numbered=False), L.SYSTEM, tokens=system))
            self.busy = True

    # ---- helpers --------------------------------------------------------------------------------

    def held(self, key: str) -> Segment | None:
        for s in self.w.segments():
            if s.key == key:
                return s
        return None

    def count(self, s: Segment) -> int:
        return s.tokens if s.tokens is not None else word_count(s.text)

    # ---- rules ----------------------------------------------------------------------------------

    @rule(
        layer=st.sampled_from(LAYERS),
        key=st.sampled_from(KEYS + [None]),
        n=st.integers(1, 160),
        given=st.booleans(),
        score=st.floats(0, 1),
        recoverable=st.booleans(),
        stale=st.booleans(),
        group=st.sampled_from([None, None, None, "g1", "g2"]),
    )
    def admit(self, layer, key, n, given, score, recoverable, stale, group):
        was_held = key is not None and key in self.w
        s = Segment(words(n, tag=key or "anon", numbered=False), layer, key, score, tokens=n if given else None,
                    recoverable=recoverable, stale=stale, group=group)
        before = self.w.tokens
        ok = self.w.admit(s)
        assert ok == (not was_held)
        if ok:
            assert self.w.tokens == before + n
            if key is not None:
                self.ever.add(key)
                assert self.w.why(key).status == "held"
            if not recoverable:
                self.busy = True
        else:
            assert self.w.tokens == before

    @rule(n=st.integers(1, 300), key=st.sampled_from(KEYS))
    def admit_tool_exchange(self, n, key):
        if key in self.w or f"{key}-call" in self.w:
            return
        self.step += 1
        g = f"ex{self.step}"
        call = Segment(f"calling grep step {self.step}", L.CONVERSATION, f"{key}-call", group=g,
                       meta={"tool": "grep", "arguments": {"q": key}, "step": self.step})
        assert self.w.admit(call)
        assert self.w.admit(Segment(words(n, tag=key, numbered=False), L.TOOL_RESULT, key, group=g))
        self.ever |= {key, f"{key}-call"}
        self.busy = True

    @rule()
    def fit(self):
        w = self.w
        before_segments = w.segments()
        groups_protected = {s.group for s in before_segments if s.layer in PROTECTED and s.group is not None}
        protected = [s for s in before_segments
                     if s.layer in PROTECTED or (s.group is not None and s.group in groups_protected)]
        cycle = w.cycle
        last = w.last_fit
        try:
            gone = w.fit()
        except ctxfast.ContextWindowExceededError:
            assert w.cycle == cycle and w.last_fit is last
            assert w.segments() == before_segments
            return
        assert w.cycle == cycle + 1
        assert w.tokens <= w.ceiling
        f = w.last_fit
        assert f is not None and f is not last
        drops = [e for e in f.evicted if e.action == "drop"]
        self.drops += len(drops)
        # protected segments never leave through fit (a deferred rewrite of one may land)
        for s in gone:
            assert s.layer not in PROTECTED, s
            assert s.group is None or s.group not in groups_protected, s
        held_after = w.segments()
        for s in protected:
            if s.key is not None and s.key in self.pending and w.why(s.key).status == "rewritten":
                continue
            assert any(h.key == s.key and h.text == s.text for h in held_after), s
        for t in f.truncated:
            assert t.original.layer not in PROTECTED
        # deferred rewrites were decided by this fit: landed, or their original was evicted by it
        for k in self.pending:
            x = w.why(k)
            if x.status == "rewritten" and x.rung == "rewrite" and x.cycle == cycle:
                self.rewrites += 1
            else:
                assert x.status in ABSENT, (k, x)
            assert k not in w, "a deferred rewrite neither landed nor lost its original"
        self.pending.clear()
        self.busy = False

    @rule(key=st.sampled_from(KEYS), n=st.integers(0, 40), tagged=st.booleans())
    def rewrite(self, key, n, tagged):
        w = self.w
        provenance = "model" if tagged else None
        s = self.held(key)
        text = words(n, tag="gist", numbered=False)
        try:
            result = w.rewrite(key, text, provenance=provenance)
        except ctxfast.UntaggedRewriteError:
            assert not tagged
            return
        except ctxfast.UnknownKeyError:
            assert tagged and s is None
            return
        except ctxfast.BudgetLedgerInconsistency:
            assert tagged and s is not None
            assert not s.recoverable
            assert word_count(f"[lossy summary of {key} by model] {text}") >= self.count(s)
            assert w.why(key).status in {"held", "truncated"}
            return
        assert tagged and s is not None
        assert s.recoverable or word_count(f"[lossy summary of {key} by model] {text}") < self.count(s)
        assert result == (not self.busy)
        if result:
            self.rewrites += 1
            x = w.why(key)
            assert (x.status, x.rung, x.provenance) == ("rewritten", "rewrite", "model")
            assert key not in w
        else:
            assert key in w
            self.pending.add(key)

    @rule(key=st.sampled_from(KEYS))
    def discard(self, key):
        s = self.held(key)
        try:
            out = self.w.discard(key)
        except ctxfast.UnknownKeyError:
            assert s is None
            return
        assert s is not None and out.key == key
        self.discards += 1
        # A rewrite deferred for the discarded entry is cancelled with it: a segment admitted
        # later under the same key is a new entry, untouched by it.
        self.pending.discard(key)
        x = self.w.why(key)
        assert x.rung == "discard"
        assert x.status == ("evicted_recoverable" if s.recoverable else "evicted_dispensable")
        assert key not in self.w

    @rule(key=st.sampled_from(KEYS))
    def mark_stale(self, key):
        s = self.held(key)
        try:
            self.w.mark_stale(key)
        except ctxfast.UnknownKeyError:
            assert s is None
            return
        assert self.held(key).stale

    @rule(key=st.sampled_from(KEYS))
    def digest(self, key):
        w = self.w
        s = self.held(key)
        try:
            record = w.digest(key)
        except ctxfast.UnknownKeyError:
            assert s is None
            return
        except ctxfast.InvalidArgumentError:
            assert s is not None
            members = [m for m in w.segments() if s.group is not None and m.group == s.group] or [s]
            assert all(m.layer != L.TOOL_RESULT for m in members)
            return
        except ctxfast.BudgetLedgerInconsistency:
            # A record no smaller than a small exchange with no external copy is refused.
            assert s is not None
            members = [m for m in w.segments() if s.group is not None and m.group == s.group] or [s]
            assert not all(m.recoverable for m in members)
            return
        assert s is not None
        assert record.text.startswith("[compacted]")
        assert record.meta["lossy"] is True
        x = w.why(key)
        assert (x.status, x.rung) == ("rewritten", "digest")
        self.digest_calls += 1

    # ---- invariants -----------------------------------------------------------------------------

    @invariant()
    def ledger_balances(self):
        if not hasattr(self, "w"):
            return
        w = self.w
        led = w.ledger
        assert led.balanced
        assert led.tokens_held == w.tokens
        segs = w.segments()
        assert len(segs) == len(w)
        assert w.tokens == sum(self.count(s) for s in segs)
        held = [s.key for s in segs if s.key is not None]
        assert len(held) == len(set(held))
        assert led.discards == self.discards
        assert led.evictions == self.drops
        assert led.rewrites == self.rewrites
        assert led.digests >= self.digest_calls

    @invariant()
    def every_key_answers(self):
        if not hasattr(self, "w"):
            return
        w = self.w
        for k in self.ever:
            x = w.why(k)
            if k in w:
                assert x.status in {"held", "truncated"}, (k, x)
            else:
                assert x.status in ABSENT, (k, x)
                assert x.rung is not None
                if x.status != "rewritten":
                    assert x.tokens_after == 0
        assert {x.key for x in w.ledger_entries()} == self.ever

    @invariant()
    def clones_behave_identically(self):
        if not hasattr(self, "w"):
            return
        w = self.w
        assert w._objects_cover_entries()
        data = w.to_bytes()
        by_bytes = ContextWindow.from_bytes(data, tokenizer=word_count)
        by_pickle = pickle.loads(pickle.dumps(w))
        assert by_bytes.to_bytes() == data and by_pickle.to_bytes() == data
        # The clones go on the same way: one more fit gives the same result on each.
        outcomes = []
        for clone in (by_bytes, by_pickle):
            try:
                gone = [(s.key, s.text) for s in clone.fit()]
            except ctxfast.ContextWindowExceededError:
                gone = None
            outcomes.append((gone, clone.to_bytes()))
        assert outcomes[0] == outcomes[1]


WindowMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestWindowProperties = WindowMachine.TestCase
