"""Token counting: ctxfast side by side with its peers, one pytest-benchmark group per question.

Groups (``benches/report.py`` turns the JSON into a table and checks the targets):

- ``throughput-{prose,code,json,cjk}``: a ~1 MB text, o200k_base. ``ctxfast`` =
  ``Tokenizer.default().count(text, cache=False)``; ``tiktoken`` = ``len(encode_ordinary(text))``;
  ``tokenizers`` = the Python HF package on o200k converted from tiktoken's rank file;
  ``ctxfast.from_hf`` = ctxfast's HF backend on that same tokenizer.json.
- ``short-count``: one ~20-token sentence, per call.
- ``pathological-1MiB`` / ``pathological-256KiB``: adversarial inputs, ctxfast only.
- ``cache-4KB``: 64 distinct 4 KB units, per unit: cache hit vs cold count.
- ``count_many``: 2,000 texts of 1-8 KB (~9 MB) with ``count_many`` (both cores) vs a serial loop.

pytest-benchmark runs contenders one after another, so a drift of the machine between two rows
(seen here: 25% within a minute) moves their ratio. The ``test_paired_*`` tests measure each
targeted ratio a second way, alternating the two calls round by round, and store the median of
the per-round ratios for the report (not timed benchmarks; no assertions on them).
``test_pathological_guard`` does the same for 1 MiB vs 256 KiB and asserts generous bounds
(skipped in quick mode but for a 2 s catastrophe guard).

Every contender's result is checked against tiktoken's count, so no row is fast by being wrong.
Each benchmark records ``contender`` and ``baseline`` (the ctxfast row its group is compared
against) in ``extra_info``.
"""

from __future__ import annotations

import statistics
import time

import pytest

import corpora
import cpuload
from corpora import helpers

# Rounds per contender. Medians over fixed rounds keep the full run's length predictable
# (about 1-2 minutes on 2 cores) whatever the machine's mood.
ROUNDS_FAST = 25  # ctxfast / tiktoken on ~1 MB (tens of ms a round)
ROUNDS_SLOW = 7  # the HF tokenizer on ~1 MB (~0.2-0.7 s a round)

CORPORA = ["prose", "code", "json", "cjk"]
THROUGHPUT_CONTENDERS = ["ctxfast", "tiktoken", "tokenizers", "ctxfast.from_hf"]


def _tag(benchmark, group: str, contender: str, baseline: bool, **extra) -> None:
    benchmark.group = group
    benchmark.extra_info.update(contender=contender, baseline=baseline, **extra)


@pytest.fixture(scope="session")
def counters(ctx_default, tiktoken_o200k, hf_o200k, ctx_from_hf):
    """name -> (str -> token count), the way each contender is meant to be used for counting."""
    return {
        "ctxfast": lambda t: ctx_default.count(t, cache=False),
        "tiktoken": lambda t: len(tiktoken_o200k.encode_ordinary(t)),
        # len(Encoding) is the number of tokens, without building the id list in Python.
        "tokenizers": lambda t: len(hf_o200k.encode(t, add_special_tokens=False)),
        "ctxfast.from_hf": lambda t: ctx_from_hf.count(t, cache=False),
    }


@pytest.fixture(scope="session")
def reference_counts(corpus, tiktoken_o200k) -> dict[str, int]:
    return {name: len(tiktoken_o200k.encode_ordinary(text)) for name, text in corpus.items()}


def paired(base, peer, rounds: int) -> dict:
    """Alternate ``base()`` and ``peer()`` (order flipped every round); peer/base per round.

    Each timed call follows an untimed one of the same function, so neither side pays for the
    other having evicted its tables from the CPU caches (ctxfast's o200k automata are tens of MB).
    """
    tb: list[float] = []
    tp: list[float] = []
    start = cpuload.Sample.now()
    for i in range(rounds):
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            fn, out = (base, tb) if which == 0 else (peer, tp)
            fn()
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    return {
        "ratio": statistics.median(p / b for b, p in zip(tb, tp)),
        "base_median": statistics.median(tb),
        "peer_median": statistics.median(tp),
        "rounds": rounds,
        **cpuload.usage(start, cpuload.Sample.now()),
    }


# ---- throughput ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "corpus_name,contender",
    [(c, k) for c in CORPORA for k in THROUGHPUT_CONTENDERS],
    ids=[f"{c}-{k}" for c in CORPORA for k in THROUGHPUT_CONTENDERS],
)
def test_throughput(benchmark, corpus, counters, reference_counts, corpus_name, contender):
    text = corpus[corpus_name]
    count = counters[contender]
    _tag(
        benchmark,
        f"throughput-{corpus_name}",
        contender,
        contender == "ctxfast",
        bytes=len(text.encode("utf-8")),
        chars=len(text),
        tokens=reference_counts[corpus_name],
    )
    rounds = ROUNDS_SLOW if contender in ("tokenizers", "ctxfast.from_hf") else ROUNDS_FAST
    n = benchmark.pedantic(count, args=(text,), rounds=rounds, warmup_rounds=1, iterations=1)
    assert n == reference_counts[corpus_name], f"{contender} counted {n} tokens on {corpus_name}"


