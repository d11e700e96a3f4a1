"""The eviction engine's Python surface: Segment, Budget, Policy, fit() and Fit.

Bad input must raise a CtxfastError that also derives from the matching builtin and names the
argument (SPEC section 9); good input must round-trip and behave as SPEC sections 3-5 say.
"""

from __future__ import annotations

import math
import pickle
import re
from typing import Any

import pytest

import ctxfast
from ctxfast import Budget, Policy, PromptLayer, Segment, Tokenizer, fit
from helpers import raises_ctx

L = PromptLayer

ALL_LAYERS = [L.SYSTEM, L.TOOLS, L.PINNED, L.CURRENT_TURN, L.CONVERSATION, L.TOOL_RESULT, L.RETRIEVED, L.SUMMARY]
PROTECTED = {L.SYSTEM, L.TOOLS, L.PINNED, L.CURRENT_TURN}


# ---------------------------------------------------------------------------------------------
# PromptLayer


def test_prompt_layers_and_the_protected_set() -> None:
    assert [layer.label for layer in ALL_LAYERS] == [
        "system", "tools", "pinned", "current_turn", "conversation", "tool_result", "retrieved", "summary",
    ]
    assert {layer for layer in ALL_LAYERS if layer.protected} == PROTECTED
    for layer in ALL_LAYERS:
        assert L.from_name(layer.label) is layer
        assert L.from_name(layer.label.upper()) is layer
        assert pickle.loads(pickle.dumps(layer)) is layer
    with raises_ctx(ValueError, "nope"):
        L.from_name("nope")


# ---------------------------------------------------------------------------------------------
# Segment


def test_segment_defaults() -> None:
    s = Segment("hello")
    assert s.text == "hello"
    assert s.layer is L.CONVERSATION
    assert (s.key, s.score, s.tokens, s.group, s.level, s.meta) == (None, 0.0, None, None, None, None)
    assert (s.recoverable, s.stale, s.covers) == (False, False, ())


def test_segment_fields() -> None:
    meta = {"tool": "read_file", "step": 4}
    s = Segment(
        "body", "retrieved", "doc-1", 0.25, tokens=40, recoverable=True, stale=True, group="g1",
        level=1, covers=["a", "b"], meta=meta,
    )
    assert s.layer is L.RETRIEVED
    assert (s.key, s.score, s.tokens, s.group, s.level) == ("doc-1", 0.25, 40, "g1", 1)
    assert (s.recoverable, s.stale, s.covers, s.meta) == (True, True, ("a", "b"), meta)
    # Integer keys and groups are kept as their decimal text; an int score is a float.
    t = Segment("x", key=7, group=3, score=1)
    assert (t.key, t.group, t.score) == ("7", "3", 1.0)


@pytest.mark.parametrize("score", [math.nan, 1.5, -0.1, math.inf, -math.inf])
def test_segment_score_out_of_range(score: float) -> None:
    with raises_ctx(ValueError, "score"):
        Segment("x", score=score)


@pytest.mark.parametrize("score", [0.0, 1.0, 0.5, 0, 1])
def test_segment_score_bounds_are_inclusive(score: float) -> None:
    assert Segment("x", score=score).score == score


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"text": 3}, "text"),
        ({"text": None}, "text"),
        ({"text": b"bytes"}, "text"),
        ({"text": "x", "layer": 3}, "layer"),
        ({"text": "x", "key": 1.5}, "key"),
        ({"text": "x", "key": ["k"]}, "key"),
        ({"text": "x", "score": "0.5"}, "score"),
        ({"text": "x", "score": True}, "score"),
        ({"text": "x", "tokens": 1.5}, "tokens"),
        ({"text": "x", "tokens": "10"}, "tokens"),
        ({"text": "x", "tokens": True}, "tokens"),
        ({"text": "x", "group": [1]}, "group"),
        ({"text": "x", "level": "1"}, "level"),
        ({"text": "x", "level": 1.0}, "level"),
        ({"text": "x", "covers": "abc"}, "covers"),
        ({"text": "x", "covers": [1]}, "covers[0]"),
        ({"text": "x", "covers": 5}, "covers"),
    ],
)
def test_segment_wrong_types(kwargs: dict[str, Any], name: str) -> None:
    with raises_ctx(TypeError, name):
        Segment(**kwargs)


@pytest.mark.parametrize("flag", ["recoverable", "stale"])
def test_segment_flag_wrong_type_is_a_ctxfast_error(flag: str) -> None:
    with raises_ctx(TypeError, flag):
        Segment("x", **{flag: "yes"})


