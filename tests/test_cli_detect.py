"""What ``ctxfast fit`` reads from the payload (issue 10, items 4 and 9; report #3, #7, #15):
the format from every field only one API defines (and a refusal when they disagree or are
absent), Responses and Gemini bodies refused by name, the encoding from ``model``, and the
reserve from ``max_tokens`` / ``max_completion_tokens``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tiktoken.model

from cli_support import invoke, squash, write
from ctxfast import Budget, Tokenizer
from ctxfast import anthropic as anthropic_adapter
from ctxfast import openai as openai_adapter
from ctxfast._cli_detect import Refusal, check_supported, detect, encoding_for_model, native_format
from sessions import anthropic_payload, assert_anthropic_tool_order, openai_payload

U = {"role": "user", "content": "hi"}
A = {"role": "assistant", "content": "hello"}
TOOL_USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]}
TOOL_RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
CALL = {"role": "assistant", "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}

ANTHROPIC_BODIES = {
    "tool_use and tool_result blocks": {"messages": [U, TOOL_USE, TOOL_RESULT]},
    "input_schema tools": {"messages": [U], "tools": [{"name": "read", "input_schema": {"type": "object"}}]},
    "claude model with max_tokens": {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [U]},
    "top-level system": {"system": "Be brief.", "messages": [U]},
    "image block with a source": {"messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}]},
    "tool_choice object": {"tool_choice": {"type": "any"}, "messages": [U]},
}
OPENAI_BODIES = {
    "tool_calls": {"messages": [U, CALL]},
    "tool message": {"messages": [U, {"role": "tool", "tool_call_id": "c1", "content": "r"}]},
    "system message": {"messages": [{"role": "system", "content": "s"}, U]},
    "developer message": {"messages": [{"role": "developer", "content": "s"}, U]},
    "function tools": {"messages": [U], "tools": [{"type": "function", "function": {"name": "f"}}]},
    "flat parameters tools": {"messages": [U], "tools": [{"name": "f", "parameters": {"type": "object"}}]},
    "gpt model": {"model": "gpt-4.1-mini", "messages": [U]},
    "o-series model": {"model": "o3-mini", "messages": [U]},
    "chatgpt model": {"model": "chatgpt-4o-latest", "messages": [U]},
    "max_completion_tokens": {"max_completion_tokens": 100, "messages": [U]},
    "image_url part": {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
}


@pytest.mark.parametrize("case", list(ANTHROPIC_BODIES))
def test_anthropic_signals(case: str) -> None:
    body = ANTHROPIC_BODIES[case]
    found = detect(body, body["messages"], None)
    assert (found.name, found.source) == ("anthropic", "detected") and found.reasons


@pytest.mark.parametrize("case", list(OPENAI_BODIES))
def test_openai_signals(case: str) -> None:
    body = OPENAI_BODIES[case]
    found = detect(body, body["messages"], None)
    assert (found.name, found.source) == ("openai", "detected") and found.reasons


def test_a_bare_list_is_detected_from_its_messages() -> None:
    assert detect([U, TOOL_USE, TOOL_RESULT], [U, TOOL_USE, TOOL_RESULT], None).name == "anthropic"
    assert detect([U, CALL], [U, CALL], None).name == "openai"


@pytest.mark.parametrize("body,needles", [
    ({"system": "s", "messages": [U, {"role": "tool", "tool_call_id": "c1", "content": "r"}]},
     ["Anthropic (top-level 'system')", "OpenAI (messages[1] has role 'tool'", "--format"]),
    ({"model": "claude-opus-4-1", "messages": [U, CALL]}, ["model 'claude-opus-4-1'", "messages[1] has tool_calls"]),
    ({"messages": [U, A]}, ["cannot tell", "--format openai or --format anthropic"]),
    ({"model": "llama-3-70b", "max_tokens": 100, "messages": [U]}, ["cannot tell", "--format"]),
], ids=["system and a tool message", "claude model and tool_calls", "no signal", "unknown model only"])
def test_disagreeing_or_absent_signals_ask_for_format(body: dict[str, Any], needles: list[str]) -> None:
    with pytest.raises(Refusal) as info:
        detect(body, body["messages"], None)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))
    # --format settles it.
    assert detect(body, body["messages"], "openai").source == "--format"


@pytest.mark.parametrize("body,needle", [
    ({"model": "gpt-4o", "input": [U]}, "Responses API"),
    ({"model": "gpt-4o", "instructions": "Be brief.", "input": "hi"}, "Responses API"),
    ([{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}], "Responses API"),
    ({"messages": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}, "Responses API"),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, "Gemini"),
    ([{"role": "model", "parts": [{"text": "hi"}]}], "Gemini"),
], ids=["input", "instructions", "function_call item", "input_text part", "contents", "parts"])
def test_responses_and_gemini_bodies_are_never_read_as_chat(body: Any, needle: str) -> None:
    """Read as chat messages (--format openai/anthropic) they are refused by name, pointing at the
    format that fits them (issue 11: before, they were refused as 'not fit yet')."""
    messages = body if isinstance(body, list) else body.get("messages")
    with pytest.raises(Refusal) as info:
        check_supported(body, messages)
    assert needle in str(info.value) and "--format responses" in str(info.value)


@pytest.mark.parametrize("body,expected", [
    ({"model": "gpt-4o", "input": [U]}, "responses"),
    ({"model": "gpt-4o", "instructions": "Be brief.", "input": "hi"}, "responses"),
    ([{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}], "responses"),
    ({"messages": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}, None),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, "gemini"),
    ({"systemInstruction": {"parts": [{"text": "s"}]}, "contents": []}, "gemini"),
    ([{"role": "model", "parts": [{"text": "hi"}]}], "gemini"),
    ({"messages": [U]}, None),
    ([U], None),
])
def test_responses_and_gemini_bodies_are_detected(body: Any, expected: str | None) -> None:
    found = native_format(body)
    assert (found[0] if found else None) == expected


@pytest.mark.parametrize("junk", [5, None, [], {}, "x", [[]], {"type": []}, {"type": {}}])
def test_junk_in_signal_fields_is_no_signal_and_no_crash(junk: Any) -> None:
    body = {"model": junk, "tools": [junk], "tool_choice": junk, "system": None,
            "messages": [{"role": "user", "content": [junk]}, {"role": "assistant", "content": junk, "type": junk}]}
    check_supported(body, body["messages"])
    with pytest.raises(Refusal, match="cannot tell"):
        detect(body, body["messages"], None)


# ----------------------------------------------------------------------------------------------
# Through the command line


def test_an_anthropic_body_without_system_is_fitted_as_anthropic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (report #3): without a top-level system it was read as OpenAI: an orphaned
    tool_result came out first, tools counted as 79 tokens instead of ~770, and exit status 0."""
    data = anthropic_payload()
    del data["system"]
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", data)
    window = 9000
    res = invoke(["fit", "p.json", "--window", str(window), "-o", "out.json"], monkeypatch, capsys)
    assert res.code == 0, res.err
    messages, fit = anthropic_adapter.fit_messages(None, data["messages"], Budget(window, 1024), tools=data["tools"],
                                                   tokenizer=Tokenizer.default(), model=data["model"])
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert out == {**data, "messages": messages}
    assert_anthropic_tool_order(out["messages"])
    assert dict(fit.trace.start)["tools"] >= 496  # the tool-use system prompt of the model is counted
    assert squash(res.out)[0].startswith("format anthropic, detected by model 'claude-sonnet-4-5")


