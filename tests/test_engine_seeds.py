"""The worked case of each requirement document, replayed through the Python API.

Every test builds a request shaped like the one its seed describes and checks the order of
sacrifice the matching preset produces: which unit goes, in which order, and where the ladder
stops (floors, the protected set, Unfittable).
"""

from __future__ import annotations

import re
from itertools import accumulate

import numpy as np
import pytest

import ctxfast
from ctxfast import Budget, Policy, PromptLayer, Segment, Tokenizer, fit

L = PromptLayer


def row_labels(result: ctxfast.Fit) -> list[str]:
    return [row["label"] for row in result.trace.rows]


def unit_of(seg: Segment) -> str:
    """How a test names an eviction unit: its group, else its key."""
    name = seg.group if seg.group is not None else seg.key
    assert name is not None, f"test segments carry a group or a key: {seg!r}"
    return name


def evicted_units(result: ctxfast.Fit) -> list[str]:
    """Removed units in removal order (members of one unit are adjacent)."""
    out: list[str] = []
    for ev in result.evicted:
        name = unit_of(ev.segment)
        if not out or out[-1] != name:
            out.append(name)
    return out


def tighten(segments: list[Segment], policy: Policy, expected: list[tuple[str, int]]) -> None:
    """Walk the ceiling down one expected unit at a time.

    `expected` is the order of sacrifice as (unit, tokens). With the ceiling set to the start
    total minus the first k sizes, exactly the first k units must go, in that order, and the
    request must land on the ceiling exactly (each unit is removed whole).
    """
    start = sum(s.tokens for s in segments)
    sizes = [n for _, n in expected]
    for k, removed in enumerate(accumulate([0, *sizes])):
        ceiling = start - removed
        result = fit(segments, Budget(ceiling), policy)
        assert evicted_units(result) == [u for u, _ in expected[:k]], f"ceiling {ceiling}"
        assert row_labels(result) == [u for u, _ in expected[:k]]
        assert result.total == ceiling
        assert result.spare == 0
        assert result.over_by == removed


# ---------------------------------------------------------------------------------------------
# Seed 000: the troubleshooting assistant's ladder

SYSTEM_TOKENS = 1462
TOOLS_TOKENS = 2840
# (size, retrieval score): eight chunks, 15,900 tokens, the first an oversized runbook section.
CHUNKS = [
    (4800, 0.93),
    (1600, 0.71),
    (1500, 0.88),
    (1700, 0.64),
    (1400, 0.80),
    (1650, 0.58),
    (1350, 0.75),
    (1900, 0.69),
]
EXCHANGES = [900, 1180, 940, 1510, 760, 1020, 1400, 1500, 1590, 1500]


def troubleshooting_request(*, real_chunks: bool = False) -> list[Segment]:
    """System, tools, eight retrieved chunks and ten two-message exchanges.

    With `real_chunks`, each chunk's text really has its size in tokens (" word" is one o200k
    token), so a truncate rung has something real to cut; otherwise sizes come from `tokens=`.
    """
    segs = [
        Segment("You are the on-call troubleshooting assistant.", L.SYSTEM, key="system", tokens=SYSTEM_TOKENS),
        Segment('{"tools": ["kubectl", "grafana"]}', L.TOOLS, key="tools", tokens=TOOLS_TOKENS),
    ]
    for i, (size, score) in enumerate(CHUNKS, start=1):
        if real_chunks:
            segs.append(Segment(" word" * size, L.RETRIEVED, key=f"chunk{i}", score=score))
        else:
            segs.append(Segment(f"runbook section {i}", L.RETRIEVED, key=f"chunk{i}", score=score, tokens=size))
    for i, size in enumerate(EXCHANGES, start=1):
        user, assistant = size // 2, size - size // 2
        segs.append(Segment(f"question {i}", L.CONVERSATION, group=f"ex{i}", tokens=user))
        segs.append(Segment(f"answer {i}", L.CONVERSATION, group=f"ex{i}", tokens=assistant))
    return segs


