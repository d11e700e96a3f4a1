"""The fast-engine benchmark (``bpe_engine.py``) as CI runs it: 64 KB slices, one round. Every
vocabulary must be served by the fast engine and count exactly as the tokenizers package does;
the full run, for the README's table, is ``python benches/bpe_engine.py``."""

from __future__ import annotations

import bpe_engine


def test_bpe_engine_quick() -> None:
    rows = bpe_engine.run(quick=True)
    assert [r["vocabulary"] for r in rows] == list(bpe_engine.FILES)
    for r in rows:
        assert r["exact"], r["vocabulary"]
        assert set(r["mbps"]) == {"prose", "japanese", "code", "json"}
    assert bpe_engine.report(rows).count("\n") == len(rows) + 1
