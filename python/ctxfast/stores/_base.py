"""What every window store shares: load as snapshot + deltas, save a delta (or a new snapshot)
against the version loaded, the retry loop. Backends supply three primitives: read a record,
write one conditionally, delete one."""

from __future__ import annotations

import contextlib
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ctxfast._core import ContextWindow, Tokenizer
from ctxfast._errors import InvalidArgumentError, StoreConflictError, StoreError

T = TypeVar("T")


@dataclass
class Checkout:
    """A window as a store handed it out, with what saving it back needs.

    ``version`` is the store's version it was loaded at (None: a conversation not stored yet);
    ``revision`` the window's revision then. ``save`` moves both on, so one checkout can be saved
    turn after turn.
    """

    window: ContextWindow
    version: str | None
    revision: int
    deltas: int = 0
    delta_bytes: int = 0
    snapshot_bytes: int = 0


@dataclass(frozen=True)
class Record:
    """A stored conversation: its version, snapshot and the deltas written after it."""

    version: str
    snapshot: bytes
    deltas: Sequence[bytes]


def _revision_of(version: str) -> int:
    try:
        return int(version.rsplit(":", 1)[1])
    except (IndexError, ValueError):
        raise StoreError(f"a stored version {version!r} is not 'epoch:revision'") from None


class WindowStore(ABC):
    """A place to park windows between turns, by conversation id.

    Args:
        tokenizer: The tokenizer restored windows count with (share one: its cache stays warm);
            None rebuilds each window's saved recipe.
        ttl: Seconds a conversation lives after its last save (None: for ever).
        compact_every: Rewrite the snapshot after this many deltas (also when the deltas
            outweigh it), so a load never replays a long chain.
    """

    def __init__(self, *, tokenizer: Tokenizer | Callable[[str], int] | None = None,
                 ttl: float | None = None, compact_every: int = 16) -> None:
        if ttl is not None and not (isinstance(ttl, (int, float)) and ttl > 0):
            raise InvalidArgumentError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
        if isinstance(compact_every, bool) or not isinstance(compact_every, int) or compact_every < 1:
            raise InvalidArgumentError(f"compact_every must be an int >= 1, got {compact_every!r}")
        self.tokenizer = tokenizer
        self.ttl = ttl
        self.compact_every = compact_every

    # ---- what a backend provides --------------------------------------------------------------

    @abstractmethod
    def _read(self, conversation: str) -> Record | None:
        """The stored record, or None when there is none (or it expired)."""

    @abstractmethod
    def _write(self, conversation: str, expected: str | None, version: str, payload: bytes, snapshot: bool) -> bool:
        """Stores ``payload`` (a new snapshot replacing everything, or a delta appended) and
        ``version`` if the stored version is ``expected`` (None: nothing stored); False if not."""

    @abstractmethod
    def delete(self, conversation: str) -> bool:
        """Forgets a conversation; True if there was one."""

    # ---- the shared logic ---------------------------------------------------------------------

    @staticmethod
    def _check_id(conversation: object) -> str:
        if not isinstance(conversation, str) or not conversation:
            raise InvalidArgumentError(f"conversation must be a non-empty str, got {conversation!r}")
        return conversation

    def load(self, conversation: str) -> Checkout | None:
        """The conversation's window (snapshot + deltas), or None when none is stored."""
        record = self._read(self._check_id(conversation))
        if record is None:
            return None
        window = ContextWindow.from_bytes(record.snapshot, self.tokenizer, deltas=record.deltas)
        if window.revision != _revision_of(record.version):
            raise StoreError(f"conversation {conversation!r}: the stored deltas end at revision {window.revision}, "
                             f"its version says {record.version!r}")
        return Checkout(window, record.version, window.revision, len(record.deltas),
                        sum(len(d) for d in record.deltas), len(record.snapshot))

    def new(self, window: ContextWindow) -> Checkout:
        """A checkout for a conversation not stored yet: its first save writes a snapshot."""
        if not isinstance(window, ContextWindow):
            raise InvalidArgumentError(f"window must be a ContextWindow, got {type(window).__name__}")
        return Checkout(window, None, window.revision)

    def save(self, conversation: str, checkout: Checkout) -> None:
        """Writes what changed since the checkout was loaded (a delta, or a compacted snapshot).

        Raises:
            StoreConflictError: someone saved this conversation since (or created it, for a new
                checkout); nothing was written. Load it again and redo the turn.
        """
        self._check_id(conversation)
        w = checkout.window
        revision = w.revision
        if checkout.version is not None and revision == checkout.revision:
            return
        if checkout.version is None:
            epoch = secrets.token_hex(8)
            payload, snapshot = w.to_bytes(), True
        else:
            epoch = checkout.version.rsplit(":", 1)[0]
            delta = w.delta_since(checkout.revision)
            outgrown = checkout.delta_bytes + len(delta) > checkout.snapshot_bytes
            if checkout.deltas + 1 >= self.compact_every or outgrown:
                payload, snapshot = w.to_bytes(), True
            else:
                payload, snapshot = delta, False
        version = f"{epoch}:{revision}"
        if not self._write(conversation, checkout.version, version, payload, snapshot):
            raise StoreConflictError(f"conversation {conversation!r} was saved by another writer since it was loaded "
                                     f"(at {checkout.version or 'nothing stored'}); load it again and redo the turn")
        checkout.version, checkout.revision = version, revision
        if snapshot:
            checkout.deltas, checkout.delta_bytes, checkout.snapshot_bytes = 0, 0, len(payload)
        else:
            checkout.deltas += 1
            checkout.delta_bytes += len(payload)

    @contextlib.contextmanager
    def session(self, conversation: str, create: Callable[[], ContextWindow]) -> Iterator[ContextWindow]:
        """Loads (or ``create()``s) the window, yields it, saves it when the block ends normally.

        Raises ``StoreConflictError`` at the end if another writer got there first.
        """
        checkout = self.load(conversation) or self.new(create())
        yield checkout.window
        self.save(conversation, checkout)

    def update(self, conversation: str, turn: Callable[[ContextWindow], T], *,
               create: Callable[[], ContextWindow], retries: int = 16) -> T:
        """Runs ``turn(window)`` on the stored window and saves it; on a conflict, reloads and
        runs it again (up to ``retries`` times), so concurrent writers never lose a turn.
        ``turn`` must be safe to run again on a fresh window (it only changes the window)."""
        for _ in range(max(1, retries)):
            checkout = self.load(conversation) or self.new(create())
            result = turn(checkout.window)
            try:
                self.save(conversation, checkout)
            except StoreConflictError:
                continue
            return result
        raise StoreConflictError(f"conversation {conversation!r}: {retries} tries in a row lost to other writers")
