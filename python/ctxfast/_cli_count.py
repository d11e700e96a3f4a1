"""``ctxfast count``: the tokens of files, folders (recursively) and stdin.

A folder contributes its text files, walked in sorted order, skipping hidden names (``.git``,
``.venv``...) and without following links to folders (no cycles). A file that holds a NUL byte
(binary) or is not UTF-8 is listed as skipped, with the reason, whether it was named or found:
one image in ``docs/*`` does not abort the count. A path that does not exist, or a named file
that cannot be read, is an error.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ctxfast import CtxfastError, Tokenizer
from ctxfast import _cli_io as io

#: Files counted per native call: large enough to use both cores, small enough to show progress.
BATCH = 64


@dataclass
class Entry:
    name: str
    path: Path | None  # None: stdin
    named: bool  # given on the command line (read errors are fatal), else found in a folder
    tokens: int | None = None
    skipped: str | None = None


class FilesPerSecond(ProgressColumn):
    """The counting rate, in files per second."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} files/s" if speed else "", style="progress.data.speed")


def progress_columns() -> tuple[ProgressColumn, ...]:
    # About 70 columns with a 20-cell bar: fits an 80-column terminal.
    return (
        TextColumn("counting"),
        BarColumn(bar_width=20),
        MofNCompleteColumn(),
        FilesPerSecond(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )


def _walk(top: str) -> list[Entry]:
    found: list[Entry] = []

    def stop(e: OSError) -> None:
        io.fail(f"{e.filename or top}: cannot read folder: {e.strerror or type(e).__name__}")

    for root, dirs, files in os.walk(top, onerror=stop):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                path = Path(root, name)
                found.append(Entry(str(path), path, named=False))
    return found


def collect(specs: Sequence[str]) -> list[Entry]:
    entries: list[Entry] = []
    for spec in specs:
        if spec == "-":
            entries.append(Entry(io.STDIN_NAME, None, named=True))
            continue
        path = Path(spec)
        try:
            is_dir, exists = path.is_dir(), path.exists()
        except (OSError, ValueError):
            is_dir, exists = False, False
        if is_dir:
            entries += _walk(spec)
        elif exists:
            entries.append(Entry(spec, path, named=True))
        else:
            io.fail(f"{spec}: no such file or folder")
    return entries


def _read(entry: Entry) -> str | None:
    """The entry's text, or None after marking it skipped (binary, not UTF-8, unreadable)."""
    try:
        if entry.path is None:
            return io.read_text("-")[1]
        raw = entry.path.read_bytes()
    except OSError as e:
        if entry.named:
            io.fail(f"{entry.name}: cannot read: {e.strerror or type(e).__name__}")
        entry.skipped = f"cannot read: {e.strerror or type(e).__name__}"
        return None
    if b"\0" in raw:
        entry.skipped = "binary"
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        entry.skipped = "not UTF-8"
        return None


def count(specs: Sequence[str], tok: Tokenizer) -> None:
    entries = collect(specs)
    # Only on a terminal: a redirected stderr keeps exactly one line per error.
    hidden = len(entries) < 2 * BATCH or not io.err.is_terminal
    with Progress(*progress_columns(), console=io.err, transient=True, disable=hidden) as progress:
        task = progress.add_task("count", total=len(entries))
        for start in range(0, len(entries), BATCH):
            batch = entries[start : start + BATCH]
            readable: list[Entry] = []
            texts: list[str] = []
            for entry in batch:
                text = _read(entry)
                if text is not None:
                    readable.append(entry)
                    texts.append(text)
            try:
                counts = tok.count_many(texts).tolist() if texts else []
            except CtxfastError as failure:
                at = getattr(failure, "index", None)
                where = readable[at].name if isinstance(at, int) and 0 <= at < len(readable) else "count"
                io.fail(f"{where}: {failure}")
            for entry, n in zip(readable, counts):
                entry.tokens = int(n)
            progress.advance(task, len(batch))
    counted = [e for e in entries if e.tokens is not None]
    for e in entries:
        if e.tokens is not None:
            io.show(io.out, f"{e.tokens:>12,}  {e.name}")
        else:
            io.show(io.out, f"{'skipped':>12}  {e.name} ({e.skipped})")
    skipped = len(entries) - len(counted)
    if len(entries) != 1 or skipped:  # an empty folder says so: "0 total (0 files, ...)"
        files = f"{len(counted)} file{'s' if len(counted) != 1 else ''}"
        extra = f", {skipped} skipped" if skipped else ""
        io.show(io.out, f"{sum(e.tokens or 0 for e in counted):>12,}  total ({files}{extra}, {tok.name})")
