"""Every constructor and method of ctxfast.Tokenizer (SPEC section 2) and its bad-input contract
(SPEC section 9): each error is a CtxfastError and the matching builtin, and names the argument."""

from __future__ import annotations

import importlib.metadata
import math
import re
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ctxfast
from ctxfast import Tokenizer
from helpers import raises_ctx

EMOJI_CJK = "😀 👨‍👩‍👧‍👦 日本語のテキスト 𓀀𓀁 🇯🇵 e\u0301 漢字とかな"


def unique_text(label: str = "") -> str:
    """A text no other test has counted, so shared-cache counters move by exactly our calls."""
    return f"{label} unique text {uuid.uuid4().hex} for the cache"


@pytest.fixture
def private() -> Tokenizer:
    """An o200k_base tokenizer with its own cache, so counters start at zero."""
    return Tokenizer.from_encoding("o200k_base", cache_capacity=1000)


# --------------------------------------------------------------------------------------------
# Module attributes


def test_version_and_build_profile() -> None:
    assert isinstance(ctxfast.__version__, str)
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", ctxfast.__version__)
    assert ctxfast.__version__ == importlib.metadata.version("ctxfast")
    assert isinstance(ctxfast.build_profile, str) and ctxfast.build_profile
    assert ctxfast.build_profile in {"release", "debug", "profiling", "dev", "quick"}


def test_default_cache_capacity_is_documented_value() -> None:
    assert isinstance(ctxfast.default_cache_capacity, int)
    assert ctxfast.default_cache_capacity > 0
    assert Tokenizer.default().cache_info().capacity == ctxfast.default_cache_capacity


def test_every_error_class_derives_from_ctxfast_error() -> None:
    expected_builtin = {
        ctxfast.InvalidArgumentError: ValueError,
        ctxfast.ArgumentTypeError: TypeError,
        ctxfast.TextEncodingError: ValueError,
        ctxfast.TokenizerLoadError: ValueError,
        ctxfast.TokenizerFileNotFoundError: FileNotFoundError,
        ctxfast.UnsupportedOperationError: NotImplementedError,
        ctxfast.TokenizationError: RuntimeError,
        ctxfast.CounterError: RuntimeError,
    }
    for cls, builtin in expected_builtin.items():
        assert issubclass(cls, ctxfast.CtxfastError), cls
        assert issubclass(cls, builtin), cls


# --------------------------------------------------------------------------------------------
# Constructors


def test_default_is_o200k_base() -> None:
    tok = Tokenizer.default()
    assert tok.name == "o200k_base"
    assert tok.is_exact is True
    assert tok.vocab_size == Tokenizer.from_encoding("o200k_base").vocab_size
    text = "Hello, world! The default encoding is o200k_base."
    assert tok.encode(text) == Tokenizer.from_encoding("o200k_base").encode(text)
    # o200k and cl100k disagree here, so the assertion above really pins the encoding
    assert tok.encode(text) != Tokenizer.from_encoding("cl100k_base").encode(text)
    assert tok.encode("hello world") == [24912, 2375]


def test_default_shares_one_cache() -> None:
    first, second = Tokenizer.default(), Tokenizer.default()
    text = unique_text("shared")
    first.count(text)
    before = second.cache_info()
    assert second.count(text) == first.count(text, cache=False)
    after = second.cache_info()
    assert after.hits == before.hits + 1
    assert after.misses == before.misses
    assert first.cache_info() == after
    # from_encoding without a capacity uses the same process-wide cache
    shared = Tokenizer.from_encoding("o200k_base")
    shared.count(text)
    assert Tokenizer.default().cache_info().hits == after.hits + 1


def test_default_with_capacity_has_private_cache() -> None:
    own = Tokenizer.default(cache_capacity=10)
    assert own.cache_info().capacity == 10
    assert own.cache_info().entries == 0
    text = unique_text("private")
    shared_before = Tokenizer.default().cache_info()
    own.count(text)
    own.count(text)
    assert own.cache_info().hits == 1 and own.cache_info().misses == 1
    shared_after = Tokenizer.default().cache_info()
    assert (shared_after.hits, shared_after.misses) == (shared_before.hits, shared_before.misses)


