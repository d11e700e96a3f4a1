"""Issue 10, the engine's side, through the Python API: input positions in the trace and in
``Unfittable`` (with its ``.trace``), cap rungs (``until = "cap"``), the agent preset's floors on
consecutive rungs, seven_tier's live tool output, truncation that never empties a text, traces,
``describe()`` and errors within 80 columns, and "did you mean" for names."""

from __future__ import annotations

import re

import pytest

import ctxfast
from ctxfast import Budget, ContextWindow, Policy, PromptLayer as L, Segment, Tokenizer, fit

PRESETS = ["context_window", "troubleshooting", "seven_tier", "ranked", "agent"]


def agent_request(exchanges: int = 5) -> list[Segment]:
    """Adapter-shaped: records in message order (segment i is messages[i]), then fixed parts."""
    segs = [Segment("You are a coding agent.", L.SYSTEM, tokens=60)]
    for i in range(exchanges):
        meta = {"tool": "read_file", "arguments": f"src/f{i}.py", "step": i}
        segs.append(Segment(f"call {i}", L.CONVERSATION, group=f"ex{i}", tokens=100, meta=meta))
        segs.append(Segment("line\n" * 300, L.TOOL_RESULT, group=f"ex{i}", tokens=2000))
    segs.append(Segment("Please refactor the ledger.", L.CURRENT_TURN, tokens=500))
    segs.append(Segment("<tool schemas>", L.TOOLS, tokens=150, meta={"fixed": "<tool schemas>"}))
    segs.append(Segment("<reply priming>", L.SYSTEM, tokens=3, meta={"fixed": "<reply priming>"}))
    return segs


def total(segs: list[Segment]) -> int:
    return sum(s.tokens or 0 for s in segs)


def within_80(text: str) -> None:
    for line in text.splitlines():
        assert len(line) <= 80, f"{len(line)} columns: {line!r}\n{text}"


# --- contract 1: input positions -------------------------------------------------------------


def test_rows_name_input_positions_with_input_name() -> None:
    segs = agent_request()
    f = fit(segs, Budget(total(segs) - 9000), Policy.agent(), input_name="messages")
    labels = [r["label"] for r in f.trace.rows]
    assert labels[:3] == ["messages[1..2]", "messages[3..4]", "messages[5..6]"]
    assert "digest of messages[1..2]" in labels
    assert {r["layer"] for r in f.trace.rows if r["action"] == "digest"} == {"conversation+tool_result"}
    # Without it, the labels stay as they were.
    f = fit(segs, Budget(total(segs) - 9000), Policy.agent())
    assert [r["label"] for r in f.trace.rows][:3] == ["ex0", "ex1", "ex2"]
    with pytest.raises(ctxfast.ArgumentTypeError, match="input_name"):
        fit(segs, Budget(10**6), input_name=3)  # type: ignore[arg-type]


# --- contract 2: Unfittable ------------------------------------------------------------------


def test_unfittable_groups_protected_parts_labels_reply_priming_and_carries_the_trace() -> None:
    segs = agent_request()
    with pytest.raises(ctxfast.Unfittable) as info:
        fit(segs, Budget(700), Policy.agent(), input_name="messages")
    err = info.value
    message = str(err)
    assert message.splitlines() == [
        "short by 13 tokens: 713 after every rung, against a ceiling of 700",
        "protected, 713 tokens:",
        "  system: messages[0], 60 tokens",
        "  current_turn: messages[11], 500 tokens",
        "  <tool schemas>: 150 tokens",
        "  <reply priming>: 3 tokens",
        "to fit: raise the window or lower the reserve (the protected parts alone are",
        "  over the ceiling)",
    ]
    assert "cannot fit:" not in message and message.count("short by") == 1
    # The structured attributes are as before: one component per protected segment.
    assert err.components == [("system", 60), ("current_turn", 500), ("tools", 150), ("system", 3)]
    assert (err.total, err.ceiling, err.shortfall, err.floor_tokens) == (713, 700, 13, 0)
    assert isinstance(err.trace, str) and err.trace.startswith("ceiling 700")
    assert re.search(r"^failed  713 tokens · short by 13 · ", err.trace, re.M), err.trace
    assert "digest of messages[1..2]" in err.trace
    within_80(message)
    within_80(err.trace)


