"""Shared fixtures for the ctxfast test suite.

The reference data (tiktoken's rank files, the public-domain corpora) is in the repository, under
``tests/data/`` (see ``helpers.py``): every test runs, and a missing file is an error, not a skip.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

# helpers.py and sessions.py sit beside this file; pytest's default import mode puts this folder
# on sys.path, and this keeps them importable under --import-mode=importlib too.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import helpers  # noqa: E402

# Before any test imports tiktoken: it reads the cache directory when it loads an encoding, but
# setting it first leaves no moment in which a download could be attempted.
helpers.use_tiktoken_cache()

# --------------------------------------------------------------------------------------------
# Corpora


@pytest.fixture(scope="session")
def prose_corpus() -> str:
    """Pride and Prejudice: English prose, ~0.7 MB."""
    return helpers.prose_corpus()


@pytest.fixture(scope="session")
def japanese_corpus() -> str:
    """I Am a Cat (Wagahai wa neko de aru): Japanese, ~1.1 MB."""
    return helpers.japanese_corpus()


@pytest.fixture(scope="session")
def code_corpus() -> str:
    """About a megabyte of the running interpreter's standard-library Python sources."""
    return helpers.code_corpus()


@pytest.fixture(scope="session")
def json_corpus() -> str:
    """About a megabyte of seeded JSON records, non-ASCII escaped (the benchmarks keep it raw)."""
    return helpers.json_corpus(ensure_ascii=True)


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
def tiktoken() -> Any:
    """The tiktoken module, reading OpenAI's rank files from tests/data (no network)."""
    return importlib.import_module("tiktoken")


@pytest.fixture(scope="session")
def tiktoken_encodings(tiktoken: Any) -> dict[str, Any]:
    """name -> tiktoken.Encoding for every embedded encoding, loaded once."""
    return {name: tiktoken.get_encoding(name) for name in helpers.ENCODINGS}


@pytest.fixture(scope="session")
def hf_tokenizer(prose_corpus: str) -> Any:
    """A small byte-level BPE trained with the `tokenizers` package on part of the prose corpus.

    It carries a post-processor that adds a BOS token and truncation/padding settings, none of
    which a token *counter* may apply: ctxfast must count the text's own tokens only.
    """
    import tokenizers
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
