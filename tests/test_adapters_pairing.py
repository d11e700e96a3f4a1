"""F12 (reliability attack 2026-12): tool calls and results are paired by id, not by position.

A result must leave with its call. A payload where a user message stands between a call and its
result is refused with ``InvalidArgumentError`` naming both (rather than fitted into a request
holding the result without its call), as are stray results, duplicate call ids and calls
answered twice. A call with no result yet at the end is fine; calls without ids keep the old
positional grouping.
"""

from __future__ import annotations

from typing import Any

import pytest

import ctxfast
from ctxfast import Budget, CtxfastError, InvalidArgumentError, anthropic, openai

BIG = "word " * 400


def oa_call(cid: str | None, name: str = "read") -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": "{}"}}
    if cid is not None:
        call["id"] = cid
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def oa_result(cid: str | None, text: str = "result") -> dict[str, Any]:
    m: dict[str, Any] = {"role": "tool", "content": text}
    if cid is not None:
        m["tool_call_id"] = cid
    return m


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def f12_openai() -> list[dict[str, Any]]:
    """The reproducer of F12, verbatim."""
    return [
        {"role": "system", "content": "sys"},
        user("please read"),
        oa_call("c1"),
        user("hurry up " + BIG),
        oa_result("c1", "result " + BIG),
        user("second question " + BIG),
        {"role": "assistant", "content": "answer"},
        user("now?"),
    ]


def openai_structure_ok(out: list[dict[str, Any]]) -> None:
    """Every tool message answers a call made earlier in the same run of tool messages."""
    pending: set[str] = set()
    for i, m in enumerate(out):
        if m["role"] == "tool":
            assert m["tool_call_id"] in pending, f"out[{i}] is an orphaned tool message"
            pending.discard(m["tool_call_id"])
            continue
        pending = {c["id"] for c in m.get("tool_calls") or ()}


# ----------------------------------------------------------------------------------------------
# OpenAI


def test_f12_reproducer_is_refused_naming_both_messages() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        openai.fit_messages(f12_openai(), Budget(1254))
    msg = str(info.value)
    assert msg.startswith("messages[4] (tool_call_id 'c1') answers the call in messages[2]"), msg
    assert "messages[3] (a user message) stands between them" in msg


@pytest.mark.parametrize("window", [60, 200, 1254, 5000, 10**6])
def test_f12_refused_at_any_budget(window: int) -> None:
    # Refusal does not depend on whether the budget would have split the pair.
    with pytest.raises(InvalidArgumentError, match=r"messages\[4\].*messages\[2\]"):
        openai.fit_messages(f12_openai(), Budget(window))


def test_f12_current_turn_between_call_and_result_is_refused() -> None:
    msgs = [user("q " + BIG), oa_call("c1"), user("are you there?"), oa_result("c1")]
    with pytest.raises(InvalidArgumentError, match=r"messages\[3\].*messages\[1\].*messages\[2\] \(a user message\)"):
        openai.fit_messages(msgs, Budget(100))


def test_stray_result_is_refused() -> None:
    msgs = [user("q"), oa_call("c1"), oa_result("c1"), user("again"), oa_call("c2"), oa_result("zz"), user("now?")]
    with pytest.raises(InvalidArgumentError, match=r"^messages\[5\] \(tool_call_id 'zz'\) answers no tool call"):
        openai.fit_messages(msgs, Budget(10_000))


def test_result_before_its_call_is_refused() -> None:
    msgs = [user("q"), oa_result("c1"), oa_call("c1"), user("now?")]
    with pytest.raises(InvalidArgumentError, match=r"messages\[1\].*answers no tool call.*messages\[2\]"):
        openai.fit_messages(msgs, Budget(10_000))


def test_duplicate_call_id_is_refused() -> None:
    msgs = [user("q"), oa_call("c1"), oa_result("c1"), user("again"), oa_call("c1"), oa_result("c1"), user("now?")]
    with pytest.raises(InvalidArgumentError, match=r"messages\[4\]\.tool_calls\[0\] repeats .*'c1'.*messages\[1\]"):
        openai.fit_messages(msgs, Budget(10_000))


def test_duplicate_call_id_in_one_message_is_refused() -> None:
    two = oa_call("c1")
    two["tool_calls"].append(dict(two["tool_calls"][0]))
    with pytest.raises(InvalidArgumentError, match=r"messages\[1\]\.tool_calls\[1\] repeats"):
        openai.fit_messages([user("q"), two, oa_result("c1"), oa_result("c1")], Budget(10_000))


