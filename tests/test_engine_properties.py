"""Properties of fit() over random requests, for every built-in policy.

Requests mix every layer, caller-given sizes (`tokens=`) and short real texts, groups, scores,
recoverable/stale flags and summary levels; budgets range from roomy to impossible. Whatever the
input, fit() either raises Unfittable or returns a request under the ceiling that keeps the
protected set, never splits a group, accounts for every token and is reproducible.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ctxfast
from ctxfast import Budget, Policy, PromptLayer, Segment, Tokenizer, fit

L = PromptLayer
TOK = Tokenizer.default()

PROTECTED = (L.SYSTEM, L.TOOLS, L.PINNED, L.CURRENT_TURN)
UNPROTECTED = (L.CONVERSATION, L.TOOL_RESULT, L.RETRIEVED, L.SUMMARY)
HISTORY = {L.CONVERSATION, L.TOOL_RESULT, L.SUMMARY}

POLICIES: dict[str, Callable[[], Policy]] = {
    "context_window": Policy.context_window,
    "troubleshooting": Policy.troubleshooting,
    "seven_tier": lambda: Policy.seven_tier(3),
    "seven_tier_1": lambda: Policy.seven_tier(1),
    "ranked": lambda: Policy.ranked(2),
    "ranked_0": lambda: Policy.ranked(0),
}

# CTXFAST_ENGINE_EXAMPLES raises the example count for a longer bug hunt.
SETTINGS = settings(
    max_examples=int(os.environ.get("CTXFAST_ENGINE_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Short real texts: words, whitespace runs, newlines, CJK, punctuation, code.
FRAGMENTS = [
    "hello", " world", "the", " quick brown fox", "\n", "\n\n", "  ", "\t", "日本語", "テキスト", "中文",
    ".", ",", "!", "?", "'s", "don't", "(x)", "{\"a\": 1}", "def f():", "    return 1", "--", "***",
    "123", " 4567", "é", "🎉", "\r\n", "a", "Z",
]
short_texts = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join),
    st.text(max_size=30),
)


@st.composite
def requests(draw: st.DrawFn) -> list[Segment]:
    n = draw(st.integers(1, 14))
    keys = [f"k{i}" for i in range(n)]
    segs = []
    for i in range(n):
        layer = draw(st.one_of(st.sampled_from(UNPROTECTED), st.sampled_from(UNPROTECTED), st.sampled_from(PROTECTED)))
        if draw(st.integers(0, 9)) < 8:
            text, tokens = f"segment {i}", draw(st.integers(0, 400))
        else:
            text, tokens = draw(short_texts), None
        level = draw(st.sampled_from([None, None, 0, 1, 2])) if layer is L.SUMMARY else None
        covers = draw(st.lists(st.sampled_from(keys), max_size=3)) if level == 2 else []
        segs.append(
            Segment(
                text,
                layer,
                key=keys[i],
                score=draw(st.one_of(st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.floats(0.0, 1.0))),
                tokens=tokens,
                recoverable=draw(st.booleans()),
                stale=draw(st.booleans()),
                group=draw(st.one_of(st.none(), st.none(), st.sampled_from(["g0", "g1", "g2"]))),
                level=level,
                covers=covers,
            )
        )
    return segs


def cost(seg: Segment) -> int:
    return seg.tokens if seg.tokens is not None else TOK.count(seg.text)


@st.composite
def budgets(draw: st.DrawFn, segs: list[Segment]) -> Budget:
    """Mostly a ceiling between the protected set and a little over the whole request (where
    the ladder has work to do); sometimes anything down to one token (mostly Unfittable)."""
    total = sum(cost(s) for s in segs)
    protected = sum(cost(s) for s in segs if s.layer in PROTECTED)
    high = max(1, total + total // 4 + 5)
    ceiling = draw(st.one_of(st.integers(max(1, protected), high), st.integers(max(1, protected), high),
                             st.integers(1, high)))
    reserve = draw(st.one_of(st.just(0), st.integers(0, 4000)))
    return Budget(ceiling + reserve, reserve)


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Segment], Budget]:
    segs = draw(requests())
    return segs, draw(budgets(segs))


@dataclass
class Unit:
    name: str
    members: list[int]
    layers: set[PromptLayer]
    position: int
    score: float
    recoverable: bool
    stale: bool
    tokens: int

    @property
    def protected(self) -> bool:
        return bool(self.layers & set(PROTECTED))

    @property
    def exchange(self) -> bool:
        return L.CONVERSATION in self.layers


def units_of(segs: list[Segment]) -> list[Unit]:
    """The eviction units SPEC section 3 describes: a group is one unit, else a segment is."""
    by_name: dict[str, Unit] = {}
    out: list[Unit] = []
    for i, s in enumerate(segs):
        name = f"group:{s.group}" if s.group is not None else f"key:{s.key}"
        u = by_name.get(name)
        if u is None:
            u = Unit(name, [], set(), i, float("-inf"), True, True, 0)
            by_name[name] = u
            out.append(u)
        u.members.append(i)
        u.layers.add(s.layer)
        u.score = max(u.score, s.score)
        u.recoverable &= s.recoverable
        u.stale &= s.stale
        u.tokens += cost(s)
    return out


def run(segs: list[Segment], budget: Budget, policy: Policy, **kw: object) -> ctxfast.Fit | ctxfast.Unfittable:
    try:
        return fit(segs, budget, policy, **kw)
    except ctxfast.Unfittable as err:
        return err


def layer_labels(policy: Policy) -> dict[PromptLayer, str]:
    labels = policy.to_dict().get("labels", {})
    return {layer: labels.get(layer.label, layer.label) for layer in PROTECTED + UNPROTECTED}


def check_unfittable(err: ctxfast.Unfittable, segs: list[Segment], budget: Budget, policy: Policy) -> None:
    assert err.ceiling == budget.ceiling
    assert err.total > err.ceiling
    assert err.shortfall == err.total - err.ceiling
    assert sum(n for _, n in err.components) + err.floor_tokens == err.total
    # Every protected component (a protected segment, or a member of a group holding one) is
    # named with its size.
    labels = layer_labels(policy)
    protected = [segs[i] for u in units_of(segs) if u.protected for i in u.members]
    if protected:
        named = sorted((label.split(" ")[0], n) for label, n in err.components)
        assert named == sorted((labels[s.layer], cost(s)) for s in protected)
    elif err.components:
        # Nothing is protected and one unit is left: it is never dropped (a request is never
        # empty), and the error names it.
        [(label, n)] = err.components
        assert label.startswith("last unit, ") and "never empty" in label
        assert n == err.total - err.floor_tokens
    else:
        # Nothing is protected; the floors kept what is left.
        assert err.floor_tokens == err.total
    message = str(err)
    assert f"short by {err.shortfall:,}" in message
    assert message.count("short by") == 1 and "cannot fit:" not in message
    # The protected parts are grouped by layer: one line per label, with the label's tokens.
    by_label: dict[str, int] = {}
    for s in protected:
        by_label[labels[s.layer]] = by_label.get(labels[s.layer], 0) + cost(s)
    for label, n in by_label.items():
        assert re.search(rf"^  {re.escape(label)}: .*, {n:,} tokens?$", message, re.M), (label, n, message)
    if err.floor_tokens and protected:
        assert f"kept by floors, {err.floor_tokens:,} token" in message
    assert "\nto fit: raise the window" in message
    assert err.trace.startswith("ceiling ") and "\nfailed  " in err.trace


def removal_units(result: ctxfast.Fit, segs: list[Segment]) -> list[tuple[int, Unit]]:
    """(rung_index, unit) per removed unit, in removal order."""
    units = units_of(segs)
    unit_of = {i: u for u in units for i in u.members}
    index = {id(s): i for i, s in enumerate(segs)}
    out: list[tuple[int, Unit]] = []
    for ev in result.evicted:
        u = unit_of[index[id(ev.segment)]]
        if not out or out[-1][1] is not u:
            out.append((ev.rung_index, u))
    return out


def check_structure(f: ctxfast.Fit, segs: list[Segment], budget: Budget, policy: Policy) -> int:
    """What every fit keeps, however its cut was planned: under the ceiling, kept + evicted = input,
    the protected set, whole groups, the ledger. Returns the input's tokens."""
    index = {id(s): i for i, s in enumerate(segs)}
    # Under the ceiling, and the arithmetic adds up.
    assert f.ceiling == budget.ceiling
    assert f.total <= f.ceiling
    assert f.spare == f.ceiling - f.total
    start = sum(cost(s) for s in segs)
    assert f.over_by == max(0, start - f.ceiling)
    assert f.count_calls == 1
    assert f.total == sum(cost(s) for s in f.kept)

    # Every input segment is in exactly one of kept / evicted (a truncated one stays in kept, as
    # its shortened copy); kept is in input order.
    truncated = {id(t.segment): t for t in f.truncated}
    kept_positions = []
    for s in f.kept:
        if id(s) in index:
            kept_positions.append(index[id(s)])
        else:
            t = truncated[id(s)]
            assert t.original.text.startswith(s.text)
            assert (s.key, s.layer, s.group, s.score) == (t.original.key, t.original.layer, t.original.group,
                                                         t.original.score)
            assert cost(s) == t.tokens_after < t.tokens_before
            kept_positions.append(index[id(t.original)])
    evicted_positions = [index[id(e.segment)] for e in f.evicted]
    assert kept_positions == sorted(kept_positions)
    assert sorted(kept_positions + evicted_positions) == list(range(len(segs)))
    for e in f.evicted:
        assert e.tokens == cost(e.segment)
        assert e.action == "drop"
        assert e.rung == policy.rung_names[e.rung_index]

    # The protected set, and any group holding a protected member, is always sent untouched.
    protected_groups = {s.group for s in segs if s.layer in PROTECTED and s.group is not None}
    for i, s in enumerate(segs):
        if s.layer in PROTECTED or (s.group is not None and s.group in protected_groups):
            assert i in kept_positions and any(k is s for k in f.kept)

    # A group is never split.
    fate: dict[str, set[bool]] = defaultdict(set)
    evicted_set = set(evicted_positions)
    for i, s in enumerate(segs):
        if s.group is not None:
            fate[s.group].add(i in evicted_set)
    assert all(len(v) == 1 for v in fate.values()), fate

    # Every removed token is accounted for.
    trimmed = sum(t.tokens_before - t.tokens_after for t in f.truncated)
    assert f.ledger.removed == sum(e.tokens for e in f.evicted) + trimmed == start - f.total
    assert f.ledger.truncated == trimmed
    assert f.ledger.evicted_recoverable == sum(e.tokens for e in f.evicted if e.segment.recoverable)
    assert sum(f.ledger.rung_firings.values()) == len(f.trace.rows)

    return start