@pytest.mark.parametrize(("name", "vocab"), [("o200k_base", 199_998), ("cl100k_base", 100_256)])
def test_from_encoding(name: str, vocab: int) -> None:
    tok = Tokenizer.from_encoding(name)
    assert tok.name == name
    assert tok.vocab_size == vocab
    assert tok.is_exact is True
    assert repr(tok) == f"Tokenizer({name})"
    assert tok.count("The quick brown fox jumps over the lazy dog.") == 10


@pytest.mark.parametrize("bad", ["p50k_base", "O200K_BASE", "", "o200k_base "])
def test_from_encoding_unknown_name(bad: str) -> None:
    with raises_ctx(ValueError, "o200k_base", "cl100k_base", repr(bad).strip("'")) as info:
        Tokenizer.from_encoding(bad)
    assert isinstance(info.value, ctxfast.InvalidArgumentError)


def test_from_encoding_wrong_type() -> None:
    with raises_ctx(TypeError, "'name'"):
        Tokenizer.from_encoding(200)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Hugging Face tokenizers

HF_TEXTS = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife.",
    "Hello world",
    "",
    "  leading and trailing  \n\t",
    EMOJI_CJK,
    "numbers 1234567890 and punctuation!?;:",
]


def hf_ids(ref: Any, text: str) -> list[int]:
    return list(ref.encode(text, add_special_tokens=False).ids)


def check_hf(tok: Tokenizer, ref: Any, prose: str) -> None:
    texts = HF_TEXTS + [prose[10_000:12_000], prose[50_000:50_300]]
    for text in texts:
        expected = hf_ids(ref, text)
        assert tok.encode(text) == expected, text
        assert tok.count(text) == len(expected), text
        assert tok.count(text, cache=False) == len(expected), text
    assert tok.count_many(texts).tolist() == [len(hf_ids(ref, t)) for t in texts]
    assert tok.name == "huggingface:bpe"
    assert tok.is_exact is True
    assert tok.vocab_size == ref.get_vocab_size(with_added_tokens=True)
    assert repr(tok) == "Tokenizer(huggingface:bpe)"


def test_hf_reference_is_not_trivial(hf_tokenizer: Any, hf_reference: Any, prose_corpus: str) -> None:
    """The fixture's own settings would add a BOS, truncate to 16 and pad to 32; the counter must
    ignore all three, so a long text must count more than 16 with no BOS."""
    text = prose_corpus[10_000:12_000]
    padded = hf_tokenizer.encode(text)
    assert len(padded.ids) == 32 and sum(padded.attention_mask) == 16
    assert padded.ids[0] == hf_tokenizer.token_to_id("<bos>")
    assert len(hf_ids(hf_reference, text)) > 100


def test_from_file(hf_tokenizer_file: Path, hf_reference: Any, prose_corpus: str) -> None:
    check_hf(Tokenizer.from_file(hf_tokenizer_file), hf_reference, prose_corpus)
    check_hf(Tokenizer.from_file(str(hf_tokenizer_file)), hf_reference, prose_corpus)


def test_from_json(hf_tokenizer: Any, hf_reference: Any, prose_corpus: str) -> None:
    check_hf(Tokenizer.from_json(hf_tokenizer.to_str()), hf_reference, prose_corpus)


def test_from_hf(hf_tokenizer: Any, hf_reference: Any, prose_corpus: str) -> None:
    check_hf(Tokenizer.from_hf(hf_tokenizer), hf_reference, prose_corpus)


def test_from_hf_cache_capacity(hf_tokenizer: Any) -> None:
    tok = Tokenizer.from_hf(hf_tokenizer, cache_capacity=7)
    assert tok.cache_info().capacity == 7
    assert Tokenizer.from_hf(hf_tokenizer).cache_info().capacity == ctxfast.default_cache_capacity