@pytest.mark.parametrize("layer", ["bogus", "", "system_prompt"])
def test_segment_unknown_layer_name(layer: str) -> None:
    with raises_ctx(ValueError, "layer", repr(layer).replace("'", '"')):
        Segment("x", layer=layer)


def test_segment_layer_by_name_is_case_insensitive() -> None:
    assert Segment("x", layer="Tool_Result").layer is L.TOOL_RESULT


def test_segment_negative_tokens() -> None:
    with raises_ctx(ValueError, "tokens"):
        Segment("x", tokens=-1)


def test_segment_lone_surrogate() -> None:
    with raises_ctx(ValueError, "text", "surrogate"):
        Segment("ok\ud800")


@pytest.mark.parametrize("field", ["text", "layer", "key", "score", "tokens", "group", "meta", "stale"])
def test_segment_is_immutable(field: str) -> None:
    s = Segment("x", key="k")
    with pytest.raises(AttributeError):
        setattr(s, field, getattr(s, field))
    with pytest.raises(AttributeError):
        s.new_attribute = 1  # type: ignore[attr-defined]
    assert s.text == "x" and s.key == "k"


def test_segment_replace() -> None:
    s = Segment("x", L.RETRIEVED, key="k", score=0.4, tokens=9, group="g", meta={"a": 1})
    assert s.replace() == s and s.replace() is not s
    t = s.replace(stale=True, score=0.9)
    assert (t.stale, t.score) == (True, 0.9)
    assert (t.text, t.layer, t.key, t.tokens, t.group, t.meta) == ("x", L.RETRIEVED, "k", 9, "g", {"a": 1})
    assert (s.stale, s.score) == (False, 0.4)  # the original is untouched
    u = s.replace(text="y", layer="summary", level=0)
    assert (u.text, u.layer, u.level) == ("y", L.SUMMARY, 0)
    with raises_ctx(ValueError, "score"):
        s.replace(score=2.0)
    with raises_ctx(TypeError, "colour"):
        s.replace(colour="red")
    with raises_ctx(TypeError, "text"):
        s.replace(text=5)


def test_segment_equality() -> None:
    a = Segment("x", L.RETRIEVED, key="k", score=0.5)
    assert a == Segment("x", L.RETRIEVED, key="k", score=0.5)
    assert a != Segment("x", L.RETRIEVED, key="k", score=0.6)
    assert a != Segment("y", L.RETRIEVED, key="k", score=0.5)
    assert a != Segment("x", L.CONVERSATION, key="k", score=0.5)
    assert a != a.replace(tokens=3)
    assert a != a.replace(meta={"m": 1})
    assert a.replace(meta={"m": 1}) == a.replace(meta={"m": 1})
    assert a != "x"


def test_segment_pickle_round_trip() -> None:
    s = Segment(
        "body ünïcode 日本", L.SUMMARY, key="s2", score=0.75, tokens=12, recoverable=True, stale=True,
        group="g", level=2, covers=("s1a", "s1b"), meta={"tool": "read_file", "arguments": "a.py", "step": 3},
    )
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(s, protocol=protocol))
        assert back == s
        assert (back.level, back.covers, back.meta, back.tokens) == (2, ("s1a", "s1b"), s.meta, 12)


def test_segment_count() -> None:
    tok = Tokenizer.default()
    s = Segment("hello there, world")
    assert s.count() == tok.count(s.text)
    assert s.count(Tokenizer.from_encoding("cl100k_base")) == Tokenizer.from_encoding("cl100k_base").count(s.text)
    assert s.count(lambda text: 42) == 42
    assert Segment("hello", tokens=99).count() == 99  # the caller's count is the unit's cost


# ---------------------------------------------------------------------------------------------
# Budget


def test_budget_ceiling_and_fields() -> None:
    b = Budget(32000, 4000, caps={L.RETRIEVED: 14000, "conversation": 9300})
    assert (b.window, b.reserve, b.ceiling) == (32000, 4000, 28000)
    assert b.caps == {L.RETRIEVED: 14000, L.CONVERSATION: 9300}
    assert Budget(100).reserve == 0 and Budget(100).ceiling == 100 and Budget(100).caps == {}
    assert Budget(100, 99).ceiling == 1
    assert b == Budget(32000, 4000, caps={"retrieved": 14000, L.CONVERSATION: 9300})
    assert b != Budget(32000, 4000)
    assert pickle.loads(pickle.dumps(b)) == b


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "name"),
    [
        ((-1,), {}, ValueError, "window"),
        ((0,), {}, ValueError, "window"),
        ((math.nan,), {}, ValueError, "window"),
        ((100.0,), {}, ValueError, "window"),
        (("100",), {}, TypeError, "window"),
        ((None,), {}, TypeError, "window"),
        ((100, -1), {}, ValueError, "reserve"),
        ((100, math.nan), {}, ValueError, "reserve"),
        ((100, 100), {}, ValueError, "reserve"),
        ((100, 150), {}, ValueError, "reserve"),
        ((100,), {"caps": {"bogus": 5}}, ValueError, "bogus"),
        ((100,), {"caps": {5: 5}}, TypeError, "caps"),
        ((100,), {"caps": {"retrieved": -5}}, ValueError, "caps[retrieved]"),
        ((100,), {"caps": {"retrieved": math.nan}}, ValueError, "caps[retrieved]"),
        ((100,), {"caps": [1, 2]}, TypeError, "caps"),
    ],
)
def test_budget_validation(args: tuple[Any, ...], kwargs: dict[str, Any], exc: type[Exception], name: str) -> None:
    with raises_ctx(exc, name):
        Budget(*args, **kwargs)


