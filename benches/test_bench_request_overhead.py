"""Issue 14, item 6, checked on ``request_overhead.py`` in quick mode (CI): a request rebuilt from
strings (as new Segments, or as columns through ``fit_columns``) keeps exactly what the warm fit
keeps, and both the overhead table and the count_many
thread table are produced. The figures (stateless ÷ warm, the threshold) are the README's, from
the full run; wall-clock is not asserted here.
"""

from __future__ import annotations

import request_overhead as ro


def test_request_overhead_runs(quick: bool) -> None:
    rows = ro.overhead(quick)
    thresholds = ro.threshold(quick)
    assert [r["ceiling"] for r in rows] == list(ro.CEILINGS)
    assert all(r["segments"] == 40 and r["warm_us"] > 0 and r["stateless_us"] > 0 and r["columnar_us"] > 0 and r["encoding_us"] > 0
               for r in rows)
    assert {(t["bytes"], t["texts"]) for t in thresholds} == {(b, n) for b in ro.BATCH_BYTES for n in (2, 4, 16)}
    print(ro.report(rows, thresholds))