@pytest.mark.parametrize("body,needle", [
    ({"system": "s", "messages": [U, {"role": "tool", "tool_call_id": "c1", "content": "r"}]}, "--format"),
    ({"messages": [U, A]}, "cannot tell"),
    ({"model": "gpt-4o", "instructions": "Be brief.", "input": [{"role": "tool"}]}, "input[0].role"),
    ({"contents": [{"role": "user", "parts": [{"foo": "hi"}]}]}, "contents[0].parts[0]"),
], ids=["disagree", "absent", "responses", "gemini"])
def test_undetectable_payloads_exit_2_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str], body: Any, needle: str) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", body)
    res = invoke(["fit", "p.json", "--window", "1000", "-o", "out.json"], monkeypatch, capsys)
    assert res.code == 2 and res.out == ""
    lines = res.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxfast: error: p.json: ") and needle in lines[0], res.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


def test_responses_body_is_refused_even_with_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Its 'instructions' would go uncounted: --format cannot make it a chat body."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", {"instructions": "s", "messages": [U]})
    res = invoke(["fit", "p.json", "--window", "1000", "--format", "openai"], monkeypatch, capsys)
    assert res.code == 2 and "Responses API" in res.err and "--format responses" in res.err


def test_format_help_says_how_detection_works(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(invoke(["fit", "--help"], monkeypatch, capsys).out.split())
    for needle in ("Default: detected", "input_schema", "claude", "tool_calls", "max_completion_tokens",
                   "asking for --format", "Gemini"):
        assert needle in text, needle


# ----------------------------------------------------------------------------------------------
# The encoding follows the model

MODELS = ["gpt-4", "gpt-4-0613", "gpt-4-turbo", "gpt-4-32k", "gpt-3.5-turbo", "gpt-3.5-turbo-0125", "gpt-35-turbo",
          "gpt-4o", "gpt-4o-mini", "gpt-4o-2024-08-06", "chatgpt-4o-latest", "gpt-4.1", "gpt-4.1-mini", "gpt-4.5-preview",
          "gpt-5", "gpt-5-mini", "o1", "o1-preview", "o3", "o3-mini", "o4-mini", "ft:gpt-4o-mini:org::abc",
          "ft:gpt-3.5-turbo:org::abc"]


@pytest.mark.parametrize("model", MODELS)
def test_encoding_for_model_agrees_with_tiktoken(model: str) -> None:
    assert encoding_for_model(model) == tiktoken.model.encoding_name_for_model(model)


def test_unknown_models_have_no_encoding() -> None:
    for model in ("llama-3-70b", "my-azure-deployment", "claude-sonnet-4-5", "gpt", ""):
        assert encoding_for_model(model) is None, model
    assert encoding_for_model("openai/gpt-4-0613") == "cl100k_base"  # a router's provider prefix


@pytest.mark.parametrize("model,encoding,note", [
    ("gpt-4-0613", "cl100k_base", "encoding cl100k_base, the encoding of 'gpt-4-0613'"),
    ("gpt-4o-mini", "o200k_base", "encoding o200k_base, the encoding of 'gpt-4o-mini'"),
    ("my-deployment", "o200k_base", "encoding o200k_base, the default: model 'my-deployment' is not one"),
])
def test_fit_counts_with_the_models_encoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str], model: str, encoding: str, note: str) -> None:
    """Regression (report #15): gpt-4-0613 was counted on o200k_base."""
    data = {**openai_payload(3, 4), "model": model}
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", data)
    res = invoke(["fit", "p.json", "--window", "100000", "--format", "openai", "--json"], monkeypatch, capsys)
    assert res.code == 0, res.err
    report = json.loads(res.out)
    _, fit = openai_adapter.fit_messages(data["messages"], Budget(100000), tools=data["tools"],
                                         tokenizer=Tokenizer.from_encoding(encoding))
    assert report["count"]["encoding"] == encoding and report["total"] == fit.total
    text = invoke(["fit", "p.json", "--window", "100000", "--format", "openai"], monkeypatch, capsys).out
    assert " ".join(text.split()).count(note) == 1, text[:400]