# ---------------------------------------------------------------------------------------------
# Policy

PRESETS = {
    "context_window": Policy.context_window,
    "troubleshooting": Policy.troubleshooting,
    "seven_tier": Policy.seven_tier,
    "ranked": Policy.ranked,
}


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_by_name(name: str) -> None:
    p = PRESETS[name]()
    assert p.name == name
    assert Policy.preset(name) == p
    assert p.protected == frozenset(PROTECTED)
    assert len(p.rung_names) >= 1
    assert pickle.loads(pickle.dumps(p)) == p


def test_preset_parameters() -> None:
    assert Policy.seven_tier() == Policy.seven_tier(3)
    assert Policy.seven_tier(5) != Policy.seven_tier(3)
    assert Policy.ranked() == Policy.ranked(2)
    assert Policy.ranked(4) != Policy.ranked(2)
    assert Policy.seven_tier(5).to_dict()["rungs"][1]["floor"] == {"keep_top": 5}
    assert Policy.ranked(4).to_dict()["rungs"][0]["floor"] == {"keep_last": 4}
    with raises_ctx(ValueError, "top_k"):
        Policy.seven_tier(-1)
    with raises_ctx(TypeError, "keep_last"):
        Policy.ranked("2")  # type: ignore[arg-type]
    with raises_ctx(ValueError, "bogus"):
        Policy.preset("bogus")


def test_preset_rungs() -> None:
    assert Policy.context_window().rung_names == ["conversation.oldest_first", "retrieved.lowest_score_first"]
    assert Policy.troubleshooting().rung_names == [
        "history.drop_oldest_exchange", "retrieval.drop_lowest_ranked_chunk", "retrieval.truncate_chunk_bodies",
    ]
    assert Policy.seven_tier(3).rung_names == [
        "stale_tool_results", "retrieved_below_top_k", "covered_level1_summaries", "rolling_summary", "recent_turns",
        "unconsumed_tool_results",
    ]
    assert Policy.ranked(2).rung_names == ["ranked"]
    rungs = Policy.troubleshooting().to_dict()["rungs"]
    assert [(r["order"], r["action"]) for r in rungs] == [
        ("oldest", "drop"), ("lowest_score", "drop"), ("lowest_score", "truncate"),
    ]
    assert rungs[0]["floor"] == {"keep_first": 1, "keep_last": 3}
    assert rungs[1]["floor"] == {"keep_top": 4}
    assert rungs[2]["min_tokens"] == 128


@pytest.mark.parametrize("name", list(PRESETS))
def test_describe_is_a_table_first_to_go_then_never(name: str) -> None:
    p = PRESETS[name]()
    text = p.describe()
    assert isinstance(text, str)
    lines = text.rstrip("\n").splitlines()
    assert name in lines[0]
    assert lines[-1].startswith("never:")
    for layer in ("system", "tools", "pinned", "current_turn"):
        assert layer in lines[-1]
    # One numbered row per rung, in ladder order, first to go first.
    numbered = [line for line in lines if re.match(r"\d+\s", line)]
    assert len(numbered) == len(p.rung_names)
    for i, (line, rung) in enumerate(zip(numbered, p.rung_names), start=1):
        assert line.startswith(f"{i} ") and rung in line
    assert str(p) == text


def test_describe_shows_orders_actions_and_floors() -> None:
    text = Policy.troubleshooting().describe()
    assert "oldest first" in text and "lowest score first" in text
    assert "first 1 + last 3 exchanges" in text
    assert "top 4 by score" in text
    assert "truncate" in text and "128" in text
    assert "rank" in Policy.ranked().describe() and "last 2 exchanges" in Policy.ranked().describe()