def test_unfittable_suggests_lower_floors_when_floors_kept_something() -> None:
    segs = agent_request(4)
    with pytest.raises(ctxfast.Unfittable) as info:
        fit(segs, Budget(4000), Policy.troubleshooting(), input_name="messages")
    message = str(info.value)
    assert "\nkept by floors, 8,400 tokens: messages[1..8]\n" in message
    assert message.endswith("\nto fit: raise the window, lower the reserve, or use a policy with lower floors")
    assert "floor reached" in info.value.trace


def test_an_unfittable_raised_elsewhere_still_has_a_trace_attribute() -> None:
    err = ctxfast.Unfittable("message")
    assert err.trace == ""


# --- contract 3: caps --------------------------------------------------------------------------

CAP_TOML = """
name = "capped"
[[rungs]]
name = "retrieved.to_cap"
layers = ["retrieved"]
order = "lowest_score"
until = "cap"
[[rungs]]
name = "history"
layers = ["conversation"]
order = "oldest"
"""


def chunks() -> list[Segment]:
    return [
        Segment("system", L.SYSTEM, tokens=10),
        *[Segment(f"chunk {i}", L.RETRIEVED, key=f"c{i}", score=s, tokens=100) for i, s in enumerate([0.9, 0.2, 0.5, 0.7])],
        Segment("question", L.CURRENT_TURN, tokens=10),
    ]


def test_caps_are_enforced_only_by_a_cap_rung() -> None:
    budget = Budget(10_000, caps={L.RETRIEVED: 250})
    reported = fit(chunks(), budget, Policy.troubleshooting())
    assert reported.evicted == [] and reported.cap_overruns == {L.RETRIEVED: 150}
    policy = Policy.from_toml_str(CAP_TOML)
    assert policy.to_dict()["rungs"][0]["until"] == "cap"
    assert "until" not in policy.to_dict()["rungs"][1]
    assert Policy.from_dict(policy.to_dict()) == policy
    f = fit(chunks(), budget, policy)
    # Lowest score first while retrieval is over its cap, though the request fits.
    assert [e.segment.key for e in f.evicted] == ["c1", "c2"]
    assert f.total == 220
    text = f.explain()
    assert "rung 1  retrieved.to_cap  (enforces cap: retrieved 250)" in text
    described = policy.describe()
    assert "     until       its layers are within their Budget caps" in described
    within_80(described)
    with pytest.raises(ctxfast.InvalidArgumentError, match=r'rungs\[0\]\.until.*did you mean "cap"'):
        Policy.from_toml_str(CAP_TOML.replace('"cap"', '"caps"'))


# --- item 5: the agent preset --------------------------------------------------------------------


def test_agent_digests_the_recent_exchanges_before_dropping_any() -> None:
    # Report #8: a little over after digesting the old exchanges, the next rung dropped a whole
    # recent exchange. Now the same floor holds on the drop rung and the recent ones are digested.
    segs = agent_request(4)
    after_rung1 = fit(segs, Budget(total(segs) - 4000), Policy.agent())
    assert after_rung1.rungs_fired == ["tool_exchanges.digest_oldest"]
    records = [s for s in after_rung1.kept if s.meta and "digest_of" in s.meta]
    assert len(records) == 2
    digest = max(Tokenizer.default().count(s.text) for s in records)
    ceiling = after_rung1.total - (2 * digest + 50)
    f = fit(segs, Budget(ceiling), Policy.agent())
    assert f.rungs_fired == ["tool_exchanges.digest_oldest", "exchanges.drop_oldest", "recent_tool_exchanges.digest"]
    dropped = {e.segment.group for e in f.evicted if e.action == "drop"}
    assert dropped == {"ex0", "ex1"}, "only the old digests were dropped"
    assert any(s.group == "ex3" and s.layer is L.TOOL_RESULT for s in f.kept), "the newest exchange is verbatim"


