"""States written by the first binary format (version 1) still load: a snapshot with its deltas,
and a pickle, written by the code before the packed ledger (tests/data/window_v1)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

import ctxfast
from ctxfast import ContextWindow
from test_window_persistence import play_turn, state

V1 = Path(__file__).resolve().parent / "data" / "window_v1"


def test_a_version_1_snapshot_and_its_deltas_still_restore_the_same_window():
    """Written by the format before the packed ledger: snapshot, two deltas, and what they hold."""
    expected = json.loads((V1 / "expected.json").read_text())
    snap = (V1 / "snapshot.bin").read_bytes()
    assert snap[:6] == b"CTXWS\x01"
    deltas = [(V1 / "delta1.bin").read_bytes(), (V1 / "delta2.bin").read_bytes()]
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
    # Saved again it is written in the current format, and comes back the same.
    again = back.to_bytes()
    assert again[:6] == b"CTXWS\x02"
    assert json.loads(ContextWindow.from_bytes(again).to_json()) == expected["to_json"]
    # And it goes on: a delta written after the restore applies to the restored snapshot.
    mark = back.revision
    play_turn(back, 8)
    resumed = ContextWindow.from_bytes(snap, deltas=[*deltas, back.delta_since(mark)])
    assert resumed.to_bytes() == back.to_bytes()


def test_a_version_1_pickle_still_loads():
    back = pickle.loads((V1 / "window.pickle").read_bytes())
    assert json.loads(back.to_json()) == json.loads((V1 / "pickle_expected.json").read_text())
