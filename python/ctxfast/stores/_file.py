"""``FileStore``: one append-only file per conversation, for one machine.

A file is a run of frames, ``[payload length: u32][version length: u16][version][payload]``
(big-endian): a snapshot first, then one delta per turn. A save appends a frame under an
exclusive lock on a side file (``flock``), after checking that the last complete frame carries
the version the writer loaded; a compaction writes a new file beside it and renames it over the
old one, so a reader sees the old file or the new, never half of one. A frame cut short by a
crash is not part of the conversation: readers stop before it, the next writer cuts it off.
"""

from __future__ import annotations

import fcntl
import os
import struct
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ctxfast._core import Tokenizer
from ctxfast._errors import InvalidArgumentError, StoreError
from ctxfast.stores._base import Record, WindowStore

_FRAME = struct.Struct(">IH")
_SUFFIX = ".ctxw"


def _frames(data: bytes) -> tuple[list[tuple[str, bytes]], int]:
    """The complete frames in ``data`` and the length they cover."""
    out, at = [], 0
    while at + _FRAME.size <= len(data):
        size, vlen = _FRAME.unpack_from(data, at)
        end = at + _FRAME.size + vlen + size
        if end > len(data):
            break
        version = data[at + _FRAME.size: at + _FRAME.size + vlen].decode("utf-8", "replace")
        out.append((version, data[at + _FRAME.size + vlen: end]))
        at = end
    return out, at


def _frame(version: str, payload: bytes) -> bytes:
    v = version.encode()
    return _FRAME.pack(len(payload), len(v)) + v + payload


class FileStore(WindowStore):
    """Windows parked as files under ``directory`` (created if missing). POSIX only (flock).

    ``durable=True`` fsyncs every save (slower; survives power loss, not just a crash).
    """

    def __init__(self, directory: str | os.PathLike[str], *, tokenizer: Tokenizer | Callable[[str], int] | None = None,
                 ttl: float | None = None, compact_every: int = 16, durable: bool = False) -> None:
        super().__init__(tokenizer=tokenizer, ttl=ttl, compact_every=compact_every)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.durable = durable

    def _path(self, conversation: str) -> Path:
        name = urllib.parse.quote(self._check_id(conversation), safe="-_.")
        if len(name) > 200:
            raise InvalidArgumentError(f"conversation id is too long for a file name ({len(name)} characters quoted)")
        return self.directory / (name + _SUFFIX)

    @contextmanager
    def _locked(self, path: Path) -> Iterator[None]:
        fd = os.open(str(path) + ".lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _expired(self, path: Path) -> bool:
        if self.ttl is None:
            return False
        try:
            return time.time() - path.stat().st_mtime >= self.ttl
        except FileNotFoundError:
            return False

    def _read(self, conversation: str) -> Record | None:
        path = self._path(conversation)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StoreError(f"cannot read {path}: {e}") from e
        if self._expired(path):
            return None
        frames, _ = _frames(data)
        if not frames:
            return None
        return Record(frames[-1][0], frames[0][1], tuple(p for _, p in frames[1:]))

    def _write(self, conversation: str, expected: str | None, version: str, payload: bytes, snapshot: bool) -> bool:
        path = self._path(conversation)
        try:
            with self._locked(path):
                try:
                    data = b"" if self._expired(path) else path.read_bytes()
                except FileNotFoundError:
                    data = b""
                frames, valid = _frames(data)
                if (frames[-1][0] if frames else None) != expected:
                    return False
                if snapshot or not frames:
                    tmp = path.with_suffix(f".{os.getpid()}.tmp")
                    with open(tmp, "wb") as f:
                        f.write(_frame(version, payload))
                        if self.durable:
                            f.flush()
                            os.fsync(f.fileno())
                    os.replace(tmp, path)
                else:
                    with open(path, "r+b") as f:
                        f.truncate(valid)  # a frame a crash cut short is not part of it
                        f.seek(valid)
                        f.write(_frame(version, payload))
                        if self.durable:
                            f.flush()
                            os.fsync(f.fileno())
                return True
        except OSError as e:
            raise StoreError(f"cannot write {path}: {e}") from e

    def delete(self, conversation: str) -> bool:
        path = self._path(conversation)
        with self._locked(path):
            try:
                path.unlink()
                return True
            except FileNotFoundError:
                return False