# ---- one short count -------------------------------------------------------------------------

SHORT_CONTENDERS = ["ctxfast (cache=False)", "ctxfast (warm cache)", "tiktoken", "tokenizers"]


@pytest.mark.parametrize("contender", SHORT_CONTENDERS)
def test_short_count(benchmark, ctx_default, tiktoken_o200k, hf_o200k, contender):
    text = corpora.sentence()
    expected = len(tiktoken_o200k.encode_ordinary(text))
    fn = {
        "ctxfast (cache=False)": lambda: ctx_default.count(text, cache=False),
        "ctxfast (warm cache)": lambda: ctx_default.count(text),
        "tiktoken": lambda: len(tiktoken_o200k.encode_ordinary(text)),
        "tokenizers": lambda: len(hf_o200k.encode(text, add_special_tokens=False)),
    }[contender]
    fn()  # warm: fills the cache for the cached row, first-use costs for the others
    _tag(benchmark, "short-count", contender, contender == "ctxfast (cache=False)", tokens=expected)
    iterations = 20 if contender == "tokenizers" else 500
    n = benchmark.pedantic(fn, rounds=30, warmup_rounds=2, iterations=iterations)
    assert n == expected


# ---- pathological inputs ---------------------------------------------------------------------

PATHOLOGICAL_SIZES = {"1MiB": 2**20, "256KiB": 2**18}
PATHOLOGICAL_CASES = list(corpora.pathological(16))
PATHOLOGICAL_BUDGET_S = 0.1
LINEAR_FACTOR = 6.0  # the target: 4x the input in < ~6x the time


@pytest.fixture(scope="session")
def pathological_inputs() -> dict[str, dict[str, str]]:
    return {size: corpora.pathological(n) for size, n in PATHOLOGICAL_SIZES.items()}


@pytest.mark.parametrize("size", list(PATHOLOGICAL_SIZES))
@pytest.mark.parametrize("case", PATHOLOGICAL_CASES)
def test_pathological(benchmark, ctx_default, pathological_inputs, case, size):
    text = pathological_inputs[size][case]
    _tag(benchmark, f"pathological-{size}", case, False, bytes=len(text.encode("utf-8")))
    n = benchmark.pedantic(
        ctx_default.count, args=(text,), kwargs={"cache": False}, rounds=7, warmup_rounds=1
    )
    assert 0 < n <= len(text)


#: The plain test below is a regression guard that must hold on a busy 2-core machine, so it is
#: generous: a neighbour thrashing the shared CPU caches was seen to push the 1 MiB runs to ~2x
#: their quiet time (and 1 MiB / 256 KiB to ~7.5x). A quadratic engine is 16x per 4x of input and
#: seconds to minutes on 1 MiB, so these still catch the failure the targets are about.
#: report.py judges the exact targets (0.1 s, < 6x) on the benchmark medians.
GUARD_BUDGET_S = 2 * PATHOLOGICAL_BUDGET_S
GUARD_LINEAR_FACTOR = 10.0


@pytest.mark.parametrize("case", PATHOLOGICAL_CASES)
def test_pathological_guard(ctx_default, pathological_inputs, paired_store, quick, case):
    """1 MiB well within budget and 4x the input in well under 16x the time.

    Medians of 9 interleaved 256 KiB / 1 MiB rounds, re-measured up to twice on a miss. The
    interleaved medians also go to the report as a cross-check of the benchmark rows. Quick mode
    keeps only a catastrophe guard (2 s for 1 MiB).
    """
    big = pathological_inputs["1MiB"][case]
    small = pathological_inputs["256KiB"][case]
    count = lambda t: ctx_default.count(t, cache=False)  # noqa: E731
    if quick:
        t = time.perf_counter()
        assert count(big) > 0
        assert time.perf_counter() - t < 2.0
        return
    for _attempt in range(3):
        res = paired(lambda: count(small), lambda: count(big), 9)
        if res["peer_median"] <= GUARD_BUDGET_S and res["ratio"] < GUARD_LINEAR_FACTOR:
            break
    paired_store[f"pathological:{case}"] = res
    t_big, ratio = res["peer_median"], res["ratio"]
    assert t_big <= GUARD_BUDGET_S, f"{case}: 1 MiB took {t_big * 1e3:.1f} ms (median)"
    assert ratio < GUARD_LINEAR_FACTOR, (
        f"{case}: 1 MiB {t_big * 1e3:.1f} ms vs 256 KiB {res['base_median'] * 1e3:.1f} ms "
        f"= {ratio:.1f}x for 4x the input"
    )


# ---- per-unit cache --------------------------------------------------------------------------

CACHE_UNITS = 64
CACHE_CONTENDERS = ["ctxfast (cache hit)", "ctxfast (cache=False)", "tiktoken"]


