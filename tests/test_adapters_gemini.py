"""Issue 11 item 4: Gemini ``generateContent`` payloads (``ctxfast.gemini``).

The property: random Gemini conversations (exchanges, agent loops of ``functionCall`` /
``functionResponse`` rounds, with and without ids, repeated names, parallel calls) fitted at
random budgets under several policies come out valid (``check_gemini``: every response content
right after the model content whose calls it answers, answering all of them; no empty part;
kept contents the caller's own or a shortened copy; the ask kept), within the ceiling, with the
input untouched; or raise a clean ``Unfittable``. Then the counting rules (all estimates), the
pairing errors and a CLI round trip.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_support import invoke, write
from ctxfast import ArgumentTypeError, Budget, InvalidArgumentError, Policy, Tokenizer, Unfittable, gemini

WORDS = "alpha beta gamma delta weather paris rome file line error build test result".split()
TOOLS = [{"functionDeclarations": [{"name": "weather", "description": "Get the weather",
                                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}]
SYSTEM = {"parts": [{"text": "Be brief."}]}
TRUNCATE = Policy.from_toml_str(
    'name = "t"\n[[rungs]]\nname = "bodies.truncate"\nlayers = ["tool_result", "conversation"]\n'
    'order = "largest"\naction = "truncate"\nmin_tokens = 4\n'
    '[[rungs]]\nname = "history.drop"\nlayers = ["conversation", "tool_result"]\norder = "oldest"\naction = "drop"\n'
)
POLICIES: list[Any] = ["agent", "context_window", "ranked", TRUNCATE]


def text(r: random.Random, n: int) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(1, n)))


def user(t: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": t}]}


def model(t: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"text": t}]}


def rounds(r: random.Random, n: int, ids: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(n):
        use_ids = r.random() < 0.5
        calls = []
        for _ in range(r.randint(1, 3)):
            ids.append(len(ids))
            call: dict[str, Any] = {"name": r.choice(["weather", "read"]), "args": {"q": text(r, 3)}}
            if use_ids:
                call["id"] = f"fc_{ids[-1]}"
            calls.append(call)
        parts: list[dict[str, Any]] = [{"functionCall": c} for c in calls]
        if r.random() < 0.3:
            parts.insert(0, {"text": text(r, 10)})
        out.append({"role": "model", "parts": parts})
        responses = [{"functionResponse": {**({"id": c["id"]} if "id" in c else {}), "name": c["name"],
                                           "response": {"result": text(r, 40)}}} for c in calls]
        out.append({"role": "user", "parts": responses})
    return out


def conversation(seed: int) -> list[dict[str, Any]]:
    r = random.Random(seed)
    contents: list[dict[str, Any]] = []
    ids: list[int] = []
    for _ in range(r.randint(0, 3)):
        contents.append(user(text(r, 30)))
        contents += rounds(r, r.randint(0, 1), ids)
        contents.append(model(text(r, 40)))
    ask = user(text(r, 20))
    if r.random() < 0.3:
        ask["parts"].append({"inlineData": {"mimeType": "image/png", "data": "AAAA"}})
    contents.append(ask)
    contents += rounds(r, r.randint(0, 5), ids)
    if r.random() < 0.5:
        contents.append(model(text(r, 20)))
    return contents


def _strings(x: Any) -> list[str]:
    if isinstance(x, str):
        return [x]
    if isinstance(x, dict):
        return [s for v in x.values() for s in _strings(v)]
    if isinstance(x, list):
        return [s for v in x for s in _strings(v)]
    return []


def _shortened(a: dict[str, Any], b: dict[str, Any]) -> bool:
    sa, sb = _strings(a), _strings(b)
    changed = [(x, y) for x, y in zip(sa, sb) if x != y]
    return (len(sa) == len(sb) and len(a["parts"]) == len(b["parts"]) and len(changed) == 1
            and len(changed[0][1]) < len(changed[0][0]) and changed[0][0].startswith(changed[0][1][:8]))


def _calls(c: dict[str, Any], kind: str) -> list[tuple[Any, str]]:
    return [(p[kind].get("id"), p[kind]["name"]) for p in c["parts"] if kind in p]


def check_gemini(inp: list[dict[str, Any]], out: list[dict[str, Any]]) -> None:
    """What the API requires of ``contents``, and what ctxfast promises."""
    where: list[int | None] = []
    p = 0
    for o in out:
        k = next((k for k in range(p, len(inp)) if inp[k] is o or inp[k] == o), None)
        if k is None:
            k = next((k for k in range(p, len(inp)) if _shortened(inp[k], o)), None)
        if k is None:
            assert o["role"] == "user" and len(o["parts"]) == 1 and o["parts"][0]["text"].strip(), o
        else:
            p = k + 1
        where.append(k)
        assert o["parts"], o
        for part in o["parts"]:
            assert "text" not in part or part["text"].strip(), o
    for n, o in enumerate(out):
        answers = _calls(o, "functionResponse")
        if answers:
            prev = out[n - 1] if n else None
            assert prev is not None and prev["role"] == "model", f"responses without their call: {o}"
            assert sorted(map(str, _calls(prev, "functionCall"))) == sorted(map(str, answers)), (prev, o)
        if _calls(o, "functionCall") and where[n] is not None and where[n] + 1 < len(inp):
            follows = inp[where[n] + 1]
            if _calls(follows, "functionResponse"):
                assert n + 1 < len(out) and where[n + 1] == where[n] + 1, f"call without its responses: {o}"
    ask = max(k for k, c in enumerate(inp) if c["role"] == "user" and not _calls(c, "functionResponse"))
    assert ask in where


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), fraction=st.floats(0.05, 1.1), policy=st.sampled_from(POLICIES))
def test_fitted_contents_are_always_valid(seed: int, fraction: float, policy: Any) -> None:
    contents = conversation(seed)
    before = copy.deepcopy(contents)
    full = gemini.fit_contents(contents, 10**7, system_instruction=SYSTEM, tools=TOOLS)[1].total
    budget = max(1, int(full * fraction))
    try:
        out, fit = gemini.fit_contents(contents, budget, system_instruction=SYSTEM, tools=TOOLS, policy=policy)
    except Unfittable as e:
        assert e.total > e.ceiling
    else:
        assert fit.total <= fit.ceiling == budget
        check_gemini(contents, out)
    assert contents == before


def test_the_validator_catches_what_it_checks() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}
    resp = {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}
    contents = [user("hi"), call, resp]
    for broken in ([user("hi"), resp], [user("hi"), call], [call, resp], [user("hi"), user(" "), call, resp]):
        with pytest.raises(AssertionError):
            check_gemini(contents, broken)
    check_gemini(contents, contents)


# ----------------------------------------------------------------------------------------------
# Counting (estimates on o200k_base)

def n(s: str) -> int:
    return len(tiktoken.get_encoding("o200k_base").encode(s))


def test_text_contents_system_instruction_and_tools_are_counted() -> None:
    contents = [user("What is the weather in Paris?"), model("Sunny.")]
    _, fit = gemini.fit_contents(contents, 10**6, system_instruction=SYSTEM, tools=TOOLS)
    decl = json.dumps(TOOLS[0]["functionDeclarations"][0], sort_keys=True)
    assert fit.total == (3 + n("system") + n("Be brief.")) + (3 + n("user") + n("What is the weather in Paris?")) + (
        3 + n("model") + n("Sunny.")) + n(decl)
    assert gemini.fit_contents(contents, 10**6, system_instruction="Be brief.", tools=TOOLS)[1].total == fit.total


def test_function_parts_and_media_are_counted_by_their_rules() -> None:
    base = gemini.fit_contents([user("hi")], 10**6)[1].total
    call = {"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"city": "Paris"}}}]}
    resp = {"role": "user", "parts": [{"functionResponse": {"name": "weather", "response": {"t": "sun"}}}]}
    total = gemini.fit_contents([user("hi"), call, resp], 10**6)[1].total
    assert total - base == (3 + n("model") + 3 + n("weather") + n('{"city": "Paris"}')) + (
        3 + n("user") + 3 + n("weather") + n('{"t": "sun"}'))
    image = {"role": "user", "parts": [{"text": "hi"}, {"inline_data": {"mime_type": "image/png", "data": "AAAA"}}]}
    assert gemini.fit_contents([image], 10**6)[1].total == base + gemini.MEDIA_TOKENS
    audio = {"role": "user", "parts": [{"text": "hi"}, {"inlineData": {"mimeType": "audio/mp3", "data": "A" * 64_000}}]}
    assert gemini.fit_contents([audio], 10**6)[1].total == base + 3 * gemini.AUDIO_TOKENS_PER_SECOND


def test_a_caller_counter_counts_the_text() -> None:
    _, fit = gemini.fit_contents([user("a b c")], 10**6, tokenizer=lambda s: len(s))
    assert fit.total == 3 + len("user") + len("a b c")


# ----------------------------------------------------------------------------------------------
# Pairing and shapes

CALL = {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {}}}]}
RESP = {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"r": "x"}}}]}


@pytest.mark.parametrize("contents,needles", [
    ([user("go"), RESP], ["contents[1].parts[0].functionResponse", "no model content"]),
    ([user("go"), CALL, {"role": "user", "parts": [{"functionResponse": {"name": "other", "response": {}}}]}],
     ["contents[2].parts[0].functionResponse", "named 'other' in contents[1]"]),
    ([user("go"), CALL, user("wait"), RESP], ["contents[3]", "contents[2]", "stands between"]),
    ([user("go"), {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "read", "args": {}}}]},
      {"role": "user", "parts": [{"functionResponse": {"id": "b", "name": "read", "response": {}}}]}],
     ["contents[2].parts[0].functionResponse", "with that id"]),
    ([{"role": "assistant", "parts": [{"text": "x"}]}], ["contents[0].role", "'model'"]),
    ([{"role": "user", "content": "x"}], ["contents[0]", "ctxfast.openai.fit_messages"]),
    ([{"role": "user", "parts": [{"txt": "x"}]}], ["contents[0].parts[0]", "did you mean 'text'"]),
    ([{"role": "user", "parts": [{"text": "x", "inlineData": {}}]}], ["contents[0].parts[0]", "2 data fields"]),
])
def test_bad_contents_are_refused_by_path(contents: list[Any], needles: list[str]) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        gemini.fit_contents(contents, 10**6)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))
    assert "\\x00" not in str(info.value)


def test_ids_pair_before_names_and_names_pair_in_order() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"n": 1}}},
                                       {"functionCall": {"name": "read", "args": {"n": 2}}}]}
    resp = {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"n": 1}}},
                                      {"functionResponse": {"name": "read", "response": {"n": 2}}}]}
    assert gemini.fit_contents([user("go"), call, resp], 10**6)[0][1:] == [call, resp]
    third = {"role": "user", "parts": [*resp["parts"], {"functionResponse": {"name": "read", "response": {}}}]}
    with pytest.raises(InvalidArgumentError, match=r"contents\[2\]\.parts\[2\]"):
        gemini.fit_contents([user("go"), call, third], 10**6)


def test_wrong_argument_types_are_named() -> None:
    with pytest.raises(ArgumentTypeError, match="fit_body"):
        gemini.fit_contents({"contents": []}, 1000)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="system_instruction"):
        gemini.fit_contents([user("x")], 1000, system_instruction=5)
    with pytest.raises(InvalidArgumentError, match="'contents' is empty"):
        gemini.fit_contents([], 1000)


def test_body_helper_keeps_the_other_fields() -> None:
    body = {"contents": [user("hi")], "system_instruction": SYSTEM, "generationConfig": {"temperature": 0}}
    fitted, fit = gemini.fit_body(body, 10**6)
    assert fitted == body and fitted is not body
    assert fit.total == gemini.fit_contents([user("hi")], 10**6, system_instruction=SYSTEM)[1].total


def _fits(call: Any) -> bool:
    try:
        call()
    except Unfittable:
        return False
    return True


def test_cli_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    contents = conversation(11)
    body = {"systemInstruction": SYSTEM, "tools": TOOLS, "generationConfig": {"maxOutputTokens": 50},
            "contents": contents}
    full = gemini.fit_body(body, 10**7)[1].total
    window = next(w for w in (full * k // 10 + 50 for k in range(3, 11))
                  if _fits(lambda: gemini.fit_body(body, Budget(w, 50))))
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", body)
    res = invoke(["fit", "p.json", "--window", str(window), "-o", "out.json"], monkeypatch, capsys)
    assert res.code == 0, res.err
    assert res.out.startswith("format   gemini, detected by top-level 'contents'")
    assert "an estimate: Gemini's tokenizer is not public" in res.out
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    expected, _ = gemini.fit_body(body, Budget(window, 50), tokenizer=Tokenizer.default())
    assert out == expected
    assert {k: v for k, v in out.items() if k != "contents"} == {k: v for k, v in body.items() if k != "contents"}
    check_gemini(contents, out["contents"])
    res = invoke(["fit", "p.json", "--window", str(window), "--format", "gemini", "-q"], monkeypatch, capsys)
    assert res.code == 0, res.err


@pytest.mark.parametrize("policy", ["agent", "context_window", "ranked"])
def test_without_a_user_message_the_last_unit_is_protected(policy: str) -> None:
    """Regression: with no ask nothing was protected, and a small budget returned empty contents."""
    big = {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"r": "word " * 200}}}]}
    with pytest.raises(Unfittable):
        gemini.fit_contents([CALL, big], 50, policy=policy)
    assert gemini.fit_contents([CALL, big], 500, policy=policy)[0] == [CALL, big]


def test_a_digest_names_the_call_it_stands_for() -> None:
    """Regression: the digest's tool facts (the first call's name and args) reach the digest; a
    refactor once reset them to None just after reading them, and digests said 'tool()'."""
    contents = [user("find the weather in Paris and Rome")]
    for k in range(6):
        contents.append({"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"city": f"c{k}"}}}]})
        contents.append({"role": "user", "parts": [{"functionResponse": {"name": "weather",
                                                                           "response": {"result": "sunny " * 60}}}]})
    _, fit = gemini.fit_contents(contents, 300, policy="agent")
    made = [s.text for s in [*fit.kept, *(e.segment for e in fit.evicted)]]
    digests = [t for t in made if t.startswith("[compacted]")]
    assert len(digests) >= 3, fit.explain()
    assert all('called weather({"city": "c' in d for d in digests), digests
