"""ctxfast against tiktoken on many random and adversarial strings, both encodings: the ids of
``encode`` and the count of ``count(text, cache=False)`` must equal ``encode_ordinary``'s.

The strings mix what the pre-tokenizers branch on: letters of several scripts and cases, marks,
contractions (any case, ``'ſ``), digits of several scripts, whitespace runs with and without
newlines (``\\u00a0``, ``\\u3000``, ``\\u2028``, ``\\x85``), punctuation, emoji with joiners and
selectors, any code point, and slices of the agreement corpora. Each string is also counted
after the previous one, so the per-thread piece cache is exercised while it fills and evicts.

``python benches/differential.py`` runs 10⁶ strings per encoding (minutes); ``--quick`` 20,000;
``--n N`` any number; ``--seed S`` another draw. CI runs ``test_bench_differential.py`` (5,000 a
encoding).
The result line names the strings compared and the mismatches (any mismatch is printed, with
its seed and index, and the exit status is 1).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpora  # noqa: E402,F401  (puts tests/ on sys.path)
from corpora import helpers  # noqa: E402

import ctxfast  # noqa: E402

helpers.use_tiktoken_cache()

ENCODINGS = ["o200k_base", "cl100k_base"]
ATOMS = [
    "a", "Z", "word", "Word", "WORD", "ab", "camelCase", "HTTPServer", "'", "'s", "'S", "'ll", "'LL", "'Re", "'ve",
    "'d", "'D", "'m", "'t", "'T", "'ſ", "''", " ", "  ", "   ", "\t", "\n", "\n\n", "\r", "\r\n", " \n", "\u00a0",
    "\u3000", "\u2028", "\x85", "\x0b", "\x0c", "\x1c", "0", "7", "42", "123", "1234", "12345678", "٣", "१२", "½", "²",
    "Ⅻ", "!", "?", ".", ",", "...", "/", "//", "/\n", "-", "--", "_", "(", ")", "{", "}", "[", "]", "\"", "\":", "#",
    "@", "$", "%", "&", "*", "+", "=", "<", ">", "|", "\\", "~", "`", ";", ":", "é", "É", "ß", "ǅ", "ʰ", "\u0301",
    "\u0300", "\u0903", "日本", "語", "の", "テキスト", "カ", "ー", "，", "。", "「", "」", "한국어", "ㄱ", "العربية",
    "ب", "עברית", "ไทย", "ि", "Привет", "мир", "Ω", "ω", "ϑ", "🙂", "🎉", "👩\u200d👩\u200d👧", "\u200d", "\ufe0f",
    "\u200b", "𝐀", "ｆｕｌｌ", "ꙮ", "\ue000", "\U0010ffff", "\x7f", "<|endoftext|>",
    # The three-byte punctuation the block scanner reads as one symbol (U+200B..U+2027,
    # U+2030..U+203F), and the whitespace beside it that it leaves alone (U+2000..U+200A,
    # U+2028, U+2029, U+202F).
    "\u2019", "\u2018", "\u201c", "\u201d", "\u2013", "\u2014", "\u2026", "\u2022", "\u2027", "\u2030",
    "\u203f", "\u2009", "\u200a", "\u2029", "\u202f", "we\u2019re", "\u201cQuote,\u201d",
]


def code_point(rng: random.Random) -> str:
    while True:
        r = rng.random()
        c = rng.randrange(0x80) if r < 0.3 else rng.randrange(0x800) if r < 0.5 else \
            rng.randrange(0x30000) if r < 0.8 else rng.randrange(0x110000)
        if not 0xD800 <= c < 0xE000:  # surrogates are not text (tiktoken refuses them)
            return chr(c)


def strings(n: int, seed: int, corpus: str) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(n):
        r = rng.random()
        if r < 0.6:  # atoms
            yield "".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 24)))
        elif r < 0.75:  # code points
            yield "".join(code_point(rng) for _ in range(rng.randint(1, 16)))
        elif r < 0.9:  # a corpus slice, cut anywhere
            start = rng.randrange(len(corpus))
            yield corpus[start:start + rng.randint(1, 400)]
        else:  # long runs: one class repeated, with atoms spliced in
            run = rng.choice([" ", "\n", "a", "A", "日", "1", "!", "\u3000", "é", "🙂", " \n"]) * rng.randint(2, 300)
            cut = rng.randrange(len(run) + 1)
            yield run[:cut] + rng.choice(ATOMS) + run[cut:]


def compare(encoding: str, n: int, seed: int, corpus: str) -> tuple[int, list[str]]:
    import tiktoken

    enc = tiktoken.get_encoding(encoding)
    tok = ctxfast.Tokenizer.from_encoding(encoding)
    bad: list[str] = []
    done = 0
    batch: list[str] = []

    def check(texts: list[str]) -> None:
        expected = enc.encode_ordinary_batch(texts, num_threads=1)
        ids = tok.encode_batch(texts)
        for i, (text, want, got) in enumerate(zip(texts, expected, ids)):
            count = tok.count(text, cache=False)
            if got != want or count != len(want):
                bad.append(f"{encoding} seed {seed} string {done + i}: {text!r}: ids {got[:20]} count {count}, "
                           f"tiktoken {want[:20]} ({len(want)})")
        # The batch as one text: pieces meet across the strings' seams.
        joined = "".join(texts)
        want_n = len(enc.encode_ordinary(joined))
        if tok.count(joined, cache=False) != want_n:
            bad.append(f"{encoding} seed {seed} batch ending at string {done + len(texts)}: count differs ({want_n})")

    for text in strings(n, seed, corpus):
        batch.append(text)
        if len(batch) == 2000:
            check(batch)
            done += len(batch)
            batch = []
    check(batch)
    done += len(batch)
    return done, bad


def run(n: int, seed: int = 1) -> dict[str, Any]:
    corpus = helpers.prose_corpus()[:200_000] + helpers.japanese_corpus()[:100_000] + helpers.code_corpus()[:200_000]
    out: dict[str, Any] = {"strings": 0, "mismatches": [], "seconds": 0.0}
    t = time.perf_counter()
    for encoding in ENCODINGS:
        done, bad = compare(encoding, n, seed, corpus)
        out["strings"] += done
        out["mismatches"] += bad
    out["seconds"] = time.perf_counter() - t
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None, help="strings per encoding")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    n = a.n or (20_000 if a.quick else 1_000_000)
    r = run(n, a.seed)
    for m in r["mismatches"][:50]:
        print(m)
    print(f"{r['strings']:,} strings ({n:,} per encoding, seed {a.seed}), {len(r['mismatches'])} mismatches, "
          f"{r['seconds']:.0f} s")
    return 1 if r["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
