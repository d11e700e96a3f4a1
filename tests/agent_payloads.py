"""Agent conversations for the payload-validity tests, and the provider's structural rules as checks.

``draw(rng)`` makes one format-free conversation: a system prompt, 0-3 older exchanges (each a
user ask, 0-2 tool rounds and an answer) and the current turn, an ask followed by 0-12 tool
rounds (an agent loop), sometimes with a final answer. User asks may carry images beside their
text, rounds make 1-3 parallel calls, results are strings or text blocks (Anthropic: sometimes
with an image, sometimes with the user's text beside them). ``openai(conv)`` and
``anthropic(conv)`` render it (OpenAI rounds are sometimes followed by a developer note, Anthropic
rounds sometimes open with a thinking block).

``check_openai`` / ``check_anthropic`` validate a fitted request against what the API checks and
what ctxfast promises:

- each call has its results right after it (OpenAI: the tool messages that follow the assistant
  message answer exactly its calls; Anthropic: each ``tool_use`` is answered by a ``tool_result``
  in the next user message, and no result is an orphan);
- Anthropic: the request starts with a user message and roles alternate;
- no empty content and no empty text part / block;
- nothing lost: every output message is an input message (the caller's object, or a copy whose one
  string was shortened to a non-empty prefix and nothing else changed), a digest, or (Anthropic)
  such pieces merged into one user message; every unit of the input (exchange or tool round) is
  whole or gone; so every image and id survives in its message, or left with its unit or into a
  digest;
- the system prompt and the current turn kept;
- ``fit.total`` is the documented count of what is sent (Anthropic: plus 3 per merged piece, the
  documented upper bound), and ``fit.total <= ceiling``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from helpers import words

COMPACTED = "[compacted]"
IMAGE_URL = {"url": "data:image/png;base64,iVBORw0KGgo="}
IMAGE_SOURCE = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


@dataclass
class Call:
    id: str
    name: str
    args: dict[str, Any]
    result: str
    result_blocks: bool  # Anthropic: content as text blocks (with an image when result_image)
    result_image: bool


@dataclass
class Round:
    text: str | None
    calls: list[Call]
    user_text: str | None = None  # Anthropic: the user's words beside the results
    thinking: str | None = None  # Anthropic: a thinking block before the text
    note: str | None = None  # OpenAI: a developer message after the results


@dataclass
class Ask:
    text: str
    image: bool


@dataclass
class Exchange:
    ask: Ask
    rounds: list[Round]
    answer: str | None


@dataclass
class Conversation:
    system: str
    exchanges: list[Exchange] = field(default_factory=list)  # the last one is the current turn


def draw(rng: random.Random, *, max_old: int = 3, max_rounds: int = 12) -> Conversation:
    n = 0

    def text(lo: int, hi: int) -> str:
        return words(rng.randint(lo, hi), rng, punctuate=True)

    def round_() -> Round:
        nonlocal n
        calls = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            n += 1
            name = rng.choice(("read_file", "grep", "run_tests", "write_file"))
            args = {"path": f"src/mod{rng.randrange(30)}.py"}
            if name == "write_file":
                args["contents"] = text(20, 300)
            blocks = rng.random() < 0.4
            calls.append(Call(f"call_{n}", name, args, text(3, 500), blocks, blocks and rng.random() < 0.3))
        said = text(2, 25) if rng.random() < 0.4 else None
        return Round(said, calls, text(3, 15) if rng.random() < 0.1 else None,
                     text(5, 60) if rng.random() < 0.15 else None, text(3, 20) if rng.random() < 0.05 else None)

    def exchange(rounds: int, answer: bool) -> Exchange:
        return Exchange(Ask(text(4, 120), rng.random() < 0.25), [round_() for _ in range(rounds)],
                        text(5, 150) if answer else None)

    conv = Conversation("You are a coding agent. " + text(20, 200))
    for _ in range(rng.randint(0, max_old)):
        conv.exchanges.append(exchange(rng.choice((0, 1, 1, 2)), True))
    conv.exchanges.append(exchange(rng.randint(0, max_rounds), rng.random() < 0.3))
    return conv


# ----------------------------------------------------------------------------------------------
# Renderers


def openai(conv: Conversation) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": conv.system}]
    for ex in conv.exchanges:
        if ex.ask.image:
            msgs.append({"role": "user", "content": [{"type": "text", "text": ex.ask.text},
                                                     {"type": "image_url", "image_url": dict(IMAGE_URL)}]})
        else:
            msgs.append({"role": "user", "content": ex.ask.text})
        for r in ex.rounds:
            msgs.append({"role": "assistant", "content": r.text, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                for c in r.calls]})
            for c in r.calls:
                content: Any = [{"type": "text", "text": c.result}] if c.result_blocks else c.result
                msgs.append({"role": "tool", "tool_call_id": c.id, "content": content})
            if r.note:
                msgs.append({"role": "developer", "content": r.note})
        if ex.answer is not None:
            msgs.append({"role": "assistant", "content": ex.answer})
    return msgs


def anthropic(conv: Conversation) -> tuple[str, list[dict[str, Any]]]:
    msgs: list[dict[str, Any]] = []
    for ex in conv.exchanges:
        if ex.ask.image:
            msgs.append({"role": "user", "content": [{"type": "image", "source": dict(IMAGE_SOURCE)},
                                                     {"type": "text", "text": ex.ask.text}]})
        else:
            msgs.append({"role": "user", "content": ex.ask.text})
        for r in ex.rounds:
            blocks: list[dict[str, Any]] = [] if r.thinking is None else [
                {"type": "thinking", "thinking": r.thinking, "signature": "c2ln"}]
            blocks += [] if r.text is None else [{"type": "text", "text": r.text}]
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in r.calls]
            msgs.append({"role": "assistant", "content": blocks})
            results: list[dict[str, Any]] = []
            for c in r.calls:
                if c.result_blocks:
                    inner: list[dict[str, Any]] = [{"type": "text", "text": c.result}]
                    if c.result_image:
                        inner.append({"type": "image", "source": dict(IMAGE_SOURCE)})
                    results.append({"type": "tool_result", "tool_use_id": c.id, "content": inner})
                else:
                    results.append({"type": "tool_result", "tool_use_id": c.id, "content": c.result})
            if r.user_text:
                results.append({"type": "text", "text": r.user_text})
            msgs.append({"role": "user", "content": results})
        if ex.answer is not None:
            msgs.append({"role": "assistant", "content": ex.answer})
    return conv.system, msgs


# ----------------------------------------------------------------------------------------------
# Units, as the adapters' docstrings define them (an independent implementation)


def units(inp: list[dict[str, Any]], opens: Any, calls: Any, pin: bool) -> tuple[list[list[int]], set[int]]:
    """(the evictable units as lists of input indices, the protected indices): exchanges before
    the last ask; after it, the tool rounds between the first and the last call-making message.
    With `pin`, the first ask (unless it is the last) stands alone, protected."""
    protected = {i for i, m in enumerate(inp) if m["role"] in ("system", "developer")}
    starts = [i for i, m in enumerate(inp) if m["role"] == "user" and opens(m)]
    if pin and len(starts) > 1:
        protected.add(starts[0])
    out: list[list[int]] = []
    for a, b in zip(starts, starts[1:]):
        out.append([i for i in range(a, b) if i not in protected])
    if not starts:
        return out, protected | set(range(len(inp)))
    ask = starts[-1]
    makers = [i for i in range(ask + 1, len(inp)) if inp[i]["role"] == "assistant" and calls(inp[i])]
    current = set(range(ask, len(inp)))
    for a, b in zip(makers, makers[1:]):
        out.append([i for i in range(a, b) if i not in protected])
        current -= set(range(a, b))
    return out, protected | current


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def shortened(orig: Any, new: Any, key: Any = None) -> int | None:
    """How many strings differ between `orig` and `new`, when every difference is a text field
    (``text`` / ``content``) cut to a non-empty prefix; None when anything else differs."""
    if isinstance(orig, str) and isinstance(new, str):
        if orig == new:
            return 0
        ok = key in ("text", "content") and new and orig.startswith(new) and new.strip()
        return 1 if ok else None
    if isinstance(orig, dict) and isinstance(new, dict):
        if orig.keys() != new.keys():
            return None
        total = 0
        for k in orig:
            d = shortened(orig[k], new[k], k)
            if d is None:
                return None
            total += d
        return total
    if isinstance(orig, list) and isinstance(new, list):
        if len(orig) != len(new):
            return None
        total = 0
        for a, b in zip(orig, new):
            d = shortened(a, b, key)
            if d is None:
                return None
            total += d
        return total
    return 0 if orig == new else None


def pieces(inp: list[dict[str, Any]], out: list[dict[str, Any]], *, merged: bool,
           shortened_from: frozenset[int] = frozenset()) -> tuple[list[Any], int]:
    """Explain `out` in terms of `inp`: a list of input indices and ``COMPACTED`` digest texts,
    and how many pieces were merged into another message. Fails on anything unexplained.

    A shortened copy can be a prefix of more than one later input (a one-token "Queue" begins
    two user messages): among those it is taken for the one `shortened_from` names (the input
    indices the fit says it truncated), else for the first."""
    position = {id(m): i for i, m in enumerate(inp)}
    explained: list[Any] = []
    merges = 0
    nxt = 0
    for o, m in enumerate(out):
        if id(m) in position:
            assert position[id(m)] >= nxt, f"out[{o}] is out of order"
            nxt = position[id(m)] + 1
            explained.append(nxt - 1)
            continue
        if not merged:
            c = m.get("content")
            if m["role"] == "user" and isinstance(c, str) and c.startswith(COMPACTED) and set(m) == {"role", "content"}:
                explained.append(c)
                continue
            fits = [j for j in range(nxt, len(inp)) if shortened(inp[j], m) == 1]
            j = next((j for j in fits if j in shortened_from), fits[0] if fits else None)
            assert j is not None, f"out[{o}] is neither an input message, a shortened copy nor a digest"
            explained.append(j)
            nxt = j + 1
            continue
        blocks = _blocks(m.get("content"))
        assert blocks, f"out[{o}] has no content"
        k = 0
        parts = 0
        while k < len(blocks):
            b = blocks[k]
            if b.get("type") == "text" and b["text"].startswith(COMPACTED) and m["role"] == "user":
                explained.append(b["text"])
                k += 1
                parts += 1
                continue
            fits = [(j, d) for j in range(nxt, len(inp))
                    if inp[j]["role"] == m["role"] and (src := _blocks(inp[j]["content"]))
                    and (d := shortened(src, blocks[k:k + len(src)], "content")) in (0, 1)]
            assert fits, f"out[{o}].content[{k}] comes from no input message"
            j = next((j for j, d in fits if d == 1 and j in shortened_from), fits[0][0])
            explained.append(j)
            nxt = j + 1
            k += len(_blocks(inp[j]["content"]))
            parts += 1
        merges += parts - 1
    return explained, merges


def truncated_messages(fit: Any) -> frozenset[int]:
    """The input messages `fit` says it truncated: the OpenAI and Anthropic adapters make one
    record per message, so a truncated segment's ``meta["index"]`` is its message's."""
    return frozenset(t.segment.meta["index"] for t in fit.truncated if "index" in (t.segment.meta or {}))


def check_units(inp: list[dict[str, Any]], explained: list[Any], unit_list: list[list[int]], protected: set[int]) -> None:
    present = {p for p in explained if isinstance(p, int)}
    digests = [p for p in explained if isinstance(p, str)]
    assert protected <= present, f"protected messages {sorted(protected - present)} are missing"
    gone = 0
    for unit in unit_list:
        here = [i in present for i in unit]
        assert all(here) or not any(here), f"the unit {unit} was split: {here}"
        gone += not any(here)
    assert len(digests) <= gone, "more digests than units that left"


def check_openai(inp: list[dict[str, Any]], out: list[dict[str, Any]], fit: Any, ceiling: int, enc: Any, *,
                 pin: bool = False) -> None:
    assert out and fit.total <= ceiling
    i = 0
    while i < len(out):
        m = out[i]
        assert m["role"] != "tool", f"out[{i}] is a tool message that follows no call"
        ids = [c["id"] for c in m.get("tool_calls") or ()]
        content = m.get("content")
        if isinstance(content, str):
            assert content or ids, f"out[{i}] has empty content"
        elif isinstance(content, list):
            assert content and all(p.get("text") != "" for p in content), f"out[{i}] has an empty part"
        else:
            assert content is None and ids, f"out[{i}] has no content"
        answered = []
        while i + 1 < len(out) and out[i + 1]["role"] == "tool":
            i += 1
            answered.append(out[i]["tool_call_id"])
        assert sorted(answered) == sorted(ids), f"out[{i}]: calls {ids} answered by {answered}"
        i += 1
    explained, _ = pieces(inp, out, merged=False, shortened_from=truncated_messages(fit))
    opens = lambda m: True  # noqa: E731
    check_units(inp, explained, *units(inp, opens, lambda m: bool(m.get("tool_calls")), pin))
    assert fit.total == openai_total(out, enc), "fit.total is not the count of what is sent"


def check_anthropic(system: str, inp: list[dict[str, Any]], out: list[dict[str, Any]], fit: Any, ceiling: int,
                    enc: Any, *, pin: bool = False) -> None:
    assert out and fit.total <= ceiling
    assert out[0]["role"] == "user", "the request does not start with a user message"
    for i, m in enumerate(out):
        if i:
            assert m["role"] != out[i - 1]["role"], f"out[{i - 1}] and out[{i}] are both {m['role']}"
        blocks = _blocks(m["content"])
        assert blocks, f"out[{i}] has empty content"
        for j, b in enumerate(blocks):
            assert b["type"] != "text" or b["text"].strip(), f"out[{i}].content[{j}] is an empty text block"
            if b["type"] == "tool_result":
                prev = _blocks(out[i - 1]["content"]) if i else []
                assert any(x["type"] == "tool_use" and x["id"] == b["tool_use_id"] for x in prev), (
                    f"out[{i}].content[{j}] answers no tool_use of the previous message")
        uses = {b["id"] for b in blocks if b["type"] == "tool_use"}
        if uses and i + 1 < len(out):
            nxt = {b["tool_use_id"] for b in _blocks(out[i + 1]["content"]) if b["type"] == "tool_result"}
            assert uses <= nxt, f"out[{i}]: tool_use {sorted(uses - nxt)} unanswered"
        assert uses == set() or i + 1 < len(out) or m is inp[-1], f"out[{i}] ends the request unanswered"
    explained, merges = pieces(inp, out, merged=True, shortened_from=truncated_messages(fit))
    opens = lambda m: not any(b["type"] == "tool_result" for b in _blocks(m["content"]))  # noqa: E731
    calls = lambda m: any(b["type"] == "tool_use" for b in _blocks(m["content"]))  # noqa: E731
    check_units(inp, explained, *units(inp, opens, calls, pin))
    assert fit.total == anthropic_total(system, out, enc) + 3 * merges, "fit.total is not the documented count"


# ----------------------------------------------------------------------------------------------
# The documented counts of what is sent


def openai_total(messages: list[dict[str, Any]], enc: Any) -> int:
    T = lambda s: len(enc.encode_ordinary(s))  # noqa: E731
    n = 3
    for m in messages:
        n += 3 + T(m["role"])
        c = m.get("content")
        if isinstance(c, str):
            n += T(c)
        elif isinstance(c, list):
            for p in c:
                if p["type"] == "text":
                    n += T(p["text"])
                elif p["type"] == "image_url":
                    n += 85 if p["image_url"].get("detail") == "low" else 765
        for call in m.get("tool_calls") or ():
            n += T(call["function"]["name"]) + T(call["function"]["arguments"]) + 3
    return n


def _block_cost(b: dict[str, Any], T: Any) -> int:
    kind = b["type"]
    if kind == "text":
        return T(b["text"])
    if kind == "tool_use":
        return T(b["name"]) + T(json.dumps(b["input"], sort_keys=True))
    if kind == "tool_result":
        c = b.get("content", "")
        return T(c) if isinstance(c, str) else sum(_block_cost(x, T) for x in c)
    if kind == "image":
        return 1600
    if kind == "thinking":
        return 0
    raise AssertionError(f"no documented cost for {kind}")


def anthropic_total(system: str, messages: list[dict[str, Any]], enc: Any) -> int:
    T = lambda s: len(enc.encode_ordinary(s))  # noqa: E731
    return T(system) + sum(3 + sum(_block_cost(b, T) for b in _blocks(m["content"])) for m in messages)
