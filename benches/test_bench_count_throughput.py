"""``count_throughput.py`` in quick mode (one sample): every contender's count equals tiktoken's on
every kind of text and both encodings, cold and steady; the figures come from the full run."""

from __future__ import annotations

import count_throughput


def test_every_contender_counts_exactly() -> None:
    rows = count_throughput.run(quick=True)
    assert {(r["encoding"], r["kind"]) for r in rows} == {
        (e, k) for e in count_throughput.ENCODINGS for k in count_throughput.KINDS}
    assert all(r[c] > 0 for r in rows for c in ("ctxfast cold", "ctxfast steady", "fastokens cold", "fastokens steady", "steady paired"))
    assert "steady, paired" in count_throughput.report(rows)
