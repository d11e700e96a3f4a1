"""Window stores: park a conversation's ``ContextWindow`` between turns, writing only what each
turn changed.

A store keeps, per conversation, a binary snapshot (``ContextWindow.to_bytes``) and the deltas
written since (``ContextWindow.delta_since``), and restores a window as snapshot + deltas. Every
``compact_every`` turns, or when the deltas outweigh the snapshot, the snapshot is rewritten and
the deltas dropped. Saving is optimistic: a save names the version it loaded, and a store that
holds a newer one refuses it with ``StoreConflictError``, so two replicas serving one
conversation never lose a turn (``update`` reloads and redoes it).

- ``MemoryStore``: a dict behind a lock, for tests and one process.
- ``FileStore``: one append-only file per conversation, for one machine (POSIX file locks).
- ``RedisStore``: Redis, for a fleet (``pip install "ctxfast[redis]"``); one atomic script per
  save checks the version and appends.

Use::

    store = RedisStore(redis.Redis(), ttl=3600)
    fit = store.update("conversation-42", lambda w: (w.admit_many(turn), w.fit())[1],
                       create=lambda: ContextWindow(32_000))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxfast.stores._base import Checkout, WindowStore
from ctxfast.stores._file import FileStore
from ctxfast.stores._memory import MemoryStore

__all__ = ["Checkout", "FileStore", "MemoryStore", "RedisStore", "WindowStore"]

if TYPE_CHECKING:
    from ctxfast.stores._redis import RedisStore


def __getattr__(name: str) -> object:
    # RedisStore imports redis-py only when asked for, so the other stores need no extra.
    if name == "RedisStore":
        from ctxfast.stores._redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
