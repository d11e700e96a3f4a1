"""Resolving ``--policy`` and ``--encoding`` for the command line, with errors that say which
it was: a file that does not exist, a preset name with a typo (and the closest name), an
encoding the binary does not embed."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from ctxfast import CtxfastError, Policy, Tokenizer
from ctxfast._cli_detect import ENCODINGS
from ctxfast._cli_io import fail

#: The presets, as ``Policy.preset`` knows them (tests check the two agree).
PRESETS = ("agent", "context_window", "troubleshooting", "seven_tier", "ranked")


def _suggest(word: str, choices: list[str] | tuple[str, ...]) -> str | None:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return close[0] if close else None


def _with_suggestion(message: str, word: str, choices: list[str] | tuple[str, ...]) -> str:
    """``message`` with a "did you mean" for ``word``, unless it already has one."""
    if "did you mean" in message.lower() or len(word) > 100:
        return message
    close = _suggest(word, choices)
    if close is None:
        return message
    quoted = f'"{word}"'
    if quoted in message:
        return message.replace(quoted, f'{quoted} (did you mean "{close}"?)', 1)
    return f'{message} (did you mean "{close}"?)'


def looks_like_a_path(spec: str) -> bool:
    """A preset name is a bare word: a '/', a '.' or a leading '~' makes it a file name."""
    return "/" in spec or os.sep in spec or "." in spec or spec.startswith("~")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long for a path, or a NUL: not a file
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _missing_file(spec: str) -> str:
    path = Path(spec).expanduser()
    message = f"no such policy file: {spec}"
    try:
        siblings = sorted(p.name for p in (path.parent if str(path.parent) else Path(".")).glob("*.toml"))
    except (OSError, ValueError):
        siblings = []
    close = _suggest(path.name, siblings)
    if close is not None:
        message += f' (did you mean "{str(path.with_name(close)) if path.parent != Path(".") else close}"?)'
    return message


def load_policy(spec: str, prefix: str = "") -> Policy:
    """A preset name or a TOML file; on failure one error naming which it was (``prefix`` is
    the option, e.g. ``--policy agnet: ``)."""
    path = Path(spec).expanduser() if spec.startswith("~") else Path(spec)
    try:
        if _is_file(path):
            return Policy.from_toml(path)
        if _exists(path):
            fail(f"{prefix}{spec} is a folder, not a policy file")
        if looks_like_a_path(spec):
            fail(f"{prefix}{_missing_file(spec)}")
        return Policy.preset(spec)  # type: ignore[arg-type]  # a user's string: the core checks it
    except CtxfastError as e:
        message = str(e)
        if message.startswith(f"{path}: "):  # the TOML errors name the file: once is enough
            message = message[len(f"{path}: "):]
        if not _is_file(path) and not looks_like_a_path(spec):
            message = _with_suggestion(message, spec, PRESETS)
        fail(f"{prefix}{spec}: {message}" if _is_file(path) else f"{prefix}{message}")


def load_tokenizer(encoding: str) -> Tokenizer:
    """The embedded encoding, or an error blamed on ``--encoding`` (never on the payload)."""
    try:
        return Tokenizer.from_encoding(encoding)
    except CtxfastError as e:
        fail(f"--encoding {encoding}: {_with_suggestion(str(e), encoding, ENCODINGS)}")
