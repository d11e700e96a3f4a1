"""Benchmark inputs and the Hugging Face o200k tokenizer, built deterministically.

Nothing here imports ctxfast; ``conftest.py`` wires these helpers into pytest fixtures.
The corpora and the reference data are the test suite's (``tests/helpers.py``, one copy for both):

- prose: ``tests/data/corpora/pride_and_prejudice.txt`` (English, 0.7 MB)
- cjk:   ``tests/data/corpora/wagahai.txt`` (Japanese, 1.1 MB)
- code:  the running Python's standard library ``.py`` files in sorted path order, ~1 MB
- json:  pretty-printed records from a seeded generator, ~1 MB
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import string
import sys
import tempfile
from pathlib import Path

# The benchmarks share the tests' reference data and generators (tests/helpers.py). tests/ is a
# plain folder, not a package (pytest's default layout), so it goes on sys.path: here, not only
# in conftest.py, because ``python benches/session.py`` and the report scripts import this module
# without pytest.
_TESTS = str(Path(__file__).resolve().parent.parent / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

import helpers  # noqa: E402

REPO_ROOT = helpers.REPO_ROOT

#: tiktoken's cache name for o200k_base (sha1 of its download URL).
O200K_FILE = helpers.RANK_FILES["o200k_base"][0]

#: Bump when the conversion below changes, so a stale cached tokenizer.json is not reused.
HF_CONVERSION_VERSION = 1


# --------------------------------------------------------------------------------------------
# Request-sized inputs


def sentence() -> str:
    """A short request-sized string (~20 o200k tokens)."""
    return "The quick brown fox jumps over the lazy dog, then naps beside the riverbank until noon."


def units(corpus: str, size: int, count: int, seed: int = 7) -> list[str]:
    """``count`` distinct ~``size``-character slices of ``corpus`` (deterministic)."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[int] = set()
    while len(out) < count:
        start = rng.randrange(0, max(1, len(corpus) - size))
        if start in seen:
            continue
        seen.add(start)
        out.append(corpus[start : start + size])
    return out


def batch(corpora: list[str], count: int = 2000, lo: int = 1024, hi: int = 8192, seed: int = 11) -> list[str]:
    """``count`` texts of about ``lo``..``hi`` UTF-8 bytes, sliced from the given corpora in turn."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        src = corpora[i % len(corpora)]
        n = rng.randint(lo, hi)  # bytes
        start = rng.randrange(0, len(src) - n)
        out.append(helpers.cut_bytes(src[start : start + n], n, at_line=False))
    return out


# --------------------------------------------------------------------------------------------
# Pathological inputs


def pathological(n: int) -> dict[str, str]:
    """Inputs that break naive BPE or regex engines, each exactly ``n`` characters (ASCII)."""
    rng = random.Random(n)
    letters = "".join(rng.choice(string.ascii_letters) for _ in range(n))
    blob = base64.b64encode(rng.randbytes(n * 3 // 4 + 3)).decode("ascii")[:n]
    return {
        "a_run": "a" * n,
        "spaces": " " * n,
        "newlines": "\n" * n,
        "underscores": "_" * n,
        "random_letters": letters,
        "base64_blob": blob,
    }


# --------------------------------------------------------------------------------------------
# o200k_base as a Hugging Face tokenizer


def _byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (what ByteLevel uses)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def load_ranks(path: Path) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _split_in_two(token: bytes, rank: int, ranks: dict[bytes, int]) -> tuple[bytes, bytes]:
    """Run byte-level BPE on ``token`` with only the ranks below its own: it stops at two parts."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best = None
        best_rank = rank
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < best_rank:
                best, best_rank = i, r
        if best is None:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    if len(parts) != 2:
        raise ValueError(f"token {token!r} (rank {rank}) does not reduce to a pair: {parts!r}")
    return parts[0], parts[1]


def build_hf_o200k_json(rank_file: Path, pattern: str) -> str:
    """tokenizer.json text for o200k_base: byte-level BPE, vocab = ranks, merges from ranks.

    No special tokens are registered, so counts match tiktoken's ``encode_ordinary``.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    ranks = load_ranks(rank_file)
    b2u = _byte_to_unicode()

    def sym(b: bytes) -> str:
        return "".join(b2u[x] for x in b)

    vocab = {sym(tok): r for tok, r in ranks.items()}
    merges = []
    for token, r in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) > 1:
            left, right = _split_in_two(token, r, ranks)
            merges.append((sym(left), sym(right)))
    model = models.BPE(vocab=vocab, merges=merges, ignore_merges=True)
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    return tok.to_str()


def hf_o200k_path(pattern: str) -> Path:
    """The converted tokenizer.json, built once and cached in the temp dir (never in the repo)."""
    rank_file = helpers.rank_file("o200k_base")  # checked against tiktoken's pinned sha256
    digest = hashlib.sha256(rank_file.read_bytes()).hexdigest()
    key = hashlib.sha256(f"{digest}\n{pattern}\n{HF_CONVERSION_VERSION}".encode()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / "ctxfast-bench" / f"o200k_base-hf-{key}.json"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        text = build_hf_o200k_json(rank_file, pattern)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    return out
