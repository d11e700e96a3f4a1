"""Benchmark inputs and the Hugging Face o200k tokenizer, built deterministically.

Nothing here imports ctxfast; ``conftest.py`` wires these helpers into pytest fixtures.
Corpora:

- prose: ``shared/corpora/pride_and_prejudice.txt`` (English, 0.7 MB)
- cjk:   ``shared/corpora/wagahai.txt`` (Japanese, 1.1 MB)
- code:  the running Python's standard library ``.py`` files in sorted path order, ~1 MB
- json:  pretty-printed records from a seeded generator, ~1 MB
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import string
import sysconfig
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

#: Target size of the generated corpora (code, json), in UTF-8 bytes.
GENERATED_BYTES = 1_000_000

#: tiktoken's cache name for o200k_base (sha1 of its download URL) and that file's pinned sha256.
O200K_FILE = "fb374d419588a4632f3f557e76b4b70aebbca790"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

#: Bump when the conversion below changes, so a stale cached tokenizer.json is not reused.
HF_CONVERSION_VERSION = 1


def shared_dir() -> Path:
    """``$CTXFAST_SHARED``, else the ``shared`` folder beside the repository."""
    env = os.environ.get("CTXFAST_SHARED")
    return Path(env).resolve() if env else (REPO_ROOT.parent / "shared").resolve()


def tiktoken_cache_dir(shared: Path | None = None) -> Path:
    return (shared or shared_dir()) / "data" / "tiktoken_cache"


# --------------------------------------------------------------------------------------------
# Corpora


def prose(shared: Path) -> str:
    return (shared / "corpora" / "pride_and_prejudice.txt").read_text(encoding="utf-8")


def cjk(shared: Path) -> str:
    return (shared / "corpora" / "wagahai.txt").read_text(encoding="utf-8")


def code(limit: int = GENERATED_BYTES) -> str:
    """Python standard library sources, whole files in sorted path order, until ``limit`` bytes.

    Test suites and site-packages are left out (they hold deliberately odd encodings and
    whatever happens to be installed); files that are not UTF-8 are skipped. The result is cut at
    the last line break before ``limit`` bytes.
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
    return _cut_bytes("".join(parts), limit)


_WORDS = (
    "alpha beta gamma delta epsilon token budget window context layer segment policy evict "
    "summary request response model user system tool cache count batch stream latency "
    "Zürich São Paulo München Kraków 東京 大阪 Ελλάδα"
).split()


def _record(rng: random.Random, i: int) -> dict:
    return {
        "id": i,
        "uuid": "%032x" % rng.getrandbits(128),
        "name": " ".join(rng.choice(_WORDS).capitalize() for _ in range(rng.randint(1, 3))),
        "email": "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 10)))
        + "@example.org",
        "active": rng.random() < 0.7,
        "score": round(rng.uniform(-1000, 1000), rng.randint(0, 6)),
        "ratio": rng.random(),
        "created": "20%02d-%02d-%02dT%02d:%02d:%02dZ"
        % (rng.randint(10, 30), rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)),
        "tags": [rng.choice(_WORDS) for _ in range(rng.randint(0, 5))],
        "parent": None if rng.random() < 0.3 else rng.randint(0, max(i, 1)),
        "metrics": {k: rng.randint(0, 10**rng.randint(1, 9)) for k in rng.sample(_WORDS[:24], rng.randint(1, 4))},
        "note": " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 20))),
    }


def json_text(limit: int = GENERATED_BYTES, seed: int = 20240601) -> str:
    """A pretty-printed JSON array of seeded random records, just over ``limit`` bytes."""
    rng = random.Random(seed)
    records: list[dict] = []
    size = 2
    while size < limit:
        rec = _record(rng, len(records))
        records.append(rec)
        one = json.dumps(rec, indent=2, ensure_ascii=False)
        # Inside the top-level array every line gains two spaces; records are joined by ",\n".
        size += len(one.encode("utf-8")) + 2 * (one.count("\n") + 1) + 2
    return json.dumps(records, indent=2, ensure_ascii=False) + "\n"


def _cut_bytes(text: str, limit: int, at_line: bool = True) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (after the last line break if ``at_line``)."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    cut = raw[:limit]
    nl = cut.rfind(b"\n")
    if at_line and nl > 0:
        cut = cut[: nl + 1]
    return cut.decode("utf-8", errors="ignore")


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
        out.append(_cut_bytes(src[start : start + n], n, at_line=False))
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


def hf_o200k_path(shared: Path, pattern: str) -> Path:
    """The converted tokenizer.json, built once and cached in the temp dir (never in the repo)."""
    rank_file = tiktoken_cache_dir(shared) / O200K_FILE
    digest = hashlib.sha256(rank_file.read_bytes()).hexdigest()
    if digest != O200K_SHA256:
        raise RuntimeError(f"{rank_file} is not o200k_base (sha256 {digest})")
    key = hashlib.sha256(f"{digest}\n{pattern}\n{HF_CONVERSION_VERSION}".encode()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / "ctxfast-bench" / f"o200k_base-hf-{key}.json"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        text = build_hf_o200k_json(rank_file, pattern)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out)
    return out
