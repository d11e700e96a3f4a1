"""``MemoryStore``: conversations in a dict behind a lock, for tests and single processes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ctxfast._core import Tokenizer
from ctxfast.stores._base import Record, WindowStore


class MemoryStore(WindowStore):
    """Windows parked in this process's memory, as snapshot + deltas like the other stores.

    Thread-safe: one lock around each read and conditional write. ``ttl`` counts on the
    monotonic clock from the last save.
    """

    def __init__(self, *, tokenizer: Tokenizer | Callable[[str], int] | None = None,
                 ttl: float | None = None, compact_every: int = 16) -> None:
        super().__init__(tokenizer=tokenizer, ttl=ttl, compact_every=compact_every)
        self._lock = threading.Lock()
        # conversation -> (version, snapshot, deltas, expires at or None)
        self._records: dict[str, tuple[str, bytes, list[bytes], float | None]] = {}

    def _live(self, conversation: str) -> tuple[str, bytes, list[bytes], float | None] | None:
        rec = self._records.get(conversation)
        if rec is not None and rec[3] is not None and time.monotonic() >= rec[3]:
            del self._records[conversation]
            return None
        return rec

    def _read(self, conversation: str) -> Record | None:
        with self._lock:
            rec = self._live(conversation)
            return None if rec is None else Record(rec[0], rec[1], tuple(rec[2]))

    def _write(self, conversation: str, expected: str | None, version: str, payload: bytes, snapshot: bool) -> bool:
        with self._lock:
            rec = self._live(conversation)
            if (rec[0] if rec else None) != expected:
                return False
            expires = None if self.ttl is None else time.monotonic() + self.ttl
            if snapshot or rec is None:
                self._records[conversation] = (version, payload, [], expires)
            else:
                self._records[conversation] = (version, rec[1], [*rec[2], payload], expires)
            return True

    def delete(self, conversation: str) -> bool:
        with self._lock:
            return self._records.pop(self._check_id(conversation), None) is not None

    def __len__(self) -> int:
        with self._lock:
            return sum(1 for c in list(self._records) if self._live(c) is not None)
