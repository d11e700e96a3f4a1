"""``differential.py`` in a small mode: ctxfast's ids and uncached counts equal tiktoken's on
random and adversarial strings, both encodings (the full run, 10⁶ strings per encoding, is in the
README)."""

from __future__ import annotations

import differential


def test_random_strings_agree_with_tiktoken() -> None:
    result = differential.run(5_000, seed=7)
    assert result["strings"] == 10_000
    assert result["mismatches"] == []
