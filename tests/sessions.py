"""Generated agent conversations for the adapter and CLI tests, in every wire format.

``conversation(seed, turns)`` draws one conversation from a seed: a system prompt, ``turns``
complete exchanges (the user's question, 0-3 assistant steps of 1-3 parallel tool calls each
followed by their results, then the answer) and the current question, optionally with a tool
step in progress after it. The renderers write that same conversation as OpenAI chat dicts,
Anthropic Messages (system, messages) or LangChain messages; the ``*_session`` and ``*_payload``
functions are the shapes the tests use.

One random stream draws the content and a second, seeded alongside it, the presentation choices
only one format has (string or block content, ``is_error``), so adding such a choice to one
renderer never changes the text the others get. (``benches/session.py`` is the benchmarks' own,
much larger, 60-turn session; it is not this.)
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from helpers import words

# ----------------------------------------------------------------------------------------------
# Tools

OPENAI_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search_code",
            "description": "Search the repository for a regular expression.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression"},
                    "path": {"type": "string", "description": "Folder to search under."},
                },
                "required": ["pattern"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a range of lines of one file",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path from the repository root"},
                    "start": {"type": "integer", "description": "First line, 1-based"},
                    "end": {"type": "integer", "description": "Last line, inclusive"},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "tail_logs",
            "description": "The last lines of a service's logs.",
            "parameters": {
                "type": "object",
                "properties": {
                    "service": {
                        "type": "string",
                        "description": "Service name",
                        "enum": ["gateway", "tracker", "billing", "rates"],
                    },
                    "minutes": {"type": "integer", "description": "How far back to read"},
                },
                "required": ["service"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run one test target and return its report.",
            "parameters": {
                "type": "object",
                "properties": {"target": {"type": "string", "description": "A test target such as tests/api"}},
            },
        },
    },
]
TOOL_NAMES = tuple(t["function"]["name"] for t in OPENAI_TOOLS)


def anthropic_tools(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    """The same tools as Anthropic tool definitions (``name``, ``description``, ``input_schema``)."""
    return [{"name": fn["name"], "description": fn["description"], "input_schema": fn["parameters"]}
            for fn in (t["function"] for t in OPENAI_TOOLS) if fn["name"] in names]


def openai_tools(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    return [t for t in OPENAI_TOOLS if t["function"]["name"] in names]


_LOG_LEVELS = ("INFO", "WARN", "ERROR", "DEBUG")


def _tool_result(rng: random.Random, name: str, size: int) -> str:
    if name == "tail_logs":
        lines = [
            f"2024-09-17T14:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z {rng.choice(_LOG_LEVELS)} "
            f"{rng.choice(('gateway', 'tracker', 'billing'))}[{rng.randrange(1, 9)}] {words(rng.randint(4, 14), rng, punctuate=True)}"
            for _ in range(max(1, size // 14))
        ]
        return "\n".join(lines)
    if name == "read_file":
        lines = [f"{i:4d}  {'    ' * rng.randint(0, 2)}{words(rng.randint(3, 9), rng, punctuate=True)}"
                 for i in range(max(1, size // 8))]
        return "\n".join(lines)
    if name == "search_code":
        return "\n".join(
            f"services/{rng.choice(('api', 'rates', 'billing'))}/mod{rng.randrange(40)}.py:{rng.randrange(1, 900)}: "
            f"{words(rng.randint(3, 10), rng, punctuate=True)}"
            for _ in range(max(1, size // 10))
        )
    return json.dumps({"passed": rng.randrange(400), "failed": rng.randrange(4), "log": words(size, rng, punctuate=True)})


def _arguments(rng: random.Random, name: str) -> dict[str, Any]:
    if name == "search_code":
        return {"pattern": rng.choice(("keepalive", "def retry", "selector:")), "path": "services/"}
    if name == "read_file":
        start = rng.randrange(1, 500)
        return {"path": f"services/api/mod{rng.randrange(40)}.py", "start": start, "end": start + 60}
    if name == "tail_logs":
        return {"service": rng.choice(("gateway", "tracker", "billing", "rates")), "minutes": rng.randint(5, 60)}
    return {"target": "tests/api"}


# ----------------------------------------------------------------------------------------------
# One conversation, format-free


@dataclass
class Call:
    number: int  # 1-based within the conversation; renderers make the ids from it
    name: str
    args: dict[str, Any]
    result: str
    result_as_blocks: bool  # Anthropic: tool_result content as text blocks, not a string
    is_error: bool  # Anthropic: only with block content


@dataclass
class Step:
    text: str | None  # what the assistant says beside its tool calls
    calls: list[Call]


@dataclass
class Exchange:
    question: str
    user_name: str | None  # OpenAI's optional ``name``
    question_as_blocks: bool
    steps: list[Step]
    answer: str
    answer_as_blocks: bool


@dataclass
class Conversation:
    seed: int
    system: str
    exchanges: list[Exchange]
    current: str
    pending: Step | None  # a tool step after the current question (the turn is in progress)


def conversation(seed: int, turns: int, *, end_mid_loop: bool = False,
                 tools: tuple[str, ...] = TOOL_NAMES) -> Conversation:
    """The conversation drawn from ``seed``: ``turns`` complete exchanges, then the current question
    (and with ``end_mid_loop`` a tool step after it). Tool calls name one of ``tools``."""
    rng = random.Random(seed)
    form = random.Random(f"{seed}:form")
    system = "You are Harbor, the platform team's assistant. " + words(160, rng, punctuate=True)
    count = 0

    def step() -> Step:
        nonlocal count
        calls = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            count += 1
            name = rng.choice(tools)
            calls.append(Call(count, name, _arguments(rng, name), "", False, False))
        text = None if rng.random() < 0.6 else "Let me check. " + words(rng.randint(3, 20), rng, punctuate=True)
        for c in calls:
            c.result = _tool_result(rng, c.name, rng.randint(30, 700))
            c.result_as_blocks = form.random() >= 0.6
            c.is_error = c.result_as_blocks and form.random() < 0.1
        return Step(text, calls)

    exchanges = []
    for t in range(1, turns + 1):
        question = f"Turn {t}. " + words(rng.randint(6, 80), rng, punctuate=True)
        user_name = "oncall_engineer" if rng.random() < 0.2 else None
        steps = [step() for _ in range(rng.choice((0, 1, 1, 2, 3)))]
        answer = words(rng.randint(10, 150), rng, punctuate=True)
        exchanges.append(Exchange(question, user_name, form.random() < 0.5, steps, answer, form.random() < 0.5))
    current = "Now the current question: " + words(40, rng, punctuate=True)
    return Conversation(seed, system, exchanges, current, step() if end_mid_loop else None)


# ----------------------------------------------------------------------------------------------
# Renderers


def openai_messages(conv: Conversation) -> list[dict[str, Any]]:
    """OpenAI chat dicts: system, then per exchange user / (assistant tool_calls, tool...)* / assistant."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": conv.system}]

    def step(s: Step) -> None:
        calls = [{"id": f"call_{conv.seed}_{c.number}", "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.args)}} for c in s.calls]
        msgs.append({"role": "assistant", "content": s.text, "tool_calls": calls})
        for c, call in zip(s.calls, calls):
            msgs.append({"role": "tool", "tool_call_id": call["id"], "content": c.result})

    for ex in conv.exchanges:
        user: dict[str, Any] = {"role": "user", "content": ex.question}
        if ex.user_name:
            user["name"] = ex.user_name
        msgs.append(user)
        for s in ex.steps:
            step(s)
        msgs.append({"role": "assistant", "content": ex.answer})
    msgs.append({"role": "user", "content": conv.current})
    if conv.pending:
        step(conv.pending)
    return msgs


def anthropic_messages(conv: Conversation) -> tuple[str, list[dict[str, Any]]]:
    """(system, messages) for the Messages API: a step is an assistant message of ``tool_use``
    blocks (after its text, if any) and a user message holding exactly their ``tool_result``s."""
    msgs: list[dict[str, Any]] = []

    def content(text: str, as_blocks: bool) -> str | list[dict[str, Any]]:
        return [{"type": "text", "text": text}] if as_blocks else text

    def step(s: Step) -> None:
        blocks: list[dict[str, Any]] = [] if s.text is None else [{"type": "text", "text": s.text}]
        results = []
        for c in s.calls:
            uid = f"toolu_{conv.seed}_{c.number}"
            blocks.append({"type": "tool_use", "id": uid, "name": c.name, "input": c.args})
            if c.result_as_blocks:
                results.append({"type": "tool_result", "tool_use_id": uid, "is_error": c.is_error,
                                "content": [{"type": "text", "text": c.result}]})
            else:
                results.append({"type": "tool_result", "tool_use_id": uid, "content": c.result})
        msgs.append({"role": "assistant", "content": blocks})
        msgs.append({"role": "user", "content": results})

    for ex in conv.exchanges:
        msgs.append({"role": "user", "content": content(ex.question, ex.question_as_blocks)})
        for s in ex.steps:
            step(s)
        msgs.append({"role": "assistant", "content": content(ex.answer, ex.answer_as_blocks)})
    msgs.append({"role": "user", "content": conv.current})
    if conv.pending:
        step(conv.pending)
    return conv.system, msgs


def langchain_messages(conv: Conversation) -> list[Any]:
    """SystemMessage, then per exchange HumanMessage / (AIMessage tool_calls, ToolMessage...)* /
    AIMessage, then the current HumanMessage."""
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

    msgs: list[BaseMessage] = [SystemMessage(conv.system)]

    def step(s: Step) -> None:
        calls = [{"name": c.name, "args": c.args, "id": f"call_{c.number}", "type": "tool_call"} for c in s.calls]
        msgs.append(AIMessage(content=s.text or "", tool_calls=calls))
        for c, call in zip(s.calls, calls):
            msgs.append(ToolMessage(c.result, tool_call_id=call["id"], name=c.name))

    for ex in conv.exchanges:
        msgs.append(HumanMessage(ex.question))
        for s in ex.steps:
            step(s)
        msgs.append(AIMessage(ex.answer))
    msgs.append(HumanMessage(conv.current))
    if conv.pending:
        step(conv.pending)
    return msgs


# ----------------------------------------------------------------------------------------------
# What the tests call


def openai_session(seed: int, turns: int, *, end_mid_loop: bool = False) -> list[dict[str, Any]]:
    return openai_messages(conversation(seed, turns, end_mid_loop=end_mid_loop))


def anthropic_session(seed: int, turns: int, *, end_mid_loop: bool = False) -> tuple[str, list[dict[str, Any]]]:
    return anthropic_messages(conversation(seed, turns, end_mid_loop=end_mid_loop))


def langchain_session(seed: int, turns: int) -> list[Any]:
    return langchain_messages(conversation(seed, turns))


#: The CLI payloads' one tool.
PAYLOAD_TOOLS = ("tail_logs",)


def openai_payload(seed: int = 1, turns: int = 12) -> dict[str, Any]:
    """A whole Chat Completions request body, as the CLI reads it."""
    messages = openai_messages(conversation(seed, turns, tools=PAYLOAD_TOOLS))
    return {"model": "gpt-4o", "temperature": 0, "tools": openai_tools(PAYLOAD_TOOLS), "messages": messages}


def anthropic_payload(seed: int = 2, turns: int = 12) -> dict[str, Any]:
    """A whole Messages request body, as the CLI reads it."""
    system, messages = anthropic_messages(conversation(seed, turns, tools=PAYLOAD_TOOLS))
    return {"model": "claude-sonnet-4-5-20250929", "max_tokens": 1024, "system": system,
            "tools": anthropic_tools(PAYLOAD_TOOLS), "messages": messages}


# ----------------------------------------------------------------------------------------------
# What a provider checks


def assert_openai_tool_order(out: list[dict[str, Any]]) -> None:
    """Every tool message answers a call made EARLIER; no assistant tool_calls lacks a result."""
    called: set[str] = set()
    pending: set[str] = set()
    for i, m in enumerate(out):
        if m["role"] == "tool":
            tid = m["tool_call_id"]
            assert tid in called, f"out[{i}] answers {tid!r}, which no earlier assistant message called"
            assert tid in pending, f"out[{i}] answers {tid!r} a second time"
            pending.discard(tid)
            continue
        assert not pending, f"out[{i}] ({m['role']}) comes before the results of {sorted(pending)}"
        for call in m.get("tool_calls") or ():
            called.add(call["id"])
            pending.add(call["id"])
    assert not pending, f"tool calls without results at the end: {sorted(pending)}"


def _blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
    return m["content"] if isinstance(m["content"], list) else []


def assert_anthropic_tool_order(out: list[dict[str, Any]]) -> None:
    """What the Messages API validates: user first; tool_result answers the previous message's
    tool_use; every tool_use is answered by the next message (unless it is the last one)."""
    assert out, "an empty request"
    assert out[0]["role"] == "user", f"the request starts with {out[0]['role']}"
    seen: set[str] = set()
    for i, m in enumerate(out):
        for b in _blocks(m):
            if b["type"] == "tool_result":
                tid = b["tool_use_id"]
                assert tid in seen, f"out[{i}]: tool_result {tid!r} precedes (or has no) tool_use"
                prev = _blocks(out[i - 1]) if i else []
                assert out[i - 1]["role"] == "assistant" and any(
                    x["type"] == "tool_use" and x["id"] == tid for x in prev
                ), f"out[{i}]: tool_result {tid!r} is not answering the previous assistant message"
        uses = [b["id"] for b in _blocks(m) if b["type"] == "tool_use"]
        seen.update(uses)
        if uses and i + 1 < len(out):
            answered = {b["tool_use_id"] for b in _blocks(out[i + 1]) if b["type"] == "tool_result"}
            assert set(uses) <= answered, f"out[{i}]: tool_use {sorted(set(uses) - answered)} unanswered"