def test_digests_summarise_large_arguments() -> None:
    # Report #8: a write_file digest copied its 9.6 KB of arguments and saved 53 tokens.
    contents = "import logging\n" * 640
    meta = {"tool": "write_file", "arguments": '{"path": "src/client.py", "contents": ' + repr(contents) + "}"}
    segs = [
        Segment("sys", L.SYSTEM),
        Segment("Writing the file.", L.CONVERSATION, group="ex1", meta=meta),
        Segment("ok: wrote 205 lines", L.TOOL_RESULT, group="ex1"),
        Segment("thanks", L.CURRENT_TURN),
    ]
    tok = Tokenizer.default()
    segs[1] = Segment(meta["arguments"], L.CONVERSATION, group="ex1", meta=meta)
    full = sum(tok.count(s.text) for s in segs)
    f = fit(segs, Budget(full - 100), Policy.agent(), tokenizer=tok)
    [record] = [s for s in f.kept if s.meta and "digest_of" in s.meta]
    assert record.text.startswith('[compacted] step 1: called write_file({"path": "src/client.py", "contents": ')
    assert re.search(r"… \(\d+\.\d KB\)\)", record.text), record.text
    assert tok.count(record.text) < 100


def test_digest_writes_dict_arguments_sorted_with_repr_for_the_rest() -> None:
    # meta's arguments as a dict (or any mapping) are written as sorted JSON, and a value JSON
    # cannot hold falls back to its repr; the digest says the same whatever the key order.
    from types import MappingProxyType

    tok = Tokenizer.default()

    def digest_of(meta: object) -> str:
        segs = [
            Segment("sys", L.SYSTEM),
            Segment("Reading the file.", L.CONVERSATION, group="ex1", meta=meta),
            Segment("line\n" * 400, L.TOOL_RESULT, group="ex1"),
            Segment("thanks", L.CURRENT_TURN),
        ]
        full = sum(tok.count(s.text) for s in segs)
        f = fit(segs, Budget(full - 100), Policy.agent(), tokenizer=tok)
        [record] = [s for s in f.kept if s.meta and "digest_of" in s.meta]
        return record.text

    args = {"path": "a.py", "lines": frozenset({3}), "after": 2}
    first = digest_of({"tool": "read_file", "arguments": args, "step": 4})
    assert 'read_file({"after": 2, "lines": "frozenset({3})", "path": "a.py"})' in first, first
    reordered = {"tool": "read_file", "arguments": dict(reversed(list(args.items()))), "step": 4}
    assert digest_of(reordered) == first
    assert digest_of(MappingProxyType({"tool": "read_file", "arguments": args, "step": 4})) == first
    # Not a mapping: no tool call is read, and nothing is digested as one.
    assert "read_file" not in str(fit([Segment("x", meta=["tool"])], Budget(100)).kept)


# --- item 7: seven_tier --------------------------------------------------------------------------


def test_seven_tier_takes_turns_before_unconsumed_tool_output() -> None:
    segs = [
        Segment("sys", L.SYSTEM, tokens=10),
        Segment("fresh tool output", L.TOOL_RESULT, key="live", tokens=100),
        Segment("turn 1", L.CONVERSATION, group="t1", tokens=100),
        Segment("turn 2", L.CONVERSATION, group="t2", tokens=100),
        Segment("q", L.CURRENT_TURN, tokens=10),
    ]
    f = fit(segs, Budget(220), Policy.seven_tier())
    assert [e.segment.group or e.segment.key for e in f.evicted] == ["t1"]
    f = fit(segs, Budget(20), Policy.seven_tier())
    assert [(e.rung, e.segment.group or e.segment.key) for e in f.evicted] == [
        ("recent_turns", "t1"), ("recent_turns", "t2"), ("unconsumed_tool_results", "live"),
    ]
    assert "unconsumed_tool_results" in Policy.seven_tier().describe()


# --- contract 6: truncation ------------------------------------------------------------------------


