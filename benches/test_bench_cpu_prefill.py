"""The CPU-prefill benchmark (``cpu_prefill.py``) as CI runs it: two turns per model at a 4k
window, with its checks. Every request ctxfast fits must count exactly as the reference counts
it (transformers' render and tokenizer; mistral-common for Mistral) and stay under the ceiling.
The full run, for the README's table, is ``python benches/cpu_prefill.py``."""

from __future__ import annotations

import cpu_prefill


def test_cpu_prefill_quick() -> None:
    rows = cpu_prefill.run(quick=True)
    assert {r["family"] for r in rows} == set(cpu_prefill.FAMILIES)
    for r in rows:
        assert r["exact"] == r["turns"], r["family"]
        assert r["ctxfast_over"] <= 0, r["family"]
        assert all(t <= r["ceiling"] for t in r["loop_tokens"]), "the transformers loop counts what it sends"
    assert cpu_prefill.report(rows).count("\n") == len(rows) + 1
