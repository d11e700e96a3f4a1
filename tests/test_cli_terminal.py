"""The command line at an 80-column terminal, its help, ``policy show`` and ``count``
(issue 10, item 9; report #9, #19, #21).

Width checks run the real command with ``COLUMNS=80`` (rich and click honour it). Text the CLI
prints itself must fit; the engine's own text (``Fit.explain()``, ``Policy.describe()``) must
come through verbatim, never re-wrapped (making it fit is the engine's side).
"""

from __future__ import annotations

import io as stdio
import re
import time
from pathlib import Path

import pytest
from rich.progress import Progress

from cli_support import console, invoke, run, squash, too_wide, write
from ctxfast import Budget, CtxfastError, Policy, Tokenizer, fit
from ctxfast import _cli_io
from ctxfast import openai as openai_adapter
from ctxfast._cli_count import progress_columns
from ctxfast._cli_policy import PRESETS
from ctxfast._demo import seed000_request
from sessions import openai_payload


def text(proc) -> str:  # type: ignore[no-untyped-def]
    return proc.stdout.decode("utf-8") + proc.stderr.decode("utf-8")


def no_hyphen_breaks(output: str) -> list[str]:
    """Lines that end inside a hyphenated word (click's help wrapper can break there)."""
    return [line for line in output.splitlines() if re.search(r"[A-Za-z0-9]-$", line.rstrip())]


# ----------------------------------------------------------------------------------------------
# Help


@pytest.mark.parametrize("args,title", [([], "Usage: ctxfast [OPTIONS] COMMAND"),
                                        (["policy"], "Usage: ctxfast policy [OPTIONS] COMMAND"),
                                        (["fit"], "Usage: ctxfast fit [OPTIONS] PAYLOAD"),
                                        (["count"], "Usage: ctxfast count [OPTIONS] PATH...")],
                         ids=["ctxfast", "policy", "fit", "count"])
def test_a_bare_command_prints_its_help(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                        args: list[str], title: str) -> None:
    """Regression (report #9): bare `ctxfast` printed the help squashed into one
    `ctxfast: error: Usage: ...` line with status 2."""
    res = invoke(args, monkeypatch, capsys)
    assert (res.code, res.err) == (0, "")
    assert res.lines[0].startswith(title) and len(res.lines) > 5


