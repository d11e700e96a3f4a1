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


def show(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"


def test_stub_matches_binary(tmp_path_factory: pytest.TempPathFactory) -> None:
    """stubtest really ran (no traceback, one module checked) and reports no mismatch."""
    # Run outside the checkout so mypy's cache lands in a temporary folder.
    workdir: Path = tmp_path_factory.mktemp("stubtest")
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "ctxfast._core"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in result.stderr, show(result)
    assert re.findall(r"^error: (.+)$", result.stdout, flags=re.MULTILINE) == [], show(result)
    assert result.returncode == 0, show(result)
    assert "in 1 module" in result.stdout, show(result)
