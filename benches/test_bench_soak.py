"""The soak in quick mode: a few thousand random window operations with every invariant checked
(``python benches/soak.py`` runs the million the README reports)."""

from __future__ import annotations

import soak


def test_soak_quick() -> None:
    result = soak.soak(ops=4_000, seed=7, rss_slack_mib=64.0)
    assert result["ops"] == 4_000
    assert result["flat"], result
    assert set(result["ops_by_kind"]) >= {"admit", "fit", "park"}  # type: ignore[arg-type]
