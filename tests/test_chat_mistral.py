"""Issue 12 item 3: Mistral's request layout, checked against mistral-common's
``encode_chat_completion`` (the reference: vLLM serves Mistral models through it), and the
reusable prefix of the rendered prompt per turn.

Mistral's layout moves things: the system prompt and ``[AVAILABLE_TOOLS]`` are printed just
before the *last* user message, tool calls as ``[TOOL_CALLS]``, results as ``[TOOL_RESULTS]``.
ctxfast renders it with the chat template mistral-common generates for the tokenizer (its own
layout as Jinja) and counts the render with tekken's vocabulary (``open_models``).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ctxfast
from ctxfast import Budget, ChatTemplate, Tokenizer, chat

import open_models as om


@pytest.fixture(scope="module")
def tekken() -> Tokenizer:
    return Tokenizer.from_file(str(om.tekken_tokenizer_json()))


@pytest.fixture(scope="module")
def template() -> ChatTemplate:
    return ChatTemplate(om.mistral_template(), special_tokens={"bos_token": "<s>", "eos_token": "</s>"})


def test_the_tokenizer_agrees_with_mistral_common(tekken: Tokenizer) -> None:
    """The converted vocabulary counts text as mistral-common's Tekkenizer does."""
    inner = om._mistral_tokenizer().instruct_tokenizer.tokenizer
    for text in ["Hello, world!", "naïve café 😀 ‑ résumé", "def f(x):\n    return x ** 2\n", "  spaced   out  ",
                 '{"key": [1, 2, 3], "other": null}', "日本語のテキスト", "12345678901234567890"]:
        assert tekken.count(text) == len(inner.encode(text, bos=False, eos=False)), text


@pytest.mark.parametrize("window", [2048, 4096, 8192])
def test_fitted_requests_count_as_mistral_common_encodes_them(window: int, tekken: Tokenizer,
                                                              template: ChatTemplate) -> None:
    messages = om.mistral_ids(om.session(60, seed=window))
    out, fit = chat.fit_messages(messages, Budget(window, reserve=256), template=template, tokenizer=tekken,
                                 tools=om.TOOLS)
    assert fit.total == om.mistral_reference_count(out, om.TOOLS)
    assert fit.total <= window - 256
    assert fit.rungs_fired
    # The layout: system prompt and tools right before the last user message.
    last_inst = fit.prompt.rindex("[INST]")
    assert fit.prompt.rindex("[AVAILABLE_TOOLS]") < last_inst
    assert messages[0]["content"] in fit.prompt[last_inst:]
    assert "[TOOL_CALLS]" in fit.prompt and "[TOOL_RESULTS]" in fit.prompt


def test_a_template_that_wants_alternating_roles_gets_digests_merged(tekken: Tokenizer) -> None:
    """Mistral Nemo's published template refuses two user messages in a row; a digest then joins
    the user message beside it, and the request is still exact by that template's render."""
    source = (om.TEMPLATES / "mistralai-Mistral-Nemo-Instruct-2407.jinja").read_text()
    hub = ChatTemplate(source, special_tokens={"bos_token": "<s>", "eos_token": "</s>"})
    messages = om.mistral_ids(om.session(40, seed=7))
    out, fit = chat.fit_messages(messages, Budget(3000, reserve=256), template=hub, tokenizer=tekken, tools=om.TOOLS)
    assert fit.ledger.digested > 0 and fit.total <= 3000 - 256
    roles = [m["role"] for m in out if m["role"] in ("user", "assistant") and not m.get("tool_calls")]
    assert all(a != b for a, b in zip(roles[1:], roles[2:])), "user and assistant alternate"
    assert any("[compacted]" in m["content"] and m is not messages[i] for i, m in enumerate(out)
               if m["role"] == "user" and isinstance(m.get("content"), str))
    assert fit.prompt == hub.render(om.for_template(out), tools=om.TOOLS)
    assert fit.total == len(om.hf_tokenizer("mistral").encode(fit.prompt, add_special_tokens=False).ids)