CUSTOM = {
    "name": "mine",
    "labels": {"conversation": "history"},
    "rungs": [
        {"name": "stale results", "layers": ["tool_result"], "order": "oldest", "filter": "stale"},
        {"name": "old turns", "layers": ["conversation", "summary"], "order": "oldest", "action": "drop",
         "floor": {"keep_first": 1, "keep_last": 2}},
        {"name": "chunks", "layers": "retrieved", "order": "lowest_score", "floor": {"keep_top": 2}},
        {"name": "bodies", "layers": ["retrieved"], "order": "largest", "action": "truncate", "min_tokens": 64},
        {"name": "rolling", "layers": ["summary"], "order": "newest", "filter": "level:0"},
        {"name": "anything", "layers": ["conversation", "tool_result", "retrieved", "summary"], "order": "rank",
         "floor": {"min_tokens": 10}},
    ],
}


def test_from_dict_to_dict_round_trip() -> None:
    p = Policy.from_dict(CUSTOM)
    assert p.name == "mine"
    assert p.rung_names == [r["name"] for r in CUSTOM["rungs"]]
    d = p.to_dict()
    assert Policy.from_dict(d) == p
    assert Policy.from_dict(d).to_dict() == d
    assert d["rungs"][3]["min_tokens"] == 64
    assert d["rungs"][1]["floor"] == {"keep_first": 1, "keep_last": 2}
    assert pickle.loads(pickle.dumps(p)) == p
    for name, make in PRESETS.items():
        preset = make()
        assert Policy.from_dict(preset.to_dict()) == preset, name


def test_custom_labels_appear_in_the_trace() -> None:
    p = Policy.from_dict(CUSTOM)
    segs = [Segment("s", L.SYSTEM, tokens=5)] + [
        Segment(f"turn {i}", L.CONVERSATION, group=f"ex{i}", tokens=10) for i in range(5)
    ]
    f = fit(segs, Budget(35), p)
    assert [r["label"] for r in f.trace.rows] == ["ex1", "ex2"]
    assert {r["layer"] for r in f.trace.rows} == {"history"}
    assert "history" in str(f.trace)


def test_from_toml_file(tmp_path: Any) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        """
name = "reviewed"
protected = ["system", "tools", "pinned", "current_turn"]

[labels]
conversation = "history"

[[rungs]]
name = "history.drop_oldest_exchange"
layers = ["conversation", "tool_result", "summary"]
order = "oldest"
action = "drop"
floor = { keep_first = 1, keep_last = 3 }

[[rungs]]
name = "retrieval.drop_lowest_ranked_chunk"
layers = ["retrieved"]
order = "lowest_score"
floor = { keep_top = 4 }
""",
        encoding="utf-8",
    )
    p = Policy.from_toml(path)
    assert p.name == "reviewed"
    assert p.rung_names == ["history.drop_oldest_exchange", "retrieval.drop_lowest_ranked_chunk"]
    assert Policy.from_toml(str(path)) == p
    assert Policy.from_toml_str(path.read_text(encoding="utf-8")) == p
    assert Policy.from_dict(p.to_dict()) == p
    # Same ladder as the troubleshooting preset's first two rungs.
    troubleshooting = Policy.troubleshooting().to_dict()
    assert p.to_dict()["rungs"] == troubleshooting["rungs"][:2]


def test_from_toml_errors(tmp_path: Any) -> None:
    with pytest.raises(FileNotFoundError) as info:
        Policy.from_toml(tmp_path / "missing.toml")
    assert isinstance(info.value, ctxfast.CtxfastError)
    assert "missing.toml" in str(info.value)
    bad = tmp_path / "bad.toml"
    bad.write_text('[[rungs]]\nname = "x"\nlayers = ["conversation"]\norder = "olde"\n', encoding="utf-8")
    with raises_ctx(ValueError, "rungs[0].order", "olde"):
        Policy.from_toml(bad)
    bad.write_text("rungs = [ not toml", encoding="utf-8")
    with raises_ctx(ValueError, "bad.toml"):
        Policy.from_toml(bad)


def _edited(edit: Any) -> dict[str, Any]:
    d = pickle.loads(pickle.dumps(CUSTOM))
    edit(d)
    return d


