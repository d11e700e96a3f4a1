"""F13 and F16 (reliability attack 2026-12): a malformed payload gets a CtxfastError naming the
path, never a RecursionError, TypeError or ValueError; a lone surrogate names the tool or the
system prompt it is in. A hypothesis property swaps junk into one field of random OpenAI and
Anthropic payloads: the call returns a valid result or raises a CtxfastError subclass."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxfast
from ctxfast import (
    ArgumentTypeError,
    Budget,
    CounterError,
    CtxfastError,
    InvalidArgumentError,
    TextEncodingError,
    anthropic,
    openai,
)


def deep_dict(n: int = 5000) -> dict[str, Any]:
    root: dict[str, Any] = {"type": "x"}
    cur = root
    for _ in range(n):
        cur["n"] = {}
        cur = cur["n"]
    return root


def deep_list(n: int = 5000) -> list[Any]:
    root: list[Any] = []
    cur = root
    for _ in range(n):
        nxt: list[Any] = []
        cur.append(nxt)
        cur = nxt
    return root


DEEP = deep_dict()
HUGE = 10**5000
U = {"role": "user", "content": "hello"}


def raises(exc: type[BaseException], where: str, call: Any) -> str:
    """`call()` raises `exc` (a CtxfastError) whose message holds `where` verbatim."""
    with pytest.raises(exc) as info:
        call()
    assert isinstance(info.value, CtxfastError), type(info.value)
    assert where in str(info.value), str(info.value)
    return str(info.value)


# ----------------------------------------------------------------------------------------------
# F13: the reproducers, verbatim


def test_f13_deep_content_part() -> None:
    raises(InvalidArgumentError, "messages[0].content[0]",
           lambda: openai.fit_messages([{"role": "user", "content": [DEEP]}], Budget(1000)))


def test_f13_non_str_key_in_a_part() -> None:
    raises(ArgumentTypeError, "messages[0].content[0]",
           lambda: openai.fit_messages([{"role": "user", "content": [{"type": "x", 1: "a"}]}], Budget(1000)))


@pytest.mark.parametrize("tools", [True, 5, 1.5, "read", {"name": "read"}], ids=["True", "5", "float", "str", "dict"])
def test_f13_tools_of_the_wrong_type(tools: Any) -> None:
    raises(ArgumentTypeError, "tools", lambda: openai.fit_messages([U], Budget(1000), tools=tools))
    raises(ArgumentTypeError, "tools", lambda: anthropic.fit_messages(None, [U], Budget(1000), tools=tools))


def test_f13_huge_int_text() -> None:
    raises(InvalidArgumentError, "messages[0].content[0].text", lambda: anthropic.fit_messages(
        None, [{"role": "user", "content": [{"type": "text", "text": HUGE}]}], Budget(1000)))


# ----------------------------------------------------------------------------------------------
# F13: every field the attack named


def call_msg(name: Any = "read", arguments: Any = "{}", cid: Any = "c1") -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}]}


@pytest.mark.parametrize(
    "messages,exc,where",
    [
        ([{"role": DEEP, "content": "x"}], InvalidArgumentError, "messages[0]"),
        ([U, call_msg(name=DEEP)], InvalidArgumentError, "messages[1].tool_calls[0].function.name"),
        ([U, call_msg(arguments=DEEP)], InvalidArgumentError, "messages[1].tool_calls[0].function.arguments"),
        ([U, call_msg(name=HUGE)], InvalidArgumentError, "messages[1].tool_calls[0].function.name"),
        ([U, call_msg(cid=DEEP)], ArgumentTypeError, "messages[1].tool_calls[0].id"),
        ([{"role": "user", "content": "x", "name": DEEP}], InvalidArgumentError, "messages[0].name"),
        ([{"role": "user", "content": "x", "name": HUGE}], InvalidArgumentError, "messages[0].name"),
        ([{"role": "user", "content": [{"type": "text", "text": DEEP}]}], InvalidArgumentError, "messages[0].content[0].text"),
        ([{"role": "user", "content": [{"type": "x", "v": HUGE}]}], InvalidArgumentError, "messages[0].content[0].v"),
        ([{"role": "user", "content": [{"type": "x", "v": b"raw"}]}], ArgumentTypeError, "messages[0].content[0].v"),
        ([{"role": "user", "content": [{"type": "x", "v": {(1, 2): 3}}]}], ArgumentTypeError, "messages[0].content[0].v"),
        ([{"role": "user", "content": [deep_list()]}], ArgumentTypeError, "messages[0].content[0]"),
        ([{"role": "user", "content": [{"type": "x", "v": deep_list()}]}], InvalidArgumentError, "messages[0].content[0]"),
    ],
    ids=["role deep", "name deep", "arguments deep", "name huge int", "id deep", "message name deep",
         "message name huge", "text deep", "part huge int", "part bytes", "part tuple key", "part list", "part deep list"],
)
def test_openai_malformed_fields(messages: list[dict[str, Any]], exc: type[CtxfastError], where: str) -> None:
    raises(exc, where, lambda: openai.fit_messages(messages, Budget(1000)))


@pytest.mark.parametrize(
    "tools,exc,where",
    [
        ([{"type": "function", "function": {"name": DEEP}}], InvalidArgumentError, "tools[0].function.name"),
        ([{"type": "function", "function": {"name": "f", "description": HUGE}}], InvalidArgumentError,
         "tools[0].function.description"),
        ([{"type": "function", "function": {"name": "f", "parameters": {"properties": {"x": {"items": DEEP}}}}}],
         InvalidArgumentError, "tools[0].function.parameters.properties.x"),
        ([{"type": "function", "function": {"name": "f", "parameters": {"properties": {"x": {"a": {1: 2}}}}}}],
         ArgumentTypeError, "tools[0].function.parameters.properties.x"),
        ([{"type": "function", "function": {"name": "f", "parameters": {"properties": {
            "x": {"type": "string", "enum": [HUGE]}}}}}], InvalidArgumentError, "tools[0].function.parameters.properties.x.enum[0]"),
        ([{"type": "function", "function": {"name": "f", "parameters": {"properties": {
            "x": {"type": DEEP}}}}}], InvalidArgumentError, "tools[0].function.parameters.properties.x.type"),
        ([{"type": "function", "function": {"name": "f", "parameters": {"properties": {
            ("k" * 10_000,): {"type": "string", "enum": 5}}}}}], ArgumentTypeError, "enum must be a list"),
    ],
    ids=["name deep", "description huge", "property deep", "property int key", "enum huge", "type deep", "enum long key"],
)
def test_openai_malformed_tools(tools: list[Any], exc: type[CtxfastError], where: str) -> None:
    msg = raises(exc, where, lambda: openai.fit_messages([U], Budget(1000), tools=tools))
    assert len(msg) < 600, "an error message must not quote a long value"


def use_msg(**block: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}, **block}]}


@pytest.mark.parametrize(
    "system,messages,exc,where",
    [
        (None, [{"role": DEEP, "content": "x"}], InvalidArgumentError, "messages[0].role"),
        (None, [{"role": "x" * 100_000, "content": "x"}], InvalidArgumentError, "messages[0].role"),
        (None, [U, use_msg(input=DEEP)], InvalidArgumentError, "messages[1].content[0].input"),
        (None, [U, use_msg(input={1: "a", "b": 2})], ArgumentTypeError, "messages[1].content[0].input"),
        (None, [U, use_msg(input={"x": HUGE})], InvalidArgumentError, "messages[1].content[0].input.x"),
        (None, [U, use_msg(name=DEEP)], InvalidArgumentError, "messages[1].content[0].name"),
        (None, [U, use_msg(id=DEEP)], ArgumentTypeError, "messages[1].content[0].id"),
        (None, [U, use_msg(), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                              "content": [{"type": "text", "text": HUGE}]}]}],
         InvalidArgumentError, "messages[2].content[0].content[0].text"),
        (None, [{"role": "user", "content": [{"type": "custom", "x": DEEP}]}], InvalidArgumentError, "messages[0].content[0]"),
        (5, [U], ArgumentTypeError, "system"),
        ([5], [U], ArgumentTypeError, "system[0]"),
        ([{"type": "text", "text": DEEP}], [U], InvalidArgumentError, "system[0].text"),
        ("s", [U], None, None),
    ],
    ids=["role deep", "role long", "input deep", "input int key", "input huge", "name deep", "id deep",
         "nested result huge", "unknown block deep", "system int", "system item int", "system text deep", "valid"],
)
def test_anthropic_malformed_fields(system: Any, messages: list[dict[str, Any]], exc: Any, where: Any) -> None:
    if exc is None:
        anthropic.fit_messages(system, messages, Budget(1000))
        return
    msg = raises(exc, where, lambda: anthropic.fit_messages(system, messages, Budget(1000)))
    assert len(msg) < 600, "an error message must not quote a long value"


def test_anthropic_deeply_nested_tool_results() -> None:
    inner: list[Any] = [{"type": "text", "text": "x"}]
    for _ in range(5000):
        inner = [{"type": "tool_result", "content": inner}]
    msgs = [U, use_msg(), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": inner}]}]
    raises(InvalidArgumentError, "messages[2].content[0]", lambda: anthropic.fit_messages(None, msgs, Budget(1000)))


def test_anthropic_tool_choice_and_tools() -> None:
    raises(InvalidArgumentError, "tool_choice",
           lambda: anthropic.fit_messages(None, [U], Budget(1000), tool_choice={"type": DEEP}))
    raises(InvalidArgumentError, "tools[0]",
           lambda: anthropic.fit_messages(None, [U], Budget(1000), tools=[{"name": "f", "input_schema": DEEP}]))
    raises(ArgumentTypeError, "tools[0]",
           lambda: anthropic.fit_messages(None, [U], Budget(1000), tools=[{"name": "f", "input_schema": {2: 3}}]))


def test_depth_limit_is_128_levels() -> None:
    def nested(levels: int) -> dict[str, Any]:
        root: dict[str, Any] = {}
        cur = root
        for _ in range(levels - 1):
            cur["n"] = {}
            cur = cur["n"]
        return root

    ok = [U, use_msg(input=nested(128))]
    anthropic.fit_messages(None, ok, Budget(10_000))
    raises(InvalidArgumentError, "messages[1].content[0].input is nested more than 128 levels",
           lambda: anthropic.fit_messages(None, [U, use_msg(input=nested(129))], Budget(10_000)))


def test_self_referential_part() -> None:
    part: dict[str, Any] = {"type": "x"}
    part["self"] = part
    raises(InvalidArgumentError, "messages[0].content[0]",
           lambda: openai.fit_messages([{"role": "user", "content": [part]}], Budget(1000)))


class Exploding:
    """A value whose str() fails: what reaches the boundary from an unexpected object."""

    def __str__(self) -> str:
        raise RuntimeError("boom")

    __repr__ = __str__


def test_boundary_turns_the_unexpected_into_a_ctxfast_error() -> None:
    msg = raises(InvalidArgumentError, "messages[1]",
                 lambda: openai.fit_messages([U, {"role": "user", "content": "x", "name": Exploding()}], Budget(1000)))
    assert "RuntimeError" in msg


def test_boundary_passes_counter_errors_and_interrupts_through() -> None:
    with pytest.raises(CounterError):
        openai.fit_messages([U], Budget(1000), tokenizer=lambda s: 1 // 0)

    def interrupt(s: str) -> int:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        openai.fit_messages([U], Budget(1000), tokenizer=interrupt)

    def leave(s: str) -> int:
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        anthropic.fit_messages(None, [U], Budget(1000), tokenizer=leave)


# ----------------------------------------------------------------------------------------------
# LangChain

lc = pytest.importorskip("langchain_core.messages")


def test_langchain_malformed_tool_calls() -> None:
    from ctxfast.langchain import trim_messages

    ai = lc.AIMessage("", tool_calls=[{"name": "f", "args": {"a": DEEP}, "id": "c1", "type": "tool_call"}])
    raises(InvalidArgumentError, "messages[1].tool_calls[0].args",
           lambda: trim_messages([lc.HumanMessage("q"), ai], max_tokens=1000))
    ai = lc.AIMessage("", tool_calls=[{"name": "f", "args": {"a": HUGE}, "id": "c1", "type": "tool_call"}])
    raises(InvalidArgumentError, "messages[1].tool_calls[0].args",
           lambda: trim_messages([lc.HumanMessage("q"), ai], max_tokens=1000, token_counter="approximate"))


def test_langchain_counter_returning_junk_stays_a_counter_error() -> None:
    from ctxfast.langchain import trim_messages

    with pytest.raises(CounterError, match="returned a dict"):
        trim_messages([lc.HumanMessage("q")], max_tokens=1000, token_counter=lambda ms: DEEP)

    def bad(ms: Any) -> int:
        raise ValueError(Exploding())

    with pytest.raises(CounterError):
        trim_messages([lc.HumanMessage("q")], max_tokens=1000, token_counter=bad)


def test_langchain_message_with_unhashable_type() -> None:
    from ctxfast.langchain import trim_messages

    class Odd:
        type = {"not": "hashable"}
        content = "x"

    raises(ArgumentTypeError, "messages[0]", lambda: trim_messages([Odd()], max_tokens=1000))


# ----------------------------------------------------------------------------------------------
# F16: a lone surrogate names the tool, the system prompt, the field


def test_f16_surrogate_in_a_tool_name_names_the_tool() -> None:
    with pytest.raises(TextEncodingError) as info:
        openai.fit_messages([U], Budget(1000), tools=[{"function": {"name": "f\ud800"}}])
    msg = str(info.value)
    assert "tools[0]" in msg and "argument 'text'" not in msg, msg
    assert info.value.argument == "tools" and info.value.index == 0 and info.value.position == 1


def test_f16_surrogate_names_the_right_tool_and_field() -> None:
    tools = [{"type": "function", "function": {"name": "f"}},
             {"type": "function", "function": {"name": "g", "description": "ab\ud800",
                                               "parameters": {"properties": {"x": {"type": "string"}}}}}]
    with pytest.raises(TextEncodingError) as info:
        openai.fit_messages([U], Budget(1000), tools=tools)
    assert "tools[1].function.description" in str(info.value)
    assert (info.value.argument, info.value.index, info.value.position) == ("tools", 1, 2)
    tools[1]["function"]["description"] = "fine"
    tools[1]["function"]["parameters"]["properties"]["x"]["enum"] = ["ok", "b\udc00"]
    with pytest.raises(TextEncodingError, match=r"tools\[1\]\.function\.parameters\.properties\.x\.enum\[1\]") as info:
        openai.fit_messages([U], Budget(1000), tools=tools)
    assert info.value.index == 1 and info.value.position == 1


def test_f16_surrogate_in_system_names_system() -> None:
    with pytest.raises(TextEncodingError) as info:
        anthropic.fit_messages("s\ud800", [U], Budget(1000))
    assert str(info.value).startswith("system contains a lone surrogate"), str(info.value)
    assert "argument 'text'" not in str(info.value)
    assert info.value.argument == "system" and info.value.position == 1
    with pytest.raises(TextEncodingError) as info:
        anthropic.fit_messages([{"type": "text", "text": "fine"}, {"type": "text", "text": "xy\ud800"}], [U], Budget(1000))
    assert "system[1].text" in str(info.value)
    assert (info.value.argument, info.value.index, info.value.position) == ("system", 1, 2)


def test_f16_surrogate_in_a_message_names_the_field() -> None:
    msgs = [U, {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"type": "text", "text": "ab\ud800"}]}]
    with pytest.raises(TextEncodingError) as info:
        openai.fit_messages(msgs, Budget(1000))
    assert str(info.value).startswith("messages[1] contains a lone surrogate in messages[1].content[1].text")
    assert (info.value.argument, info.value.index, info.value.position) == ("messages", 1, 2)


def test_f16_surrogate_in_an_anthropic_block_names_the_block() -> None:
    msgs = [U, {"role": "assistant", "content": [{"type": "text", "text": "ok"},
                                                 {"type": "tool_use", "id": "t", "name": "re\ud800ad", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                          "content": [{"type": "text", "text": "fine"}]}]}]
    with pytest.raises(TextEncodingError) as info:
        anthropic.fit_messages(None, msgs, Budget(1000))
    assert str(info.value).startswith("messages[1] contains a lone surrogate in messages[1].content[1].name")
    assert (info.value.argument, info.value.index, info.value.position) == ("messages", 1, 2)
    msgs[1]["content"][1]["name"] = "read"
    msgs[2]["content"][0]["content"][0]["text"] = "x\udc00"
    with pytest.raises(TextEncodingError, match=r"^messages\[2\] .* in messages\[2\]\.content\[0\]\.content\[0\]\.text"):
        anthropic.fit_messages(None, msgs, Budget(1000))


def test_f16_surrogate_in_a_langchain_message_names_the_field() -> None:
    from ctxfast.langchain import trim_messages

    msgs = [lc.HumanMessage(content=["fine", {"type": "text", "text": "ab\ud800"}])]
    with pytest.raises(TextEncodingError) as info:
        trim_messages(msgs, max_tokens=1000)
    assert "messages[0].content[1].text" in str(info.value)
    assert (info.value.argument, info.value.index, info.value.position) == ("messages", 0, 2)
    msgs = [lc.HumanMessage("q"), lc.AIMessage("", tool_calls=[{"name": "f\ud800", "args": {}, "id": "c"}])]
    with pytest.raises(TextEncodingError, match=r"messages\[1\]\.tool_calls\[0\]\.name"):
        trim_messages(msgs, max_tokens=1000)


# ----------------------------------------------------------------------------------------------
# Property: junk in any one field → a valid result or a CtxfastError, nothing else


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


JUNK: list[Any] = [
    DEEP, deep_list(), HUGE, -HUGE, {1: "a", "b": 2}, {(1,): "t"}, b"bytes", bytearray(b"x"), "a\ud800b", "\udfff",
    None, True, 5, 1.5, float("nan"), "", [], {}, [None], {"type": None}, {"type": DEEP}, object(), _Unprintable(),
    "x" * 20_000, [HUGE], {"text": HUGE},
]


def openai_payload(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
    n = 0
    for t in range(rng.randint(1, 3)):
        msgs.append({"role": "user", "content": rng.choice(["q " * 20, [{"type": "text", "text": "q " * 10},
                                                                      {"type": "image_url", "image_url": {"url": "u"}}]])})
        if rng.random() < 0.7:
            n += 1
            msgs.append({"role": "assistant", "content": None, "name": "bot", "tool_calls": [
                {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}]})
            msgs.append({"role": "tool", "tool_call_id": f"c{n}", "content": "r " * rng.randint(1, 60)})
        msgs.append({"role": "assistant", "content": "a " * rng.randint(1, 40)})
    msgs.append({"role": "user", "content": "now?"})
    tools = [{"type": "function", "function": {"name": "read", "description": "Read a file.", "parameters": {
        "type": "object", "properties": {"p": {"type": "string", "description": "path", "enum": ["a", "b"]},
                                         "o": {"type": "object", "properties": {}}}}}}]
    return msgs, tools


def anthropic_payload(rng: random.Random) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    system: Any = rng.choice(["be brief", [{"type": "text", "text": "be brief"}]])
    msgs: list[dict[str, Any]] = []
    n = 0
    for t in range(rng.randint(1, 3)):
        msgs.append({"role": "user", "content": rng.choice(["q " * 20, [{"type": "text", "text": "q " * 10}]])})
        if rng.random() < 0.7:
            n += 1
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": "checking"}, {
                "type": "tool_use", "id": f"t{n}", "name": "read", "input": {"p": "a", "n": [1, 2]}}]})
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}",
                                                      "content": rng.choice(["r " * 30, [{"type": "text", "text": "r"}]])}]})
        msgs.append({"role": "assistant", "content": "a " * rng.randint(1, 40)})
    msgs.append({"role": "user", "content": "now?"})
    tools = [{"name": "read", "description": "Read a file.", "input_schema": {"type": "object", "properties": {
        "p": {"type": "string"}}}}]
    return system, msgs, tools


def slots(root: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) of a nested payload: each is a field junk can be swapped into."""
    out: list[tuple[Any, Any]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            out.append((node, key))
            if isinstance(value, (dict, list)):
                stack.append(value)
    return out


def check(call: Any) -> None:
    try:
        out, fit = call()
    except CtxfastError:
        return
    assert isinstance(out, list) and isinstance(fit, ctxfast.Fit)
    assert fit.total <= fit.ceiling


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), pick=st.integers(0, 10**6), junk=st.sampled_from(range(len(JUNK))),
       window=st.sampled_from([60, 300, 2000, 100_000]))
