"""tiktoken-shaped conveniences (issue 11 item 7), each checked against tiktoken itself:
special ids decode to their text, ``encode_batch``, ``n_vocab`` / ``max_token_value`` /
``eot_token``, the model table (``encoding_for_model``), and surrogate pairs joined as tiktoken
joins them (a lone surrogate stays a ``TextEncodingError``)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxfast
from ctxfast import Tokenizer
from helpers import ENCODINGS, raises_ctx

PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(params=ENCODINGS)
def pair(request: pytest.FixtureRequest, tiktoken_encodings: dict[str, Any]) -> tuple[Tokenizer, Any]:
    """(ctxfast tokenizer, tiktoken encoding) for one embedded encoding."""
    return Tokenizer.from_encoding(request.param), tiktoken_encodings[request.param]


# --------------------------------------------------------------------------------------------
# decode: special ids give their text


def test_every_special_id_decodes_as_tiktoken_does(pair: tuple[Tokenizer, Any]) -> None:
    """Regression (peer-suites #10): decode([100257]) raised 'special tokens are not decoded'."""
    tok, enc = pair
    assert enc.special_tokens_set  # the table is not empty
    for text in enc.special_tokens_set:
        (special,) = enc.encode(text, allowed_special="all")
        assert tok.decode([special]) == enc.decode([special]) == text


def test_specials_mixed_with_ordinary_ids(pair: tuple[Tokenizer, Any]) -> None:
    tok, enc = pair
    specials = " ".join(sorted(enc.special_tokens_set))
    text = f"<|endoftext|>Hello, 世界 {specials} 👍🏽<|endoftext|><|endoftext|>tail"
    ids = enc.encode(text, allowed_special="all")
    assert any(i >= tok.vocab_size for i in ids)  # specials really are in there
    assert tok.decode(ids) == enc.decode(ids) == text
    # A special between the two halves of a split character: the bytes stay apart, as tiktoken.
    broken = tok.encode("𓀀")
    assert len(broken) > 1
    ids = broken[:1] + [tok.eot_token] + broken[1:]  # type: ignore[list-item]
    assert tok.decode(ids) == enc.decode(ids)


def test_an_id_neither_rank_nor_special_is_refused_naming_it(pair: tuple[Tokenizer, Any]) -> None:
    tok, enc = pair
    assert tok.n_vocab is not None
    gaps = [i for i in range(tok.vocab_size or 0, tok.n_vocab) if i not in enc._special_tokens.values()]
    for bad in [*gaps, tok.n_vocab, 10_000_000]:
        with pytest.raises(KeyError):
            enc.decode([bad])  # tiktoken refuses it too
        with raises_ctx(ValueError, str(bad), "position 1") as info:
            tok.decode([100, bad, 100])
        assert isinstance(info.value, ctxfast.InvalidArgumentError)
    if enc.name == "cl100k_base":
        assert gaps == [100_256, *range(100_261, 100_276)]  # 100256 is unused in tiktoken's table too


# --------------------------------------------------------------------------------------------
# encode_batch


def test_encode_batch_equals_tiktoken(pair: tuple[Tokenizer, Any], corpora: dict[str, str]) -> None:
    tok, enc = pair
    texts = ["", "hello world", "日本語のテキスト", "<|endoftext|> is plain text", "a" * 5000]
    assert tok.encode_batch(texts) == enc.encode_ordinary_batch(texts)
    plain = [t for t in texts if "<|" not in t]
    assert tok.encode_batch(plain) == enc.encode_batch(plain)
    # Past count_many's parallel threshold (32 KB), and past one interrupt chunk in total.
    big = [corpora[name][i * 3000:(i + 1) * 3000] for name in corpora for i in range(40)]
    assert sum(len(t.encode()) for t in big) > 32 * 1024
    assert tok.encode_batch(big) == enc.encode_ordinary_batch(big)
    assert tok.encode_batch(big) == [tok.encode(t) for t in big]


def test_encode_batch_accepts_any_iterable(pair: tuple[Tokenizer, Any]) -> None:
    tok, _ = pair
    assert tok.encode_batch([]) == []
    assert tok.encode_batch(("a", "b")) == [tok.encode("a"), tok.encode("b")]
    assert tok.encode_batch(t for t in ["x y", "z"]) == [tok.encode("x y"), tok.encode("z")]


def test_encode_batch_bad_input_names_the_item() -> None:
    tok = Tokenizer.default()
    with raises_ctx(TypeError, "'texts'", "single str"):
        tok.encode_batch("abc")
    with raises_ctx(TypeError, "'texts[1]'"):
        tok.encode_batch(["ok", 5])  # type: ignore[list-item]
    with raises_ctx(TypeError, "'texts'"):
        tok.encode_batch(5)  # type: ignore[arg-type]
    with pytest.raises(ctxfast.TextEncodingError, match=r"texts\[2\].*index 1\b") as info:
        tok.encode_batch(["ok", "\ud83d\udc4d", "a\ud800"])
    assert (info.value.argument, info.value.index, info.value.position) == ("texts", 2, 1)


def test_encode_batch_needs_a_vocabulary(hf_tokenizer: Any) -> None:
    for tok in (Tokenizer.approximate(), Tokenizer.from_callable(len)):
        with pytest.raises(ctxfast.UnsupportedOperationError, match="encode"):
            tok.encode_batch(["a"])
    hf = Tokenizer.from_hf(hf_tokenizer)
    texts = ["The quick brown fox", "jumps over", ""]
    assert hf.encode_batch(texts) == [hf.encode(t) for t in texts]


# --------------------------------------------------------------------------------------------
# n_vocab, max_token_value, eot_token


def test_vocabulary_numbers_equal_tiktokens(pair: tuple[Tokenizer, Any]) -> None:
    tok, enc = pair
    assert tok.n_vocab == enc.n_vocab
    assert tok.max_token_value == enc.max_token_value
    assert tok.eot_token == enc.eot_token
    # vocab_size keeps its meaning: the ordinary tokens only.
    assert tok.vocab_size == len(enc._mergeable_ranks)
    assert tok.n_vocab == {"cl100k_base": 100_277, "o200k_base": 200_019}[enc.name]


def test_vocabulary_numbers_of_other_tokenizers(hf_tokenizer: Any) -> None:
    hf = Tokenizer.from_hf(hf_tokenizer)
    assert hf.n_vocab == hf.vocab_size == hf_tokenizer.get_vocab_size(with_added_tokens=True)
    assert hf.max_token_value == hf.n_vocab - 1  # type: ignore[operator]
    assert hf.eot_token is None
    for tok in (Tokenizer.approximate(), Tokenizer.from_callable(len)):
        assert (tok.n_vocab, tok.max_token_value, tok.eot_token) == (None, None, None)


# --------------------------------------------------------------------------------------------
# The model table

TIKTOKEN_MODELS = [
    "gpt-4", "gpt-4-0613", "gpt-4-turbo", "gpt-4-32k", "gpt-3.5-turbo", "gpt-3.5-turbo-0125", "gpt-3.5",
    "gpt-35-turbo", "gpt-35-turbo-16k", "gpt-4o", "gpt-4o-mini", "gpt-4o-2024-08-06", "chatgpt-4o-latest",
    "gpt-4.1", "gpt-4.1-mini", "gpt-4.5-preview", "gpt-5", "gpt-5-mini", "gpt-5.1", "o1", "o1-preview", "o3",
    "o3-mini", "o4-mini", "o4-mini-2025-04-16", "text-embedding-3-small", "text-embedding-3-large",
    "text-embedding-ada-002", "davinci-002", "babbage-002", "ft:gpt-4o-mini:org::abc", "ft:gpt-4o:org::x",
    "ft:gpt-3.5-turbo:org::abc", "ft:gpt-4-0613:org::abc", "ft:davinci-002:org::x",
]


@pytest.mark.parametrize("model", TIKTOKEN_MODELS)
def test_encoding_for_model_agrees_with_tiktoken(tiktoken: Any, model: str) -> None:
    expected = tiktoken.encoding_name_for_model(model)
    assert ctxfast.encoding_name_for_model(model) == expected
    assert Tokenizer.for_model(model).name == expected
    assert ctxfast.encoding_for_model(model).name == expected
    assert Tokenizer.for_model(model).encode("hello 世界") == tiktoken.encoding_for_model(model).encode("hello 世界")


def test_deliberate_differences_from_tiktokens_table(tiktoken: Any) -> None:
    # A gpt-4.1 fine-tune counts as gpt-4.1 does; tiktoken's "ft:gpt-4" prefix says cl100k_base.
    assert tiktoken.encoding_name_for_model("gpt-4.1-mini") == "o200k_base"
    assert tiktoken.encoding_name_for_model("ft:gpt-4.1-mini:org::x") == "cl100k_base"
    assert ctxfast.encoding_name_for_model("ft:gpt-4.1-mini:org::x") == "o200k_base"
    # gpt-oss: tiktoken's o200k_harmony, the same ordinary tokens as o200k_base.
    assert tiktoken.encoding_name_for_model("gpt-oss-120b") == "o200k_harmony"
    assert ctxfast.encoding_name_for_model("gpt-oss-120b") == "o200k_base"
    # Beyond tiktoken: a router's provider prefix, case and space.
    for model in ("openai/gpt-4o", " GPT-4o-mini ", "azure/gpt-35-turbo"):
        assert ctxfast.encoding_name_for_model(model) in ("o200k_base", "cl100k_base"), model


@pytest.mark.parametrize("model", ["", "gpt", "gpt-4.2", "llama-3-70b", "claude-sonnet-4-5", "text-davinci-003", "gpt2"])
def test_unknown_models_are_refused_naming_the_model(model: str) -> None:
    for call in (Tokenizer.for_model, ctxfast.encoding_for_model, ctxfast.encoding_name_for_model):
        with raises_ctx(ValueError, repr(model).replace("'", '"'), "from_encoding") as info:
            call(model)
        assert isinstance(info.value, ctxfast.InvalidArgumentError)


def test_for_model_bad_arguments() -> None:
    with raises_ctx(TypeError, "'model'"):
        Tokenizer.for_model(4)  # type: ignore[arg-type]
    with raises_ctx(TypeError, "'model'"):
        ctxfast.encoding_name_for_model(None)  # type: ignore[arg-type]
    with raises_ctx(ValueError, "'cache_capacity'"):
        ctxfast.encoding_for_model("gpt-4o", cache_capacity=-1)


def test_for_model_shares_the_encodings_cache_unless_given_a_capacity() -> None:
    shared = Tokenizer.for_model("gpt-4o")
    text = "for_model shares the process-wide o200k cache"
    before = Tokenizer.default().cache_info().misses
    shared.count(text)
    assert Tokenizer.default().cache_info().misses == before + 1
    private = Tokenizer.for_model("gpt-4", cache_capacity=10)
    assert private.cache_info().capacity == 10
    again = pickle.loads(pickle.dumps(private))
    assert again.name == "cl100k_base" and again.cache_info().capacity == 10


# --------------------------------------------------------------------------------------------
# Surrogate pairs are joined, as tiktoken joins them

PAIRED = "\ud83d\udc4d"  # 👍 as two UTF-16 halves


def first_lone(text: str) -> int | None:
    """The index of the first surrogate that is not the high half of a high-low pair."""
    i = 0
    while i < len(text):
        c = ord(text[i])
        if 0xD800 <= c <= 0xDBFF and i + 1 < len(text) and 0xDC00 <= ord(text[i + 1]) <= 0xDFFF:
            i += 2
            continue
        if 0xD800 <= c <= 0xDFFF:
            return i
        i += 1
    return None


def joined(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16")


def test_a_surrogate_pair_counts_as_its_character(pair: tuple[Tokenizer, Any]) -> None:
    """Regression (peer-suites, test_encode_surrogate_pairs): the pair raised 'lone surrogate'."""
    tok, enc = pair
    assert len(PAIRED) == 2 and joined(PAIRED) == "👍"
    ids = tok.encode(PAIRED)
    assert ids == enc.encode(PAIRED) == enc.encode("👍") == tok.encode("👍")
    text = f"say {PAIRED} and \ud83d\ude00 twice {PAIRED}"
    assert tok.encode(text) == enc.encode(text) == enc.encode(joined(text))
    assert tok.count(text) == tok.count(text, cache=False) == len(enc.encode(text))
    assert list(tok.count_many(["x", text])) == [1, len(enc.encode(text))]
    assert tok.encode_batch([text, PAIRED]) == [enc.encode(text), enc.encode(PAIRED)]
    assert tok.truncate(text, 100) is text  # fits: the same object comes back
    cut = tok.truncate(text, 3)
    assert joined(text).startswith(cut) and tok.count(cut) <= 3
    assert ctxfast.approximate_tokens(PAIRED * 4) == 1  # four characters
    assert Tokenizer.from_callable(len).count(PAIRED) == 1  # the callable sees the joined text


@pytest.mark.parametrize("text,position", [
    ("\ud83d", 0),
    ("ab\udc4d", 2),                  # a low half alone
    ("\udc4d\ud83d", 0),              # halves in the wrong order
    (f"{PAIRED}x\ud83d", 3),          # a pair, then a lone high half
    (f"{PAIRED}\ud83d\ud83d\udc4d", 2),  # two highs, then a low: the first high is lone
    ("😀\ud800", 1),                  # a real astral character is one index
])
def test_a_lone_surrogate_is_still_refused_at_its_index(text: str, position: int) -> None:
    assert first_lone(text) == position
    tok = Tokenizer.from_encoding("cl100k_base", cache_capacity=8)
    for call in (tok.count, tok.encode, lambda t: tok.truncate(t, 1), ctxfast.approximate_tokens):
        with pytest.raises(ctxfast.TextEncodingError, match=f"lone surrogate at index {position}\\b") as info:
            call(text)
        assert (info.value.argument, info.value.index, info.value.position) == ("text", None, position)
    with pytest.raises(ctxfast.TextEncodingError) as info:
        tok.count_many(["fine", PAIRED, text])
    assert (info.value.argument, info.value.index, info.value.position) == ("texts", 2, position)


surrogate = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
halves = st.lists(st.one_of(st.sampled_from(["a", " ", "日", "😀", "\n"]), surrogate,
                            st.just("\ud83d"), st.just("\udc4d")), max_size=24)


@PROPS
@given(chars=halves)
def test_any_mix_of_halves_matches_tiktoken_or_names_the_first_lone_one(
    tiktoken_encodings: dict[str, Any], chars: list[str]
) -> None:
    text = "".join(chars)
    tok = Tokenizer.from_encoding("o200k_base", cache_capacity=64)
    lone = first_lone(text)
    if lone is None:
        expected = tiktoken_encodings["o200k_base"].encode(text)
        assert tok.encode(text) == expected == tok.encode(joined(text))
        assert tok.count(text) == len(expected)
    else:
        with pytest.raises(ctxfast.TextEncodingError, match=f"index {lone}\\b"):
            tok.count(text)
