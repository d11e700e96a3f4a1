"""Shared fixtures for the ctxfast test suite.

Reference data (the public-domain corpora and tiktoken's rank files) lives in a folder shared
with the benchmarks, outside the repository: ``$CTXFAST_SHARED`` if set, else ``<repo>/../shared``.
Tests that need it are skipped when it is absent, unless ``CTXFAST_REQUIRE_SHARED=1`` (as in CI),
where a missing folder is an error: a green CI run must mean the agreement tests really ran.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import string
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

#: The encodings embedded in ctxfast, compared against tiktoken.
ENCODINGS = ("o200k_base", "cl100k_base")

#: Size of the generated code and JSON corpora, in characters.
CORPUS_CHARS = 1_000_000


def shared_root() -> Path:
    env = os.environ.get("CTXFAST_SHARED")
    return Path(env) if env else REPO_ROOT.parent / "shared"


def shared_required() -> bool:
    return os.environ.get("CTXFAST_REQUIRE_SHARED") == "1"


def missing(what: str) -> None:
    """Skip the requesting test, or fail it when CI requires the reference data."""
    if shared_required():
        pytest.fail(f"{what} (CTXFAST_REQUIRE_SHARED=1, so this is an error, not a skip)")
    pytest.skip(what)


# --------------------------------------------------------------------------------------------
# The shared folder and its corpora


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    root = shared_root()
    if not root.is_dir():
        missing(f"shared data folder not found: {root} (set CTXFAST_SHARED)")
    return root


def _read_shared(shared_dir: Path, relative: str) -> str:
    path = shared_dir / relative
    if not path.is_file():
        missing(f"shared file not found: {path}")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def prose_corpus(shared_dir: Path) -> str:
    """Pride and Prejudice: English prose, ~0.7 MB."""
    return _read_shared(shared_dir, "corpora/pride_and_prejudice.txt")


@pytest.fixture(scope="session")
def japanese_corpus(shared_dir: Path) -> str:
    """I Am a Cat (Wagahai wa neko de aru): Japanese, ~1.1 MB."""
    return _read_shared(shared_dir, "corpora/wagahai.txt")


def build_code_corpus(limit: int = CORPUS_CHARS) -> str:
    """About a megabyte of the running interpreter's standard-library Python sources.

    Only the top level of the stdlib folder, in sorted name order, so the result depends on the
    Python version and nothing else.
    """
    stdlib = Path(os.path.dirname(os.__file__))
    parts: list[str] = []
    size = 0
    for path in sorted(stdlib.glob("*.py")):
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(source)
        size += len(source)
        if size >= limit:
            break
    corpus = "".join(parts)[:limit]
    assert len(corpus) > limit // 2, f"too little stdlib source under {stdlib}"
    return corpus


@pytest.fixture(scope="session")
def code_corpus() -> str:
    return build_code_corpus()


_WORDS = (
    "alpha beta gamma delta token budget window cache prompt policy segment layer rung "
    "summary retrieval exchange tool result system pinned conversation"
).split()
_UNICODE_NOTES = ("café", "naïve", "日本語のテキスト", "Ελληνικά", "emoji 🎉👍", "tab\there", "line\nbreak")


def _json_record(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": i,
        "uuid": "".join(rng.choice("0123456789abcdef") for _ in range(32)),
        "name": " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4))).title(),
        "email": "".join(rng.choice(string.ascii_lowercase) for _ in range(8)) + "@example.com",
        "score": round(rng.random(), rng.randint(1, 8)),
        "count": rng.randint(-(10**6), 10**9),
        "active": rng.random() < 0.5,
        "parent": None if rng.random() < 0.3 else rng.randint(0, i + 1),
        "tags": [rng.choice(_WORDS) for _ in range(rng.randint(0, 5))],
        "note": rng.choice(_UNICODE_NOTES),
        "metrics": {w: rng.uniform(-1e3, 1e3) for w in rng.sample(_WORDS, 3)},
    }


def build_json_corpus(limit: int = CORPUS_CHARS, seed: int = 20240611) -> str:
    """Seeded random records as pretty-printed JSON (non-ASCII escaped, as json.dumps does)."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    size = 0
    while size < limit:
        record = _json_record(rng, len(records))
        records.append(record)
        size += len(json.dumps(record, indent=2)) + 4
    return json.dumps(records, indent=2)


@pytest.fixture(scope="session")
def json_corpus() -> str:
    return build_json_corpus()


@pytest.fixture(scope="session")
def corpora(prose_corpus: str, japanese_corpus: str, code_corpus: str, json_corpus: str) -> dict[str, str]:
    return {
        "prose": prose_corpus,
        "japanese": japanese_corpus,
        "code": code_corpus,
        "json": json_corpus,
    }


# --------------------------------------------------------------------------------------------
# Reference tokenizers


@pytest.fixture(scope="session")
def tiktoken(shared_dir: Path) -> Any:
    """The tiktoken module, reading OpenAI's rank files from the shared cache (no network)."""
    cache = shared_dir / "data" / "tiktoken_cache"
    if not cache.is_dir():
        missing(f"tiktoken cache not found: {cache}")
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        try:
            module = importlib.import_module("tiktoken")
        except ImportError:
            missing("tiktoken is not installed (pip install '.[test]')")
        yield module
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


@pytest.fixture(scope="session")
def tiktoken_encodings(tiktoken: Any) -> dict[str, Any]:
    """name -> tiktoken.Encoding for every embedded encoding, loaded once."""
    return {name: tiktoken.get_encoding(name) for name in ENCODINGS}


@pytest.fixture(scope="session")
def hf_tokenizer(prose_corpus: str) -> Any:
    """A small byte-level BPE trained with the `tokenizers` package on part of the prose corpus.

    It carries a post-processor that adds a BOS token and truncation/padding settings, none of
    which a token *counter* may apply: ctxfast must count the text's own tokens only.
    """
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1500,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<bos>", "<pad>"],
        show_progress=False,
    )
    tok.train_from_iterator(prose_corpus[:150_000].splitlines(), trainer=trainer)
    bos = tok.token_to_id("<bos>")
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", bos)])
    tok.enable_truncation(max_length=16)
    tok.enable_padding(pad_id=tok.token_to_id("<pad>"), pad_token="<pad>", length=32)
    return tok


@pytest.fixture(scope="session")
def hf_reference(hf_tokenizer: Any) -> Any:
    """The same tokenizer without truncation/padding: the reference for ids and counts."""
    import tokenizers

    ref = tokenizers.Tokenizer.from_str(hf_tokenizer.to_str())
    ref.no_truncation()
    ref.no_padding()
    return ref


@pytest.fixture(scope="session")
def hf_tokenizer_file(hf_tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    hf_tokenizer.save(str(path))
    return path