@pytest.mark.parametrize(
    ("edit", "names", "exc"),
    [
        (lambda d: d["rungs"][1].update(order="olde"), ["rungs[1].order", "olde"], ValueError),
        (lambda d: d["rungs"][1].update(action="shred"), ["rungs[1].action", "shred"], ValueError),
        (lambda d: d["rungs"][2].update(layers=["retrieved", "bogus"]), ["rungs[2].layers[1]", "bogus"], ValueError),
        (lambda d: d["rungs"][1].update(layers=["conversation", "system"]), ["rungs[1].layers", "system"], ValueError),
        (lambda d: d["rungs"][0].update(layers="current_turn"), ["rungs[0].layers", "current_turn"], ValueError),
        (lambda d: d["rungs"][0].update(colour="red"), ["rungs[0]", "colour"], ValueError),
        (lambda d: d.update(colour="red"), ["colour"], ValueError),
        (lambda d: d["rungs"][1]["floor"].update(keep_lats=1), ["rungs[1].floor", "keep_lats"], ValueError),
        (lambda d: d["rungs"][1]["floor"].update(keep_last=-1), ["rungs[1].floor.keep_last"], ValueError),
        (lambda d: d["rungs"][1].pop("order"), ["rungs[1]", "order"], ValueError),
        (lambda d: d["rungs"][0].update(filter="fresh"), ["rungs[0].filter", "fresh"], ValueError),
        (lambda d: d["rungs"][0].update(min_tokens=5), ["rungs[0].min_tokens"], ValueError),
        (lambda d: d.update(protected=["system"]), ["protected", "tools"], ValueError),
        (lambda d: d.pop("rungs"), ["rungs"], ValueError),
        (lambda d: d.update(rungs=3), ["rungs"], ValueError),
        (lambda d: d.update(labels={"bogus": "x"}), ["labels", "bogus"], ValueError),
    ],
)
def test_bad_policies_name_the_field(edit: Any, names: list[str], exc: type[Exception]) -> None:
    with raises_ctx(exc, *names):
        Policy.from_dict(_edited(edit))


def test_from_dict_wants_a_dict() -> None:
    with raises_ctx(TypeError, "dict"):
        Policy.from_dict([CUSTOM])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# fit(): argument errors


def test_fit_empty_segments() -> None:
    with raises_ctx(ValueError, "segments"):
        fit([], Budget(100))


def test_fit_non_segment_item_names_its_index() -> None:
    with raises_ctx(TypeError, "segments[2]"):
        fit([Segment("a"), Segment("b"), "c"], Budget(100))  # type: ignore[list-item]
    with raises_ctx(TypeError, "segments"):
        fit(5, Budget(100))  # type: ignore[arg-type]


@pytest.mark.parametrize("budget", [100, None, {"window": 100}, "100"])
def test_fit_wrong_budget_type(budget: Any) -> None:
    with raises_ctx(TypeError, "budget"):
        fit([Segment("a")], budget)


def test_fit_unknown_preset_name() -> None:
    with raises_ctx(ValueError, "bogus"):
        fit([Segment("a")], Budget(100), policy="bogus")
    with raises_ctx(TypeError, "policy"):
        fit([Segment("a")], Budget(100), policy=5)  # type: ignore[arg-type]


def test_fit_wrong_tokenizer_or_separator_type() -> None:
    with raises_ctx(TypeError, "tokenizer"):
        fit([Segment("a")], Budget(100), tokenizer=5)  # type: ignore[arg-type]
    with raises_ctx(TypeError, "separator"):
        fit([Segment("a")], Budget(100), separator=5)  # type: ignore[arg-type]


def test_fit_counter_failures_are_ctxfast_errors() -> None:
    with raises_ctx(RuntimeError):
        fit([Segment("a")], Budget(100), tokenizer=lambda s: -1)
    with raises_ctx(RuntimeError):
        fit([Segment("a")], Budget(100), tokenizer=lambda s: 1 / 0)


def test_fit_accepts_any_iterable_of_segments() -> None:
    segs = (Segment(f"s{i}", tokens=1) for i in range(3))
    assert fit(segs, Budget(100)).total == 3


# ---------------------------------------------------------------------------------------------
# fit(): results


def request() -> list[Segment]:
    return [
        Segment("system", L.SYSTEM, key="sys", tokens=100),
        Segment("chunk low", L.RETRIEVED, key="c_low", score=0.2, tokens=300, recoverable=True),
        Segment("q1", L.CONVERSATION, group="ex1", key="q1", tokens=150),
        Segment("a1", L.CONVERSATION, group="ex1", key="a1", tokens=250),
        Segment("chunk high", L.RETRIEVED, key="c_high", score=0.9, tokens=200),
        Segment("q2", L.CONVERSATION, group="ex2", key="q2", tokens=120),
        Segment("r2", L.TOOL_RESULT, group="ex2", key="r2", tokens=380),
        Segment("q3", L.CONVERSATION, group="ex3", key="q3", tokens=60),
        Segment("now", L.CURRENT_TURN, key="now", tokens=40),
    ]