def test_help_has_examples_presets_and_readable_metavars(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    main = invoke(["--help"], monkeypatch, capsys).out
    assert "Examples:" in main and "  ctxfast fit payload.json --window 128000 -o fitted.json" in main
    page = invoke(["fit", "--help"], monkeypatch, capsys).out
    assert "--window TOKENS" in page and "INTEGER RANGE" not in page
    assert "Examples:" in page and "cat payload.json | ctxfast fit - --window" in page
    flat = " ".join(page.split())
    for name in PRESETS:
        assert name in flat, name
    assert "Default: the payload's max_completion_tokens or max_tokens" in flat
    show = " ".join(invoke(["policy", "show", "--help"], monkeypatch, capsys).out.split())
    assert f"Presets: {', '.join(PRESETS)}." in show


@pytest.mark.parametrize("args", [["--help"], ["fit", "--help"], ["count", "--help"], ["policy", "--help"],
                                  ["policy", "show", "--help"], ["demo", "--help"]])
def test_help_fits_80_columns(tmp_path: Path, args: list[str]) -> None:
    proc = run(tmp_path, *args, columns=80)
    assert proc.returncode == 0
    assert too_wide(text(proc)) == [] and no_hyphen_breaks(text(proc)) == []


def test_presets_listed_are_the_engines() -> None:
    for name in PRESETS:
        assert Policy.preset(name).name == name
    with pytest.raises(CtxfastError) as info:
        Policy.preset("zzzz")
    named = {w for w in re.findall(r"[a-z_]+", str(info.value))}
    loadable = set()
    for w in named:
        try:
            Policy.preset(w)
            loadable.add(w)
        except CtxfastError:
            pass
    assert loadable == set(PRESETS), "a preset the CLI's help does not list (or one it lists that is gone)"


# ----------------------------------------------------------------------------------------------
# 80 columns


def test_demo_fits_80_columns_apart_from_engine_text(tmp_path: Path) -> None:
    proc = run(tmp_path, "demo", columns=80)
    assert proc.returncode == 0
    tok = Tokenizer.default()
    segments, budget = seed000_request(tok)
    trace = fit(segments, budget, Policy.troubleshooting(), tok).explain().rstrip("\n").splitlines()
    out = proc.stdout.decode("utf-8")
    assert too_wide(out, allowed=set(trace)) == []
    lines = out.splitlines()
    start = lines.index(trace[0])
    assert lines[start:start + len(trace)] == trace, "the engine's trace is printed verbatim, not re-wrapped"


def test_fit_output_fits_80_columns_apart_from_engine_text(tmp_path: Path) -> None:
    data = openai_payload()
    write(tmp_path / "p.json", data)
    (tmp_path / "long.toml").write_text(
        'name = "long"\n[labels]\nconversation = "conversation_history_label"\n'
        'tool_result = "tool_results_of_the_agent"\n[[rungs]]\nname = "history.drop"\n'
        'layers = ["conversation", "tool_result"]\norder = "oldest"\naction = "drop"\n', encoding="utf-8")
    for policy in ("agent", "long.toml"):
        pol = Policy.preset(policy) if policy == "agent" else Policy.from_toml(tmp_path / policy)
        full = openai_adapter.fit_messages(data["messages"], Budget(10**7), tools=data["tools"])[1].total
        window = full // 2
        proc = run(tmp_path, "fit", "p.json", "--window", str(window), "--reserve", "0", "--policy", policy,
                   "-o", "o.json", columns=80)
        assert proc.returncode == 0, proc.stderr
        _, result = openai_adapter.fit_messages(data["messages"], Budget(window), tools=data["tools"], policy=pol)
        trace = result.explain().rstrip("\n").splitlines()
        out = proc.stdout.decode("utf-8")
        assert too_wide(out, allowed=set(trace)) == [], policy
        lines = out.splitlines()
        start = lines.index(trace[0])
        assert lines[start:start + len(trace)] == trace
        table = lines[lines.index(next(line for line in lines if line.startswith("occupancy"))):]
        assert all(len(line) <= 80 for line in table)
        assert {line.split()[0] for line in table[2:] if line.strip() and not line.startswith("wrote")} == \
            {label for label, _ in result.trace.start}, "a layer label was wrapped or cut"


def test_policy_show_prints_describe_verbatim(tmp_path: Path) -> None:
    for preset in PRESETS:
        proc = run(tmp_path, "policy", "show", preset, columns=80)
        assert proc.stdout.decode("utf-8").rstrip("\n") == Policy.preset(preset).describe().rstrip("\n")


def test_errors_wrap_at_spaces_on_an_80_column_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal a long error wraps at spaces; in a pipe it stays one line (the suite's
    one-line checks)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", {"system": "s", "messages": [{"role": "user", "content": "hi"},
                                                            {"role": "tool", "tool_call_id": "c1", "content": "r"}]})
    screen = stdio.StringIO()
    monkeypatch.setattr(_cli_io, "err", console(80, terminal=True, file=screen))
    with pytest.raises(SystemExit) as info:
        from ctxfast import cli

        cli.main(["fit", "p.json", "--window", "1000"])
    assert info.value.code == 2
    lines = screen.getvalue().splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    joined = " ".join(line.strip() for line in lines)
    assert joined.startswith("ctxfast: error: p.json: the payload looks like both formats")
    # Broken only at spaces: every word of the message survives whole.
    words = joined.split()
    assert "'system')" in words and "--format" in " ".join(words)


# ----------------------------------------------------------------------------------------------
# policy show


