"""Truncation keeps the structure (issue 10, report #1 and #5).

A truncate rung shortens one string of a message, its longest text, inside its part or block,
and the message comes back as a copy with only that string changed: ``tool_use`` /
``tool_result`` blocks, ids, images and the other parts stay, no message or text block is left
empty, and ``fit.total`` is the count of what is sent (the other strings are still counted).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import agent_payloads as ap
from ctxfast import Policy, anthropic, openai
from ctxfast.langchain import trim_messages

#: The friction report's trunc_policy.toml, verbatim.
TRUNC_POLICY = """
name = "truncate_tool_output"
[[rungs]]
name = "tool_output.truncate"
layers = ["tool_result"]
order = "largest"
action = "truncate"
min_tokens = 200
[[rungs]]
name = "history.drop"
layers = ["conversation", "tool_result"]
order = "oldest"
action = "drop"
"""

CUT_CONVERSATION = Policy.from_dict({"name": "cut_conversation", "rungs": [
    {"name": "conversation.truncate", "layers": ["conversation"], "order": "largest", "action": "truncate",
     "min_tokens": 16},
    {"name": "history.drop", "layers": ["conversation", "tool_result"], "order": "oldest", "action": "drop"},
]})


@pytest.fixture(scope="module")
def enc(tiktoken_encodings: dict[str, Any]) -> Any:
    return tiktoken_encodings["o200k_base"]


def lines(tag: str, n: int) -> str:
    return "\n".join(f"{tag} line {i}: value = compute({i}, retries={i % 7})" for i in range(n))


def anthropic_session() -> tuple[str, list[dict[str, Any]]]:
    """An Anthropic agent session whose user messages hold one or two tool_result blocks, and an
    assistant message [text, tool_use] (the report's messages 3-4 and toolu_008)."""
    msgs: list[dict[str, Any]] = []
    for ex in range(4):
        msgs.append({"role": "user", "content": f"Step {ex}: please refactor module {ex}."})
        uses = [{"type": "tool_use", "id": f"toolu_{ex}{k}", "name": "read_file", "input": {"path": f"m{ex}{k}.py"}}
                for k in range(1 + ex % 2)]
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": "Let me check. " + lines("plan", 30)},
                                                      *uses]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": u["id"], "content": lines(u["id"], 60 + 20 * k)}
            for k, u in enumerate(uses)]})
        msgs.append({"role": "assistant", "content": f"Done with module {ex}."})
    msgs.append({"role": "user", "content": "Now run the tests."})
    return "You are a refactoring agent.", msgs


@pytest.mark.parametrize("policy", ["toml", "conversation"])
def test_anthropic_truncation_keeps_tool_blocks(policy: str, tmp_path: Path, enc: Any) -> None:
    """Report #1: the truncate rung replaced a message's whole content list by a string, so
    tool_result / tool_use blocks vanished and an assistant message became ""."""
    if policy == "toml":
        path = tmp_path / "trunc_policy.toml"
        path.write_text(TRUNC_POLICY)
        pol = Policy.from_toml(str(path))
    else:
        pol = CUT_CONVERSATION
    system, msgs = anthropic_session()
    snapshot = copy.deepcopy(msgs)
    full = ap.anthropic_total(system, msgs, enc)
    truncated = 0
    for fraction in (0.95, 0.85, 0.75, 0.65, 0.55):
        ceiling = int(full * fraction)
        out, fit = anthropic.fit_messages(system, msgs, ceiling, policy=pol)
        ap.check_anthropic(system, msgs, out, fit, ceiling, enc)
        truncated += len(fit.truncated)
        for m in out:
            if m["role"] == "assistant" and isinstance(m["content"], list):
                assert any(b["type"] == "tool_use" for b in m["content"]), "an assistant lost its tool_use"
    assert truncated, "the budgets were meant to make the truncate rung fire"
    assert msgs == snapshot


def test_anthropic_truncated_result_is_cut_inside_its_block(tmp_path: Path, enc: Any) -> None:
    path = tmp_path / "trunc_policy.toml"
    path.write_text(TRUNC_POLICY)
    system, msgs = anthropic_session()
    ceiling = int(ap.anthropic_total(system, msgs, enc) * 0.9)
    out, fit = anthropic.fit_messages(system, msgs, ceiling, policy=Policy.from_toml(str(path)))
    results = {o["content"][0]["tool_use_id"]: o for o in msgs if isinstance(o["content"], list)
               and o["content"][0]["type"] == "tool_result"}
    kept = {id(m) for m in msgs}
    copies = [(m, results[m["content"][0]["tool_use_id"]]) for m in out
              if id(m) not in kept and isinstance(m["content"], list) and m["content"][0]["type"] == "tool_result"]
    assert copies and fit.truncated
    for new, orig in copies:
        assert len(new["content"]) == len(orig["content"])
        changed = [k for k, (a, b) in enumerate(zip(orig["content"], new["content"])) if a != b]
        assert len(changed) == 1, "exactly one block is shortened"
        a, b = orig["content"][changed[0]], new["content"][changed[0]]
        assert {k: v for k, v in a.items() if k != "content"} == {k: v for k, v in b.items() if k != "content"}
        assert a["content"].startswith(b["content"]) and b["content"].strip()
        # the shortened block is the longest string of the message
        assert len(a["content"]) == max(len(x["content"]) for x in orig["content"])