def test_truncation_never_empties_a_text() -> None:
    policy = Policy.from_dict({"rungs": [
        {"name": "cut", "layers": ["retrieved"], "order": "largest", "action": "truncate", "min_tokens": 0},
    ]})
    tok = Tokenizer.default()
    body = " word" * 100
    f = fit([Segment("sys", L.SYSTEM), Segment(body, L.RETRIEVED)], Budget(2), policy, tokenizer=tok)
    [t] = f.truncated
    assert t.segment.text == " word" and t.tokens_after == 1
    with pytest.raises(ctxfast.Unfittable):
        fit([Segment("sys", L.SYSTEM), Segment(body, L.RETRIEVED)], Budget(1), policy, tokenizer=tok)


# --- item 7 of the brief: readability -----------------------------------------------------------


@pytest.mark.parametrize("preset", PRESETS)
def test_traces_describe_and_errors_fit_80_columns(preset: str) -> None:
    segs = agent_request()
    within_80(Policy.preset(preset).describe())
    for cut in (2000, 6000, 9000):
        for name in (None, "messages"):
            try:
                within_80(fit(segs, Budget(total(segs) - cut), preset, input_name=name).explain())
            except ctxfast.Unfittable as err:
                within_80(str(err))
                within_80(err.trace)


def test_start_lists_system_first_and_floor_reached_only_when_a_floor_stopped_a_rung() -> None:
    # The fixed parts come last in an adapter's segments; the start line still begins with system.
    segs = agent_request()
    f = fit(segs, Budget(total(segs) - 2000), Policy.agent())
    assert [label for label, _ in f.trace.start] == ["system", "tools", "conversation", "tool_result", "current_turn"]
    assert "floor" not in f.explain().split("\nsend")[1].replace("floor not reached", "")
    # A rung with nothing to take is not in the trace (report #16: "floor reached" with no
    # conversation held).
    w = ContextWindow(120)
    w.admit(Segment("sys", L.SYSTEM, tokens=10))
    w.admit(Segment("chunk", L.RETRIEVED, key="c", tokens=100))
    w.admit(Segment("q", L.CURRENT_TURN, tokens=20))
    w.fit()
    text = str(w.last_fit.trace)
    assert "conversation.oldest_first" not in text and "floor reached" not in text, text


# --- item 8: errors that help -------------------------------------------------------------------


def test_typos_get_did_you_mean() -> None:
    with pytest.raises(ctxfast.InvalidArgumentError, match=r'unknown policy preset "agnet" \(did you mean "agent"\?\)'):
        Policy.preset("agnet")
    with pytest.raises(ctxfast.InvalidArgumentError, match=r'did you mean "retrieved"\?'):
        L.from_name("retreived")
    with pytest.raises(ctxfast.InvalidArgumentError, match=r'did you mean "o200k_base"\?'):
        Tokenizer.from_encoding("o200k")
    with pytest.raises(ctxfast.InvalidArgumentError, match=r'unknown field "oder" \(did you mean "order"\?\)'):
        Policy.from_dict({"rungs": [{"name": "r", "layers": ["retrieved"], "oder": "oldest"}]})
    with pytest.raises(ctxfast.InvalidArgumentError, match=r'did you mean "digest"\?'):
        Policy.from_dict({"rungs": [{"name": "r", "layers": ["retrieved"], "order": "oldest", "action": "digets"}]})
    with pytest.raises(ctxfast.InvalidArgumentError) as info:
        Policy.preset("nothing_like_it")
    assert "did you mean" not in str(info.value)


def test_messages_that_said_the_wrong_thing() -> None:
    with pytest.raises(ctxfast.InvalidArgumentError, match=r"argument 'window' must be > 0 tokens, got -5"):
        Budget(-5)
    with pytest.raises(ctxfast.InvalidArgumentError, match=r"must be > 0"):
        Budget(0)
    with pytest.raises(ctxfast.InvalidArgumentError, match=r"argument 'reserve' must be >= 0"):
        Budget(10, -1)
    with pytest.raises(ctxfast.ArgumentTypeError, match=r"argument 'segments' must be a sequence of Segment, not dict"):
        fit({"role": "user"}, Budget(10))  # type: ignore[arg-type]
    with pytest.raises(ctxfast.ArgumentTypeError, match=r"argument 'segments' must be a sequence of Segment, not str"):
        fit("abc", Budget(10))  # type: ignore[arg-type]
    w = ContextWindow(100)
    assert "balanced=True)" in repr(w.ledger)
