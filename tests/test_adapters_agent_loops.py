"""Agent loops can be trimmed (issue 10, report #2), and Anthropic digests keep the roles
alternating (report #18).

The most common agent payload is a system prompt, one user instruction, then many
``assistant(tool_calls)`` + ``tool`` rounds. Everything after the last user message used to be the
protected current turn, so such a request was ``Unfittable`` at every budget below its full size.
Now the current turn is the ask and the newest round; each older round is its own unit.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import agent_payloads as ap
from ctxfast import Budget, InvalidArgumentError, Unfittable, _payload, anthropic, openai
from ctxfast.langchain import trim_messages
from sessions import anthropic_session

ROUNDS = 11


def log(tag: str, n: int) -> str:
    return "\n".join(f"{tag}: line {i} ok, elapsed {i * 13 % 97} ms, cache hit ratio {i % 10}/10" for i in range(n))


def openai_loop(rounds: int = ROUNDS) -> list[dict[str, Any]]:
    """The report's agent loop: one instruction, then `rounds` tool rounds with large results."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Work step by step."},
        {"role": "user", "content": "Refactor the client module to use the new retry helper."},
    ]
    for r in range(rounds):
        calls = [{"id": f"call_{r}_{k}", "type": "function",
                  "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/f{r}_{k}.py"})}}
                 for k in range(1 + r % 2)]
        msgs.append({"role": "assistant", "content": None if r % 3 else f"Step {r}.", "tool_calls": calls})
        msgs += [{"role": "tool", "tool_call_id": c["id"], "content": log(c["id"], 40 + 10 * (r % 4))} for c in calls]
    return msgs