def test_hf_encode_decode_round_trip(hf_tokenizer: Any) -> None:
    tok = Tokenizer.from_hf(hf_tokenizer)
    for text in HF_TEXTS:
        assert tok.decode(tok.encode(text)) == text


def test_hf_decode_out_of_vocabulary(hf_tokenizer: Any) -> None:
    tok = Tokenizer.from_hf(hf_tokenizer)
    assert tok.vocab_size is not None
    bad = tok.vocab_size + 5
    with raises_ctx(ValueError, str(bad)):
        tok.decode([1, 2, bad])


def test_hf_truncate(hf_tokenizer: Any, prose_corpus: str) -> None:
    tok = Tokenizer.from_hf(hf_tokenizer)
    for text in (EMOJI_CJK, prose_corpus[20_000:20_500]):
        total = tok.count(text)
        for n in range(total + 2):
            cut = tok.truncate(text, n)
            assert text.startswith(cut)
            assert tok.count(cut) <= n
        assert tok.truncate(text, total) is text


def test_from_file_missing(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "tokenizer.json"
    with raises_ctx(FileNotFoundError, str(path)) as info:
        Tokenizer.from_file(path)
    assert isinstance(info.value, ctxfast.TokenizerFileNotFoundError)
    with raises_ctx(FileNotFoundError, str(path)):
        Tokenizer.from_file(str(path))


def test_from_file_malformed(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"version": "1.0", "model": ', encoding="utf-8")
    with raises_ctx(ValueError, str(path)) as info:
        Tokenizer.from_file(path)
    assert isinstance(info.value, ctxfast.TokenizerLoadError)


def test_from_file_is_a_directory(tmp_path: Path) -> None:
    with raises_ctx(ValueError, str(tmp_path)):
        Tokenizer.from_file(tmp_path)


@pytest.mark.parametrize(
    "text",
    ["", "{not json", "[]", "null", '{"model": 3}', '{"version": "1.0"}'],
    ids=["empty", "syntax", "array", "null", "bad_model", "no_model"],
)
def test_from_json_malformed(text: str) -> None:
    with raises_ctx(ValueError) as info:
        Tokenizer.from_json(text)
    assert isinstance(info.value, ctxfast.TokenizerLoadError)


def test_hf_constructors_wrong_types() -> None:
    with raises_ctx(TypeError, "'path'"):
        Tokenizer.from_file(42)  # type: ignore[arg-type]
    with raises_ctx(TypeError, "'text'"):
        Tokenizer.from_json(b"{}")  # type: ignore[arg-type]
    with raises_ctx(TypeError, "'obj'"):
        Tokenizer.from_hf(42)


# --------------------------------------------------------------------------------------------
# The estimate


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100), ("x" * 401, 101), ("😀" * 5, 2), ("日本語", 1)],
)
def test_approximate_tokens(text: str, expected: int) -> None:
    assert ctxfast.approximate_tokens(text) == expected == math.ceil(len(text) / 4)
    assert Tokenizer.approximate().count(text) == expected


def test_approximate_tokens_bad_input() -> None:
    with raises_ctx(TypeError, "'text'"):
        ctxfast.approximate_tokens(12)  # type: ignore[arg-type]
    with raises_ctx(ValueError, "index 2"):
        ctxfast.approximate_tokens("ab\udc80")


def test_approximate_tokenizer() -> None:
    tok = Tokenizer.approximate()
    assert tok.name == "approximate(4)"
    assert tok.is_exact is False
    assert tok.vocab_size is None
    assert repr(tok) == "Tokenizer(approximate(4))"
    assert tok.count("abcdefghi") == 3

    three = Tokenizer.approximate(3.0)
    assert three.name == "approximate(3)"
    assert three.count("abcdefg") == 3
    assert three.count("abcdef") == 2
    assert three.count_many(["", "a", "abcd"]).tolist() == [0, 1, 2]
    assert Tokenizer.approximate(chars_per_token=2.5).count("abcdef") == 3
    assert Tokenizer.approximate(2).count("abcde") == 3  # an int ratio is accepted


