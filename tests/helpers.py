"""What the test suite and the benchmarks share: the reference data, the generated corpora, one
``raises_ctx`` and one word generator.

``tests/`` is a plain folder, not a package: pytest puts it on ``sys.path`` for the tests (its
conftest's folder), and ``benches/corpora.py`` puts it there for the benchmarks, so both say
``import helpers``. The conversation generators are in ``sessions.py`` beside this file.

Reference data lives in ``tests/data/`` (see its README): tiktoken's rank files and two
public-domain corpora. A missing or altered file is an error (``FileNotFoundError`` or
``RuntimeError``), never a skip: a green run means the agreement tests really ran.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import string
import sysconfig
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
DATA_DIR = TESTS_DIR / "data"
TIKTOKEN_CACHE_DIR = DATA_DIR / "tiktoken_cache"
CORPORA_DIR = DATA_DIR / "corpora"

#: The encodings embedded in ctxfast, compared against tiktoken.
ENCODINGS = ("o200k_base", "cl100k_base")

#: encoding -> (tiktoken's cache file name = sha1 of its download URL, tiktoken's pinned sha256).
RANK_FILES = {
    "o200k_base": ("fb374d419588a4632f3f557e76b4b70aebbca790",
                   "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    "cl100k_base": ("9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
                    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
}

#: Target size of the generated corpora (code, json), in UTF-8 bytes.
GENERATED_BYTES = 1_000_000


# --------------------------------------------------------------------------------------------
# Reference data


def data_file(relative: str) -> Path:
    """``tests/data/<relative>``, which must exist."""
    path = DATA_DIR / relative
    if not path.is_file():
        raise FileNotFoundError(f"reference data missing from the repository: {path}")
    return path


def rank_file(encoding: str) -> Path:
    """tiktoken's rank file for ``encoding``, checked against tiktoken's pinned sha256.

    Checked here because tiktoken, finding a cached file with the wrong hash, deletes it and
    tries to download it again.
    """
    name, sha256 = RANK_FILES[encoding]
    path = data_file(f"tiktoken_cache/{name}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise RuntimeError(f"{path} is not tiktoken's {encoding} (sha256 {digest}, expected {sha256})")
    return path


def use_tiktoken_cache() -> Path:
    """Point tiktoken at the in-repo rank files (call before tiktoken is first used)."""
    for encoding in RANK_FILES:
        rank_file(encoding)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(TIKTOKEN_CACHE_DIR)
    return TIKTOKEN_CACHE_DIR


def prose_corpus() -> str:
    """*Pride and Prejudice*: English prose, ~0.7 MB."""
    return data_file("corpora/pride_and_prejudice.txt").read_text(encoding="utf-8")


def japanese_corpus() -> str:
    """*I Am a Cat* (Wagahai wa neko de aru): Japanese, ~1.1 MB."""
    return data_file("corpora/wagahai.txt").read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------
# Generated corpora (the benchmarks' figures in the README come from exactly these)


def code_corpus(limit: int = GENERATED_BYTES) -> str:
    """Python standard library sources, whole files in sorted path order, until ``limit`` bytes.

    Test suites and site-packages are left out (they hold deliberately odd encodings and
    whatever happens to be installed); files that are not UTF-8 are passed over. The result is
    cut at the last line break before ``limit`` bytes, and depends on the Python version only.
    """
    root = Path(sysconfig.get_paths()["stdlib"])
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in {"site-packages", "test", "tests", "__pycache__", "idle_test"}]
        files.extend(Path(dirpath, f) for f in filenames if f.endswith(".py"))
    files.sort(key=lambda p: p.relative_to(root).as_posix())
    parts: list[str] = []
    size = 0
    for path in files:
        try:
            src = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        chunk = f"# ---- {path.relative_to(root).as_posix()}\n{src}\n"
        parts.append(chunk)
        size += len(chunk.encode("utf-8"))
        if size >= limit:
            break
    corpus = cut_bytes("".join(parts), limit)
    assert len(corpus) > limit // 2, f"too little stdlib source under {root}"
    return corpus


_JSON_WORDS = (
    "alpha beta gamma delta epsilon token budget window context layer segment policy evict "
    "summary request response model user system tool cache count batch stream latency "
    "Zürich São Paulo München Kraków 東京 大阪 Ελλάδα"
).split()


def _record(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": i,
        "uuid": "%032x" % rng.getrandbits(128),
        "name": " ".join(rng.choice(_JSON_WORDS).capitalize() for _ in range(rng.randint(1, 3))),
        "email": "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 10)))
        + "@example.org",
        "active": rng.random() < 0.7,
        "score": round(rng.uniform(-1000, 1000), rng.randint(0, 6)),
        "ratio": rng.random(),
        "created": "20%02d-%02d-%02dT%02d:%02d:%02dZ"
        % (rng.randint(10, 30), rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)),
        "tags": [rng.choice(_JSON_WORDS) for _ in range(rng.randint(0, 5))],
        "parent": None if rng.random() < 0.3 else rng.randint(0, max(i, 1)),
        "metrics": {k: rng.randint(0, 10**rng.randint(1, 9)) for k in rng.sample(_JSON_WORDS[:24], rng.randint(1, 4))},
        "note": " ".join(rng.choice(_JSON_WORDS) for _ in range(rng.randint(0, 20))),
    }


def json_corpus(limit: int = GENERATED_BYTES, seed: int = 20240601, *, ensure_ascii: bool = False) -> str:
    """A pretty-printed JSON array of seeded random records, just over ``limit`` bytes.

    ``ensure_ascii=True`` escapes non-ASCII text (``\\u00fc``), as ``json.dumps`` does by default.
    """
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    size = 2
    while size < limit:
        rec = _record(rng, len(records))
        records.append(rec)
        one = json.dumps(rec, indent=2, ensure_ascii=ensure_ascii)
        # Inside the top-level array every line gains two spaces; records are joined by ",\n".
        size += len(one.encode("utf-8")) + 2 * (one.count("\n") + 1) + 2
    return json.dumps(records, indent=2, ensure_ascii=ensure_ascii) + "\n"


def cut_bytes(text: str, limit: int, at_line: bool = True) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (after the last line break if ``at_line``)."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    cut = raw[:limit]
    nl = cut.rfind(b"\n")
    if at_line and nl > 0:
        cut = cut[: nl + 1]
    return cut.decode("utf-8", errors="ignore")


# --------------------------------------------------------------------------------------------
# Errors


@contextlib.contextmanager
def raises_ctx(builtin: type[BaseException], *fragments: str) -> Iterator[pytest.ExceptionInfo[Any]]:
    """``pytest.raises`` for an error that is both a ``ctxfast.CtxfastError`` and ``builtin``, whose
    message holds every fragment. Yields the ``ExceptionInfo`` (``.value`` is set after the block).

    An exception that is not a ``builtin`` propagates as it is, so the original error shows.
    """
    import ctxfast

    with pytest.raises(builtin) as info:
        yield info
    err = info.value
    assert isinstance(err, ctxfast.CtxfastError), f"{type(err).__mro__} is not a CtxfastError"
    for fragment in fragments:
        assert fragment in str(err), f"{fragment!r} not in message {str(err)!r}"


# --------------------------------------------------------------------------------------------
# Words

#: What generated conversations are made of: ops-chat vocabulary with a few non-ASCII words.
VOCABULARY = (
    "the request to checkout service returned 502 after deploy pod readiness selector label upstream "
    "keepalive timeout load balancer idle window replica canary rollback latency p99 error rate queue "
    "worker retry backoff cache miss index migration lock table shipment invoice tracker gateway "
    "billing café naïve 日本語 données"
).split()

_PUNCTUATION = (".", ",", ";", ":")


def word_count(text: str) -> int:
    """A tokenizer callable for tests whose arithmetic should be easy to read: one token a word."""
    return len(text.split())


def words(n: int, rng: random.Random | None = None, *, vocabulary: Sequence[str] = VOCABULARY,
          punctuate: bool = False, tag: str = "w", numbered: bool = True) -> str:
    """``n`` words.

    With ``rng``: a sentence of words drawn from ``vocabulary``, ending with ".";
    ``punctuate=True`` capitalises the first word and puts ".,;:" after about one word in twelve.

    Without ``rng``, labels whose word count is the point (for word-count tokenizers):
    ``"{tag}0 {tag}1 ..."``, or with ``numbered=False`` ``tag`` followed by ``n - 1`` ``"w"``.
    """
    if rng is None:
        if numbered:
            return " ".join(f"{tag}{i}" for i in range(n))
        return " ".join([tag] + ["w"] * (n - 1)) if n > 0 else ""
    if not punctuate:
        return " ".join(rng.choice(vocabulary) for _ in range(n)) + "."
    out = []
    for i in range(n):
        w = rng.choice(vocabulary)
        out.append(w.capitalize() if i == 0 else w)
        if rng.random() < 0.08:
            out[-1] += rng.choice(_PUNCTUATION)
    return " ".join(out) + "."