# ---------------------------------------------------------------------------------------------
# The properties every policy keeps


@pytest.mark.parametrize("policy_name", list(POLICIES))
@SETTINGS
@given(case=cases())
def test_fit_invariants(policy_name: str, case: tuple[list[Segment], Budget]) -> None:
    segs, budget = case
    policy = POLICIES[policy_name]()
    result = run(segs, budget, policy)
    if isinstance(result, ctxfast.Unfittable):
        check_unfittable(result, segs, budget, policy)
        return
    f = result
    start = check_structure(f, segs, budget, policy)

    # Rungs run in ladder order, and each row is taken only while the request is still over.
    assert [e.rung_index for e in f.evicted] == sorted(e.rung_index for e in f.evicted)
    rows = f.trace.rows
    previous = start
    for r in rows:
        assert previous > f.ceiling
        assert r["removed"] == previous - r["total_after"] >= 0
        assert r["over_after"] == r["total_after"] - f.ceiling
        previous = r["total_after"]
    if rows:
        assert previous == f.total
    else:
        assert start <= f.ceiling and f.evicted == [] and f.truncated == []
    assert len([r for r in rows if r["action"] == "drop"]) == len(removal_units(f, segs))
    assert f.rungs_fired == [n for n in policy.rung_names if n in {r["rung"] for r in rows}]


