"""One Tokenizer shared by many threads: same counts as one thread, no errors, a consistent cache.

Counting releases the GIL for long texts and for every count_many batch, so these threads really
run the Rust engine and its sharded cache at the same time.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np
import pytest

from ctxfast import Tokenizer

THREADS = 8
PER_THREAD = 3000


@pytest.fixture(scope="module")
def texts(code_corpus: str, json_corpus: str) -> dict[str, list[str]]:
    """A pool of texts shared by every thread, and distinct texts per thread (short and long)."""
    rng = random.Random(1234)
    source = code_corpus + json_corpus

    def piece() -> str:
        # mostly short units, one in ten above the 4 KB GIL-release threshold
        length = rng.randint(4096, 6000) if rng.random() < 0.1 else rng.randint(1, 300)
        start = rng.randrange(len(source) - length)
        return source[start:start + length]

    common = [piece() for _ in range(200)]
    own = {f"thread{t}": [f"[thread {t} item {i}] " + piece() for i in range(PER_THREAD // 2)] for t in range(THREADS)}
    return {"common": common, **own}


@pytest.fixture(scope="module")
def reference_counts(texts: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    """encoding -> text -> count, computed once on one thread without any cache."""
    out = {}
    for name in ("o200k_base", "cl100k_base"):
        reference = Tokenizer.from_encoding(name, cache_capacity=0)
        out[name] = {s: reference.count(s) for group in texts.values() for s in group}
    return out


def workload(texts: dict[str, list[str]], thread: int) -> list[str]:
    """Half distinct to this thread, half drawn (with repeats) from the common pool."""
    rng = random.Random(thread)
    mine = texts[f"thread{thread}"]
    shared = [rng.choice(texts["common"]) for _ in range(PER_THREAD - len(mine))]
    work = mine + shared
    rng.shuffle(work)
    return work


def run_threads(fn: Callable[[int], Any], n: int = THREADS) -> list[Any]:
    with ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(fn, t) for t in range(n)]
        return [f.result() for f in futures]  # re-raises any exception from a thread


@pytest.mark.parametrize("capacity", [None, 256, 0], ids=["shared_cache", "small_cache", "no_cache"])
def test_threads_count_like_one_thread(
    texts: dict[str, list[str]], reference_counts: dict[str, dict[str, int]], capacity: int | None
) -> None:
    tok = Tokenizer.from_encoding("o200k_base", cache_capacity=capacity)
    works = [workload(texts, t) for t in range(THREADS)]
    expected = [[reference_counts["o200k_base"][s] for s in work] for work in works]
    before = tok.cache_info()

    results = run_threads(lambda t: [tok.count(s) for s in works[t]])

    assert results == expected
    after = tok.cache_info()
    if capacity == 0:
        assert (after.hits, after.misses, after.entries) == (0, 0, 0)
    else:
        # every cached count is exactly one lookup: a hit or a miss, none lost under contention
        assert (after.hits - before.hits) + (after.misses - before.misses) == THREADS * PER_THREAD
        assert after.hits > before.hits  # the common pool is shared, so threads hit each other's entries
        assert after.entries <= after.capacity


def test_threads_count_many_at_once(
    texts: dict[str, list[str]], reference_counts: dict[str, dict[str, int]]
) -> None:
    tok = Tokenizer.from_encoding("cl100k_base", cache_capacity=1000)
    works = [workload(texts, t) for t in range(4)]
    expected = [np.array([reference_counts["cl100k_base"][s] for s in w], dtype=np.int64) for w in works]

    def batches(t: int) -> list[np.ndarray]:
        work = works[t]
        # several batches per thread, cached and not, big enough for the parallel path
        return [
            tok.count_many(work),
            tok.count_many(work[: len(work) // 2], cache=False),
            tok.count_many(tuple(work)),
        ]

    results = run_threads(batches, n=4)
    for t, (full, half, again) in enumerate(results):
        assert full.dtype == np.int64
        assert np.array_equal(full, expected[t])
        assert np.array_equal(half, expected[t][: len(works[t]) // 2])
        assert np.array_equal(again, expected[t])


def test_threads_mixed_operations(texts: dict[str, list[str]]) -> None:
    """count, encode, truncate and decode interleaved on one default() tokenizer."""
    tok = Tokenizer.default()
    sample = texts["common"][:60]
    expected = [(len(ids), ids) for ids in (tok.encode(s) for s in sample)]

    def mixed(t: int) -> None:
        for i, s in enumerate(sample):
            n, ids = expected[i]
            assert tok.count(s) == n
            assert tok.encode(s) == ids
            assert tok.decode(ids) == s
            cut = tok.truncate(s, n // 2)
            assert s.startswith(cut) and tok.count(cut) <= n // 2
            if t == 1 and i % 25 == 0:
                tok.clear_cache()  # the cache may empty under the other threads' feet

    run_threads(mixed)


def test_threads_callable_counter(texts: dict[str, list[str]]) -> None:
    calls: list[int] = []

    def words(text: str) -> int:
        calls.append(1)
        return len(text.split())

    tok = Tokenizer.from_callable(words)
    works = [workload(texts, t)[:500] for t in range(THREADS)]
    expected = [[len(s.split()) for s in work] for work in works]
    results = run_threads(lambda t: [tok.count(s) for s in works[t]])
    assert results == expected
    info = tok.cache_info()
    assert info.hits + info.misses == THREADS * 500
    assert len(calls) == info.misses > 0  # the callable runs on a miss and only then
