"""Running the ``ctxfast`` command line from the CLI tests: in process (``cli.main``, fast,
with consoles of a chosen width) or as a real subprocess (the installed ``ctxfast`` script)."""

from __future__ import annotations

import io as stdio
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console

from ctxfast import _cli_io
from ctxfast import cli


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


def console(width: int = 80, *, terminal: bool = False, file: Any = None) -> Console:
    return Console(width=width, highlight=False, markup=False, emoji=False, force_terminal=terminal or None,
                   file=file, color_system=None)


def invoke(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *,
           stdin: bytes | None = None, width: int = 80) -> Result:
    """``ctxfast ARGS`` in this process, stdout and stderr at ``width`` columns (not terminals)."""
    monkeypatch.setattr(_cli_io, "out", console(width))
    monkeypatch.setattr(_cli_io, "err", Console(width=width, stderr=True, highlight=False, markup=False, emoji=False))
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", stdio.TextIOWrapper(stdio.BytesIO(stdin), encoding="utf-8"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        cli.main(args)
    captured = capsys.readouterr()
    code = info.value.code
    return Result(code if isinstance(code, int) else (0 if code is None else 1), captured.out, captured.err)


def ctxfast_command() -> list[str]:
    """The installed ``ctxfast`` script beside this interpreter (what a user runs), else
    ``python -m ctxfast`` (no script, or one whose interpreter is gone: a copied venv)."""
    script = shutil.which("ctxfast", path=str(Path(sys.executable).parent))
    if script:
        with open(script, "rb") as f:
            first = f.readline().decode("utf-8", "replace").strip()
        interpreter = first[2:].split()[0] if first.startswith("#!") and first[2:].split() else ""
        if not first.startswith("#!") or Path(interpreter).exists():
            return [script]
    return [sys.executable, "-m", "ctxfast"]


def run(cwd: Path, *args: str, stdin: bytes | None = None, columns: int | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([*ctxfast_command(), *args], cwd=cwd, input=stdin, capture_output=True, env=env,
                          timeout=timeout, stdin=None if stdin is not None else subprocess.DEVNULL)


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def too_wide(text: str, width: int = 80, allowed: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Lines of ``text`` wider than ``width`` cells, other than those in ``allowed``."""
    return [line for line in text.splitlines() if cell_len(line) > width and line not in allowed]


def squash(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines()]