@pytest.mark.parametrize("policy_name", list(POLICIES))
@SETTINGS
@given(case=cases(), cut=st.floats(0.3, 1.0), profile=st.sampled_from(["openai", "anthropic", "llama.cpp"]))
def test_fit_invariants_with_the_previous_requests_cut(policy_name: str, case: tuple[list[Segment], Budget],
                                                      cut: float, profile: str) -> None:
    # The previous turn sent a prefix of this request; repeating its cut, or moving it below the
    # ceiling, keeps every structural property of a plain fit, and is deterministic.
    segs, budget = case
    policy = POLICIES[policy_name]()
    before = run(segs[: max(1, int(len(segs) * cut))], budget, policy, cache=profile)
    if isinstance(before, ctxfast.Unfittable):
        return
    result = run(segs, budget, policy, previous=before, cache=profile)
    if isinstance(result, ctxfast.Unfittable):
        check_unfittable(result, segs, budget, policy)
        return
    check_structure(result, segs, budget, policy)
    assert result.cache.cut in ("kept", "moved") and result.cache.previous
    again = run([s.replace() for s in segs], budget, policy, previous=before, cache=profile)
    assert isinstance(again, ctxfast.Fit)
    assert [(s.key, s.text) for s in again.kept] == [(s.key, s.text) for s in result.kept]
    assert str(again.cache) == str(result.cache)