def order_request() -> list[Segment]:
    # key, tokens, score, recoverable
    spec = [("t0", 100, 0.0, True), ("t1", 200, 0.1, False), ("t2", 300, 0.2, True),
            ("t3", 100, 0.3, False), ("t4", 200, 0.4, True), ("t5", 300, 0.5, False)]
    return [Segment("s", L.SYSTEM, tokens=10)] + [
        Segment(k, L.CONVERSATION, key=k, tokens=n, score=sc, recoverable=rec) for k, n, sc, rec in spec
    ]


def one_rung(**rung: Any) -> Policy:
    return Policy.from_dict({"name": "custom", "rungs": [{"name": "only", "layers": [L.CONVERSATION], **rung}]})


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("oldest", ["t0", "t1", "t2", "t3", "t4", "t5"]),
        ("newest", ["t5", "t4", "t3", "t2", "t1", "t0"]),
        ("lowest_score", ["t0", "t1", "t2", "t3", "t4", "t5"]),
        ("largest", ["t2", "t5", "t1", "t4", "t0", "t3"]),  # ties by position
        ("rank", ["t0", "t2", "t4", "t1", "t3", "t5"]),  # recoverable first, then relevance
    ],
)
def test_custom_rung_orders(order: str, expected: list[str]) -> None:
    f = fit(order_request(), Budget(10), one_rung(order=order))
    assert [e.segment.key for e in f.evicted] == expected
    assert f.total == 10


def test_custom_rung_filter_and_min_tokens_floor() -> None:
    segs = order_request()
    f = fit(segs, Budget(700), one_rung(order="oldest", filter="recoverable"))
    assert [e.segment.key for e in f.evicted] == ["t0", "t2", "t4"]
    with pytest.raises(ctxfast.Unfittable):
        fit(segs, Budget(600), one_rung(order="oldest", filter="recoverable"))
    # floor.min_tokens: the rung stops before its layers would hold fewer than 600 tokens.
    f = fit(segs, Budget(800), one_rung(order="oldest", floor={"min_tokens": 600}))
    assert [e.segment.key for e in f.evicted] == ["t0", "t1", "t2"]
    with pytest.raises(ctxfast.Unfittable) as info:
        fit(segs, Budget(500), one_rung(order="oldest", floor={"min_tokens": 600}))
    assert info.value.floor_tokens == 600


def test_fit_with_a_preset_name_string() -> None:
    segs = [Segment("s", L.SYSTEM, tokens=1000)] + [
        Segment(f"turn {i}", L.CONVERSATION, group=f"ex{i}", tokens=100) for i in range(1, 11)
    ]
    by_name = fit(segs, Budget(1500), policy="troubleshooting")
    by_object = fit(segs, Budget(1500), policy=Policy.troubleshooting())
    assert [r["label"] for r in by_name.trace.rows] == ["ex2", "ex3", "ex4", "ex5", "ex6"]
    assert str(by_name.trace) == str(by_object.trace)
    assert by_name.rungs_fired == ["history.drop_oldest_exchange"]
    # The floor: ex1 and the last three stay even when that does not fit.
    with pytest.raises(ctxfast.Unfittable):
        fit(segs, Budget(1300), policy="troubleshooting")


def test_fit_fields() -> None:
    segs = request()
    f = fit(segs, Budget(1200, 200), Policy.context_window())
    # 1,600 tokens against a 1,000 ceiling: ex1 (400) and ex2 (500) go, oldest first.
    assert (f.ceiling, f.over_by, f.total, f.spare) == (1000, 600, 700, 300)
    assert f.spare == f.ceiling - f.total
    assert [s.key for s in f.kept] == ["sys", "c_low", "c_high", "q3", "now"]
    assert all(any(k is s for s in segs) for k in f.kept)
    assert [e.segment.key for e in f.evicted] == ["q1", "a1", "q2", "r2"]
    assert [e.tokens for e in f.evicted] == [150, 250, 120, 380]
    assert {e.rung for e in f.evicted} == {"conversation.oldest_first"}
    assert {e.rung_index for e in f.evicted} == {0}
    assert {e.action for e in f.evicted} == {"drop"}
    assert all(any(e.segment is s for s in segs) for e in f.evicted)
    assert f.truncated == []
    assert f.texts() == [s.text for s in f.kept]
    assert f.count_calls == 1
    assert f.rungs_fired == ["conversation.oldest_first"]
    assert f.cap_overruns == {}
    rows = f.trace.rows
    assert [(r["label"], r["removed"], r["total_after"], r["over_after"]) for r in rows] == [
        ("ex1", 400, 1200, 200),
        ("ex2", 500, 700, -300),
    ]
    assert f.trace.start == [("system", 100), ("retrieved", 500), ("conversation", 580), ("tool_result", 380),
                             ("current_turn", 40)]
    ledger = f.ledger
    assert ledger.removed == 900 == sum(e.tokens for e in f.evicted)
    assert (ledger.evicted_dispensable, ledger.evicted_recoverable, ledger.truncated, ledger.digested) == (900, 0, 0, 0)
    assert ledger.rung_firings == {"conversation.oldest_first": 2}
    assert f.explain() == str(f.trace)


