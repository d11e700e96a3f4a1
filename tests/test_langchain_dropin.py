"""ctxfast.langchain.trim_messages as a drop-in for LangChain's: the call forms and arguments
LangChain's own function takes (issue 11 item 6)."""

from __future__ import annotations

import pytest

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda

from ctxfast.langchain import trim_messages


def words(messages: list[BaseMessage]) -> int:
    """A list counter: one token per word, plus 1 per message."""
    return sum(len(str(m.content).split()) + 1 for m in messages)


def test_empty_history_is_empty() -> None:
    assert trim_messages([], max_tokens=10) == []
    assert trim_messages([], max_tokens=10, token_counter=words, strategy="first") == []


def test_runnable_form_pipes_a_prompt_value() -> None:
    trimmer = trim_messages(max_tokens=8, token_counter=words)
    assert isinstance(trimmer, Runnable)
    prompt = ChatPromptTemplate.from_messages([("system", "be brief"), ("human", "{a}"), ("ai", "one two"), ("human", "{b}")])
    chain = prompt | trimmer | RunnableLambda(lambda ms: [m.type for m in ms])
    # system (3) + the last question (3): the first exchange (3 + 3) does not fit in 8.
    assert chain.invoke({"a": "old ask", "b": "new ask"}) == ["system", "human"]


def test_message_likes_are_converted() -> None:
    def gen():
        yield ("system", "be brief")
        yield {"role": "user", "content": "old ask"}
        yield ("ai", "old answer")
        yield "new ask"

    out = trim_messages(gen(), max_tokens=6, token_counter=words)
    assert [(m.type, m.content) for m in out] == [("system", "be brief"), ("human", "new ask")]


def test_same_objects_come_back() -> None:
    msgs = [HumanMessage("a b"), AIMessage("c")]
    out = trim_messages(msgs, max_tokens=100, token_counter=words)
    assert all(a is b for a, b in zip(out, msgs, strict=True))


def test_end_on_drops_trailing_messages() -> None:
    msgs = [SystemMessage("s"), HumanMessage("q1"), AIMessage("a1"), HumanMessage("q2"), AIMessage("a2")]
    out = trim_messages(msgs, max_tokens=100, token_counter=words, end_on="human")
    assert out == msgs[:4]
    out = trim_messages(msgs, max_tokens=100, token_counter=words, end_on=[HumanMessage], strategy="first")
    assert out == msgs[:4]


def test_bad_counter_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="token_counter"):
        trim_messages([HumanMessage("x")], max_tokens=10, token_counter=5)


def test_first_allow_partial_cuts_the_next_message_at_lines() -> None:
    msgs = [HumanMessage("a b"), AIMessage("one\ntwo three\nfour five six"), HumanMessage("later")]
    out = trim_messages(msgs, max_tokens=8, token_counter=words, strategy="first", allow_partial=True)
    assert out[0] is msgs[0] and out[1].content == "one\ntwo three\n" and len(out) == 2
    split = trim_messages(
        msgs, max_tokens=6, token_counter=words, strategy="first", allow_partial=True,
        text_splitter=lambda t: t.split(" "),
    )
    assert [m.content for m in split] == ["a b", "one\ntwo"]  # the splitter's first piece


def test_first_never_ends_inside_a_tool_round() -> None:
    call = {"name": "f", "args": {}, "id": "c1", "type": "tool_call"}
    msgs = [HumanMessage("q"), AIMessage("", tool_calls=[call]), ToolMessage("r " * 20, tool_call_id="c1"), AIMessage("done")]
    # [q, call] alone fits, but a call without its result is not a request a provider takes.
    out = trim_messages(msgs, max_tokens=5, token_counter=words, strategy="first")
    assert out == msgs[:1]


def test_first_with_the_native_counter_counts_the_whole_list() -> None:
    msgs = [HumanMessage("hello there"), AIMessage("hi"), HumanMessage("bye")]
    full = trim_messages(msgs, max_tokens=10_000).fit.total
    assert trim_messages(msgs, max_tokens=full, strategy="first") == msgs
    assert trim_messages(msgs, max_tokens=full - 1, strategy="first") == msgs[:2]


def test_last_allow_partial_keeps_the_back_of_the_message_before() -> None:
    msgs = [SystemMessage("s"), HumanMessage("q1"), AIMessage("one\ntwo three\nfour five"), HumanMessage("q2")]
    # system 2 + q2 2 = 4; the back line of the answer ("four five", 3) fits in 7, two lines do not.
    out = trim_messages(msgs, max_tokens=7, token_counter=words, allow_partial=True)
    assert out[0] is msgs[0] and out[-1] is msgs[-1] and out[1].content == "four five" and len(out) == 3
    assert msgs[2].content == "one\ntwo three\nfour five"  # a copy was cut
    started = trim_messages(msgs, max_tokens=7, token_counter=words, allow_partial=True, start_on="human")
    assert started == [msgs[0], msgs[3]]


def test_last_allow_partial_never_starts_at_a_tool_result() -> None:
    call = {"name": "f", "args": {}, "id": "c1", "type": "tool_call"}
    msgs = [HumanMessage("q"), AIMessage("", tool_calls=[call]), ToolMessage("r", tool_call_id="c1"), AIMessage("done now")]
    # [result, answer] is 5 and would fit, but a result without its call is not sent.
    out = trim_messages(msgs, max_tokens=5, token_counter=words, allow_partial=True, include_system=False)
    assert out == msgs[3:]


def test_last_allow_partial_keeps_the_system_message_or_raises() -> None:
    import ctxfast

    msgs = [SystemMessage("a b c d e"), HumanMessage("q")]
    with pytest.raises(ctxfast.Unfittable, match="system"):
        trim_messages(msgs, max_tokens=3, token_counter=words, allow_partial=True)


def test_a_list_counters_per_call_priming_is_counted_once() -> None:
    """ChatOpenAI.get_num_tokens_from_messages adds 3 reply-priming tokens per call. Charged
    once per exchange, a history that fits exactly was trimmed and fit.total overstated."""

    class Model:
        def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int:
            return 3 + words(messages)

    msgs = [SystemMessage("s"), HumanMessage("q1"), AIMessage("a1"), HumanMessage("q2"), AIMessage("a2 b")]
    budget = Model().get_num_tokens_from_messages(msgs)
    out = trim_messages(msgs, max_tokens=budget, token_counter=Model())
    assert out == msgs and out.fit.total == budget
    out = trim_messages(msgs, max_tokens=budget - 1, token_counter=Model())
    assert out == [msgs[0], msgs[3], msgs[4]]


def test_the_default_counter_counts_images_as_the_openai_adapter_does() -> None:
    import ctxfast.openai

    url = "https://example.com/cat.png"
    lc = [HumanMessage([{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": url, "detail": "low"}}])]
    oa = [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": url, "detail": "low"}}]}]
    ours = trim_messages(lc, max_tokens=10_000).fit.total
    assert ours == ctxfast.openai.fit_messages(oa, 10_000)[1].total
    std = [HumanMessage([{"type": "text", "text": "what is this?"}, {"type": "image", "url": url}])]
    assert trim_messages(std, max_tokens=10_000).fit.total == ours - 85 + 765  # size unknown: the estimate