def test_call_answered_twice_is_refused() -> None:
    msgs = [user("q"), oa_call("c1"), oa_result("c1"), oa_result("c1"), user("now?")]
    with pytest.raises(InvalidArgumentError, match=r"messages\[3\].*a second time.*messages\[2\]"):
        openai.fit_messages(msgs, Budget(10_000))


def test_call_without_result_at_the_end_is_fine() -> None:
    msgs = [user("q"), oa_call("c1")]
    out, _ = openai.fit_messages(msgs, Budget(10_000))
    assert out == msgs


def test_parallel_results_in_any_order_are_fine() -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}
    msgs = [user("q " + BIG), call, oa_result("b", BIG), oa_result("a", BIG), {"role": "assistant", "content": "ok"},
            user("now?")]
    out, fit = openai.fit_messages(msgs, Budget(100))
    openai_structure_ok(out)
    assert not any(m.get("role") == "tool" for m in out)  # the exchange left whole (a digest)


def test_calls_without_ids_keep_positional_grouping() -> None:
    # Old payloads: no ids at all. Nothing is checked, grouping is by position as before.
    msgs = [user("q"), oa_call(None), oa_result(None), user("now?")]
    out, _ = openai.fit_messages(msgs, Budget(10_000))
    assert out == msgs


def test_non_str_ids_are_refused_with_the_path() -> None:
    with pytest.raises(ctxfast.ArgumentTypeError, match=r"messages\[1\]\.tool_calls\[0\]\.id"):
        openai.fit_messages([user("q"), {"role": "assistant", "content": None, "tool_calls": [
            {"id": 5, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}], Budget(1000))
    with pytest.raises(ctxfast.ArgumentTypeError, match=r"messages\[2\]\.tool_call_id"):
        openai.fit_messages([user("q"), oa_call("c1"), {"role": "tool", "tool_call_id": {"x": 1}, "content": "r"}],
                            Budget(1000))


@pytest.mark.parametrize("policy", ["agent", "context_window"])
@pytest.mark.parametrize("window", [120, 300, 700, 1500, 3000])
def test_valid_agent_sessions_keep_each_result_with_its_call(window: int, policy: str) -> None:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for t in range(6):
        msgs.append(user(f"turn {t} " + "text " * 30))
        msgs.append(oa_call(f"c{t}"))
        msgs.append(oa_result(f"c{t}", "result " * 60))
        msgs.append({"role": "assistant", "content": "answer " * 10})
    msgs.append(user("now?"))
    try:
        out, fit = openai.fit_messages(msgs, Budget(window), policy=policy)
    except ctxfast.Unfittable:
        return
    openai_structure_ok(out)
    assert fit.total <= window


# ----------------------------------------------------------------------------------------------
# Anthropic


def an_use(uid: str | None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "name": "read", "input": {"path": "a.py"}}
    if uid is not None:
        block["id"] = uid
    return {"role": "assistant", "content": [block]}


def an_result(uid: str | None, text: str = "result", extra_text: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "content": text}
    if uid is not None:
        block["tool_use_id"] = uid
    content: list[dict[str, Any]] = [block]
    if extra_text is not None:
        content.append({"type": "text", "text": extra_text})
    return {"role": "user", "content": content}


def test_anthropic_user_between_use_and_result_is_refused() -> None:
    msgs = [user("please read"), an_use("t1"), user("hurry up " + BIG), an_result("t1", "result " + BIG),
            {"role": "assistant", "content": "answer"}, user("second " + BIG), {"role": "assistant", "content": "a"},
            user("now?")]
    with pytest.raises(InvalidArgumentError) as info:
        anthropic.fit_messages("sys", msgs, Budget(900))
    msg = str(info.value)
    assert msg.startswith("messages[3].content[0] (tool_use_id 't1') answers the call in messages[1].content[0]"), msg
    assert "messages[2] (a user message) stands between them" in msg


def test_anthropic_stray_duplicate_and_twice() -> None:
    with pytest.raises(InvalidArgumentError, match=r"messages\[3\]\.content\[0\] \(tool_use_id 'zz'\) answers no tool call"):
        anthropic.fit_messages(None, [user("q"), an_use("t1"), an_result("t1"), an_result("zz")], Budget(10_000))
    with pytest.raises(InvalidArgumentError, match=r"messages\[3\]\.content\[0\] repeats .*'t1'.*messages\[1\]\.content\[0\]"):
        anthropic.fit_messages(None, [user("q"), an_use("t1"), an_result("t1"), an_use("t1"), an_result("t1")],
                               Budget(10_000))
    both = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                                        {"type": "tool_result", "tool_use_id": "t1", "content": "b"}]}
    with pytest.raises(InvalidArgumentError, match=r"messages\[2\]\.content\[1\].*a second time.*messages\[2\]\.content\[0\]"):
        anthropic.fit_messages(None, [user("q"), an_use("t1"), both], Budget(10_000))


