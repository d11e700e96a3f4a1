"""LangChain's own ``trim_messages`` unit tests, run against ``ctxfast.langchain.trim_messages``.

The tests are read from the sdist of the installed ``langchain-core`` (the same version, so the
tests match the library they were written for): ``tests/unit_tests/messages/test_utils.py``,
fetched once with ``pip download --no-binary :all: --no-deps`` into ``tests/.cache/`` (git
ignores it; CI reaches PyPI). The file is imported as a module, its module-level name
``trim_messages`` is replaced by ctxfast's, and each of its ``test_trim_messages*`` functions
runs as one case here. A failed download fails every case with the reason; nothing is skipped.

Deliberate differences (at most 2, listed in README.md too) are cases that must still fail,
with the error named here, so a difference that goes away is noticed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import ctxfast
from ctxfast.langchain import trim_messages

VERSION = importlib.metadata.version("langchain-core")
MEMBER = "tests/unit_tests/messages/test_utils.py"
CACHE = Path(__file__).parent / ".cache" / f"langchain-core-{VERSION}-test_utils.py"

#: Deliberate differences, by test name: (the exception the upstream test meets, why). The same
#: two for langchain-core 1.8.3 (Python >= 3.11) and 0.3.86 (Python 3.10); key by VERSION if a
#: pinned version ever differs.
DELIBERATE: dict[str, tuple[type[BaseException], str]] = {
    "test_trim_messages_invoke": (
        ctxfast.Unfittable,
        "10 tokens cannot hold the system message and the current turn (the last human message "
        "and the answer after it, 30 tokens). ctxfast never drops either and raises Unfittable; "
        "LangChain returns only the last AI message.",
    ),
    "test_trim_messages_allow_partial_text_splitter": (
        AssertionError,
        "include_system defaults to True here (LangChain: False), so the system message is kept "
        "and the partial human message is shorter than LangChain's.",
    ),
}


def _fetch() -> Path:
    """The upstream test file, from the cache or from the sdist on PyPI."""
    if CACHE.is_file():
        return CACHE
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", f"langchain-core=={VERSION}",
               "--no-binary", ":all:", "--no-deps", "--quiet", "-d", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        sdists = list(Path(tmp).glob("langchain_core-*.tar.gz"))
        if done.returncode != 0 or len(sdists) != 1:
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        with tarfile.open(sdists[0]) as tar:
            names = [n for n in tar.getnames() if n.split("/", 1)[-1] == MEMBER]
            source = tar.extractfile(names[0]) if names else None
            if source is None:
                raise RuntimeError(f"{sdists[0].name} holds no {MEMBER}")
            text = source.read()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    partial = CACHE.with_suffix(f".{os.getpid()}.tmp")
    partial.write_bytes(text)
    partial.replace(CACHE)  # atomic, so a parallel run never reads half a file
    return CACHE


def _load() -> tuple[ModuleType | None, str]:
    """The upstream module with ctxfast's trim_messages in place, or None and why not."""
    try:
        path = _fetch()
        spec = importlib.util.spec_from_file_location(f"langchain_core_upstream_test_utils_{VERSION.replace('.', '_')}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - reported by every case
        return None, f"LangChain's tests for langchain-core {VERSION} could not be read: {type(e).__name__}: {e}"
    module.trim_messages = trim_messages  # type: ignore[attr-defined]
    return module, ""


UPSTREAM, LOAD_ERROR = _load()
NAMES = sorted(n for n in vars(UPSTREAM) if n.startswith("test_trim_messages")) if UPSTREAM else ["<load>"]


@pytest.mark.parametrize("name", NAMES)
def test_upstream(name: str) -> None:
    if UPSTREAM is None:
        pytest.fail(LOAD_ERROR)
    fn: Any = getattr(UPSTREAM, name)
    assert not inspect.signature(fn).parameters, f"{name} takes fixtures; this harness calls tests bare"
    if name not in DELIBERATE:
        fn()
        return
    error, reason = DELIBERATE[name]
    with pytest.raises(error):
        fn()
    assert reason


def test_the_upstream_suite_is_the_one_reviewed() -> None:
    """Every deliberate difference is a test of this version, there are at most 2, and at least
    the 18 tests every reviewed version holds ran (a renamed file would otherwise pass empty)."""
    if UPSTREAM is None:
        pytest.fail(LOAD_ERROR)
    assert len(DELIBERATE) <= 2
    assert set(DELIBERATE) <= set(NAMES), sorted(set(DELIBERATE) - set(NAMES))
    assert len(NAMES) >= 18, NAMES
    assert UPSTREAM.trim_messages is trim_messages