def test_openai_truncation_keeps_the_image(enc: Any) -> None:
    """Report #5: a multi-part user message came back as a plain string without its image, while
    fit.total still counted the image's 765 tokens."""
    image = {"type": "image_url", "image_url": {"url": "https://example.com/screenshot.png"}}
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You describe screenshots."},
        {"role": "user", "content": [{"type": "text", "text": "Describe this screenshot. " + lines("ui", 80)}, image]},
        {"role": "assistant", "content": "It shows a settings page. " + lines("answer", 10)},
        {"role": "user", "content": "And the second one?"},
    ]
    snapshot = copy.deepcopy(msgs)
    full = ap.openai_total(msgs, enc)
    out, fit = openai.fit_messages(msgs, full - 400, policy=CUT_CONVERSATION)
    assert fit.truncated
    user = out[1]
    assert isinstance(user["content"], list) and len(user["content"]) == 2
    assert user["content"][1] is image, "the image part is the caller's own, untouched"
    assert msgs[1]["content"][0]["text"].startswith(user["content"][0]["text"])
    assert fit.total == ap.openai_total(out, enc), "fit.total counts what is sent, image included"
    ap.check_openai(msgs, out, fit, full - 400, enc)
    assert msgs == snapshot


def test_openai_assistant_with_text_and_calls_keeps_its_calls(enc: Any) -> None:
    msgs = [
        {"role": "user", "content": "Fix the build."},
        {"role": "assistant", "content": "Let me look. " + lines("thinking", 60),
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p": "a"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "Fixed."},
        {"role": "user", "content": "Thanks, now the docs."},
    ]
    full = ap.openai_total(msgs, enc)
    out, fit = openai.fit_messages(msgs, full - 300, policy=CUT_CONVERSATION)
    assert fit.truncated and out[1] is not msgs[1]
    assert out[1]["tool_calls"] is msgs[1]["tool_calls"] and out[1]["content"]
    ap.check_openai(msgs, out, fit, full - 300, enc)


def test_no_text_is_cut_to_nothing(enc: Any) -> None:
    """A message whose other strings cost more than the budget leaves for its text: the text is
    never cut to an empty part (a core that would do so is answered by fitting without cutting
    that text)."""
    a = " ".join(f"alpha{i}" for i in range(150))
    b = " ".join(f"beta{i}" for i in range(140))
    msgs = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": a}, {"type": "text", "text": b}]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "now?"},
    ]
    for min_tokens in (1, 64):
        pol = Policy.from_dict({"name": "t", "rungs": [
            {"name": "cut", "layers": ["tool_result"], "order": "largest", "action": "truncate", "min_tokens": min_tokens},
            {"name": "drop", "layers": ["conversation", "tool_result"], "order": "oldest", "action": "drop"}]})
        for ceiling in range(250, 420, 3):
            out, fit = openai.fit_messages(msgs, ceiling, policy=pol)
            ap.check_openai(msgs, out, fit, ceiling, enc)


def test_langchain_truncation_cuts_one_block() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    msgs = [
        HumanMessage(content=[{"type": "text", "text": "Look at this. " + lines("ask", 80)}, image]),
        AIMessage(content="", tool_calls=[{"name": "read", "args": {"p": "a"}, "id": "c1", "type": "tool_call"}]),
        ToolMessage(content="short result", tool_call_id="c1"),
        AIMessage(content="It is a chart."),
        HumanMessage(content="Next."),
    ]
    before = [m.model_dump() for m in msgs]
    full = trim_messages(msgs, max_tokens=10**6).fit.total
    out = trim_messages(msgs, max_tokens=full - 300, policy=CUT_CONVERSATION)
    assert out.fit.truncated
    first = out[0]
    assert isinstance(first.content, list) and first.content[1] == image
    assert msgs[0].content[0]["text"].startswith(first.content[0]["text"])
    assert [m.model_dump() for m in msgs] == before
    assert json.dumps(first.content[1]) == json.dumps(image)
