"""States written by earlier binary formats still load: version 1 (before the packed ledger:
a snapshot with its deltas, and a pickle; tests/data/window_v1) and version 2 (before the
fixed-width state digest of version 3: a snapshot and two deltas; tests/data/window_v2)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import ctxfast
from ctxfast import ContextWindow
from test_window_persistence import play_turn, state

V1 = Path(__file__).resolve().parent / "data" / "window_v1"
V2 = Path(__file__).resolve().parent / "data" / "window_v2"


@pytest.mark.parametrize("folder, version", [(V1, 1), (V2, 2)], ids=["version 1", "version 2"])
def test_an_older_snapshot_and_its_deltas_still_restore_the_same_window(folder: Path, version: int):
    """A snapshot and two deltas written by an earlier format, and what they hold (version 2's
    deltas promise its own state digest); the window goes on in the current format."""
    expected = json.loads((folder / "expected.json").read_text())
    snap = (folder / "snapshot.bin").read_bytes()
    deltas = [(folder / "delta1.bin").read_bytes(), (folder / "delta2.bin").read_bytes()]
    assert snap[:6] == b"CTXWS" + bytes([version]) and all(d[:6] == b"CTXWD" + bytes([version]) for d in deltas)
    back = ContextWindow.from_bytes(snap, deltas=deltas)
    assert json.loads(json.dumps(state(back), default=repr)) == expected["state"]
    assert json.loads(back.to_json()) == expected["to_json"]
    # Applied one at a time too, and out of order refused.
    step = ContextWindow.from_bytes(snap)
    with pytest.raises(ctxfast.CtxfastError):
        step.apply_delta(deltas[1])
    for d in deltas:
        step.apply_delta(d)
    assert json.loads(step.to_json()) == expected["to_json"]
    # A changed byte in an old delta is still refused (its frame digest).
    bad = bytearray(deltas[0])
    bad[len(bad) // 2] ^= 1
    with pytest.raises(ctxfast.CtxfastError):
        ContextWindow.from_bytes(snap, deltas=[bytes(bad), deltas[1]])
    # Saved again it is written in the current format, and comes back the same.
    again = back.to_bytes()
    assert again[:6] == b"CTXWS\x03"
    assert json.loads(ContextWindow.from_bytes(again).to_json()) == expected["to_json"]
    # And it goes on: a delta written after the restore (current format) applies after the old ones.
    mark = back.revision
    play_turn(back, 8)
    new = back.delta_since(mark)
    assert new[:6] == b"CTXWD\x03"
    resumed = ContextWindow.from_bytes(snap, deltas=[*deltas, new])
    assert resumed.to_bytes() == back.to_bytes()


def test_a_version_1_pickle_still_loads():
    back = pickle.loads((V1 / "window.pickle").read_bytes())
    assert json.loads(back.to_json()) == json.loads((V1 / "pickle_expected.json").read_text())