@pytest.mark.parametrize("policy_name", list(POLICIES))
@SETTINGS
@given(case=cases())
def test_fit_is_deterministic(policy_name: str, case: tuple[list[Segment], Budget]) -> None:
    segs, budget = case
    policy = POLICIES[policy_name]()

    def outcome(segments: list[Segment]) -> object:
        r = run(segments, budget, policy)
        if isinstance(r, ctxfast.Unfittable):
            return ("unfittable", str(r), r.components, r.total)
        return (
            [(s.key, s.text) for s in r.kept],
            [(e.segment.key, e.rung, e.tokens, e.action) for e in r.evicted],
            [(t.original.key, t.tokens_before, t.tokens_after) for t in r.truncated],
            str(r.trace),
            r.total,
        )

    first = outcome(segs)
    assert outcome(segs) == first  # the same objects (counts now memoised)
    assert outcome([s.replace() for s in segs]) == first  # equal, fresh objects


# ---------------------------------------------------------------------------------------------
# Each preset's order, checked against SPEC section 4 on random requests


def drops_fit(order: list[Unit], all_units: list[Unit], ceiling: int) -> bool:
    """Whether dropping whole units in `order` gets the request under `ceiling`: zero-token units
    free nothing and are passed over, and the last unit left is never dropped (a request is
    never empty)."""
    total = sum(u.tokens for u in all_units)
    live = len(all_units)
    for u in order:
        if total <= ceiling:
            break
        if u.tokens == 0:
            continue
        if live <= 1:
            break
        total -= u.tokens
        live -= 1
    return total <= ceiling


def assert_removed_prefix(removed: list[Unit], expected_order: list[Unit]) -> None:
    # Zero-token units free nothing, so a drop rung passes them over.
    expected = [u for u in expected_order if u.tokens > 0]
    assert [u.name for u in removed] == [u.name for u in expected[: len(removed)]]


@SETTINGS
@given(case=cases())
def test_context_window_order(case: tuple[list[Segment], Budget]) -> None:
    """Conversation (with tool results and summaries) oldest first, then retrieved by score."""
    segs, budget = case
    f = run(segs, budget, Policy.context_window())
    units = [u for u in units_of(segs) if not u.protected]
    history = sorted((u for u in units if u.layers & HISTORY), key=lambda u: u.position)
    retrieved = sorted((u for u in units if not u.layers & HISTORY), key=lambda u: (u.score, u.position))
    # No floors: it is unfittable exactly when dropping in order cannot get under the ceiling,
    # i.e. the protected units alone are over it, or only the last unit would be left.
    assert isinstance(f, ctxfast.Unfittable) == (not drops_fit(history + retrieved, units_of(segs), budget.ceiling))
    if not isinstance(f, ctxfast.Fit):
        return
    removed = removal_units(f, segs)
    assert_removed_prefix([u for _, u in removed], history + retrieved)
    for rung, u in removed:
        assert rung == (0 if u.layers & HISTORY else 1)


