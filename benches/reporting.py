"""What the benchmark report scripts (``report*.py``) share: number formatting, running pytest
on one bench file into a pytest-benchmark JSON, and the command line around it.

Each script keeps its own tables and targets; this module holds only the parts that are the
same in all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: A script's targets as (name, met); any unmet one makes ``--strict`` exit 1.
Verdicts = Sequence[tuple[str, bool]]


def fmt_time(s: float | None, *, fine: bool = False) -> str:
    """A duration with its unit; None (not measured) is a dash.

    ``fine`` keeps two decimals below a millisecond and goes down to nanoseconds, for the
    tokenizer's per-call times; the other reports stop at whole microseconds.
    """
    if s is None:
        return "—"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    if not fine:
        return f"{s * 1e6:.0f} µs"
    if s >= 1e-6:
        return f"{s * 1e6:.2f} µs"
    return f"{s * 1e9:.0f} ns"


def fmt_ratio(r: float, *, one_decimal_from: float = 100) -> str:
    """A ratio such as ``2.50×``: whole numbers from 100 up, and one decimal from
    ``one_decimal_from`` up for a report that wants fewer digits on mid-sized ratios too."""
    if r >= 100:
        return f"{r:,.0f}×"
    if r >= one_decimal_from:
        return f"{r:.1f}×"
    return f"{r:.2f}×"


def pytest_command(bench_file: Path, json_path: Path, options: Sequence[str], extra: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", str(bench_file), "-q", "-p", "no:cacheprovider",
            f"--benchmark-json={json_path}", *options, *extra]


def run_pytest(cmd: Sequence[str], env: dict[str, str] | None = None) -> int:
    """Run pytest from the repository root and return its exit status."""
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    # pytest's own output goes to stderr so stdout carries only the Markdown.
    return subprocess.run(cmd, cwd=REPO, env=env, stdout=sys.stderr, stderr=sys.stderr).returncode


def full_run_env() -> dict[str, str]:
    """The environment for a full run: quick mode runs each body once and skips the timing
    checks, so its JSON would be no report."""
    env = dict(os.environ)
    env.pop("CTXFAST_BENCH_QUICK", None)
    return env


def run_benchmarks(bench_file: Path, json_path: Path, extra: Sequence[str]) -> None:
    """Run ``bench_file`` in full into ``json_path``; a failing pytest ends the script."""
    rc = run_pytest(pytest_command(bench_file, json_path, ["--benchmark-columns=median,rounds"], extra), full_run_env())
    if rc != 0:
        raise SystemExit(f"benchmarks failed (pytest exit {rc})")


def parse_args(
    doc: str,
    argv: Sequence[str] | None = None,
    *,
    strict: bool = True,
    json_help: str = "keep pytest-benchmark's JSON here",
    from_json_help: str = "report on an existing JSON instead of running",
    pytest_help: str = "extra arguments for pytest",
) -> argparse.Namespace:
    """``--json``, ``--from-json``, ``--strict`` (unless the script has no targets) and pytest's
    extra arguments; the help texts are the script's own."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help=json_help)
    ap.add_argument("--from-json", type=Path, help=from_json_help)
    if strict:
        ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("pytest_args", nargs="*", help=pytest_help)
    return ap.parse_args(argv)


def json_path_for_run(args: argparse.Namespace, temp_prefix: str) -> Path:
    """Where a fresh run writes its JSON: ``--json``, or a new temporary folder."""
    return args.json or Path(tempfile.mkdtemp(prefix=temp_prefix)) / "bench.json"


def main(
    doc: str,
    bench_file: Path,
    temp_prefix: str,
    build: Callable[[dict], tuple[str, Verdicts]],
    *,
    strict: bool = True,
    pytest_help: str = "extra arguments for pytest",
) -> None:
    """Run ``bench_file`` (or read ``--from-json``), print ``build``'s Markdown, and with
    ``--strict`` exit 1 if one of its verdicts is a miss. ``strict=False`` is for a script without
    targets: it has no ``--strict``."""
    args = parse_args(doc, strict=strict, pytest_help=pytest_help)
    if args.from_json:
        path = args.from_json
    else:
        path = json_path_for_run(args, temp_prefix)
        run_benchmarks(bench_file, path, args.pytest_args)
    text, verdicts = build(json.loads(path.read_text()))
    print(text)
    if strict and args.strict and not all(ok for _, ok in verdicts):
        raise SystemExit(1)


def runner_main(doc: str, run: Callable[..., list[dict]], report: Callable[[list[dict]], str]) -> None:
    """The command line of a runner that times things itself (``cpu_prefill.py``,
    ``bpe_engine.py``): ``--quick`` (what CI runs), ``--json PATH`` for the rows, the table on
    stdout. A full run refuses anything but a release build."""
    import ctxfast

    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    if ctxfast.build_profile != "release" and not a.quick:
        raise SystemExit(f"refusing to time a {ctxfast.build_profile!r} build: pip install . (release)")
    rows = run(quick=a.quick)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    print(report(rows))
