"""Properties of counting, encoding and truncation that hold for every text.

``st.text()`` never yields lone surrogates (its default alphabet excludes category Cs), so valid
text is tested with it and surrogates are injected explicitly where the error path is tested.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxfast
from ctxfast import Tokenizer

# Modest example counts keep the whole file to a few seconds; the agreement suite covers volume.
PROPS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Private caches, small enough that eviction happens during a run.
TOKENIZERS = {
    "o200k_base": Tokenizer.from_encoding("o200k_base", cache_capacity=64),
    "cl100k_base": Tokenizer.from_encoding("cl100k_base", cache_capacity=64),
}
NAMES = list(TOKENIZERS)

# Valid text: anything st.text() makes, plus runs of the characters pre-tokenizers treat specially.
valid_text = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from(list(" \t\n\r'sdlLmMvVeE0123456789aZ_😀日\u0301\u200d")), max_size=60),
)
surrogate = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


def assert_truncates_to_a_prefix(tok: Tokenizer, text: str, total: int, limit: int) -> str:
    """truncate(text, limit) is a prefix of text within the limit, and all of it when it fits."""
    cut = tok.truncate(text, limit)
    assert text.startswith(cut)
    assert tok.count(cut) <= limit
    if total <= limit:
        assert cut == text
    return cut


@pytest.mark.parametrize("name", NAMES)
@PROPS
@given(text=valid_text)
def test_count_is_len_encode(name: str, text: str) -> None:
    tok = TOKENIZERS[name]
    ids = tok.encode(text)
    assert tok.count(text) == len(ids)
    assert tok.count(text, cache=False) == len(ids)
    assert (len(ids) == 0) == (text == "")


@pytest.mark.parametrize("name", NAMES)
@PROPS
@given(text=valid_text)
def test_decode_encode_round_trip(name: str, text: str) -> None:
    tok = TOKENIZERS[name]
    assert tok.decode(tok.encode(text)) == text


@pytest.mark.parametrize("name", NAMES)
@PROPS
@given(text=valid_text, data=st.data())
def test_truncate_is_a_prefix_within_the_limit(name: str, text: str, data: st.DataObject) -> None:
    tok = TOKENIZERS[name]
    total = tok.count(text)
    limit = data.draw(st.integers(min_value=0, max_value=total + 3), label="limit")
    cut = assert_truncates_to_a_prefix(tok, text, total, limit)
    if total > limit:
        assert len(cut) < len(text)
    # more room never yields a shorter prefix
    assert len(tok.truncate(text, limit + 1)) >= len(cut)


@pytest.mark.parametrize("name", NAMES)
@PROPS
@given(texts=st.lists(valid_text, max_size=20))
def test_count_many_equals_counts(name: str, texts: list[str]) -> None:
    tok = TOKENIZERS[name]
    result = tok.count_many(texts)
    assert result.dtype.name == "int64"
    assert result.tolist() == [tok.count(t, cache=False) for t in texts]
    assert tok.count_many(texts, cache=False).tolist() == result.tolist()


@pytest.mark.parametrize("name", NAMES)
@PROPS
@given(text=valid_text)
def test_cached_count_equals_uncached(name: str, text: str) -> None:
    tok = TOKENIZERS[name]
    uncached = tok.count(text, cache=False)
    assert tok.count(text) == uncached  # fills (or hits) the cache
    assert tok.count(text) == uncached  # from the cache unless evicted meanwhile


@pytest.mark.parametrize("name", NAMES)
@PROPS
@given(before=st.text(), bad=surrogate, after=st.text())
def test_surrogate_is_a_text_encoding_error(name: str, before: str, bad: str, after: str) -> None:
    tok = TOKENIZERS[name]
    text = before + bad + after
    for call in (
        lambda: tok.count(text),
        lambda: tok.count(text, cache=False),
        lambda: tok.encode(text),
        lambda: tok.truncate(text, 3),
    ):
        with pytest.raises(ctxfast.TextEncodingError, match=f"index {len(before)}\\b") as info:
            call()
        assert isinstance(info.value, ValueError)
    with pytest.raises(ctxfast.TextEncodingError, match=r"texts\[1\]"):
        tok.count_many(["ok", text])


@st.composite
def text_with_surrogates(draw: st.DrawFn) -> str:
    """Arbitrary characters, surrogates allowed anywhere, at least one guaranteed."""
    chars = draw(st.lists(st.one_of(st.characters(), surrogate), max_size=30))
    at = draw(st.integers(min_value=0, max_value=len(chars)))
    chars.insert(at, draw(surrogate))
    return "".join(chars)


def first_lone_surrogate(text: str) -> int | None:
    """The index of the first surrogate that is not half of a high-low pair."""
    i = 0
    while i < len(text):
        c = ord(text[i])
        if 0xD800 <= c <= 0xDBFF and i + 1 < len(text) and 0xDC00 <= ord(text[i + 1]) <= 0xDFFF:
            i += 2
        elif 0xD800 <= c <= 0xDFFF:
            return i
        else:
            i += 1
    return None


@PROPS
@given(text=text_with_surrogates())
def test_any_text_with_a_lone_surrogate_is_refused(text: str) -> None:
    """A lone surrogate is refused at its index; text whose surrogates all pair up counts as the
    joined characters (issue 11: pairs are joined as tiktoken joins them)."""
    lone = first_lone_surrogate(text)
    if lone is None:
        joined = text.encode("utf-16", "surrogatepass").decode("utf-16")
        for tok in TOKENIZERS.values():
            assert tok.count(text) == tok.count(joined)
        assert ctxfast.approximate_tokens(text) == ctxfast.approximate_tokens(joined)
        return
    for tok in TOKENIZERS.values():
        with pytest.raises(ctxfast.TextEncodingError, match=f"index {lone}\\b"):
            tok.count(text)
    with pytest.raises(ctxfast.TextEncodingError, match=f"index {lone}\\b"):
        ctxfast.approximate_tokens(text)


# --------------------------------------------------------------------------------------------
# The estimate and the Hugging Face engine obey the same laws


@PROPS
@given(text=valid_text, cpt=st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0, 8.0]), data=st.data())
def test_approximate_laws(text: str, cpt: float, data: st.DataObject) -> None:
    tok = Tokenizer.approximate(cpt)
    total = tok.count(text)
    assert total == math.ceil(len(text) / cpt)
    if cpt == 4.0:
        assert total == ctxfast.approximate_tokens(text)
    limit = data.draw(st.integers(min_value=0, max_value=total + 2), label="limit")
    assert_truncates_to_a_prefix(tok, text, total, limit)


@PROPS
@given(text=valid_text, data=st.data())
def test_hf_laws(hf_tokenizer: Any, hf_reference: Any, text: str, data: st.DataObject) -> None:
    tok = _hf_counter(hf_tokenizer)
    ids = tok.encode(text)
    assert ids == list(hf_reference.encode(text, add_special_tokens=False).ids)
    assert tok.count(text) == tok.count(text, cache=False) == len(ids)
    assert tok.decode(ids) == text
    limit = data.draw(st.integers(min_value=0, max_value=len(ids) + 2), label="limit")
    assert_truncates_to_a_prefix(tok, text, len(ids), limit)


_HF_COUNTERS: dict[int, Tokenizer] = {}


def _hf_counter(hf_tokenizer: Any) -> Tokenizer:
    """One ctxfast counter per fixture object, built on first use."""
    key = id(hf_tokenizer)
    if key not in _HF_COUNTERS:
        _HF_COUNTERS[key] = Tokenizer.from_hf(hf_tokenizer, cache_capacity=64)
    return _HF_COUNTERS[key]