def rank_key(u: Unit) -> tuple[object, ...]:
    return (not u.recoverable, not u.stale, u.score, -u.tokens, u.position)


@pytest.mark.parametrize("keep_last", [0, 1, 2, 3])
@SETTINGS
@given(case=cases())
def test_ranked_order_and_pinned_last_exchanges(keep_last: int, case: tuple[list[Segment], Budget]) -> None:
    """One sort by (recoverable, stale, relevance, size); the last N exchanges never go."""
    segs, budget = case
    f = run(segs, budget, Policy.ranked(keep_last))
    units = [u for u in units_of(segs) if not u.protected]
    exchanges = [u for u in units if u.exchange]
    pinned = {u.name for u in exchanges[max(0, len(exchanges) - keep_last):]} if keep_last else set()
    # Unfittable exactly when dropping the candidates in rank order cannot get under the
    # ceiling: the protected units plus the pinned exchanges are over it, or only the last unit
    # would be left.
    candidates = sorted((u for u in units if u.name not in pinned), key=rank_key)
    assert isinstance(f, ctxfast.Unfittable) == (not drops_fit(candidates, units_of(segs), budget.ceiling))
    if not isinstance(f, ctxfast.Fit):
        return
    removed = [u for _, u in removal_units(f, segs)]
    assert_removed_prefix(removed, candidates)
    assert not pinned & {u.name for u in removed}


@SETTINGS
@given(case=cases())
def test_troubleshooting_floors_and_orders(case: tuple[list[Segment], Budget]) -> None:
    segs, budget = case
    f = run(segs, budget, Policy.troubleshooting())
    if not isinstance(f, ctxfast.Fit):
        return
    units = [u for u in units_of(segs) if not u.protected]
    history = [u for u in units if u.layers & HISTORY]
    exchanges = [u for u in history if u.exchange]
    floor = {u.name for u in exchanges[:1] + exchanges[-3:]}
    by_rung: dict[int, list[Unit]] = defaultdict(list)
    for rung, u in removal_units(f, segs):
        by_rung[rung].append(u)
    # Rung 1: oldest first among history units, never the first or the last three exchanges.
    assert [u.position for u in by_rung[0]] == sorted(u.position for u in by_rung[0])
    assert not floor & {u.name for u in by_rung[0]}
    assert all(u.layers & HISTORY for u in by_rung[0])
    # Rung 2: lowest score first among retrieved units, and at least four stay (if there were).
    assert [(u.score, u.position) for u in by_rung[1]] == sorted((u.score, u.position) for u in by_rung[1])
    assert all(L.RETRIEVED in u.layers for u in by_rung[1])
    if by_rung[1]:
        # Judged over what the rung could reach: retrieved units the first rung left.
        reachable = [u for u in units if L.RETRIEVED in u.layers and u not in by_rung[0]]
        assert len(reachable) - len(by_rung[1]) >= 4
    # Rung 3 only shortens retrieved bodies, and never below 128 unless they started there.
    for t in f.truncated:
        assert t.original.layer is L.RETRIEVED
        assert t.rung == "retrieval.truncate_chunk_bodies"


