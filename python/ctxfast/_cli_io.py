"""The command line's input and output: where text goes, how errors look, reading a payload
(a file or ``-`` for stdin) and writing the fitted one (a file, atomically, or ``-``).

Errors: ``ctxfast: error: ...`` on stderr, exit status 2. A message keeps its own lines (the
TOML parser's caret diagram) and a remedy follows on its last line (``; hint: ...``). It is
never wrapped when stderr is not a terminal, so a script
or a ``grep`` reads one message per line. On a terminal, lines are wrapped at spaces to its
width, so nothing breaks mid-word.

Everything the CLI prints itself goes through ``say`` (wrapped at spaces to the console's width:
the terminal's, or ``COLUMNS``, or 80). Text that comes from the engine (the trace,
``Policy.describe()``) and data (paths, counts) goes through ``show``: printed as it is, never
re-wrapped, so the engine's own layout stays intact.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console, RenderableType
from rich.text import Text

STDIN_NAME = "<stdin>"


def _console(stderr: bool) -> Console:
    return Console(stderr=stderr, highlight=False, markup=False, emoji=False)


#: stdout and stderr consoles; tests replace them (a terminal of a given width).
out = _console(stderr=False)
err = _console(stderr=True)


def say(console: Console, text: str | RenderableType) -> None:
    """The CLI's own words: wrapped at spaces to the console's width."""
    console.print(Text(text) if isinstance(text, str) else text, soft_wrap=False)


def show(console: Console, text: str) -> None:
    """Engine text and data, exactly as given: no wrapping, no cropping, no markup."""
    console.print(Text(text), soft_wrap=True)


def fail(message: str, hint: str | None = None) -> NoReturn:
    """Print ``ctxfast: error: MESSAGE[; hint: HINT]`` on stderr and exit with status 2."""
    lines = [line.rstrip() for line in message.strip("\n").splitlines()] or [""]
    lines[0] = "ctxfast: error: " + lines[0].strip()
    if hint:  # on the message's last line: one line in a pipe stays one line
        lines[-1] = f"{lines[-1].rstrip('.;')}; hint: {hint}"
    for line in lines:
        # Wrapped at spaces on a terminal; one line per message line anywhere else.
        err.print(Text(line), soft_wrap=not err.is_terminal)
    sys.exit(2)


# ----------------------------------------------------------------------------------------------
# Reading


def read_text(spec: str) -> tuple[str, str, int | None]:
    """``(name to show, text, permission bits)`` of a file, or of stdin for ``-`` (no bits)."""
    if spec == "-":
        try:
            raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8")
        except OSError as e:
            fail(f"{STDIN_NAME}: cannot read: {e.strerror or type(e).__name__}")
        try:
            return STDIN_NAME, raw.decode("utf-8"), None
        except UnicodeDecodeError as e:
            fail(f"{STDIN_NAME}: cannot read as UTF-8 text: {e.reason} at byte {e.start}")
    path = Path(spec)
    try:
        if path.is_dir():
            fail(f"{spec}: is a folder, not a JSON payload")
        mode = stat.S_IMODE(path.stat().st_mode)
        return spec, path.read_text(encoding="utf-8"), mode
    except FileNotFoundError:
        fail(f"{spec}: no such file")
    except UnicodeDecodeError as e:
        fail(f"{spec}: cannot read: not UTF-8 text ({e.reason} at byte {e.start})")
    except (OSError, ValueError) as e:
        fail(f"{spec}: cannot read: {getattr(e, 'strerror', None) or e}")


def parse_json(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{name}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}")
    except RecursionError:
        fail(f"{name}: JSON nested too deeply to parse")
    except ValueError as e:  # e.g. an integer over Python's int-to-str limit (4,300 digits)
        fail(f"{name}: invalid JSON: {e}")


def to_json_bytes(value: Any) -> bytes:
    """Indented JSON as UTF-8; raises RecursionError, ValueError or TypeError."""
    text = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (from a "\ud800" escape in an uncounted field) has no UTF-8 form;
        # escaped JSON holds the same data.
        return (json.dumps(value, ensure_ascii=True, indent=2) + "\n").encode("ascii")


# ----------------------------------------------------------------------------------------------
# Writing


def _umask_mode() -> int:
    """The mode a new ordinary file gets here: 0o666 less the umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_output(target: str, data: bytes, input_mode: int | None) -> None:
    """Write ``data`` to ``target`` (``-``: stdout), atomically: a temporary file beside it,
    then a rename, so a reader never sees half a file.

    A new file gets the input file's permissions (an ordinary file's from stdin); an existing
    one keeps its own, as ``cp`` does. Failure is one line naming the target, never the
    temporary file."""
    if target == "-":
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            sys.stdout.write(data.decode("utf-8"))
            sys.stdout.flush()
        return
    path = Path(target)
    directory = path.parent
    if not directory.is_dir():
        what = "does not exist" if not directory.exists() else "is not a folder"
        fail(f"-o {target}: cannot write: {directory} {what}")
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = input_mode if input_mode is not None else _umask_mode()
    except OSError as e:
        fail(f"-o {target}: cannot write: {e.strerror or type(e).__name__}")
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        fail(f"-o {target}: cannot write: {e.strerror or type(e).__name__}")
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