def test_anthropic_valid_shapes_still_fit() -> None:
    # A result with text beside it continues its exchange; a pending tool_use at the end is fine.
    msgs = [user("q " + BIG), an_use("t1"), an_result("t1", BIG, extra_text="and y?"),
            {"role": "assistant", "content": "answer"}, user("now?"), an_use("t2")]
    out, fit = anthropic.fit_messages("sys", msgs, Budget(200))
    assert out[-1] == msgs[-1]
    # The ask is sent as it was, or with the digest of the exchange before it merged in as a
    # leading text block (roles must alternate: the digest is a user turn too).
    ask = out[-2]
    assert ask == msgs[-2] or (ask["role"] == "user" and ask["content"][-1] == {"type": "text", "text": "now?"}
                               and ask["content"][0]["text"].startswith("[compacted]")), ask
    if any(m is msgs[2] for m in out):
        assert any(m is msgs[1] for m in out), "the result stayed without its tool_use"
    assert fit.total <= 200
    # Old payloads without ids: positional.
    out, _ = anthropic.fit_messages(None, [user("q"), an_use(None), an_result(None)], Budget(10_000))
    assert len(out) == 3


# ----------------------------------------------------------------------------------------------
# LangChain

lc = pytest.importorskip("langchain_core.messages")


def test_langchain_human_between_call_and_result_is_refused() -> None:
    from ctxfast.langchain import trim_messages

    msgs = [lc.HumanMessage("please read"),
            lc.AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": "c1", "type": "tool_call"}]),
            lc.HumanMessage("hurry up " + BIG), lc.ToolMessage("result " + BIG, tool_call_id="c1"),
            lc.HumanMessage("second " + BIG), lc.AIMessage("answer"), lc.HumanMessage("now?")]
    with pytest.raises(InvalidArgumentError) as info:
        trim_messages(msgs, max_tokens=1254)
    msg = str(info.value)
    assert msg.startswith("messages[3] (tool_call_id 'c1') answers the call in messages[1].tool_calls[0]"), msg
    assert "messages[2] (a HumanMessage) stands between them" in msg


def test_langchain_stray_and_duplicates() -> None:
    from ctxfast.langchain import trim_messages

    call = lc.AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": "c1", "type": "tool_call"}])
    with pytest.raises(InvalidArgumentError, match=r"messages\[3\] \(tool_call_id 'zz'\) answers no tool call"):
        trim_messages([lc.HumanMessage("q"), call, lc.ToolMessage("r", tool_call_id="c1"),
                       lc.ToolMessage("r", tool_call_id="zz")], max_tokens=10_000)
    with pytest.raises(InvalidArgumentError, match=r"messages\[3\]\.tool_calls\[0\] repeats"):
        trim_messages([lc.HumanMessage("q"), call, lc.ToolMessage("r", tool_call_id="c1"), call,
                       lc.ToolMessage("r", tool_call_id="c1")], max_tokens=10_000)
    with pytest.raises(InvalidArgumentError, match=r"messages\[3\].*a second time"):
        trim_messages([lc.HumanMessage("q"), call, lc.ToolMessage("r", tool_call_id="c1"),
                       lc.ToolMessage("r", tool_call_id="c1")], max_tokens=10_000)
    out = trim_messages([lc.HumanMessage("q"), call], max_tokens=10_000)
    assert list(out) == [out[0], call]


def test_every_refusal_is_a_ctxfast_error() -> None:
    assert issubclass(InvalidArgumentError, CtxfastError) and issubclass(InvalidArgumentError, ValueError)