def test_property_openai_junk_in_one_field(seed: int, pick: int, junk: int, window: int) -> None:
    msgs, tools = openai_payload(random.Random(seed))
    payload = {"messages": msgs, "tools": tools}
    where = [(payload, "messages"), (payload, "tools"), *slots(payload)]
    container, key = where[pick % len(where)]
    container[key] = JUNK[junk]
    check(lambda: openai.fit_messages(payload["messages"], Budget(window), tools=payload["tools"]))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), pick=st.integers(0, 10**6), junk=st.sampled_from(range(len(JUNK))),
       window=st.sampled_from([60, 300, 2000, 100_000]), model=st.sampled_from([None, "claude-sonnet-4-5"]))
def test_property_anthropic_junk_in_one_field(seed: int, pick: int, junk: int, window: int, model: Any) -> None:
    system, msgs, tools = anthropic_payload(random.Random(seed))
    payload = {"system": system, "messages": msgs, "tools": tools, "tool_choice": {"type": "auto"}}
    where = [(payload, k) for k in payload] + slots(payload)
    container, key = where[pick % len(where)]
    container[key] = JUNK[junk]
    check(lambda: anthropic.fit_messages(payload["system"], payload["messages"], Budget(window),
                                         tools=payload["tools"], tool_choice=payload["tool_choice"], model=model))


def test_untouched_payloads_still_fit() -> None:
    # The generators' own payloads are valid: every junk-free example returns a fit.
    for seed in range(30):
        msgs, tools = openai_payload(random.Random(seed))
        before = copy.deepcopy(msgs)
        out, fit = openai.fit_messages(msgs, Budget(100_000), tools=tools)
        assert out == before and fit.total <= 100_000
        system, amsgs, atools = anthropic_payload(random.Random(seed))
        out, _ = anthropic.fit_messages(system, amsgs, Budget(100_000), tools=atools)
        assert out == amsgs