SEED000_ROWS = [
    # label, removed, history after, total after, over after (negative: spare)
    ("ex2", 1180, 11120, 31322, 3322),
    ("ex3", 940, 10180, 30382, 2382),
    ("ex4", 1510, 8670, 28872, 872),
    ("ex5", 760, 7910, 28112, 112),
    ("ex6", 1020, 6890, 27092, -908),
]


@pytest.fixture(scope="module")
def seed000_fit() -> ctxfast.Fit:
    budget = Budget(32000, 4000, caps={L.RETRIEVED: 14000})
    return fit(troubleshooting_request(), budget, Policy.troubleshooting())


def test_seed000_request_adds_up(seed000_fit: ctxfast.Fit) -> None:
    assert sum(n for n, _ in CHUNKS) == 15900
    assert sum(EXCHANGES) == 12300
    assert seed000_fit.ceiling == 28000
    assert seed000_fit.trace.start == [
        ("system", 1462),
        ("tools", 2840),
        ("retrieval", 15900),
        ("history", 12300),
    ]


def test_seed000_trace_rows_match_the_worked_example(seed000_fit: ctxfast.Fit) -> None:
    rows = [
        (r["label"], r["removed"], r["layer_after"], r["total_after"], r["over_after"])
        for r in seed000_fit.trace.rows
    ]
    assert rows == SEED000_ROWS
    for r in seed000_fit.trace.rows:
        assert r["rung"] == "history.drop_oldest_exchange"
        assert r["action"] == "drop"
        assert r["layer"] == "history"


def test_seed000_totals(seed000_fit: ctxfast.Fit) -> None:
    f = seed000_fit
    assert (f.total, f.spare, f.over_by, f.count_calls) == (27092, 908, 4502, 1)
    assert f.cap_overruns == {L.RETRIEVED: 1900}
    assert f.rungs_fired == ["history.drop_oldest_exchange"]
    assert f.truncated == []
    # Retrieval was the slice over its cap, yet history (rung one) paid.
    assert all(s.layer is not L.RETRIEVED for s in (e.segment for e in f.evicted))
    assert f.ledger.removed == 32502 - 27092
    assert f.ledger.rung_firings == {"history.drop_oldest_exchange": 5}