def test_approximate_has_no_ids() -> None:
    tok = Tokenizer.approximate()
    with raises_ctx(NotImplementedError) as info:
        tok.encode("abc")
    assert isinstance(info.value, ctxfast.UnsupportedOperationError)
    with raises_ctx(NotImplementedError):
        tok.decode([1, 2])


def test_approximate_truncate() -> None:
    tok = Tokenizer.approximate(4.0)
    text = "abcdefghijklmnopqrstuvwxyz"
    assert tok.truncate(text, 2) == "abcdefgh"
    assert tok.truncate(text, 0) == ""
    assert tok.truncate(text, 7) is text
    assert tok.truncate("😀" * 10, 1) == "😀" * 4


@pytest.mark.parametrize(("cpt", "limit"), [(0.7, 30), (2.3, 30), (0.35, 60)])
def test_approximate_truncate_respects_limit_for_fractional_ratio(cpt: float, limit: int) -> None:
    tok = Tokenizer.approximate(cpt)
    cut = tok.truncate("x" * 1000, limit)
    assert tok.count(cut) <= limit


@pytest.mark.parametrize("bad", [0, 0.0, -1, -0.5, float("nan"), float("inf"), float("-inf")])
def test_approximate_rejects_bad_ratio(bad: float) -> None:
    with raises_ctx(ValueError, "'chars_per_token'") as info:
        Tokenizer.approximate(bad)
    assert isinstance(info.value, ctxfast.InvalidArgumentError)


@pytest.mark.parametrize("bad", ["4", True, [4.0], object()])
def test_approximate_rejects_bad_ratio_type(bad: Any) -> None:
    with raises_ctx(TypeError, "'chars_per_token'"):
        Tokenizer.approximate(bad)


# --------------------------------------------------------------------------------------------
# A caller's own counter