def test_encoding_option_wins_over_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", openai_payload(3, 4))
    res = invoke(["fit", "p.json", "--window", "100000", "--encoding", "cl100k_base", "--json"], monkeypatch, capsys)
    assert json.loads(res.out)["count"] == {"encoding": "cl100k_base", "encoding_source": "--encoding", "kind": "exact"}


def test_a_bad_encoding_is_blamed_on_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (report #9): it read "payload.json: unknown encoding ..."."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "payload.json", openai_payload(3, 4))
    res = invoke(["fit", "payload.json", "--window", "1000", "--encoding", "o200k"], monkeypatch, capsys)
    assert res.code == 2
    assert res.err.startswith("ctxfast: error: --encoding o200k: ") and "payload.json" not in res.err
    assert 'did you mean "o200k_base"' in res.err
    res = invoke(["count", "--encoding", "cl100", "payload.json"], monkeypatch, capsys)
    assert res.code == 2 and res.err.startswith("ctxfast: error: --encoding cl100: ")


# ----------------------------------------------------------------------------------------------
# The reserve follows max_tokens


@pytest.mark.parametrize("extra,reserve,source", [
    ({"max_tokens": 700}, 700, "max_tokens"),
    ({"max_completion_tokens": 900, "max_tokens": 700}, 900, "max_completion_tokens"),
    ({}, 0, "none"),
])
def test_reserve_defaults_to_the_payloads_max_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str], extra: dict[str, int],
                                                     reserve: int, source: str) -> None:
    """Regression (report #15): --reserve defaulted to 0 whatever the payload asked for."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", {**openai_payload(3, 4), **extra})
    res = invoke(["fit", "p.json", "--window", "5000", "--json"], monkeypatch, capsys)
    report = json.loads(res.out)
    assert (report["reserve"], report["reserve_source"], report["ceiling"]) == (reserve, source, 5000 - reserve)
    ceiling = next(line for line in squash(invoke(["fit", "p.json", "--window", "5000"], monkeypatch, capsys).out)
                   if line.startswith("ceiling"))
    said = f" from {source})" if source != "none" else ", no max_tokens given)"
    assert ceiling == f"ceiling {5000 - reserve:,} (window 5,000 − reserve {reserve:,}{said}"
    # An explicit --reserve wins, and the ceiling line needs no note.
    res = invoke(["fit", "p.json", "--window", "5000", "--reserve", "100", "--json"], monkeypatch, capsys)
    assert json.loads(res.out)["reserve_source"] == "--reserve" and json.loads(res.out)["ceiling"] == 4900


def test_anthropic_reserve_is_its_max_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", anthropic_payload(2, 3))  # max_tokens 1024
    report = json.loads(invoke(["fit", "p.json", "--window", "100000", "--json"], monkeypatch, capsys).out)
    assert (report["reserve"], report["reserve_source"]) == (1024, "max_tokens")
    assert report["count"] == {"encoding": "o200k_base", "encoding_source": "estimate", "kind": "estimate"}


@pytest.mark.parametrize("value,needle", [('"many"', "max_tokens must be a whole number"), ("-3", "negative"),
                                          ("true", "max_tokens"), ("2.5", "float")])
def test_a_bad_max_tokens_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str], value: str, needle: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.json").write_text('{"model": "gpt-4o", "max_tokens": %s, "messages": [{"role": "user", '
                                     '"content": "hi"}]}' % value, encoding="utf-8")
    res = invoke(["fit", "p.json", "--window", "1000"], monkeypatch, capsys)
    assert res.code == 2 and res.err.startswith("ctxfast: error: p.json: ") and needle in res.err, res.err
    # --reserve makes the payload's field irrelevant.
    assert invoke(["fit", "p.json", "--window", "1000", "--reserve", "0"], monkeypatch, capsys).code == 0


def test_a_max_tokens_over_the_window_names_the_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", {"model": "gpt-4o", "max_tokens": 4096, "messages": [U]})
    res = invoke(["fit", "p.json", "--window", "4000"], monkeypatch, capsys)
    assert res.code == 2 and len(res.err.splitlines()) == 1
    assert "max_tokens reserves 4,096" in res.err and "hint: raise --window above 4,096" in res.err


def test_fit_counts_the_payloads_named_tool_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A named tool_choice costs tokens (ctxfast.openai's rule); the command line passes it on."""
    from ctxfast import openai as oa

    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                               "parameters": {"type": "object", "properties": {}}}}]
    msgs = [{"role": "user", "content": "weather?"}]
    body = {"model": "gpt-4o", "messages": msgs, "tools": tools,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}
    (tmp_path / "p.json").write_text(json.dumps(body), encoding="utf-8")
    res = invoke(["fit", str(tmp_path / "p.json"), "--window", "10000", "--json", "-o", str(tmp_path / "o.json")],
                 monkeypatch, capsys)
    assert res.code == 0, res.err
    expected = oa.fit_messages(msgs, 10_000, tools=tools, tool_choice=body["tool_choice"])[1].total
    assert json.loads(res.out)["total"] == expected
    assert expected > oa.fit_messages(msgs, 10_000, tools=tools)[1].total