@pytest.mark.parametrize("top_k", [0, 1, 3])
@SETTINGS
@given(case=cases())
def test_seven_tier_tiers(top_k: int, case: tuple[list[Segment], Budget]) -> None:
    segs, budget = case
    f = run(segs, budget, Policy.seven_tier(top_k))
    if not isinstance(f, ctxfast.Fit):
        return
    removed = removal_units(f, segs)
    # A level-1 summary is covered while a level-2 that covers it is still held.
    gone_before_tier3 = {id(u) for rung, u in removed if rung < 2}
    unit_of = {i: u for u in units_of(segs) for i in u.members}
    level2_covers = {
        k for i, s in enumerate(segs) if s.level == 2 and id(unit_of[i]) not in gone_before_tier3 for k in s.covers
    }
    for rung, u in removed:
        members = [segs[i] for i in u.members]
        if rung == 0:  # stale tool results
            assert u.stale and L.TOOL_RESULT in u.layers
        elif rung == 1:  # retrieved below the top k
            assert L.RETRIEVED in u.layers
        elif rung == 2:  # level-1 summaries a level-2 covers
            assert any(s.level == 1 and s.key in level2_covers for s in members)
        elif rung == 3:  # the rolling summary
            assert any(s.level == 0 for s in members)
        else:  # recent turns
            assert u.layers & {L.CONVERSATION, L.TOOL_RESULT}
    by_rung: dict[int, list[Unit]] = defaultdict(list)
    for rung, u in removal_units(f, segs):
        by_rung[rung].append(u)
    for rung in (0, 2, 3, 4):
        assert [u.position for u in by_rung[rung]] == sorted(u.position for u in by_rung[rung])
    assert [(u.score, u.position) for u in by_rung[1]] == sorted((u.score, u.position) for u in by_rung[1])
    if by_rung[1]:
        reachable = [u for u in units_of(segs) if L.RETRIEVED in u.layers and not u.protected
                     and u.name not in {v.name for v in by_rung[0]}]
        assert len(reachable) - len(by_rung[1]) >= top_k


# ---------------------------------------------------------------------------------------------
# evict_indices against the seed's tuple sort


@SETTINGS
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 5000), st.booleans(), st.booleans(), st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]),
                  st.booleans()),
        max_size=30,
    ),
    deficit=st.integers(0, 60000),
)
def test_evict_indices_matches_the_tuple_sort(rows: list[tuple[int, bool, bool, float, bool]], deficit: int) -> None:
    tokens = np.array([r[0] for r in rows], dtype=np.int64)
    recoverable = np.array([r[1] for r in rows], dtype=bool)
    stale = np.array([r[2] for r in rows], dtype=bool)
    relevance = np.array([r[3] for r in rows], dtype=np.float64)
    protected = np.array([r[4] for r in rows], dtype=bool)
    order = sorted(
        (i for i in range(len(rows)) if not protected[i]),
        key=lambda i: (not recoverable[i], not stale[i], relevance[i], -tokens[i], i),
    )
    expected, freed = [], 0
    for i in order:
        if freed >= deficit:
            break
        expected.append(i)
        freed += int(tokens[i])
    got = ctxfast.evict_indices(tokens, recoverable, stale, relevance, protected, deficit)
    assert got.dtype == np.int64
    assert got.tolist() == expected


# ---------------------------------------------------------------------------------------------
# Joined payloads: the join repair equals a full re-count

SEPARATORS = ["\n\n", "\n", " ", "", "\n---\n"]
JOIN_FRAGMENTS = [
    "word", " word", "Hello", ",", ".", "!", "?", ":", ";", "-", "_", "'", '"', "(", ")", "[", "]", "{", "}",
    "#", "*", "=", "+", "<", ">", "|", "\\", "`", "~", "@", "$", "%", "^", "&",
    "\n", "\n\n", "\r\n", " ", "  ", "\t", "\u3000", "日本語", "の", "中文", "한국어", "é", "🙂", "12", "3456",
    "def f(x):", "    return x", "'s", "'ll", "n't",
]


def join_texts(extra: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(st.sampled_from(JOIN_FRAGMENTS + extra), max_size=10).map("".join),
        st.text(alphabet=st.characters(exclude_characters=[c for c in "/" if c not in "".join(extra)],
                                       exclude_categories=["Cs"]), max_size=20),
    )


def check_separator_exact(encoding: str, texts: list[str], separator: str, window: int, policy: str) -> None:
    tok = Tokenizer.from_encoding(encoding)
    layers = [L.SYSTEM] + [L.CONVERSATION, L.RETRIEVED] * len(texts)
    segs = [Segment(t, layers[i], key=f"k{i}", score=(i % 5) / 4) for i, t in enumerate(texts)]
    result = run(segs, Budget(window), POLICIES[policy](), tokenizer=tok, separator=separator)
    if isinstance(result, ctxfast.Unfittable):
        return
    assert result.total == tok.count(separator.join(result.texts()))
    assert result.total <= result.ceiling
    assert result.count_calls >= 1


