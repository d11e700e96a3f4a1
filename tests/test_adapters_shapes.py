"""Shape checks before counting (issue 10, report #4 and #7): a payload ctxfast would miscount is
refused with an error naming the message, and the APIs the adapters do not read (OpenAI
Responses, Gemini) are declined clearly."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from ctxfast import ArgumentTypeError, CtxfastError, InvalidArgumentError, anthropic, openai
from ctxfast.openai import AUDIO_TOKENS_PER_SECOND, FILE_TOKENS

U = {"role": "user", "content": "hello"}

GEMINI_CONTENTS = [
    {"role": "user", "parts": [{"text": "Summarise the incident. " * 400}]},
    {"role": "model", "parts": [{"functionCall": {"name": "read_logs", "args": {"service": "api"}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "read_logs", "response": {"log": "x " * 4000}}}]},
]
RESPONSES_INPUT = [
    {"role": "user", "content": "Fix the failing test."},
    {"type": "function_call", "call_id": "call_1", "name": "run_tests", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "1 failed " * 500},
]


def fails(exc: type[CtxfastError], *needles: str, call: Any) -> str:
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    for needle in needles:
        assert needle in msg, msg
    assert len(msg) < 800, "an error message stays short"
    return msg


# ----------------------------------------------------------------------------------------------
# Report #4: wrong shapes were counted as almost nothing


def test_gemini_contents_are_refused_not_counted_as_143_tokens() -> None:
    fails(InvalidArgumentError, "messages[0]", "Gemini", "ctxfast.gemini.fit_contents", "Chat Completions",
          call=lambda: openai.fit_messages(GEMINI_CONTENTS, 16_000))
    fails(InvalidArgumentError, "messages[0]", "Gemini", "ctxfast.gemini.fit_contents",
          call=lambda: anthropic.fit_messages(None, GEMINI_CONTENTS, 16_000))
    fails(InvalidArgumentError, "messages[1]", "role 'model'", "Gemini",
          call=lambda: openai.fit_messages([U, {"role": "model", "content": "hi"}], 16_000))


def test_text_instead_of_content_is_refused() -> None:
    """{'role': 'user', 'text': 'x' * 40000} counted 7 tokens."""
    msg = fails(InvalidArgumentError, "messages[0].text", "'content'",
                call=lambda: openai.fit_messages([{"role": "user", "text": "x" * 40_000}], 1000))
    assert "x" * 50 not in msg
    fails(InvalidArgumentError, "messages[1].contents", "Did you mean 'content'",
          call=lambda: openai.fit_messages([U, {"role": "assistant", "contents": "hi"}], 1000))
    fails(InvalidArgumentError, "messages[0].text",
          call=lambda: anthropic.fit_messages(None, [{"role": "user", "content": "a", "text": "b"}], 1000))
    fails(InvalidArgumentError, "messages[0]", "no 'content'",
          call=lambda: anthropic.fit_messages(None, [{"role": "user"}], 1000))


def test_fields_without_text_are_left_alone() -> None:
    msgs = [{"role": "user", "content": "hi", "metadata": {"n": 1}, "refusal": None},
            {"role": "assistant", "content": "ok", "annotations": [], "audio": None}]
    out, _ = openai.fit_messages(msgs, 1000)
    assert out == msgs


@pytest.mark.parametrize("role,suggestion", [("usr", "user"), ("Assistant", "assistant"), ("tools", "tool"),
                                             ("sytem", "system"), ("developper", "developer")])
def test_unknown_openai_roles_suggest_the_nearest(role: str, suggestion: str) -> None:
    fails(InvalidArgumentError, "messages[1].role", f"did you mean '{suggestion}'",
          call=lambda: openai.fit_messages([U, {"role": role, "content": "hi"}], 1000))


def test_unknown_anthropic_roles() -> None:
    fails(InvalidArgumentError, "messages[0].role", "did you mean 'user'",
          call=lambda: anthropic.fit_messages(None, [{"role": "usr", "content": "hi"}], 1000))
    fails(InvalidArgumentError, "messages[1].role", "system prompt is not a message", "fit_messages(system",
          call=lambda: anthropic.fit_messages(None, [U, {"role": "system", "content": "x"}], 1000))
    fails(InvalidArgumentError, "messages[1].role", "ctxfast.openai",
          call=lambda: anthropic.fit_messages(None, [U, {"role": "tool", "content": "x"}], 1000))


@pytest.mark.parametrize("kind,suggestion", [("imag_url", "image_url"), ("txt", "text"), ("audio", None)])
def test_unknown_openai_part_types_are_refused(kind: str, suggestion: str | None) -> None:
    msg = fails(InvalidArgumentError, "messages[0].content[1]", "text, image_url, input_audio, file, refusal",
                call=lambda: openai.fit_messages(
                    [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": kind, kind: "x"}]}], 1000))
    assert (f"did you mean '{suggestion}'" in msg) == (suggestion is not None)


def test_unknown_anthropic_block_types_are_refused() -> None:
    fails(InvalidArgumentError, "messages[0].content[0]", "did you mean 'text'", "tool_result",
          call=lambda: anthropic.fit_messages(None, [{"role": "user", "content": [{"type": "txt", "txt": "a"}]}], 1000))
    result = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_use", "id": "x"}]}
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}
    fails(InvalidArgumentError, "messages[2].content[0].content[0]", "text, image, document, search_result",
          call=lambda: anthropic.fit_messages(None, [U, use, {"role": "user", "content": [result]}], 1000))


def _cost(fit_total: int, base: int) -> int:
    return fit_total - base


def test_known_openai_parts_are_counted_by_their_rule() -> None:
    tok_base = openai.fit_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], 10**6)[1].total
    wav = "A" * 64_000  # 48,000 bytes: 1.5 s at 32,000 B/s
    audio = [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                          {"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}}]}]
    assert _cost(openai.fit_messages(audio, 10**6)[1].total, tok_base) == math.ceil(1.5 * AUDIO_TOKENS_PER_SECOND)
    pdf = [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                        {"type": "file", "file": {"file_id": "file-abc"}}]}]
    assert _cost(openai.fit_messages(pdf, 10**6)[1].total, tok_base) == FILE_TOKENS
    refusal = [U, {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}]
    plain = [U, {"role": "assistant", "content": [{"type": "text", "text": "I can't help with that."}]}]
    assert openai.fit_messages(refusal, 10**6)[1].total == openai.fit_messages(plain, 10**6)[1].total


def test_known_anthropic_blocks_are_counted(tiktoken_encodings: dict[str, Any]) -> None:
    enc = tiktoken_encodings["o200k_base"]
    T = lambda s: len(enc.encode_ordinary(s))  # noqa: E731
    base = anthropic.fit_messages(None, [U], 10**6)[1].total

    def cost(block: dict[str, Any]) -> int:
        return anthropic.fit_messages(None, [{"role": "user", "content": [{"type": "text", "text": "hello"}, block]}],
                                      10**6)[1].total - base

    doc = {"type": "document", "title": "Runbook", "source": {"type": "text", "media_type": "text/plain",
                                                               "data": "Restart the gateway first."}}
    assert cost(doc) == T("Runbook") + T("Restart the gateway first.")
    found = {"type": "search_result", "source": "https://x/doc", "title": "Doc",
             "content": [{"type": "text", "text": "the answer is 42"}]}
    assert cost(found) == T("Doc") + T("https://x/doc") + T("the answer is 42")
    server = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "https://x", "title": "X", "encrypted_content": "abc"}]}
    assert cost(server) == T(json.dumps(server, sort_keys=True))
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}}
    assert cost(pdf) == anthropic.IMAGE_TOKENS


# ----------------------------------------------------------------------------------------------
# Report #7: the Responses API and Gemini are declined clearly


def test_responses_input_items_are_declined() -> None:
    msg = fails(InvalidArgumentError, "messages[1]", "Responses API", "function_call",
                "ctxfast.openai.fit_responses", "Chat Completions",
                call=lambda: openai.fit_messages(RESPONSES_INPUT, 16_000))
    assert "has no 'role'" not in msg
    fails(InvalidArgumentError, "messages[1]", "Responses API",
          call=lambda: anthropic.fit_messages(None, RESPONSES_INPUT, 16_000))
    fails(InvalidArgumentError, "messages[0].content[0]", "'input_text'", "Responses API",
          call=lambda: openai.fit_messages([{"role": "user", "content": [{"type": "input_text", "text": "x"}]}], 1000))


def test_whole_bodies_are_declined_or_redirected() -> None:
    responses = {"model": "gpt-5", "instructions": "Be brief.", "input": RESPONSES_INPUT}
    fails(ArgumentTypeError, "Responses", "fit_responses_body", call=lambda: openai.fit_messages(responses, 1000))
    fails(ArgumentTypeError, "Gemini", call=lambda: openai.fit_messages({"contents": GEMINI_CONTENTS}, 1000))
    fails(ArgumentTypeError, "body['messages']", call=lambda: openai.fit_messages({"messages": [U]}, 1000))
    fails(ArgumentTypeError, "body['messages']",
          call=lambda: anthropic.fit_messages(None, {"system": "s", "messages": [U]}, 1000))


def test_an_anthropic_response_object_is_not_a_message() -> None:
    reply = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "hi"}],
             "model": "claude-sonnet-4-5", "stop_reason": "end_turn"}
    fails(InvalidArgumentError, "messages[1]", "response object",
          call=lambda: anthropic.fit_messages(None, [U, reply], 1000))


def test_tools_as_a_dict_says_a_list_of_dicts() -> None:
    """Report #21: tools={...} said "tools[0] must be a dict, not str"."""
    tool = {"type": "function", "function": {"name": "f"}}
    msg = fails(ArgumentTypeError, "argument 'tools' must be a list of dicts", call=lambda: openai.fit_messages(
        [U], 1000, tools=tool))  # type: ignore[arg-type]
    assert "tools[0]" not in msg
    fails(ArgumentTypeError, "argument 'tools' must be a list of dicts",
          call=lambda: anthropic.fit_messages(None, [U], 1000, tools={"name": "f"}))  # type: ignore[arg-type]