def anthropic_loop(rounds: int = ROUNDS) -> tuple[str, list[dict[str, Any]]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the client module to use the new retry helper."}]
    for r in range(rounds):
        uses = [{"type": "tool_use", "id": f"toolu_{r}_{k}", "name": "read_file", "input": {"path": f"src/f{r}_{k}.py"}}
                for k in range(1 + r % 2)]
        msgs.append({"role": "assistant", "content": ([] if r % 3 else [{"type": "text", "text": f"Step {r}."}]) + uses})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": u["id"], "content": log(u["id"], 40 + 10 * (r % 4))} for u in uses]})
    return "You are a coding agent. Work step by step.", msgs


@pytest.fixture(scope="module")
def enc(tiktoken_encodings: dict[str, Any]) -> Any:
    return tiktoken_encodings["o200k_base"]


def test_openai_agent_loop_fits_below_its_full_size(enc: Any) -> None:
    msgs = openai_loop()
    full = ap.openai_total(msgs, enc)
    newest = max(i for i, m in enumerate(msgs) if m.get("tool_calls"))
    protected = ap.openai_total([msgs[0], msgs[1], *msgs[newest:]], enc)
    digested = dropped = 0
    for ceiling in range(full - 50, protected, -max(1, (full - protected) // 12)):
        out, fit = openai.fit_messages(msgs, Budget(ceiling + 1000, 1000))
        ap.check_openai(msgs, out, fit, ceiling, enc)
        assert out[0] is msgs[0] and out[1] is msgs[1], "the system prompt and the ask stay"
        assert [id(m) for m in out[-(len(msgs) - newest):]] == [id(m) for m in msgs[newest:]], "the newest round stays"
        explained, _ = ap.pieces(msgs, out, merged=False)
        digests = [k for k, p in enumerate(explained) if isinstance(p, str)]
        verbatim = [k for k, p in enumerate(explained) if isinstance(p, int) and p > 1]
        assert not digests or not verbatim or max(digests) < min(verbatim), "older rounds go first"
        digested += bool(digests)
        dropped += len(explained) < len(msgs)
    assert digested and dropped
    with pytest.raises(Unfittable):
        openai.fit_messages(msgs, Budget(protected - 1 + 1000, 1000))


def test_anthropic_agent_loop_fits_below_its_full_size(enc: Any) -> None:
    system, msgs = anthropic_loop()
    full = ap.anthropic_total(system, msgs, enc)
    fitted = 0
    for fraction in (0.9, 0.7, 0.5, 0.35, 0.25):
        ceiling = int(full * fraction)
        try:
            out, fit = anthropic.fit_messages(system, msgs, ceiling)
        except Unfittable:
            continue
        ap.check_anthropic(system, msgs, out, fit, ceiling, enc)
        assert out[-2] is msgs[-2] and out[-1] is msgs[-1], "the newest round stays, the caller's own"
        fitted += 1
    assert fitted >= 3


def test_langchain_agent_loop_fits_below_its_full_size() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    lc: list[Any] = []
    for m in openai_loop():
        if m["role"] == "system":
            lc.append(SystemMessage(m["content"]))
        elif m["role"] == "user":
            lc.append(HumanMessage(m["content"]))
        elif m["role"] == "tool":
            lc.append(ToolMessage(m["content"], tool_call_id=m["tool_call_id"]))
        else:
            lc.append(AIMessage(content=m["content"] or "", tool_calls=[
                {"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]), "id": c["id"],
                 "type": "tool_call"} for c in m["tool_calls"]]))
    full = trim_messages(lc, max_tokens=10**6).fit.total
    out = trim_messages(lc, max_tokens=int(full * 0.5))
    assert out.fit.total <= int(full * 0.5)
    assert out[0] is lc[0] and out[1] is lc[1]
    newest = max(i for i, m in enumerate(lc) if isinstance(m, AIMessage))
    assert [id(m) for m in out[-(len(lc) - newest):]] == [id(m) for m in lc[newest:]]
    called = {c["id"] for m in out if isinstance(m, AIMessage) for c in m.tool_calls}
    answered = {m.tool_call_id for m in out if isinstance(m, ToolMessage)}
    assert called == answered, "every kept call keeps its results, and no result is an orphan"


def test_a_round_is_one_unit_with_its_parallel_results(enc: Any) -> None:
    """A round's results leave with their call (never half a parallel batch)."""
    msgs = openai_loop()
    full = ap.openai_total(msgs, enc)
    out, fit = openai.fit_messages(msgs, int(full * 0.6), policy="context_window")
    ap.check_openai(msgs, out, fit, int(full * 0.6), enc)
    groups = {e.segment.group for e in fit.evicted}
    assert groups and all(g.startswith("ex1.round") for g in groups), groups


def test_adapters_name_messages_in_the_trace_and_in_unfittable() -> None:
    """Contract 1: the adapters pass input_name="messages", so the trace and Unfittable name
    message positions, not exchange groups."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "rules " * 5}]
    for k in range(4):
        msgs += [{"role": "user", "content": f"question {k} " * 40}, {"role": "assistant", "content": f"answer {k} " * 40}]
    msgs.append({"role": "user", "content": "now?"})
    _, fit = openai.fit_messages(msgs, 260, policy="context_window")
    assert fit.evicted and "messages[1..2]" in fit.explain(), fit.explain()
    with pytest.raises(Unfittable) as e:
        openai.fit_messages(msgs, 12, policy="context_window")
    assert "messages[0]" in str(e.value) and "<reply priming>" in str(e.value), str(e.value)


# ----------------------------------------------------------------------------------------------
# Report #18: a digest next to a user message is merged into it


def test_anthropic_digests_keep_roles_alternating(enc: Any) -> None:
    system, msgs = anthropic_session(11, 12)
    full = ap.anthropic_total(system, msgs, enc)
    merged = 0
    for fraction in (0.9, 0.75, 0.6, 0.45, 0.3):
        ceiling = int(full * fraction)
        try:
            out, fit = anthropic.fit_messages(system, msgs, ceiling, policy="agent")
        except Unfittable:
            continue
        for i in range(1, len(out)):
            assert out[i]["role"] != out[i - 1]["role"], f"out[{i - 1}] and out[{i}] are both {out[i]['role']}"
        explained, merges = ap.pieces(msgs, out, merged=True)
        merged += merges
        # The merged digests' framing is still counted: the total is an upper bound, by 3 a merge.
        assert fit.total == ap.anthropic_total(system, out, enc) + 3 * merges
    assert merged, "the budgets were meant to digest exchanges"


def test_anthropic_round_digest_joins_the_results_before_it(enc: Any) -> None:
    system, msgs = anthropic_loop()
    full = ap.anthropic_total(system, msgs, enc)
    out, fit = anthropic.fit_messages(system, msgs, int(full * 0.75))
    ap.check_anthropic(system, msgs, out, fit, int(full * 0.75), enc)
    joined = [m for m in out if isinstance(m["content"], list) and any(
        b["type"] == "text" and b["text"].startswith(ap.COMPACTED) for b in m["content"])]
    assert joined and all(m["role"] == "user" for m in joined)
    for m in joined:
        kinds = [b["type"] for b in m["content"]]
        assert kinds == sorted(kinds, key=lambda k: k != "tool_result"), "text never precedes a tool_result"


def test_a_result_after_a_later_call_is_refused() -> None:
    """Results of a round must come before the next round's call (the API requires the tool
    messages right after their assistant message); grouping rounds would otherwise split them."""
    def call(i: str) -> dict[str, Any]:
        return {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}

    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("a")]},
            {"role": "assistant", "content": None, "tool_calls": [call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "tool", "tool_call_id": "b", "content": "y"}]
    with pytest.raises(InvalidArgumentError) as info:
        openai.fit_messages(msgs, 1000)
    assert "messages[2] (an assistant message) stands between them" in str(info.value)
    assert "later tool call" in str(info.value)


def test_user_messages_adjacent_in_the_input_are_not_merged(enc: Any) -> None:
    """Only neighbours the fit made are merged: two user messages the caller sent side by side
    stay two messages (the API merges them itself)."""
    msgs = [{"role": "user", "content": "old " * 300}, {"role": "assistant", "content": "old answer " * 50},
            {"role": "user", "content": "first part of the question"},
            {"role": "user", "content": "second part of the question"}]
    out, fit = anthropic.fit_messages(None, msgs, 60)
    assert fit.evicted and out == msgs[2:] and out[0] is msgs[2] and out[1] is msgs[3]


def test_an_adapter_fit_that_removed_something_logs_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    """Report #13: a serving team sees each fit that evicted, on the ``ctxfast`` logger."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": f"question {k} " * 40} for k in range(3)]
    with caplog.at_level("INFO", logger="ctxfast"):
        openai.fit_messages(msgs, 10_000)
        assert caplog.records == []  # everything fitted: nothing to say
        openai.fit_messages(msgs, 200, policy="context_window")
    assert len(caplog.records) == 1, caplog.records
    line = caplog.records[0].getMessage()
    assert line.startswith("ctxfast fit: 3 -> ") and "removed" in line and "conversation.oldest_first" in line, line


def test_a_payload_without_a_user_message_never_comes_back_empty() -> None:
    """With no ask (calls and results alone), the last unit is the protected current turn: a
    small budget is Unfittable, never an empty request (the Responses helper found it)."""
    big = "x " * 400
    msgs: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": big},
    ]
    with pytest.raises(Unfittable):
        openai.fit_messages(msgs, 50)
    an = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": big}]}]
    with pytest.raises(Unfittable):
        anthropic.fit_messages(None, an, 50)
