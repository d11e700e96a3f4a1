"""The types accept correct code and reject wrong code, under ``mypy --strict``.

- The facade is typed (``py.typed``): the package itself passes ``mypy --strict`` against its
  own stubs.
- ``tests/typing/user_good.py`` (correct code, the friction report's cases among it) and every
  ``python`` block of the README type-check with no error. ``user_good.py`` also runs, so it is
  correct at run time too and not merely accepted.
- ``tests/typing/user_bad.py`` gets exactly the errors its ``# expect: <code>`` comments name,
  line by line, and no other: a stub loosened to ``Any`` to let correct code through fails here.

mypy runs in-process (``mypy.api.run``), once for all the checked files, with its cache in a
temporary folder.
"""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "ctxfast"
CASES = Path(__file__).resolve().parent / "typing"
GOOD = CASES / "user_good.py"
BAD = CASES / "user_bad.py"
README = ROOT / "README.md"

#: What the README's examples leave to the reader, declared with the types a caller would have.
#: Each README block is checked as its own module: this prelude, then the block.
README_PRELUDE = textwrap.dedent(
    """\
    from __future__ import annotations

    from collections.abc import Callable
    from dataclasses import dataclass
    from typing import Any

    import ctxfast


    @dataclass
    class _Chunk:
        id: str
        text: str
        score: float


    @dataclass
    class _Turn:
        turn: int
        text: str


    system_prompt: str
    tool_schemas_json: str
    question: str
    chunks: list[_Chunk]
    retrieved: list[_Chunk]
    history: list[_Turn]
    segments: list[ctxfast.Segment]
    messages: list[Any]
    tools: list[dict[str, Any]]
    system: str
    source: str
    text: str
    texts: list[str]
    hf_tokenizer: Any
    server_count: Callable[[str], int]
    assemble: Callable[..., str]
    """
)

_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+): error: (?P<message>.*?)(?:  \[(?P<code>[a-z-]+)\])?$")
_EXPECT = re.compile(r"#\s*expect:\s*([a-z-]+)\s*$")


def _readme_blocks() -> list[tuple[int, str]]:
    """``(first line number in README.md, code)`` of every fenced ``python`` block."""
    blocks = []
    lines = README.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            indent = len(lines[i]) - len(lines[i].lstrip())  # a block inside a list item
            start = i + 1
            end = start
            while lines[end].strip() != "```":
                end += 1
            code = [line[indent:] for line in lines[start:end]]
            blocks.append((start + 1, "\n".join(code) + "\n"))
            i = end
        i += 1
    return blocks


def _errors(stdout: str) -> list[tuple[str, int, str, str]]:
    """``(file name, line, code, message)`` of each error line mypy printed."""
    out = []
    for line in stdout.splitlines():
        m = _ERROR.match(line)
        if m:
            out.append((Path(m["file"]).name, int(m["line"]), m["code"] or "", m["message"]))
    return out


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, tuple[int, int]]]:
    """One ``mypy --strict`` over the cases and the README blocks.

    Returns mypy's output and, for each README block's module file, where it starts in the
    README and how many prelude lines come before it.
    """
    work = tmp_path_factory.mktemp("typing")
    prelude_lines = README_PRELUDE.count("\n")
    blocks: dict[str, tuple[int, int]] = {}
    files = [str(GOOD), str(BAD)]
    for n, (first_line, code) in enumerate(_readme_blocks()):
        path = work / f"readme_block_{n:02d}.py"
        path.write_text(README_PRELUDE + code, encoding="utf-8")
        blocks[path.name] = (first_line, prelude_lines)
        files.append(str(path))
    stdout, stderr, status = mypy_api.run(
        ["--strict", "--no-error-summary", "--no-pretty", "--show-error-codes", "--hide-error-context",
         "--cache-dir", str(work / "cache"), *files]
    )
    assert "Traceback" not in stderr, stderr
    assert status in (0, 1), f"mypy failed to run ({status}):\n{stdout}\n{stderr}"
    return stdout, blocks


def test_package_passes_mypy_strict(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), str(PACKAGE)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert "Success" in result.stdout


def test_the_readme_has_python_examples() -> None:
    """The README check below checks something: the README's examples are found."""
    blocks = _readme_blocks()
    assert len(blocks) >= 6
    assert any("Budget(" in code and "caps=" in code for _, code in blocks)
    assert any("trim_messages" in code for _, code in blocks)


def test_correct_code_type_checks(mypy_run: tuple[str, dict[str, tuple[int, int]]]) -> None:
    stdout, _ = mypy_run
    errors = [e for e in _errors(stdout) if e[0] == GOOD.name]
    assert errors == [], "mypy --strict rejects correct code:\n" + stdout


def test_readme_examples_type_check(mypy_run: tuple[str, dict[str, tuple[int, int]]]) -> None:
    stdout, blocks = mypy_run
    bad = []
    for file, line, code, message in _errors(stdout):
        if file in blocks:
            first_line, prelude = blocks[file]
            bad.append(f"README.md:{first_line + line - prelude - 1}: {message} [{code}]")
    assert not bad, "mypy --strict rejects README examples:\n" + "\n".join(bad)


def test_wrong_code_gets_exactly_the_expected_errors(mypy_run: tuple[str, dict[str, tuple[int, int]]]) -> None:
    stdout, _ = mypy_run
    expected = set()
    for n, line in enumerate(BAD.read_text(encoding="utf-8").splitlines(), start=1):
        m = _EXPECT.search(line)
        if m:
            expected.add((n, m.group(1)))
    assert len(expected) >= 15, "user_bad.py lost its cases"
    got = {(line, code) for file, line, code, _ in _errors(stdout) if file == BAD.name}
    assert got == expected, (
        f"missing (wrong code mypy now accepts): {sorted(expected - got)}\n"
        f"unexpected: {sorted(got - expected)}\n{stdout}"
    )


def test_the_correct_code_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """``user_good.py`` is correct at run time as well: its own asserts hold."""
    runpy.run_path(str(GOOD), run_name="__main__")
    out = capsys.readouterr().out
    assert "send" in out and "unfittable, short by" in out