def test_evicted_is_in_removal_order_across_rungs() -> None:
    segs = request()
    f = fit(segs, Budget(340), Policy.context_window())
    # All conversation (oldest first), then the lower-scored chunk; the better chunk fits.
    assert [e.segment.key for e in f.evicted] == ["q1", "a1", "q2", "r2", "q3", "c_low"]
    assert [e.rung_index for e in f.evicted] == [0, 0, 0, 0, 0, 1]
    assert [s.key for s in f.kept] == ["sys", "c_high", "now"]
    assert f.ledger.evicted_recoverable == 300
    assert f.ledger.rung_firings == {"conversation.oldest_first": 3, "retrieved.lowest_score_first": 1}


def test_groups_leave_whole() -> None:
    segs = [
        Segment("system", L.SYSTEM, key="sys", tokens=10),
        Segment("call read_file", L.CONVERSATION, group="call", key="call", tokens=40),
        Segment("huge result", L.TOOL_RESULT, group="call", key="result", tokens=400),
        Segment("chunk", L.RETRIEVED, group="call", key="chunk", score=1.0, tokens=5),
        Segment("later turn", L.CONVERSATION, key="later", tokens=30),
    ]
    f = fit(segs, Budget(100), Policy.context_window())
    assert [e.segment.key for e in f.evicted] == ["call", "result", "chunk"]
    assert [s.key for s in f.kept] == ["sys", "later"]
    assert [r["label"] for r in f.trace.rows] == ["call"]
    assert f.trace.rows[0]["removed"] == 445


def test_a_group_with_a_protected_member_is_protected() -> None:
    segs = [
        Segment("system", L.SYSTEM, tokens=10),
        Segment("previous answer", L.CONVERSATION, group="turn", key="prev", tokens=300),
        Segment("the question", L.CURRENT_TURN, group="turn", key="now", tokens=20),
        Segment("old turn", L.CONVERSATION, key="old", tokens=100),
    ]
    f = fit(segs, Budget(340), Policy.context_window())
    assert [e.segment.key for e in f.evicted] == ["old"]
    with pytest.raises(ctxfast.Unfittable):
        fit(segs, Budget(300), Policy.context_window())


def test_digest_action_leaves_a_tagged_record() -> None:
    policy = Policy.from_dict(
        {
            "name": "digest_tools",
            "rungs": [
                {"name": "digest_tool_exchanges", "action": "digest", "layers": ["tool_result"], "order": "oldest"},
            ],
        }
    )
    body = "class LedgerService:\n" + "    def apply_credit(self, amount): ...\n" * 200
    call = Segment("read src/a.py", L.CONVERSATION, group="step16",
                   meta={"tool": "read_file", "arguments": "src/a.py", "step": 16})
    result = Segment(body, L.TOOL_RESULT, group="step16", key="file:src/a.py", recoverable=True)
    segs = [Segment("You are a coding agent.", L.SYSTEM), call, result, Segment("refactor it", L.CURRENT_TURN)]
    f = fit(segs, Budget(300), policy)
    assert len(f.kept) == 3
    assert f.kept[0] is segs[0] and f.kept[2] is segs[3]
    record = f.kept[1]
    assert record.text.startswith("[compacted] step 16: called read_file(src/a.py)")
    assert "class LedgerService:" in record.text  # what came back
    assert record.group == "step16"
    assert [(e.segment, e.action, e.rung) for e in f.evicted] == [
        (call, "digest", "digest_tool_exchanges"),
        (result, "digest", "digest_tool_exchanges"),
    ]
    assert f.evicted[0].segment is call and f.evicted[1].segment is result
    tok = Tokenizer.default()
    record_tokens = tok.count(record.text)
    assert f.total == tok.count(segs[0].text) + record_tokens + tok.count(segs[3].text)
    original = call.count(tok) + result.count(tok)
    assert f.ledger.digested == original - record_tokens
    assert f.ledger.removed == original - record_tokens
    assert f.trace.rows[0]["action"] == "digest"
    assert "digested" in str(f.trace)
    # Deterministic: no model call, same input, same record.
    assert fit(segs, Budget(300), policy).kept[1].text == record.text