@pytest.fixture(scope="session")
def cache_units(prose_text, code_text, json_text, cjk_text) -> list[str]:
    """64 distinct ~4 KB units (16 from each corpus), cut to at most 4,096 UTF-8 bytes."""
    out = []
    for i, text in enumerate([prose_text, code_text, json_text, cjk_text]):
        out += [helpers.cut_bytes(u, 4096, at_line=False) for u in corpora.units(text, 4096, 16, seed=i)]
    assert len(set(out)) == len(out) == CACHE_UNITS
    return out


@pytest.mark.parametrize("contender", CACHE_CONTENDERS)
def test_cache(benchmark, ctx_default, tiktoken_o200k, cache_units, contender):
    units = cache_units
    expected = sum(len(tiktoken_o200k.encode_ordinary(u)) for u in units)
    if contender == "ctxfast (cache hit)":
        for u in units:
            ctx_default.count(u)  # fill

        def fn():
            return sum(ctx_default.count(u) for u in units)
    elif contender == "ctxfast (cache=False)":

        def fn():
            return sum(ctx_default.count(u, cache=False) for u in units)
    else:

        def fn():
            return sum(len(tiktoken_o200k.encode_ordinary(u)) for u in units)

    _tag(
        benchmark,
        "cache-4KB",
        contender,
        contender == "ctxfast (cache hit)",
        items_per_call=len(units),
        bytes=sum(len(u.encode("utf-8")) for u in units),
    )
    misses_before = ctx_default.cache_info().misses
    if contender == "ctxfast (cache hit)":
        n = benchmark.pedantic(fn, rounds=30, warmup_rounds=2, iterations=20)
        assert ctx_default.cache_info().misses == misses_before, "a warm unit missed the cache"
    else:
        n = benchmark.pedantic(fn, rounds=15, warmup_rounds=1, iterations=1)
    assert n == expected


# ---- count_many on both cores ----------------------------------------------------------------

MANY_CONTENDERS = [
    "ctxfast count_many (cache=False)",
    "ctxfast count loop, 1 thread (cache=False)",
    "tiktoken encode_ordinary_batch (2 threads)",
]


@pytest.fixture(scope="session")
def many_texts(prose_text, code_text, json_text, cjk_text) -> list[str]:
    return corpora.batch([prose_text, code_text, json_text, cjk_text], count=2000)


@pytest.fixture(scope="session")
def many_total(many_texts, tiktoken_o200k) -> int:
    return sum(len(tiktoken_o200k.encode_ordinary(t)) for t in many_texts)


@pytest.mark.parametrize("contender", MANY_CONTENDERS)
def test_count_many(benchmark, ctx_default, tiktoken_o200k, many_texts, many_total, contender):
    texts = many_texts
    fn = {
        MANY_CONTENDERS[0]: lambda: int(ctx_default.count_many(texts, cache=False).sum()),
        MANY_CONTENDERS[1]: lambda: sum(ctx_default.count(t, cache=False) for t in texts),
        MANY_CONTENDERS[2]: lambda: sum(
            map(len, tiktoken_o200k.encode_ordinary_batch(texts, num_threads=2))
        ),
    }[contender]
    _tag(
        benchmark,
        "count_many",
        contender,
        contender == MANY_CONTENDERS[0],
        texts=len(texts),
        bytes=sum(len(t.encode("utf-8")) for t in texts),
        tokens=many_total,
    )
    n = benchmark.pedantic(fn, rounds=11, warmup_rounds=1, iterations=1)
    assert n == many_total


# ---- interleaved A/B ratios for the targets ----------------------------------------------------

PAIRED_ROUNDS = 15


@pytest.mark.parametrize("corpus_name", CORPORA)
def test_paired_throughput(corpus, counters, paired_store, quick, corpus_name):
    text = corpus[corpus_name]
    ctx, tk = counters["ctxfast"], counters["tiktoken"]
    ctx(text), tk(text)  # warm
    res = paired(lambda: ctx(text), lambda: tk(text), 1 if quick else PAIRED_ROUNDS)
    paired_store[f"throughput-{corpus_name}:tiktoken"] = res


def test_paired_short_count(ctx_default, tiktoken_o200k, paired_store, quick):
    text = corpora.sentence()
    loops = range(2000)

    def ctx():
        for _ in loops:
            ctx_default.count(text, cache=False)

    def tk():
        for _ in loops:
            tiktoken_o200k.encode_ordinary(text)

    ctx(), tk()
    paired_store["short-count:tiktoken"] = paired(ctx, tk, 1 if quick else PAIRED_ROUNDS)


def test_paired_count_many(ctx_default, many_texts, paired_store, quick):
    texts = many_texts
    res = paired(
        lambda: ctx_default.count_many(texts, cache=False),
        lambda: [ctx_default.count(t, cache=False) for t in texts],
        1 if quick else 11,
    )
    paired_store["count_many:ctxfast count loop, 1 thread (cache=False)"] = res
