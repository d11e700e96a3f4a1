"""Issue 13's prompt-cache targets, checked on ``prompt_cache.py``'s session: with ``previous=``
(or ``ContextWindow(cache="openai")``) most turns keep the previous request's prefix and the
session's uncached prompt tokens are at most half of evicting exactly to fit.

The full run (60 turns, 32k / 8k windows: ``python benches/prompt_cache.py``) must keep the prefix on
at least 90% of turns. Quick mode (what CI runs) is 30 turns in half-size windows, where a turn is a
larger share of the window and each move costs relatively more: it must keep 85%. Both must halve the
uncached tokens, and evicting exactly must fall short of the cache-aware rate (else the session is
not under pressure and the test could not fail).
"""

from __future__ import annotations

from typing import Any

import pytest

import prompt_cache


@pytest.fixture(scope="module")
def rows(quick: bool) -> list[dict[str, Any]]:
    return prompt_cache.run(quick)


@pytest.mark.parametrize("path", ["openai.fit_messages", "ContextWindow", "chat.fit_messages"])
def test_cache_aware_cuts_keep_the_prefix_and_halve_uncached_tokens(rows: list[dict[str, Any]], quick: bool,
                                                                     path: str) -> None:
    exact, aware = (r for r in rows if r["path"].startswith(path))
    assert (exact["mode"], aware["mode"]) == ("evict exactly", "cache-aware")
    share = aware["kept_prefix"] / aware["of"]
    assert share >= (0.85 if quick else 0.90), prompt_cache.report(rows)
    assert exact["kept_prefix"] < aware["kept_prefix"], "the session is not under pressure"
    assert aware["uncached"] <= exact["uncached"] / 2, prompt_cache.report(rows)