def test_policy_show_a_missing_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (report #21): `policy show typo.tml` said "unknown policy preset"."""
    monkeypatch.chdir(tmp_path)
    res = invoke(["policy", "show", "typo.tml"], monkeypatch, capsys)
    assert res.code == 2 and res.err.splitlines() == ["ctxfast: error: no such policy file: typo.tml"]
    (tmp_path / "typo.toml").write_text('name = "t"\n', encoding="utf-8")
    res = invoke(["policy", "show", "typo.tml"], monkeypatch, capsys)
    assert res.err.splitlines() == ['ctxfast: error: no such policy file: typo.tml (did you mean "typo.toml"?)']
    res = invoke(["policy", "show", "rules/team.toml"], monkeypatch, capsys)
    assert "no such policy file: rules/team.toml" in res.err and "preset" not in res.err
    (tmp_path / "rules").mkdir()
    res = invoke(["policy", "show", "rules"], monkeypatch, capsys)
    assert res.code == 2 and "rules is a folder, not a policy file" in res.err


@pytest.mark.parametrize("typo,meant", [("agnet", "agent"), ("troubleshoot", "troubleshooting"),
                                        ("seven-tier", "seven_tier")])
def test_a_preset_typo_gets_did_you_mean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str], typo: str, meant: str) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "x.json", openai_payload(3, 2))
    res = invoke(["policy", "show", typo], monkeypatch, capsys)
    assert res.code == 2 and f'did you mean "{meant}"' in res.err and len(res.err.splitlines()) == 1
    res = invoke(["fit", "x.json", "--window", "10", "--policy", typo], monkeypatch, capsys)
    assert res.code == 2 and res.err.startswith("ctxfast: error: --policy: ") and f'did you mean "{meant}"' in res.err


# ----------------------------------------------------------------------------------------------
# count


def test_count_a_folder_recursively(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (report #19): `ctxfast count docs` said "File 'docs' is a directory", and a
    glob that matched one folder aborted the whole count."""
    tok = Tokenizer.default()
    monkeypatch.chdir(tmp_path)
    files = {"docs/a.md": "# Title\nSome words.", "docs/guide/b.txt": "More words here.",
             "docs/guide/deep/c.md": "deep " * 50, "docs/.hidden/x.md": "secret", "docs/.env": "KEY=1",
             "top.txt": "top level"}
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body, encoding="utf-8")
    (tmp_path / "docs/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tmp_path / "docs/latin1.txt").write_bytes(b"caf\xe9")
    res = invoke(["count", "top.txt", "docs"], monkeypatch, capsys)
    assert res.code == 0 and res.err == "", res.err
    counted = ["top.txt", "docs/a.md", "docs/guide/b.txt", "docs/guide/deep/c.md"]
    n = {name: tok.count(files[name]) for name in counted}
    assert squash(res.out) == [
        f"{n['top.txt']:,} top.txt",
        f"{n['docs/a.md']:,} docs/a.md",
        "skipped docs/latin1.txt (not UTF-8)",
        "skipped docs/logo.png (binary)",
        f"{n['docs/guide/b.txt']:,} docs/guide/b.txt",
        f"{n['docs/guide/deep/c.md']:,} docs/guide/deep/c.md",
        f"{sum(n.values()):,} total (4 files, 2 skipped, o200k_base)",
    ]
    (tmp_path / "empty").mkdir()
    assert squash(invoke(["count", "empty"], monkeypatch, capsys).out) == ["0 total (0 files, o200k_base)"]
    res = invoke(["count", "-"], monkeypatch, capsys, stdin="from stdin".encode())
    assert squash(res.out) == [f"{tok.count('from stdin')} <stdin>"]
    res = invoke(["count", "docs", "missing"], monkeypatch, capsys)
    assert res.code == 2 and res.err.splitlines() == ["ctxfast: error: missing: no such file or folder"]


def test_count_progress_shows_rate_and_time_left() -> None:
    screen = stdio.StringIO()
    term = console(80, terminal=True, file=screen)
    with Progress(*progress_columns(), console=term, auto_refresh=False) as progress:
        task = progress.add_task("count", total=1200)
        for _ in range(3):
            progress.advance(task, 64)
            time.sleep(0.02)
        term.print(progress.make_tasks_table(progress.tasks))
    rendered = [line for line in screen.getvalue().splitlines() if "counting" in line]
    assert rendered and all(len(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line)) <= 80 for line in rendered)
    last = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", rendered[-1])
    assert re.search(r"192/1200 +[\d,]+ files/s +\d:\d\d:\d\d +eta +\d:\d\d:\d\d", last), last