def test_seed000_evictions_are_whole_exchanges_in_order(seed000_fit: ctxfast.Fit) -> None:
    f = seed000_fit
    assert [(unit_of(e.segment), e.tokens) for e in f.evicted] == [
        (f"ex{i}", n) for i in range(2, 7) for n in (EXCHANGES[i - 1] // 2, EXCHANGES[i - 1] - EXCHANGES[i - 1] // 2)
    ]
    assert {e.rung for e in f.evicted} == {"history.drop_oldest_exchange"}
    assert {e.action for e in f.evicted} == {"drop"}
    kept_groups = [s.group for s in f.kept if s.group]
    assert sorted(set(kept_groups), key=lambda g: int(g[2:])) == ["ex1", "ex7", "ex8", "ex9", "ex10"]


def test_seed000_rendered_trace(seed000_fit: ctxfast.Fit) -> None:
    text = str(seed000_fit.trace)
    assert text == seed000_fit.explain()
    lines = text.splitlines()
    assert re.fullmatch(r"ceiling 28,000\s+\(window 32,000 − reserve 4,000\)", lines[0]), lines[0]
    start = next(line for line in lines if line.startswith("start"))
    assert re.fullmatch(r"start\s+system 1,462\s+tools 2,840\s+retrieval 15,900\s+history 12,300", start), start
    assert re.search(r"total 32,502\s+over by 4,502", text), text
    assert re.search(r"retrieval 15,900 over its cap of 14,000 by 1,900", text), text
    assert re.search(r"ex2\s+−1,180\s+history 11,120\s+total 31,322\s+over by 3,322", text), text
    assert re.search(r"ex6\s+−1,020\s+history\s+6,890\s+total 27,092\s+fits, 908 spare", text), text
    assert "retrieval untouched" in text
    assert "floor not reached" in text


# The same request on a 17,500 ceiling. History loses ex2..ex7 and stops at its floor (ex1 plus
# the last three); chunks go lowest score first down to four; the remaining 1,342 tokens come out
# of the lowest-scored bodies: chunk7 down to the 128-token minimum, then 120 from chunk5.
TIGHT_CEILING = 17500
TIGHT_ROWS = [
    *[("history.drop_oldest_exchange", f"ex{i}", "drop", EXCHANGES[i - 1]) for i in range(2, 8)],
    ("retrieval.drop_lowest_ranked_chunk", "chunk6", "drop", 1650),
    ("retrieval.drop_lowest_ranked_chunk", "chunk4", "drop", 1700),
    ("retrieval.drop_lowest_ranked_chunk", "chunk8", "drop", 1900),
    ("retrieval.drop_lowest_ranked_chunk", "chunk2", "drop", 1600),
    ("retrieval.truncate_chunk_bodies", "chunk7", "truncate", 1350 - 128),
    ("retrieval.truncate_chunk_bodies", "chunk5", "truncate", 120),
]


def test_seed000_chunk_texts_have_the_counts_the_test_relies_on() -> None:
    tok = Tokenizer.default()
    for size, _ in CHUNKS:
        assert tok.count(" word" * size) == size
    assert tok.truncate(" word" * 1350, 128) == " word" * 128


@pytest.fixture(scope="module")
def tight_fit() -> ctxfast.Fit:
    return fit(troubleshooting_request(real_chunks=True), Budget(TIGHT_CEILING), Policy.troubleshooting())


def test_seed000_floors_then_second_and_third_rungs(tight_fit: ctxfast.Fit) -> None:
    f = tight_fit
    rows = [(r["rung"], r["label"], r["action"], r["removed"]) for r in f.trace.rows]
    assert rows == TIGHT_ROWS
    assert f.total == TIGHT_CEILING
    assert f.spare == 0
    assert f.count_calls == 1
    assert f.rungs_fired == Policy.troubleshooting().rung_names


def test_seed000_floors_hold(tight_fit: ctxfast.Fit) -> None:
    kept_groups = {s.group for s in tight_fit.kept if s.layer is L.CONVERSATION}
    assert kept_groups == {"ex1", "ex8", "ex9", "ex10"}
    kept_chunks = [s.key for s in tight_fit.kept if s.layer is L.RETRIEVED]
    assert kept_chunks == ["chunk1", "chunk3", "chunk5", "chunk7"]  # the top four, input order
    text = str(tight_fit.trace)
    assert text.count("floor reached") >= 2
    assert "2 truncated" in text


def test_seed000_truncation_reclaims_exactly_the_remainder(tight_fit: ctxfast.Fit) -> None:
    tok = Tokenizer.default()
    f = tight_fit
    trunc = {t.original.key: t for t in f.truncated}
    assert list(trunc) == ["chunk7", "chunk5"]
    assert (trunc["chunk7"].tokens_before, trunc["chunk7"].tokens_after) == (1350, 128)
    assert (trunc["chunk5"].tokens_before, trunc["chunk5"].tokens_after) == (1400, 1280)
    for t in f.truncated:
        assert t.rung == "retrieval.truncate_chunk_bodies"
        assert t.original.text.startswith(t.segment.text)
        assert tok.count(t.segment.text) == t.tokens_after
        assert t.segment.key == t.original.key and t.segment.score == t.original.score
        # The shortened segment is what is sent; the original stays whole on the record.
        assert any(k is t.segment for k in f.kept)
        assert all(e.segment is not t.original for e in f.evicted)
    assert trunc["chunk7"].segment.text == " word" * 128
    assert f.ledger.truncated == 1342
    assert f.ledger.removed == 32502 - TIGHT_CEILING
    # The authoritative total is the sum of what is actually sent.
    sent = sum(s.tokens if s.tokens is not None else tok.count(s.text) for s in f.kept)
    assert sent == f.total


def test_seed000_second_rung_stops_at_the_first_fit() -> None:
    # 22,000: history hits its floor at 25,692; three chunks take it to 20,442.
    f = fit(troubleshooting_request(), Budget(22000), Policy.troubleshooting())
    assert row_labels(f)[6:] == ["chunk6", "chunk4", "chunk8"]
    assert f.total == 20442
    assert f.rungs_fired == ["history.drop_oldest_exchange", "retrieval.drop_lowest_ranked_chunk"]


def test_seed000_below_the_floors_is_unfittable() -> None:
    # Protected 4,302 + history floor 5,490 + four chunks at the 128-token minimum = 10,304.
    with pytest.raises(ctxfast.Unfittable) as info:
        fit(troubleshooting_request(real_chunks=True), Budget(10000), Policy.troubleshooting())
    err = info.value
    assert err.components == [("system \"system\"", 1462), ("tools \"tools\"", 2840)]
    assert (err.ceiling, err.total, err.shortfall) == (10000, 10304, 304)
    assert err.floor_tokens == 10304 - 4302
    assert "1,462" in str(err) and "2,840" in str(err) and "304" in str(err)


# ---------------------------------------------------------------------------------------------
# Seed 001: ContextWindow's order


def context_window_request() -> list[Segment]:
    return [
        Segment("persona and rules", L.SYSTEM, key="system", tokens=500),
        Segment("tool schemas", L.TOOLS, key="tools", tokens=400),
        Segment("case file", L.PINNED, key="case_file", tokens=300),
        Segment("page 12", L.RETRIEVED, key="p12", score=0.9, tokens=400),
        Segment("first question", L.CONVERSATION, group="t1", tokens=120),
        Segment("first answer", L.CONVERSATION, group="t1", tokens=180),
        Segment("page 7", L.RETRIEVED, key="p7", score=0.3, tokens=350),
        Segment("summary of older turns", L.SUMMARY, key="rolling", level=0, tokens=150),
        Segment("call search()", L.CONVERSATION, group="t2", tokens=60),
        Segment("search result", L.TOOL_RESULT, group="t2", tokens=640),
        Segment("page 3", L.RETRIEVED, key="p3", score=0.6, tokens=300),
        Segment("third question", L.CONVERSATION, group="t3", tokens=90),
        Segment("page 9", L.RETRIEVED, key="p9", score=0.1, tokens=250),
        Segment("the question being asked now", L.CURRENT_TURN, key="now", tokens=110),
    ]


SEED001_ORDER = [
    # conversation (with its tool results and summaries), oldest first
    ("t1", 300),
    ("rolling", 150),
    ("t2", 700),
    ("t3", 90),
    # then retrieved, lowest score first
    ("p9", 250),
    ("p7", 350),
    ("p3", 300),
    ("p12", 400),
]


def test_seed001_order_as_the_ceiling_tightens() -> None:
    tighten(context_window_request(), Policy.context_window(), SEED001_ORDER)


def test_seed001_is_the_default_policy() -> None:
    segs = context_window_request()
    start = sum(s.tokens for s in segs)
    f = fit(segs, Budget(start - sum(n for _, n in SEED001_ORDER[:6])))  # no policy given
    assert evicted_units(f) == [u for u, _ in SEED001_ORDER[:6]]
    rungs = {unit_of(e.segment): e.rung for e in f.evicted}
    assert rungs == {
        "t1": "conversation.oldest_first",
        "rolling": "conversation.oldest_first",
        "t2": "conversation.oldest_first",
        "t3": "conversation.oldest_first",
        "p9": "retrieved.lowest_score_first",
        "p7": "retrieved.lowest_score_first",
    }


def test_seed001_prefix_and_current_turn_are_never_evicted() -> None:
    segs = context_window_request()
    protected = [s for s in segs if s.layer.protected]
    floor = sum(s.tokens for s in protected)
    f = fit(segs, Budget(floor), Policy.context_window())
    assert f.kept == protected
    assert all(a is b for a, b in zip(f.kept, protected))
    with pytest.raises(ctxfast.ContextWindowExceededError) as info:
        fit(segs, Budget(floor - 1), Policy.context_window())
    assert info.value.shortfall == 1
    assert [n for _, n in info.value.components] == [500, 400, 300, 110]


def test_seed001_equal_scores_fall_back_to_position() -> None:
    segs = [Segment("sys", L.SYSTEM, key="s", tokens=10)] + [
        Segment(f"chunk {i}", L.RETRIEVED, key=f"c{i}", score=0.0, tokens=100) for i in range(5)
    ]
    f = fit(segs, Budget(110), Policy.context_window())
    assert evicted_units(f) == ["c0", "c1", "c2", "c3"]


# ---------------------------------------------------------------------------------------------
# Seed 003: seven tiers


def seven_tier_request() -> list[Segment]:
    """One of each tier, laid out so that input position alone would give a different order."""
    return [
        Segment("persona, policies", L.SYSTEM, key="system", tokens=300),
        Segment("tool definitions", L.TOOLS, key="tools", tokens=200),
        Segment("rolling summary", L.SUMMARY, key="rolling", level=0, tokens=240),
        Segment("level-2 summary", L.SUMMARY, key="s2", level=2, covers=["s1a", "s1b"], tokens=90),
        Segment("level-1 summary a", L.SUMMARY, key="s1a", level=1, tokens=110),
        Segment("user turn 1", L.CONVERSATION, group="turn1", tokens=150),
        Segment("assistant turn 1", L.CONVERSATION, group="turn1", tokens=170),
        Segment("level-1 summary b", L.SUMMARY, key="s1b", level=1, tokens=130),
        Segment("level-1 summary c (not covered)", L.SUMMARY, key="s1c", level=1, tokens=70),
        Segment("chunk A", L.RETRIEVED, key="rA", score=0.95, tokens=200),
        Segment("chunk B", L.RETRIEVED, key="rB", score=0.20, tokens=210),
        Segment("consumed grep output", L.TOOL_RESULT, key="tool_old", stale=True, tokens=420),
        Segment("chunk C", L.RETRIEVED, key="rC", score=0.85, tokens=190),
        Segment("chunk D", L.RETRIEVED, key="rD", score=0.40, tokens=180),
        Segment("fresh tool output", L.TOOL_RESULT, key="tool_fresh", tokens=160),
        Segment("chunk E", L.RETRIEVED, key="rE", score=0.90, tokens=170),
        Segment("consumed test run", L.TOOL_RESULT, key="tool_new", stale=True, tokens=380),
        Segment("user turn 2", L.CONVERSATION, group="turn2", tokens=140),
        Segment("assistant turn 2", L.CONVERSATION, group="turn2", tokens=160),
        Segment("the user's literal question", L.CURRENT_TURN, key="question", tokens=60),
    ]


SEED003_ORDER = [
    # 1. stale tool results, oldest first
    ("tool_old", 420),
    ("tool_new", 380),
    # 2. retrieved below the top 3, lowest score first
    ("rB", 210),
    ("rD", 180),
    # 3. level-1 summaries covered by a level-2, oldest first
    ("s1a", 110),
    ("s1b", 130),
    # 4. the rolling summary
    ("rolling", 240),
    # 5. recent turns, oldest first
    ("turn1", 320),
    ("turn2", 300),
    # Tool output not yet consumed is no "recent verbatim turn" (only consumed results are
    # tier 1): it is current material and goes last, after every turn (issue 10, item 7).
    ("tool_fresh", 160),
]
SEED003_RUNGS = {
    "tool_old": "stale_tool_results",
    "tool_new": "stale_tool_results",
    "rB": "retrieved_below_top_k",
    "rD": "retrieved_below_top_k",
    "s1a": "covered_level1_summaries",
    "s1b": "covered_level1_summaries",
    "rolling": "rolling_summary",
    "turn1": "recent_turns",
    "tool_fresh": "unconsumed_tool_results",
    "turn2": "recent_turns",
}


def test_seed003_tier_by_tier() -> None:
    tighten(seven_tier_request(), Policy.seven_tier(3), SEED003_ORDER)


def test_seed003_each_unit_leaves_on_its_own_tier() -> None:
    segs = seven_tier_request()
    floor = sum(s.tokens for s in segs) - sum(n for _, n in SEED003_ORDER)
    f = fit(segs, Budget(floor), Policy.seven_tier(3))
    assert {unit_of(e.segment): e.rung for e in f.evicted} == SEED003_RUNGS
    assert f.rungs_fired == Policy.seven_tier(3).rung_names
    kept = [unit_of(s) for s in f.kept]
    # Never: system, tools, the question; nor the top three chunks and what no tier names.
    assert kept == ["system", "tools", "s2", "s1c", "rA", "rC", "rE", "question"]
    with pytest.raises(ctxfast.Unfittable):
        fit(segs, Budget(floor - 1), Policy.seven_tier(3))


def test_seed003_top_k_is_a_parameter() -> None:
    segs = seven_tier_request()
    start = sum(s.tokens for s in segs)
    # With top_k=1 every chunk but the best goes on tier 2, lowest score first.
    f = fit(segs, Budget(start - 800 - 210 - 180 - 190 - 170), Policy.seven_tier(1))
    assert evicted_units(f) == ["tool_old", "tool_new", "rB", "rD", "rC", "rE"]


def test_seed003_a_level1_summary_is_only_covered_while_its_level2_is_held() -> None:
    # No level-2 summary in the request: the level-1 summaries are not duplicates, tier 3 has
    # nothing to take, and the rolling summary goes instead.
    segs = [s for s in seven_tier_request() if s.key != "s2"]
    start = sum(s.tokens for s in segs)
    f = fit(segs, Budget(start - 800 - 390 - 240), Policy.seven_tier(3))
    assert evicted_units(f) == ["tool_old", "tool_new", "rB", "rD", "rolling"]


# ---------------------------------------------------------------------------------------------
# Seed 004: ranking by recoverable, stale, relevance, size


def coding_agent_request() -> list[Segment]:
    """A coding agent's transcript at step 31 of a refactor."""
    segs = [
        Segment("You are a careful refactoring agent.", L.SYSTEM, key="system", tokens=180),
        Segment("Never run migrations against production.", L.PINNED, key="operator_constraints", tokens=260),
        Segment("few-shot: a patch in the required format", L.CONVERSATION, group="few_shot", score=0.55, tokens=1400),
    ]
    # Three file reads from step 16, all edited since: recoverable, stale, the largest block.
    for path, size in [("src/billing/ledger.py", 3100), ("src/billing/credit.py", 2700), ("src/billing/charge.py", 2400)]:
        segs.append(
            Segment(f"contents of {path}", L.TOOL_RESULT, key=path, group="file_reads",
                    score=0.2, recoverable=True, stale=True, tokens=size)
        )
    segs += [
        Segment("call search(applyCredit)", L.CONVERSATION, group="ex_search", score=0.3, tokens=40),
        Segment("search hits", L.TOOL_RESULT, group="ex_search", score=0.3, tokens=600),
        Segment("search result (re-runnable)", L.TOOL_RESULT, key="search", score=0.35, recoverable=True, tokens=900),
        Segment("exchange a", L.CONVERSATION, group="ex_a", score=0.30, tokens=500),
        Segment("exchange b (superseded plan)", L.CONVERSATION, group="ex_b", score=0.70, stale=True, tokens=450),
        Segment("exchange c", L.CONVERSATION, group="ex_c", score=0.30, tokens=800),
        Segment("exchange d", L.CONVERSATION, group="ex_d", score=0.10, tokens=300),
        Segment("exchange e", L.CONVERSATION, group="ex_e", score=0.05, tokens=700),
        Segment("exchange f", L.CONVERSATION, group="ex_f", score=0.05, tokens=650),
        Segment("Task: move applyCredit into LedgerService.", L.CURRENT_TURN, key="current_task", tokens=120),
    ]
    return segs


SEED004_ORDER = [
    ("file_reads", 8200),  # recoverable, stale
    ("search", 900),  # recoverable
    ("ex_b", 450),  # stale
    ("ex_d", 300),  # then lowest relevance ...
    ("ex_c", 800),  # ... and among equal relevance (0.3) the largest first
    ("ex_search", 640),
    ("ex_a", 500),
    ("few_shot", 1400),
]


def test_seed004_one_decision_clears_a_4000_token_deficit() -> None:
    segs = coding_agent_request()
    start = sum(s.tokens for s in segs)
    f = fit(segs, Budget(start - 4000), Policy.ranked(keep_last=2))
    assert row_labels(f) == ["file_reads"]
    assert [e.segment.key for e in f.evicted] == ["src/billing/ledger.py", "src/billing/credit.py", "src/billing/charge.py"]
    assert f.ledger.evicted_recoverable == 8200
    assert f.ledger.evicted_dispensable == 0


def test_seed004_rank_order_as_the_ceiling_tightens() -> None:
    tighten(coding_agent_request(), Policy.ranked(keep_last=2), SEED004_ORDER)


def test_seed004_pinned_set_is_never_evicted() -> None:
    segs = coding_agent_request()
    floor = sum(s.tokens for s in segs) - sum(n for _, n in SEED004_ORDER)
    f = fit(segs, Budget(floor), Policy.ranked(keep_last=2))
    assert [unit_of(s) for s in f.kept] == [
        "system", "operator_constraints", "ex_e", "ex_f", "current_task",
    ]
    with pytest.raises(ctxfast.Unfittable) as info:
        fit(segs, Budget(floor - 1), Policy.ranked(keep_last=2))
    assert info.value.floor_tokens == 700 + 650  # the last two exchanges
    assert info.value.shortfall == 1


def test_seed004_keep_last_is_a_parameter() -> None:
    segs = coding_agent_request()
    floor = sum(s.tokens for s in segs) - sum(n for _, n in SEED004_ORDER)
    # With keep_last=1 exchange e is no longer pinned: it is the least relevant exchange left,
    # so it goes right after everything recoverable or stale; exchange f stays.
    f = fit(segs, Budget(floor - 700), Policy.ranked(keep_last=1))
    assert evicted_units(f) == [
        "file_reads", "search", "ex_b", "ex_e", "ex_d", "ex_c", "ex_search", "ex_a", "few_shot",
    ]


def seed004_rank(tokens, recoverable, stale, relevance):  # type: ignore[no-untyped-def]
    """The seed's tuple, verbatim in meaning; sorted() is stable, so ties keep position."""
    return sorted(
        range(len(tokens)),
        key=lambda i: (0 if recoverable[i] else 1, 0 if stale[i] else 1, relevance[i], -tokens[i]),
    )


def test_seed004_evict_indices_matches_the_rank_tuple() -> None:
    #             system  rules  few-shot files search ex_b   ex_c  ex_d  ex_e  ex_f  task
    tokens = np.array([180, 260, 1400, 8200, 900, 450, 800, 300, 700, 650, 120], dtype=np.int64)
    recoverable = np.array([0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
    stale = np.array([0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0], dtype=bool)
    relevance = np.array([1.0, 1.0, 0.55, 0.2, 0.35, 0.7, 0.3, 0.1, 0.05, 0.05, 1.0])
    protected = np.array([1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1], dtype=bool)
    everything = ctxfast.evict_indices(tokens, recoverable, stale, relevance, protected, int(tokens.sum()))
    expected = [i for i in seed004_rank(tokens, recoverable, stale, relevance) if not protected[i]]
    assert isinstance(everything, np.ndarray)
    assert everything.tolist() == expected == [3, 4, 5, 7, 6, 2]
    # A 4,000-token deficit is cleared by the file contents alone.
    assert ctxfast.evict_indices(tokens, recoverable, stale, relevance, protected, 4000).tolist() == [3]
    # Just over the first two: the third joins.
    assert ctxfast.evict_indices(tokens, recoverable, stale, relevance, protected, 9101).tolist() == [3, 4, 5]
    assert ctxfast.evict_indices(tokens, recoverable, stale, relevance, protected, 0).tolist() == []
    # Masking protects: with everything protected there is nothing to give.
    all_protected = np.ones(len(tokens), dtype=bool)
    assert ctxfast.evict_indices(tokens, recoverable, stale, relevance, all_protected, 10**6).tolist() == []


def test_seed004_evict_indices_size_is_the_last_tiebreak() -> None:
    tokens = [100, 900, 500, 900]
    flags = [False] * 4
    relevance = [0.5] * 4
    assert ctxfast.evict_indices(tokens, flags, flags, relevance, flags, 10**6).tolist() == [1, 3, 2, 0]


# ---------------------------------------------------------------------------------------------
# Unfittable: never a silently damaged or empty request


def over_protected_request() -> list[Segment]:
    return [
        Segment("system prompt", L.SYSTEM, tokens=1200),
        Segment("tool schemas", L.TOOLS, tokens=6800),
        Segment("operator rules", L.PINNED, key="rules", tokens=900),
        Segment("old turn", L.CONVERSATION, key="old", tokens=3000),
        Segment("chunk", L.RETRIEVED, key="chunk", score=0.5, tokens=2000),
        Segment("the question", L.CURRENT_TURN, tokens=1100),
    ]


PROTECTED_COMPONENTS = [("system", 1200), ("tools", 6800), ('pinned "rules"', 900), ("current_turn", 1100)]


def check_names_components(err: ctxfast.Unfittable) -> None:
    assert isinstance(err, ctxfast.ContextWindowExceededError)
    assert isinstance(err, ctxfast.CtxfastError)
    assert err.components == PROTECTED_COMPONENTS
    assert err.ceiling == 9000
    assert err.shortfall == err.total - err.ceiling
    message = str(err)
    # One line per protected layer, with where its parts are (a key, else the position) and its
    # size (issue 10, report #10: grouped, not one item per segment).
    lines = message.splitlines()
    assert lines[1] == "protected, 10,000 tokens:", message
    assert lines[2:6] == [
        "  system: #0, 1,200 tokens",
        "  tools: #1, 6,800 tokens",
        '  pinned: "rules", 900 tokens',
        "  current_turn: #5, 1,100 tokens",
    ], message
    assert "9,000" in message
    assert f"short by {err.shortfall:,}" in message and message.count("short by") == 1
    assert any(line.startswith("to fit: raise the window") for line in lines[6:])


@pytest.mark.parametrize(
    "policy",
    [Policy.context_window(), Policy.seven_tier(0), Policy.ranked(0)],
    ids=["context_window", "seven_tier0", "ranked0"],
)
def test_unfittable_names_every_protected_component(policy: Policy) -> None:
    # Every unprotected unit can go under these policies; the protected 10,000 still do not fit.
    with pytest.raises(ctxfast.Unfittable) as info:
        fit(over_protected_request(), Budget(12000, 3000), policy)
    err = info.value
    check_names_components(err)
    assert (err.total, err.shortfall, err.floor_tokens) == (10000, 1000, 0)


def test_unfittable_counts_what_the_floors_kept() -> None:
    # Troubleshooting keeps the first exchange and at least the chunk's 128-token minimum.
    with pytest.raises(ctxfast.Unfittable) as info:
        fit(over_protected_request(), Budget(12000, 3000), Policy.troubleshooting())
    err = info.value
    check_names_components(err)
    assert err.floor_tokens == err.total - 10000
    assert err.floor_tokens >= 3000
    assert "kept by floors" in str(err)


def test_unfittable_is_the_context_window_error() -> None:
    assert ctxfast.ContextWindowExceededError is ctxfast.Unfittable
    assert issubclass(ctxfast.Unfittable, ctxfast.CtxfastError)


def test_a_request_that_fits_untouched_is_returned_whole() -> None:
    segs = context_window_request()
    total = sum(s.tokens for s in segs)
    f = fit(segs, Budget(total), Policy.troubleshooting())
    assert len(f.kept) == len(segs) and all(a is b for a, b in zip(f.kept, segs))
    assert f.evicted == [] and f.trace.rows == [] and f.rungs_fired == []
    assert (f.total, f.spare, f.over_by, f.count_calls) == (total, 0, 0, 1)
    assert "nothing removed" in str(f.trace)
