"""One agent-loop request in OpenAI Chat Completions form: the design review's 115-message case.

A system prompt, four tool schemas, one user ask, the assistant's plan, then 56 tool rounds (an
assistant message calling one tool, and that tool's result): 115 messages, the request an agent
framework sends on its 57th step, with the newest result waiting for the model. The rounds reuse ``session.py``'s generators (code reads,
log tails, test runs, search hits, database rows), so the texts and their token counts look like
the real thing; everything is seeded and built once per process.
"""

from __future__ import annotations

import functools
import json
import random

import session as sess

ROUNDS = 56
TOOLS = 4
SEED = 115


@functools.lru_cache(maxsize=None)
def _build(rounds: int, seed: int) -> tuple[tuple[dict, ...], tuple[dict, ...]]:
    rng = random.Random(seed)
    thing, env = "rate-engine", "prod"
    messages: list[dict] = [
        {"role": "system", "content": sess.system_prompt()},
        {"role": "user", "content": sess._user_message(rng, 1, thing, env)},
        {"role": "assistant", "content": "I will read the code, the logs and the tests before changing anything."},
    ]
    for r in range(rounds):
        content, call, result, _ = sess._tool_call_and_result(rng, r + 1, rng.randint(150, 900), thing, env)
        messages.append({"role": "assistant", "content": content, "tool_calls": [
            {"id": call["id"], "type": "function",
             "function": {"name": call["name"], "arguments": json.dumps(call["args"])}}]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return tuple(messages), tuple(sess.tool_schemas()[:TOOLS])


def request(rounds: int = ROUNDS, seed: int = SEED) -> tuple[list[dict], list[dict]]:
    """``(messages, tools)``: fresh lists (the dicts are shared; no adapter mutates them)."""
    messages, tools = _build(rounds, seed)
    return list(messages), list(tools)


if __name__ == "__main__":
    m, t = request()
    print(len(m), "messages,", len(t), "tools,", sum(len(x.get("content") or "") for x in m), "characters")