def test_tokenizer_as_a_callable() -> None:
    def words(text: str) -> int:
        return len(text.split())

    segs = [
        Segment("one two three", L.SYSTEM),
        Segment("four five", L.CONVERSATION, key="a"),
        Segment("six seven eight nine", L.CONVERSATION, key="b"),
    ]
    f = fit(segs, Budget(8), tokenizer=words)
    assert f.total == 7
    assert [e.segment.key for e in f.evicted] == ["a"]
    assert fit(segs, Budget(100), tokenizer=words, separator=" ").total == 9
    assert fit(segs, Budget(100), tokenizer=Tokenizer.from_callable(words)).total == 9


def test_segment_counts_are_memoised_per_tokenizer() -> None:
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return len(text)

    tok = Tokenizer.from_callable(counting)
    segs = [Segment(f"text number {i}") for i in range(4)] + [Segment("given", tokens=7)]
    first = fit(segs, Budget(1000), tokenizer=tok)
    assert sorted(calls) == sorted(s.text for s in segs[:4])  # tokens= skips counting
    calls.clear()
    second = fit(segs, Budget(1000), tokenizer=tok)
    assert calls == []
    assert first.total == second.total == sum(len(s.text) for s in segs[:4]) + 7


def test_segment_counts_are_memoised_for_the_native_tokenizer() -> None:
    tok = Tokenizer.default(cache_capacity=64)
    segs = [Segment(f"memo check {i} " * 3) for i in range(5)]
    fit(segs, Budget(10_000), tokenizer=tok)
    after_first = tok.cache_info()
    assert after_first.misses == 5
    fit(segs, Budget(10_000), tokenizer=tok)
    assert tok.cache_info() == after_first  # not even a cache look-up: the segments remember
    # New Segment objects with the same texts hit the per-unit cache instead.
    fit([Segment(s.text) for s in segs], Budget(10_000), tokenizer=tok)
    info = tok.cache_info()
    assert (info.misses, info.hits) == (5, after_first.hits + 5)


def test_a_plain_callable_does_not_recount_the_same_segments() -> None:
    calls: list[str] = []

    def counting(text: str) -> int:
        calls.append(text)
        return len(text)

    segs = [Segment(f"text number {i}") for i in range(4)]
    fit(segs, Budget(1000), tokenizer=counting)
    calls.clear()
    fit(segs, Budget(1000), tokenizer=counting)
    assert calls == []


def test_equal_scores_are_broken_by_position() -> None:
    segs = [Segment("s", L.SYSTEM, tokens=1)] + [
        Segment(f"c{i}", L.RETRIEVED, key=f"c{i}", score=0.5, tokens=10) for i in range(4)
    ]
    f = fit(segs, Budget(21), Policy.context_window())
    assert [e.segment.key for e in f.evicted] == ["c0", "c1"]


def test_negative_zero_score_ties_with_zero() -> None:
    segs = [
        Segment("s", L.SYSTEM, tokens=1),
        Segment("a", L.RETRIEVED, key="a", score=0.0, tokens=10),
        Segment("b", L.RETRIEVED, key="b", score=-0.0, tokens=10),
    ]
    f = fit(segs, Budget(11), Policy.context_window())
    assert [e.segment.key for e in f.evicted] == ["a"]


def test_caller_tokens_are_the_whole_cost() -> None:
    segs = [Segment("short text", L.SYSTEM, tokens=500), Segment("x", L.CONVERSATION, key="c", tokens=600)]
    f = fit(segs, Budget(1000))
    assert f.total == 500 and [e.segment.key for e in f.evicted] == ["c"]


def test_cap_overruns_are_reported_not_trimmed() -> None:
    segs = [
        Segment("s", L.SYSTEM, tokens=100),
        Segment("c1", L.RETRIEVED, key="c1", score=0.1, tokens=600),
        Segment("c2", L.RETRIEVED, key="c2", score=0.2, tokens=600),
        Segment("t", L.CONVERSATION, key="t", tokens=300),
    ]
    f = fit(segs, Budget(5000), Policy.context_window(), )
    assert f.evicted == []
    f = fit(segs, Budget(5000, caps={L.RETRIEVED: 1000, L.CONVERSATION: 500, L.SYSTEM: 10}))
    assert f.cap_overruns == {L.RETRIEVED: 200, L.SYSTEM: 90}
    assert f.evicted == [] and f.total == 1600
    text = str(f.trace)
    assert "retrieved 1,200 over its cap of 1,000 by 200" in text
    assert "system 100 over its cap of 10 by 90" in text
