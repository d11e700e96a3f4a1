"""The hand-written stub ``ctxfast/_core.pyi`` must describe the compiled extension exactly.

``python -m mypy.stubtest ctxfast._core`` imports the installed binary and compares every name,
signature and property against the stub.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

# Mismatches tolerated for now, as patterns over stubtest's "error: ..." lines (none).
KNOWN_MISMATCHES: list[str] = []


@pytest.fixture(scope="module")
def stubtest(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    # Run outside the checkout so mypy's cache lands in a temporary folder.
    workdir: Path = tmp_path_factory.mktemp("stubtest")
    return subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "ctxfast._core"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def reported_errors(result: subprocess.CompletedProcess[str]) -> list[str]:
    return re.findall(r"^error: (.+)$", result.stdout, flags=re.MULTILINE)


def show(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"


def test_stub_matches_binary(stubtest: subprocess.CompletedProcess[str]) -> None:
    assert stubtest.returncode == 0, show(stubtest)


def test_no_new_stub_mismatches(stubtest: subprocess.CompletedProcess[str]) -> None:
    """Whatever stubtest reports is one of the known, reported mismatches, and it really ran."""
    assert "Traceback" not in stubtest.stderr, show(stubtest)
    errors = reported_errors(stubtest)
    if stubtest.returncode != 0:
        assert errors, f"stubtest failed without naming a mismatch:\n{show(stubtest)}"
        assert "checked 1 module" in stubtest.stdout, show(stubtest)
    new = [e for e in errors if not any(re.fullmatch(p, e) for p in KNOWN_MISMATCHES)]
    assert not new, f"new stub mismatches {new}:\n{show(stubtest)}"