class CallCounter:
    """Counts words, and how many times it was asked."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, text: str) -> int:
        self.calls.append(text)
        return len(text.split())


def test_from_callable_uses_the_callable() -> None:
    func = CallCounter()
    tok = Tokenizer.from_callable(func)
    assert tok.count("one two three") == 3
    assert tok.count("") == 0
    assert func.calls == ["one two three", ""]
    assert tok.is_exact is True
    assert tok.vocab_size is None
    assert tok.name == "callable:CallCounter"
    assert repr(tok) == "Tokenizer(callable:CallCounter)"


def test_from_callable_name_uses_qualname() -> None:
    def words(text: str) -> int:
        return len(text.split())

    assert Tokenizer.from_callable(words).name.startswith("callable:")
    assert Tokenizer.from_callable(words).name.endswith("words")
    assert Tokenizer.from_callable(len).name == "callable:len"


def test_from_callable_caches() -> None:
    func = CallCounter()
    tok = Tokenizer.from_callable(func)
    assert tok.cache_info().capacity == ctxfast.default_cache_capacity
    for _ in range(5):
        assert tok.count("alpha beta") == 2
    assert func.calls == ["alpha beta"]
    info = tok.cache_info()
    assert (info.hits, info.misses, info.entries) == (4, 1, 1)

    assert tok.count("alpha beta", cache=False) == 2
    assert len(func.calls) == 2
    assert tok.cache_info() == info

    assert tok.count_many(["alpha beta", "gamma", "gamma"]).tolist() == [2, 1, 1]
    assert func.calls[2:] == ["gamma"]


def test_from_callable_without_cache() -> None:
    func = CallCounter()
    tok = Tokenizer.from_callable(func, cache_capacity=0)
    for _ in range(3):
        tok.count("a b")
    assert len(func.calls) == 3
    assert tok.cache_info() == Tokenizer.approximate().cache_info()  # all zero
    assert tok.cache_info().capacity == 0


def test_from_callable_that_raises() -> None:
    problem = KeyError("server unavailable")

    def failing(text: str) -> int:
        raise problem

    tok = Tokenizer.from_callable(failing)
    with raises_ctx(RuntimeError, "KeyError") as info:
        tok.count("anything")
    assert isinstance(info.value, ctxfast.CounterError)
    assert info.value.__cause__ is problem
    with pytest.raises(ctxfast.CounterError):
        tok.count_many(["a", "b"])
    assert tok.cache_info().entries == 0


@pytest.mark.parametrize("result", [-1, 1.5, 3.0, "3", None, True, [1], 2**70])
def test_from_callable_bad_result(result: Any) -> None:
    tok = Tokenizer.from_callable(lambda text: result)
    with raises_ctx(RuntimeError, repr(result)) as info:
        tok.count("x")
    assert isinstance(info.value, ctxfast.CounterError)


def test_from_callable_large_count_is_not_clipped_by_cache() -> None:
    tok = Tokenizer.from_callable(lambda text: 5_000_000_000)
    assert tok.count("x") == 5_000_000_000
    assert tok.count("x") == 5_000_000_000


def test_from_callable_rejects_non_callable() -> None:
    with raises_ctx(TypeError, "'func'"):
        Tokenizer.from_callable(42)  # type: ignore[arg-type]


def test_from_callable_encode_decode_unsupported() -> None:
    tok = Tokenizer.from_callable(len)
    with raises_ctx(NotImplementedError):
        tok.encode("abc")
    with raises_ctx(NotImplementedError):
        tok.decode([1])


def test_from_callable_truncate() -> None:
    by_chars = Tokenizer.from_callable(len)
    assert by_chars.truncate("abcdefghij", 3) == "abc"
    assert by_chars.truncate("abcdefghij", 0) == ""
    text = "abcdefghij"
    assert by_chars.truncate(text, 10) is text
    assert by_chars.truncate("日本語のテキスト", 4) == "日本語の"

    by_words = Tokenizer.from_callable(lambda t: len(t.split()))
    cut = by_words.truncate("one two three four", 2)
    assert cut == "one two "


# --------------------------------------------------------------------------------------------
# count, count_many


def test_count_without_cache_leaves_counters(private: Tokenizer) -> None:
    text = "counted without the cache"
    n = private.count(text, cache=False)
    assert n == len(private.encode(text))
    assert private.cache_info() == Tokenizer.from_encoding("o200k_base", cache_capacity=1000).cache_info()
    private.count_many([text, text, "other"], cache=False)
    info = private.cache_info()
    assert (info.hits, info.misses, info.entries) == (0, 0, 0)


def test_count_with_cache(private: Tokenizer) -> None:
    text = "counted twice"
    assert private.count(text) == private.count(text) == len(private.encode(text))
    info = private.cache_info()
    assert (info.hits, info.misses, info.entries) == (1, 1, 1)


def test_count_accepts_str_subclass(private: Tokenizer) -> None:
    class Text(str):
        pass

    assert private.count(Text("hello world")) == private.count("hello world") == 2


def test_count_many_matches_count(private: Tokenizer, prose_corpus: str) -> None:
    texts = [prose_corpus[i:i + 200] for i in range(0, 60_000, 150)] + ["", EMOJI_CJK, "hello"]
    result = private.count_many(texts)
    assert isinstance(result, np.ndarray)
    assert result.dtype == np.int64
    assert result.shape == (len(texts),)
    assert result.tolist() == [private.count(t, cache=False) for t in texts]


def test_count_many_large_batch_equals_one_by_one_counts(private: Tokenizer, prose_corpus: str) -> None:
    """A 600 kB batch (big enough for count_many to spread it over threads) counts each text as
    count() does, cache off and on, and the second cached batch is all hits. Which path ran is
    not observed: the results are what is checked."""
    texts = [prose_corpus[i:i + 5000] for i in range(0, 600_000, 5000)]
    assert sum(map(len, texts)) > 500_000
    expected = [private.count(t, cache=False) for t in texts]
    assert private.count_many(texts, cache=False).tolist() == expected
    assert private.count_many(texts).tolist() == expected
    assert private.count_many(texts).tolist() == expected
    info = private.cache_info()
    assert info.misses == len(set(texts)) and info.hits == len(texts)


def test_count_many_accepts_iterables(private: Tokenizer) -> None:
    texts = ["a", "bb cc", "hello world again"]
    expected = [private.count(t) for t in texts]
    assert private.count_many(tuple(texts)).tolist() == expected
    assert private.count_many(t for t in texts).tolist() == expected
    assert private.count_many(iter(texts)).tolist() == expected
    assert private.count_many({"k": 1, "hello world again": 2}).tolist() == [1, 3]
    empty = private.count_many([])
    assert empty.dtype == np.int64 and empty.shape == (0,)


def test_count_many_rejects_bare_str(private: Tokenizer) -> None:
    with raises_ctx(TypeError, "'texts'") as info:
        private.count_many("not a list")
    assert isinstance(info.value, ctxfast.ArgumentTypeError)


@pytest.mark.parametrize("bad", [None, 42, b"bytes", ["nested"]])
def test_count_many_rejects_non_str_item(private: Tokenizer, bad: Any) -> None:
    with raises_ctx(TypeError, "texts[2]"):
        private.count_many(["fine", "also fine", bad, "never reached"])


def test_count_many_rejects_non_iterable(private: Tokenizer) -> None:
    with raises_ctx(TypeError, "'texts'"):
        private.count_many(42)  # type: ignore[arg-type]


def test_count_many_surrogate_item(private: Tokenizer) -> None:
    with raises_ctx(ValueError, "texts[1]", "index 3") as info:
        private.count_many(["fine", "abc\ud800def"])
    assert isinstance(info.value, ctxfast.TextEncodingError)


# --------------------------------------------------------------------------------------------
# encode, decode


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_encode_decode_round_trip(name: str) -> None:
    tok = Tokenizer.from_encoding(name)
    for text in ["", "hello", EMOJI_CJK, " \t\n\r\n  ", "<|endoftext|>", "x" * 10_000]:
        ids = tok.encode(text)
        assert isinstance(ids, list) and all(isinstance(i, int) for i in ids)
        assert len(ids) == tok.count(text)
        assert tok.decode(ids) == text
        assert tok.decode(tuple(ids)) == text
        assert tok.decode(i for i in ids) == text


def test_decode_partial_character_is_replaced(private: Tokenizer) -> None:
    ids = private.encode("𓀀")
    assert len(ids) > 1  # a rare hieroglyph is split across byte tokens
    assert private.decode(ids[:1]) == "\ufffd"


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_decode_out_of_vocabulary(name: str) -> None:
    tok = Tokenizer.from_encoding(name)
    assert tok.vocab_size is not None
    for bad in (tok.vocab_size, 10_000_000):
        with raises_ctx(ValueError, str(bad)) as info:
            tok.decode([100, bad])
        assert isinstance(info.value, ctxfast.InvalidArgumentError)


def test_decode_bad_ids(private: Tokenizer) -> None:
    with raises_ctx(ValueError, "ids[1]"):
        private.decode([1, -1])
    with raises_ctx(ValueError, "ids[0]"):
        private.decode([2**40])
    with raises_ctx(TypeError, "ids[0]"):
        private.decode([1.0])  # type: ignore[list-item]
    with raises_ctx(TypeError, "'ids'"):
        private.decode("123")  # type: ignore[arg-type]
    with raises_ctx(TypeError, "'ids'"):
        private.decode(5)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# truncate


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_truncate_never_splits_a_character(name: str) -> None:
    tok = Tokenizer.from_encoding(name)
    for text in (EMOJI_CJK, "👨‍👩‍👧‍👦" * 5, "𓀀𓀁𓀂 hieroglyphs", "日本語" * 20):
        total = tok.count(text)
        previous = ""
        for n in range(total + 2):
            cut = tok.truncate(text, n)
            assert isinstance(cut, str)
            assert text.startswith(cut)
            assert tok.count(cut) <= n
            assert len(cut) >= len(previous)  # more room never gives a shorter prefix
            cut.encode("utf-8")  # a whole-character prefix: encodable, no surrogate halves
            previous = cut
        assert previous == text


def test_truncate_prose_is_exact_prefix(private: Tokenizer, prose_corpus: str) -> None:
    """On prose every token ends on a character, so the longest prefix has exactly n tokens."""
    text = prose_corpus[30_000:34_000]
    ids = private.encode(text)
    for n in (1, 2, 10, 99, 100, 500, len(ids) - 1):
        cut = private.truncate(text, n)
        assert private.count(cut) == n
        assert cut == private.decode(ids[:n])


def test_truncate_returns_text_unchanged_when_it_fits(private: Tokenizer) -> None:
    text = "short enough to fit"
    n = private.count(text)
    assert private.truncate(text, n) is text
    assert private.truncate(text, n + 1000) is text
    assert private.truncate("", 0) == ""
    assert private.truncate(text, 0) == ""
    assert private.truncate(text, n - 1) != text


@pytest.mark.parametrize("bad", [-1, -(10**30)])
def test_truncate_negative_limit(private: Tokenizer, bad: int) -> None:
    with raises_ctx(ValueError, "'max_tokens'") as info:
        private.truncate("text", bad)
    assert isinstance(info.value, ctxfast.InvalidArgumentError)


@pytest.mark.parametrize("bad", ["10", 1.5, None, True])
def test_truncate_limit_wrong_type(private: Tokenizer, bad: Any) -> None:
    with raises_ctx(TypeError, "'max_tokens'"):
        private.truncate("text", bad)


# --------------------------------------------------------------------------------------------
# The count cache


def test_cache_info_fields(private: Tokenizer) -> None:
    info = private.cache_info()
    assert isinstance(info, ctxfast.CacheInfo)
    assert (info.hits, info.misses, info.entries, info.capacity) == (0, 0, 0, 1000)
    assert repr(info) == "CacheInfo(hits=0, misses=0, entries=0, capacity=1000)"
    private.count("one")
    private.count("two")
    private.count("one")
    info = private.cache_info()
    assert (info.hits, info.misses, info.entries, info.capacity) == (1, 2, 2, 1000)
    assert info == private.cache_info()
    assert info != Tokenizer.from_encoding("o200k_base", cache_capacity=1000).cache_info()
    with pytest.raises(AttributeError):
        info.hits = 5  # type: ignore[misc]


def test_clear_cache(private: Tokenizer) -> None:
    private.count("a")
    private.count("b")
    assert private.cache_info().entries == 2
    private.clear_cache()
    assert private.cache_info().entries == 0
    assert private.count("a") == 1
    assert private.cache_info().entries == 1


def test_cache_capacity_zero_disables() -> None:
    tok = Tokenizer.from_encoding("cl100k_base", cache_capacity=0)
    for _ in range(3):
        assert tok.count("no cache here") == 3
    tok.count_many(["a", "a", "b"])
    info = tok.cache_info()
    assert (info.hits, info.misses, info.entries, info.capacity) == (0, 0, 0, 0)


def test_cache_is_bounded() -> None:
    tok = Tokenizer.default(cache_capacity=100)
    for i in range(1000):
        tok.count(f"distinct text number {i}")
    info = tok.cache_info()
    assert 0 < info.entries <= 100
    assert info.misses == 1000
    assert info.capacity == 100
    # Batches respect the bound too.
    tok.count_many([f"batch text {i}" for i in range(1000)])
    assert tok.cache_info().entries <= 100


def test_approximate_is_uncached_by_default() -> None:
    tok = Tokenizer.approximate()
    tok.count("abc")
    tok.count("abc")
    assert tok.cache_info().capacity == 0
    assert tok.cache_info().entries == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda cap: Tokenizer.default(cache_capacity=cap),
        lambda cap: Tokenizer.from_encoding("cl100k_base", cache_capacity=cap),
        lambda cap: Tokenizer.approximate(cache_capacity=cap),
        lambda cap: Tokenizer.from_callable(len, cache_capacity=cap),
        lambda cap: Tokenizer.from_json("{}", cache_capacity=cap),
    ],
    ids=["default", "from_encoding", "approximate", "from_callable", "from_json"],
)
def test_negative_cache_capacity(make: Any) -> None:
    with raises_ctx(ValueError, "'cache_capacity'", "-1") as info:
        make(-1)
    assert isinstance(info.value, ctxfast.InvalidArgumentError)
    with raises_ctx(TypeError, "'cache_capacity'"):
        make("10")
    with raises_ctx(TypeError, "'cache_capacity'"):
        make(1.5)


# --------------------------------------------------------------------------------------------
# Identity and immutability


def test_tokenizer_is_immutable(private: Tokenizer) -> None:
    with pytest.raises(AttributeError):
        private.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        private.extra = 1  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# Lone surrogates and wrong types: errors, never panics

# A high-low pair ("\ud83d\ude00") is joined into its character since issue 11, as tiktoken joins
# it (tests/test_tokenizer_tiktoken_shape.py); halves in the wrong order are two lone ones.
SURROGATE_CASES = [("a\ud800b", 1), ("\udfff", 0), ("text then \ud83d", 10), ("\ude00\ud83d", 0),
                   ("\ud83d\ude00\ud800", 2)]


@pytest.mark.parametrize(("text", "index"), SURROGATE_CASES)
@pytest.mark.parametrize("method", ["count", "encode", "truncate"])
def test_lone_surrogate(private: Tokenizer, method: str, text: str, index: int) -> None:
    call = {
        "count": lambda: private.count(text),
        "encode": lambda: private.encode(text),
        "truncate": lambda: private.truncate(text, 5),
    }[method]
    with raises_ctx(ValueError, f"index {index}", "'text'", "surrogate") as info:
        call()
    assert isinstance(info.value, ctxfast.TextEncodingError)
    assert isinstance(info.value.__cause__, UnicodeEncodeError)


@pytest.mark.parametrize(
    "tok",
    [
        Tokenizer.default(),
        Tokenizer.from_encoding("cl100k_base", cache_capacity=0),
        Tokenizer.approximate(),
        Tokenizer.from_callable(len),
    ],
    ids=["default", "cl100k_nocache", "approximate", "callable"],
)
def test_lone_surrogate_every_kind(tok: Tokenizer) -> None:
    with raises_ctx(ValueError, "index 1") as info:
        tok.count("a\ud800b")
    assert isinstance(info.value, ctxfast.TextEncodingError)
    with raises_ctx(ValueError, "index 0"):
        tok.count("\udc00", cache=False)


def test_lone_surrogate_in_hf(hf_tokenizer: Any) -> None:
    tok = Tokenizer.from_hf(hf_tokenizer)
    with raises_ctx(ValueError, "index 1"):
        tok.count("a\ud800b")
    with raises_ctx(ValueError, "index 0"):
        tok.truncate("\ud800", 3)


def test_surrogate_in_constructor_arguments() -> None:
    with raises_ctx(ValueError, "'name'"):
        Tokenizer.from_encoding("o200k\ud800")
    with raises_ctx(ValueError, "'text'"):
        Tokenizer.from_json('{"a": "\ud800"}')


@pytest.mark.parametrize("bad", [1, None, b"bytes", bytearray(b"x"), ["list"], 1.5])
@pytest.mark.parametrize("method", ["count", "encode", "truncate"])
def test_wrong_text_type(private: Tokenizer, method: str, bad: Any) -> None:
    call = {
        "count": lambda: private.count(bad),
        "encode": lambda: private.encode(bad),
        "truncate": lambda: private.truncate(bad, 5),
    }[method]
    with raises_ctx(TypeError, "'text'", type(bad).__name__) as info:
        call()
    assert isinstance(info.value, ctxfast.ArgumentTypeError)


@pytest.mark.parametrize("bad", [1, 0.0, "yes"])
@pytest.mark.parametrize("method", ["count", "count_many"])
def test_wrong_cache_flag_type(private: Tokenizer, method: str, bad: Any) -> None:
    with raises_ctx(TypeError, "'cache'"):
        if method == "count":
            private.count("text", cache=bad)
        else:
            private.count_many(["text"], cache=bad)