separator_cases = st.tuples(
    st.lists(join_texts([]), min_size=1, max_size=8),
    st.sampled_from(SEPARATORS),
    st.integers(1, 400),
    st.sampled_from(["context_window", "troubleshooting", "ranked"]),
)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@SETTINGS
@given(case=separator_cases)
@example(case=(["line one\n", "\nline two"], "\n", 400, "context_window"))
@example(case=(["a  ", "  b"], "", 400, "context_window"))
@example(case=(["x\n\n", "y"], "\n\n", 400, "context_window"))
def test_separator_total_is_a_full_recount(encoding: str, case: tuple[list[str], str, int, str]) -> None:
    """Random texts (the next test adds slashes, which o200k's punctuation piece runs onto)."""
    texts, separator, window, policy = case
    check_separator_exact(encoding, texts, separator, window, policy)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@SETTINGS
@given(case=st.tuples(st.lists(join_texts(["/", "//", "/usr/bin", "!\n/"]), min_size=1, max_size=8),
                      st.sampled_from(SEPARATORS), st.integers(1, 400), st.just("context_window")))
@example(case=(["a!", "/b"], "\n", 400, "context_window"))
def test_separator_total_is_a_full_recount_with_slashes(encoding: str, case: tuple[list[str], str, int, str]) -> None:
    texts, separator, window, policy = case
    check_separator_exact(encoding, texts, separator, window, policy)


@pytest.mark.parametrize(
    ("texts", "separator", "joined"),
    [
        (["a!", "/b"], "\n", "a!\n/b"),  # the separator ends the line
        (["a!\n", "/b"], "", "a!\n/b"),  # the first text ends the line
        (["print(x)\n", "//comment"], "", "print(x)\n//comment"),
    ],
)
def test_separator_join_after_punctuation_and_newline_o200k(texts: list[str], separator: str, joined: str) -> None:
    """Minimal cases of the bug above."""
    tok = Tokenizer.from_encoding("o200k_base")
    assert separator.join(texts) == joined
    f = fit([Segment(t) for t in texts], Budget(100), tokenizer=tok, separator=separator)
    assert f.total == tok.count(joined)


def test_joined_payload_under_the_o200k_join_bug_is_really_under_the_ceiling() -> None:
    """The consequence of the bug: fit() reports 3 tokens on a ceiling of 3 and sends 4."""
    tok = Tokenizer.default()
    f = fit([Segment("a!\n", L.SYSTEM), Segment("/b", key="b")], Budget(3), tokenizer=tok, separator="")
    assert tok.count("".join(f.texts())) <= f.ceiling


@pytest.mark.parametrize("separator", SEPARATORS)
def test_separator_is_projected_per_join(separator: str) -> None:
    """The projection adds count(separator) per join; the total is the joined text's count."""
    tok = Tokenizer.default()
    segs = [Segment("system prompt here\n", L.SYSTEM)] + [
        Segment(f"turn number {i} says something", L.CONVERSATION, key=f"t{i}") for i in range(6)
    ]
    bare = sum(tok.count(s.text) for s in segs)
    projected = bare + (len(segs) - 1) * (tok.count(separator) if separator else 0)
    joined = tok.count(separator.join(s.text for s in segs))
    roomy = fit(segs, Budget(max(projected, joined)), tokenizer=tok, separator=separator)
    assert roomy.evicted == [] and roomy.total == joined and roomy.count_calls == 1
    for ceiling in sorted({bare, joined, projected - 1, bare // 2}):
        f = run(segs, Budget(ceiling), Policy.context_window(), tokenizer=tok, separator=separator)
        if isinstance(f, ctxfast.Unfittable):
            continue
        assert f.total <= ceiling
        assert f.total == tok.count(separator.join(f.texts()))
        if ceiling < projected:
            assert f.evicted, "the projection was over, so something went"
