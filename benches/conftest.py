"""Fixtures and guards for the ctxfast benchmarks.

- Refuses to run against anything but a release build of the extension (debug numbers mislead).
- Points tiktoken at the rank files in the repository (``tests/data/tiktoken_cache``, shared
  with the tests through ``tests/helpers.py``) before it is imported anywhere, so the peers load
  offline.
- Quick mode (``CTXFAST_BENCH_QUICK=1``, or ``--benchmark-disable`` as CI runs it): every body runs
  once and wall-clock assertions are skipped; correctness checks still run.
- Collects the interleaved A/B ratios of the ``test_paired_*`` tests into the benchmark JSON.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpora  # noqa: E402  (after the path tweak, so --import-mode=importlib works too)
import cpuload  # noqa: E402
from corpora import helpers  # noqa: E402  (tests/helpers.py: corpora.py puts tests/ on sys.path)

# Before any test module imports tiktoken: its cache directory is read at get_encoding() time,
# but setting it here, first, leaves no window in which a download could be attempted. A missing
# or altered rank file raises here, before any benchmark runs.
helpers.use_tiktoken_cache()


def pytest_configure(config: pytest.Config) -> None:
    import ctxfast

    profile = getattr(ctxfast, "build_profile", None)
    if profile != "release":
        pytest.exit(
            f"benches: refusing to run against a {profile!r} build of ctxfast "
            f"({ctxfast._core.__file__}); benchmark numbers are only meaningful for a release "
            "build — install it with `pip install .` (maturin's release profile).",
            returncode=2,
        )


#: Interleaved A/B measurements (see ``test_bench_tokenizer.paired``), added to the benchmark JSON
#: under "ctxfast_paired" so report.py can show them beside the ratio of medians.
PAIRED: dict[str, dict] = {}


def pytest_benchmark_update_json(config, benchmarks, output_json) -> None:
    output_json["ctxfast_paired"] = PAIRED


@pytest.fixture(scope="session")
def paired_store() -> dict[str, dict]:
    return PAIRED


@pytest.fixture(autouse=True)
def _cpu_accounting(request: pytest.FixtureRequest):
    """Record in each benchmark row the cores it got and the cores others used meanwhile."""
    if "benchmark" not in request.fixturenames:
        yield
        return
    bench = request.getfixturevalue("benchmark")
    start = cpuload.Sample.now()
    yield
    bench.extra_info.update(cpuload.usage(start, cpuload.Sample.now()))


def is_quick(config: pytest.Config) -> bool:
    return os.environ.get("CTXFAST_BENCH_QUICK") == "1" or bool(
        config.getoption("benchmark_disable", default=False)
    )


@pytest.fixture(scope="session")
def quick(pytestconfig: pytest.Config) -> bool:
    return is_quick(pytestconfig)


# ---- corpora ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def prose_text() -> str:
    return helpers.prose_corpus()


@pytest.fixture(scope="session")
def cjk_text() -> str:
    return helpers.japanese_corpus()


@pytest.fixture(scope="session")
def code_text() -> str:
    return helpers.code_corpus()


@pytest.fixture(scope="session")
def json_text() -> str:
    return helpers.json_corpus()


@pytest.fixture(scope="session")
def corpus(prose_text: str, code_text: str, json_text: str, cjk_text: str) -> dict[str, str]:
    return {"prose": prose_text, "code": code_text, "json": json_text, "cjk": cjk_text}


# ---- tokenizers ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def ctx_default():
    import ctxfast

    return ctxfast.Tokenizer.default()


@pytest.fixture(scope="session")
def tiktoken_o200k():
    import tiktoken

    return tiktoken.get_encoding("o200k_base")


@pytest.fixture(scope="session")
def hf_o200k_file(tiktoken_o200k) -> Path:
    """o200k_base converted to a tokenizer.json (cached under the temp dir)."""
    return corpora.hf_o200k_path(tiktoken_o200k._pat_str)


@pytest.fixture(scope="session")
def hf_o200k(hf_o200k_file: Path):
    """The Python ``tokenizers.Tokenizer`` for o200k_base."""
    import tokenizers

    return tokenizers.Tokenizer.from_file(str(hf_o200k_file))


@pytest.fixture(scope="session")
def ctx_from_hf(hf_o200k):
    """ctxfast's Hugging Face backend on the same converted vocabulary."""
    import ctxfast

    return ctxfast.Tokenizer.from_hf(hf_o200k, cache_capacity=0)
