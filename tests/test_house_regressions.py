"""Regression tests for bugs that came from the binding layer's shape (design review 2026-12).

- A user's rung named like one of the window's own levers ("rewrite", "discard") hid its
  evictions: ``ContextWindow.fit()`` filtered what it returned by the rung's *name*.
- The adapters resolved a plain callable counter anew on every request, so an identical request
  counted everything again (157 counter calls, then 157 more), where ``ctxfast.fit`` counted 0.
"""

from __future__ import annotations

import pytest

import ctxfast
from ctxfast import Budget, ContextWindow, Policy, PromptLayer as L, Segment


def _window_with(rung_name: str) -> ContextWindow:
    policy = Policy.from_dict(
        {"name": "named", "rungs": [{"name": rung_name, "layers": ["conversation"], "order": "oldest"}]}
    )
    w = ContextWindow(60, tokenizer=lambda t: len(t.split()), policy=policy)
    w.admit(Segment("system prompt here", L.SYSTEM))
    for i in range(6):
        w.admit(Segment(" ".join(["w"] * 15), L.CONVERSATION, key=f"c{i}"))
    w.admit(Segment("the question", L.CURRENT_TURN))
    return w


@pytest.mark.parametrize("rung_name", ["rewrite", "discard", "digest", "drop", "ordinary"])
def test_window_fit_returns_every_eviction_whatever_the_rung_is_called(rung_name: str) -> None:
    w = _window_with(rung_name)
    gone = w.fit()
    assert w.ledger.evictions >= 2
    assert len(gone) == w.ledger.evictions
    assert [s.key for s in gone] == [f"c{i}" for i in range(len(gone))]
    for s in gone:
        why = w.why(s.key)
        assert why.rung == rung_name
        assert why.cause == "rung"


def test_why_cause_tells_a_rung_from_the_callers_levers() -> None:
    w = _window_with("discard")
    w.fit()
    held = [k for k in (f"c{i}" for i in range(6)) if k in w]
    w.discard(held[0])
    assert w.why(held[0]).rung == "discard" and w.why(held[0]).cause == "discard"
    assert w.why("c0").rung == "discard" and w.why("c0").cause == "rung"


def test_window_objects_cover_every_held_entry() -> None:
    w = _window_with("ordinary")
    assert w._objects_cover_entries()
    w.fit()
    assert w._objects_cover_entries()
    back = ContextWindow.from_bytes(w.to_bytes(), tokenizer=lambda t: len(t.split()))
    assert back._objects_cover_entries()
    assert len(back.segments()) == len(w)


def _agent_request() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    messages: list[dict[str, object]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(8):
        messages.append({"role": "user", "content": f"step {i}: please look at file {i}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call{i}", "type": "function", "function": {"name": "read", "arguments": f'{{"path": "f{i}.py"}}'}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call{i}", "content": " ".join(["line"] * 40)})
        messages.append({"role": "assistant", "content": f"file {i} looks fine"})
    messages.append({"role": "user", "content": "now summarise"})
    tools: list[dict[str, object]] = [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "the path"}}},
            },
        }
    ]
    return messages, tools


class _CountingCounter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> int:
        self.calls += 1
        return len(text.split()) + 1


@pytest.mark.parametrize("adapter", ["openai", "anthropic"])
def test_an_identical_request_with_a_callable_counts_nothing_again(adapter: str) -> None:
    counter = _CountingCounter()
    messages, tools = _agent_request()
    if adapter == "openai":
        call = lambda: ctxfast.openai.fit_messages(messages, Budget(400), tools=tools, tokenizer=counter)  # noqa: E731
    else:
        from ctxfast import anthropic

        a_msgs = [m for m in messages if m["role"] in ("user", "assistant") and m.get("content")]
        a_tools = [{"name": "read", "description": "Read a file", "input_schema": {"type": "object"}}]
        call = lambda: anthropic.fit_messages("You are a coding agent.", a_msgs, Budget(400), tools=a_tools, tokenizer=counter)  # noqa: E731
    first_out, first = call()
    assert counter.calls > 0
    before = counter.calls
    second_out, second = call()
    assert counter.calls == before, "the second, identical request re-counted"
    assert second_out == first_out and second.total == first.total


def test_the_adapters_resolve_tokenizers_and_policies_as_fit_does() -> None:
    counter = _CountingCounter()
    from ctxfast import _payload

    assert _payload.resolve_tokenizer(counter) is _payload.resolve_tokenizer(counter)
    assert _payload.resolve_policy(None) == Policy.agent()
    assert _payload.resolve_policy("troubleshooting") == Policy.troubleshooting()
    with pytest.raises(ctxfast.ArgumentTypeError):
        _payload.resolve_policy(3)  # type: ignore[arg-type]
    with pytest.raises(ctxfast.ArgumentTypeError):
        _payload.resolve_tokenizer(3)  # type: ignore[arg-type]


def test_text_encoding_error_names_the_item_and_the_position() -> None:
    tok = ctxfast.Tokenizer.default()
    with pytest.raises(ctxfast.TextEncodingError) as info:
        tok.count_many(["fine", "also fine", "bad \ud800 here"])
    assert info.value.argument == "texts"
    assert info.value.index == 2
    assert info.value.position == 4
    assert "texts[2]" in str(info.value)
    with pytest.raises(ctxfast.TextEncodingError) as single:
        tok.count("x\udfff")
    assert single.value.index is None and single.value.position == 1


def test_a_surrogate_in_a_tool_schema_is_named_by_the_adapter() -> None:
    messages, tools = _agent_request()
    bad = [{"type": "function", "function": {"name": "read", "description": "bad \ud800"}}]
    with pytest.raises(ctxfast.TextEncodingError, match=r"^tools contains a lone surrogate"):
        ctxfast.openai.fit_messages(messages, Budget(4000), tools=bad)
    messages[3] = {"role": "tool", "tool_call_id": "call0", "content": "oops \udc80"}
    with pytest.raises(ctxfast.TextEncodingError, match=r"^messages\[3\] contains a lone surrogate") as info:
        ctxfast.openai.fit_messages(messages, Budget(4000), tools=tools)
    assert info.value.index == 3


def test_a_truncated_segment_with_a_given_count_states_its_whole_cost() -> None:
    """Regression: the shortened copy of a segment whose ``tokens=`` covered more than its text
    came back with ``tokens=None``, so its own count (2) disagreed with ``Fit.total`` (128)."""
    segs = [Segment("segment 0", L.RETRIEVED, key="k0", tokens=129), Segment("segment 1", L.CONVERSATION, key="k1", tokens=0)]
    f = ctxfast.fit(segs, Budget(128), Policy.troubleshooting())
    assert f.total == 128
    [t] = f.truncated
    assert t.segment.tokens == t.tokens_after == 128
    assert sum(s.tokens if s.tokens is not None else s.count() for s in f.kept) == f.total
