"""Issue 14's parking targets, checked on ``park.py`` (quick mode in CI: turn 20).

The delta of a turn is at most twice that turn's new text and the snapshot at most 1.6× the held
text. Memory per restored window (≤ 1.5× its text is the issue's target) and the wall-clock
figures are reported, not asserted (the machine's allocator and load decide them); the README's
come from the full run.
"""

from __future__ import annotations

import park


def test_parking_is_small_and_proportional(quick: bool) -> None:
    row = park.run(quick)
    text = park.report(row)
    assert row["delta_bytes"] <= 2 * row["turn_new_bytes"], text
    assert row["snapshot_bytes"] <= 1.6 * row["raw_bytes"], text
    print(text)
