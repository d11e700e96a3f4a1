"""Issue 11 item 5: Anthropic's ``cache_control`` breakpoints and the ``system`` block list pass
through a fit untouched: kept messages are the caller's own objects, a shortened text block keeps
its breakpoint, a merge (roles kept alternating after a digest) keeps every block as it was, and
``system`` is never edited (it is counted, never returned changed)."""

from __future__ import annotations

import copy
from typing import Any

from ctxfast import Policy, anthropic

EPHEMERAL = {"type": "ephemeral"}
SYSTEM = [{"type": "text", "text": "You are the on-call assistant. " * 30},
          {"type": "text", "text": "Runbook: restart, then page.", "cache_control": EPHEMERAL}]


def conversation(rounds: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": "Why is checkout slow? " * 5, "cache_control": EPHEMERAL}]}]
    for k in range(rounds):
        msgs.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{k}", "name": "logs", "input": {"n": k}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{k}", "content": "slow query " * 80,
             "cache_control": EPHEMERAL}]})
    return msgs


def breakpoints(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages for b in m["content"] if isinstance(b, dict) and "cache_control" in b)


def test_kept_messages_and_system_are_the_callers_own() -> None:
    msgs, system = conversation(3), copy.deepcopy(SYSTEM)
    out, fit = anthropic.fit_messages(system, msgs, 100_000)
    assert all(a is b for a, b in zip(out, msgs)) and len(out) == len(msgs)
    assert system == SYSTEM and breakpoints(out) == breakpoints(msgs)
    assert dict(fit.trace.start)["system"] > 0


def test_a_digest_merged_into_a_user_message_keeps_every_breakpoint() -> None:
    msgs, system = conversation(8), copy.deepcopy(SYSTEM)
    snapshot = copy.deepcopy(msgs)
    full = anthropic.fit_messages(system, msgs, 10**6)[1].total
    out, fit = anthropic.fit_messages(system, msgs, full - 600)
    assert fit.rungs_fired, fit.explain()
    assert [m["role"] for m in out] == ["user", "assistant"] * (len(out) // 2) + ["user"] * (len(out) % 2)
    # The first user message (with its breakpoint) stays; the merged digest adds a text block only.
    assert out[0]["content"][0] == msgs[0]["content"][0] and len(out[0]["content"]) > 1, "a digest was merged"
    kept = [b for m in out for b in m["content"] if isinstance(b, dict) and "cache_control" in b]
    assert all(b in [x for m in msgs for x in m["content"]] for b in kept)
    assert msgs == snapshot and system == SYSTEM


def test_a_shortened_block_keeps_its_breakpoint() -> None:
    policy = Policy.from_dict({"name": "cut", "rungs": [{"name": "bodies", "layers": ["tool_result"],
                                                          "order": "largest", "action": "truncate",
                                                          "min_tokens": 20}]})
    msgs = conversation(3)
    full = anthropic.fit_messages(None, msgs, 10**6)[1].total
    out, fit = anthropic.fit_messages(None, msgs, full - 100, policy=policy)
    assert fit.truncated, fit.explain()
    cut = [m for m, orig in zip(out, msgs) if m is not orig]
    assert cut
    for m in cut:
        block = m["content"][0]
        assert block["type"] == "tool_result" and block["cache_control"] == EPHEMERAL