def test_reusable_prefix_per_turn(tekken: Tokenizer, template: ChatTemplate) -> None:
    """A turn re-prefills from the first token that differs. Llama's layout appends, so a turn
    re-prefills about its new tokens; Mistral's moves the system prompt and the tools to the end,
    so every turn re-prefills them too."""
    llama = Tokenizer.from_file(str(om.tokenizer_json("llama3.1")))
    llama_template = ChatTemplate(om.template_source("llama3.1"), special_tokens=om.FAMILIES["llama3.1"][1])
    session = om.mistral_ids(om.session(12, seed=11))
    asks = [i for i, m in enumerate(session) if m["role"] == "user"]
    reprefill: dict[str, list[tuple[int, int]]] = {"mistral": [], "llama": []}
    for family, tok, tmpl in [("mistral", tekken, template), ("llama", llama, llama_template)]:
        previous = None
        for end in asks[3:]:
            _, fit = chat.fit_messages(session[: end + 1], 100_000, template=tmpl, tokenizer=tok, tools=om.TOOLS,
                                       template_kwargs={"date_string": "26 Jul 2024"} if family == "llama" else None)
            if previous is not None:
                shared = chat.reusable_prefix(previous, fit, tok)
                assert 0 < shared <= min(previous.total, fit.total)
                reprefill[family].append((fit.total - shared, fit.total - previous.total))
            previous = fit
    for again, new in reprefill["llama"]:
        assert again <= new + 8, "Llama re-prefills the new turn (and the generation prompt)"
    for again, new in reprefill["mistral"]:
        assert again > new + 300, "Mistral re-prefills the system prompt and the tool schemas"
    assert chat.reusable_prefix("same text", "same text", tekken) == tekken.count("same text")
    with pytest.raises(ctxfast.InvalidArgumentError, match="without a prompt"):
        chat.reusable_prefix(ctxfast.fit([ctxfast.Segment("a")], Budget(10)), "a", tekken)
    with pytest.raises(ctxfast.UnsupportedOperationError):
        chat.reusable_prefix("a", "b", len)  # type: ignore[arg-type]


def test_a_cut_that_lands_one_token_over_again_still_fits(tekken: Tokenizer, template: ChatTemplate) -> None:
    """Regression (found by a random search): under ``troubleshooting`` the kept render came back
    one token over the ceiling after every fit, each under a ceiling lowered by that one token,
    until the eight fits ran out and the request was refused. The ceiling is now lowered by more
    each time an overshoot comes back."""
    messages = om.mistral_ids(om.session(38, seed=243674))
    out, fit = chat.fit_messages(messages, Budget(8307, reserve=256), template=template, tokenizer=tekken,
                                 tools=om.TOOLS, policy="troubleshooting")
    assert fit.total == om.mistral_reference_count(out, om.TOOLS) <= 8307 - 256


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(exchanges=st.integers(1, 40), seed=st.integers(0, 10**6), window=st.integers(2500, 9000),
       policy=st.sampled_from(["agent", "context_window", "troubleshooting"]))
# Found by the search: troubleshooting's floors keep 1,922 tokens of diagnosis and the protected
# layers 435, more than 2,244 (a refusal, not a failure of the property).
@example(exchanges=33, seed=47617, window=2500, policy="troubleshooting")
def test_property_exact_against_mistral_common(exchanges: int, seed: int, window: int, policy: str,
                                               tekken: Tokenizer, template: ChatTemplate) -> None:
    messages = om.mistral_ids(om.session(exchanges, seed=seed))
    try:
        out, fit = chat.fit_messages(messages, Budget(window, reserve=256), template=template, tokenizer=tekken,
                                     tools=om.TOOLS, policy=policy)
    except ctxfast.Unfittable as e:
        # A refusal must be a true one: what the policy may not remove is over the ceiling.
        assert e.total > window - 256 and e.shortfall == e.total - (window - 256)
        return
    assert fit.total == om.mistral_reference_count(out, om.TOOLS) <= window - 256
