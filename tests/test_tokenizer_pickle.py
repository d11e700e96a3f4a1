"""Tokenizers pickle as a recipe (encoding name, tokenizer.json, ratio or callable) and come back
counting identically; the cache capacity survives, the cache contents do not."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from typing import Any, Callable

import pytest

import ctxfast
from ctxfast import Tokenizer

SAMPLES = [
    "",
    "Hello, world!",
    "It is a truth universally acknowledged, that a single man in possession of a good fortune",
    "😀 👨‍👩‍👧 日本語のテキスト e\u0301",
    "  whitespace\t\n\r\n  ",
    "x" * 5000,
]


def word_count(text: str) -> int:
    """A module-level counter, so pickle can find it by name."""
    return len(text.split())


PROTOCOLS = list(range(pickle.HIGHEST_PROTOCOL + 1))


def round_trips(tok: Tokenizer) -> list[Tokenizer]:
    copies = [pickle.loads(pickle.dumps(tok, protocol=p)) for p in PROTOCOLS]
    return copies + [copy.deepcopy(tok), copy.copy(tok)]


def assert_same_counter(original: Tokenizer, restored: Tokenizer) -> None:
    assert type(restored) is Tokenizer
    assert restored.name == original.name
    assert restored.is_exact == original.is_exact
    assert restored.vocab_size == original.vocab_size
    assert repr(restored) == repr(original)
    assert restored.cache_info().capacity == original.cache_info().capacity
    counts = [original.count(s, cache=False) for s in SAMPLES]
    assert [restored.count(s) for s in SAMPLES] == counts
    assert restored.count_many(SAMPLES).tolist() == counts
    assert restored.truncate(SAMPLES[2], 5) == original.truncate(SAMPLES[2], 5)
    if original.vocab_size is not None:
        for s in SAMPLES:
            assert restored.encode(s) == original.encode(s)


MAKERS: dict[str, Callable[[], Tokenizer]] = {
    "default": Tokenizer.default,
    "cl100k": lambda: Tokenizer.from_encoding("cl100k_base"),
    "private_cache": lambda: Tokenizer.from_encoding("o200k_base", cache_capacity=123),
    "private_cache_zero": lambda: Tokenizer.default(cache_capacity=0),
    "approximate": lambda: Tokenizer.approximate(3.0),
    "approximate_default": Tokenizer.approximate,
    "callable": lambda: Tokenizer.from_callable(word_count),
    "callable_capacity": lambda: Tokenizer.from_callable(word_count, cache_capacity=9),
}


@pytest.mark.parametrize("kind", list(MAKERS))
def test_round_trip(kind: str) -> None:
    original = MAKERS[kind]()
    for restored in round_trips(original):
        assert_same_counter(original, restored)


def test_hf_round_trip(hf_tokenizer: Any) -> None:
    original = Tokenizer.from_json(hf_tokenizer.to_str(), cache_capacity=77)
    for restored in round_trips(original):
        assert_same_counter(original, restored)
        assert restored.cache_info().capacity == 77
        assert restored.decode(restored.encode(SAMPLES[3])) == SAMPLES[3]


def test_hf_round_trip_ignores_truncation(hf_tokenizer: Any, hf_reference: Any) -> None:
    """The fixture tokenizer truncates to 16 for model input; the restored counter still counts all."""
    text = SAMPLES[2] * 5
    expected = len(hf_reference.encode(text, add_special_tokens=False).ids)
    assert expected > 16
    restored = pickle.loads(pickle.dumps(Tokenizer.from_hf(hf_tokenizer)))
    assert restored.count(text) == expected


def test_restored_default_shares_the_process_cache() -> None:
    restored = pickle.loads(pickle.dumps(Tokenizer.default()))
    text = "a text only this test counts: pickled default shares the cache"
    restored.count(text)
    hits = Tokenizer.default().cache_info().hits
    Tokenizer.default().count(text)
    assert Tokenizer.default().cache_info().hits == hits + 1


def test_restored_private_cache_is_private_and_empty() -> None:
    original = Tokenizer.from_encoding("o200k_base", cache_capacity=123)
    original.count("warm the original cache")
    restored = pickle.loads(pickle.dumps(original))
    info = restored.cache_info()
    assert (info.hits, info.misses, info.entries, info.capacity) == (0, 0, 0, 123)
    shared_before = Tokenizer.default().cache_info()
    restored.count("counted in the restored private cache only")
    assert restored.cache_info().misses == 1
    shared_after = Tokenizer.default().cache_info()
    assert (shared_after.hits, shared_after.misses) == (shared_before.hits, shared_before.misses)


def test_restored_callable_is_the_same_function() -> None:
    restored = pickle.loads(pickle.dumps(Tokenizer.from_callable(word_count)))
    assert restored.name == "callable:word_count"
    assert restored.count("one two three") == 3


def test_unpicklable_callable_fails_cleanly() -> None:
    tok = Tokenizer.from_callable(lambda text: len(text))
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(tok)


def test_unpickle_in_another_process(hf_tokenizer: Any) -> None:
    tokenizers = {
        "default": Tokenizer.default(),
        "cl100k": Tokenizer.from_encoding("cl100k_base", cache_capacity=5),
        "hf": Tokenizer.from_hf(hf_tokenizer),
        "approximate": Tokenizer.approximate(2.5),
    }
    text = SAMPLES[3] + SAMPLES[2]
    payload = pickle.dumps(tokenizers)
    script = (
        "import pickle, sys\n"
        "toks = pickle.loads(sys.stdin.buffer.read())\n"
        f"text = {text!r}\n"
        "for name, tok in sorted(toks.items()):\n"
        "    print(name, tok.name, tok.count(text), tok.cache_info().capacity)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], input=payload, capture_output=True, check=False, timeout=120
    )
    assert out.returncode == 0, out.stderr.decode()
    expected = "".join(
        f"{name} {tok.name} {tok.count(text)} {tok.cache_info().capacity}\n"
        for name, tok in sorted(tokenizers.items())
    )
    assert out.stdout.decode() == expected


def test_from_state_rejects_unknown_kind() -> None:
    with pytest.raises(ctxfast.CtxfastError, match="unknown tokenizer state"):
        Tokenizer._from_state(("bogus", "x", None))
