"""Where ``ctxfast fit`` reads and writes (issue 10, item 9; report #10, #14, #20): ``-`` for
stdin and stdout, ``--json``, ``--quiet``, the output's mode and shape, a missing output folder,
and the trace of an ``Unfittable`` attempt."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from cli_support import invoke, run, squash, write
from ctxfast import Budget, Policy, Tokenizer, Unfittable
from ctxfast import _cli_fit
from ctxfast import openai as openai_adapter
from sessions import assert_openai_tool_order, openai_payload

TRUNCATE_POLICY = """name = "cut"
[[rungs]]
name = "tool_output.truncate"
layers = ["tool_result"]
order = "largest"
action = "truncate"
min_tokens = 64
[[rungs]]
name = "history.drop"
layers = ["conversation", "tool_result"]
order = "oldest"
action = "drop"
"""


def expected(data: dict[str, Any], window: int, policy: Policy) -> tuple[list[dict[str, Any]], Any]:
    return openai_adapter.fit_messages(data["messages"], Budget(window), tools=data["tools"], policy=policy,
                                       tokenizer=Tokenizer.default())


def full_size(data: dict[str, Any]) -> int:
    return int(expected(data, 10**7, Policy.agent())[1].total)


# ----------------------------------------------------------------------------------------------
# stdin and stdout


def test_stdin_and_stdout_through_the_real_command(tmp_path: Path) -> None:
    """Regression (report #14): `fit -` failed with "-: no such file" and `-o -` wrote a file
    named "-". A real run of the installed `ctxfast` script."""
    data = openai_payload()
    window = full_size(data) // 2
    raw = json.dumps(data).encode("utf-8")
    proc = run(tmp_path, "fit", "-", "--window", str(window), "-o", "-", stdin=raw)
    assert proc.returncode == 0, proc.stderr.decode()
    messages, fit = expected(data, window, Policy.agent())
    assert json.loads(proc.stdout.decode("utf-8")) == {**data, "messages": messages}  # stdout is pure JSON
    err = squash(proc.stderr.decode("utf-8"))
    assert err[0].startswith("format openai") and any(line.startswith("send ") for line in err)
    assert not any(line.startswith("wrote") for line in err)
    assert list(tmp_path.iterdir()) == []
    # Without -o, the trace is on stdout; the payload is named <stdin> in errors.
    proc = run(tmp_path, "fit", "-", "--window", str(window), stdin=raw)
    assert proc.returncode == 0 and squash(proc.stdout.decode())[0].startswith("format openai")
    proc = run(tmp_path, "fit", "-", "--window", "100", stdin=b"{nope")
    assert proc.returncode == 2 and proc.stderr.decode().startswith("ctxfast: error: <stdin>: invalid JSON")


def test_json_trace_with_output_to_stdout_goes_to_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = openai_payload()
    window = full_size(data) // 2
    res = invoke(["fit", "-", "--window", str(window), "-o", "-", "--json"], monkeypatch, capsys,
                 stdin=json.dumps(data).encode())
    assert res.code == 0
    assert json.loads(res.out)["messages"] == expected(data, window, Policy.agent())[0]
    assert json.loads(res.err)["schema"] == "ctxfast.fit/1"


def test_quiet_prints_nothing_but_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = openai_payload()
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", data)
    window = full_size(data) // 2
    res = invoke(["fit", "p.json", "--window", str(window), "-o", "out.json", "--quiet"], monkeypatch, capsys)
    assert (res.code, res.out, res.err) == (0, "", "")
    assert json.loads((tmp_path / "out.json").read_text())["messages"] == expected(data, window, Policy.agent())[0]
    res = invoke(["fit", "p.json", "--window", "10", "-q"], monkeypatch, capsys)
    assert res.code == 2 and res.out == "" and len(res.err.splitlines()) == 1


# ----------------------------------------------------------------------------------------------
# The JSON trace

TOP_KEYS = {"schema", "input", "format", "count", "window", "reserve", "reserve_source", "output", "fits",
            "ceiling", "total", "spare", "over_by", "count_calls", "layers", "cap_overruns", "rungs", "dropped",
            "digested", "truncated", "tokens_removed"}
ROW_KEYS = {"label", "messages", "action", "removed", "layer", "layer_after", "total_after", "over_after"}


@pytest.mark.parametrize("policy", ["agent", "context_window", "cut.toml"])
def test_json_trace_schema_and_message_positions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str], policy: str) -> None:
    data = openai_payload()
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", data)
    (tmp_path / "cut.toml").write_text(TRUNCATE_POLICY, encoding="utf-8")
    window = full_size(data) // 2
    res = invoke(["fit", "p.json", "--window", str(window), "--policy", policy, "--json", "-o", "o.json"],
                 monkeypatch, capsys)
    assert res.code == 0, res.err
    report = json.loads(res.out)  # the whole of stdout is one JSON object
    pol = Policy.from_toml(tmp_path / policy) if policy.endswith(".toml") else Policy.preset(policy)
    messages, fit = expected(data, window, pol)
    assert set(report) == TOP_KEYS
    assert report["output"] == {"path": "o.json", "messages": len(messages), "tokens": fit.total}
    assert (report["fits"], report["total"], report["ceiling"], report["window"]) == (True, fit.total, window, window)
    assert report["format"]["name"] == "openai" and report["format"]["source"] == "detected"
    assert sum(layer["after"] for layer in report["layers"]) == fit.total
    assert sum(layer["before"] for layer in report["layers"]) == full_size(data)
    assert [r["name"] for r in report["rungs"]] == pol.rung_names
    rows = [row for rung in report["rungs"] for row in rung["rows"]]
    assert rows and all(set(row) == ROW_KEYS for row in rows)
    assert [row["removed"] for row in rows] == [r["removed"] for r in fit.trace.rows]
    assert {r["name"] for r in report["rungs"] if r["fired"]} == set(fit.rungs_fired)
    # The positions: dropped and digested units cover exactly the messages that are gone,
    # truncated ones name messages still sent, shortened.
    gone = {i for i, m in enumerate(data["messages"]) if not any(m is k for k in messages)}
    changed = {i for i, m in enumerate(data["messages"]) if m not in messages}
    removed = {i for unit in report["dropped"] + report["digested"] for i in unit["messages"]}
    shortened = {i for unit in report["truncated"] for i in unit["messages"]}
    assert removed | shortened == gone | changed
    assert all(data["messages"][i]["role"] == "tool" for i in shortened)  # the rung draws from tool results
    assert all(unit["messages"] for unit in report["dropped"] + report["digested"] + report["truncated"])
    if policy == "cut.toml":
        assert report["truncated"], "the truncate rung should have fired"
    units = len(report["dropped"]) + len(report["digested"]) + len(report["truncated"])
    assert units == len(rows)
    assert report["tokens_removed"]["total"] == fit.ledger.removed


# ----------------------------------------------------------------------------------------------
# The output file


def test_output_gets_the_inputs_mode_and_an_existing_one_keeps_its_own(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (report #14): the output was mode 0600, from mkstemp."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", openai_payload(3, 4))
    os.chmod(tmp_path / "p.json", 0o640)
    assert invoke(["fit", "p.json", "--window", "100000", "-o", "new.json", "-q"], monkeypatch, capsys).code == 0
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640
    (tmp_path / "old.json").write_text("{}", encoding="utf-8")
    os.chmod(tmp_path / "old.json", 0o604)
    assert invoke(["fit", "p.json", "--window", "100000", "-o", "old.json", "-q"], monkeypatch, capsys).code == 0
    assert stat.S_IMODE((tmp_path / "old.json").stat().st_mode) == 0o604
    old = os.umask(0o027)
    try:
        res = invoke(["fit", "-", "--window", "100000", "-o", "piped.json", "-q"], monkeypatch, capsys,
                     stdin=(tmp_path / "p.json").read_bytes())
    finally:
        os.umask(old)
    assert res.code == 0 and stat.S_IMODE((tmp_path / "piped.json").stat().st_mode) == 0o640


def test_a_bare_list_stays_a_bare_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (report #20): a bare list came back as {"messages": [...]}."""
    data = openai_payload()
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "list.json", data["messages"])
    window = full_size({**data, "tools": []}) // 2
    res = invoke(["fit", "list.json", "--window", str(window), "-o", "out.json"], monkeypatch, capsys)
    assert res.code == 0, res.err
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    kept, fit = openai_adapter.fit_messages(data["messages"], Budget(window), tokenizer=Tokenizer.default())
    assert out == kept and fit.evicted
    assert_openai_tool_order(out)


def test_output_into_a_missing_folder_fails_before_the_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (report #9): the whole trace printed first, then an error naming the
    temporary file (…/.x.json.x9oy4t7d.tmp)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", openai_payload(3, 4))
    res = invoke(["fit", "p.json", "--window", "100000", "-o", "/nonexistent/dir/x.json"], monkeypatch, capsys)
    assert res.code == 2 and res.out == ""
    assert res.err.splitlines() == ["ctxfast: error: -o /nonexistent/dir/x.json: cannot write: /nonexistent/dir "
                                    "does not exist"]
    (tmp_path / "afile").write_text("", encoding="utf-8")
    res = invoke(["fit", "p.json", "--window", "100000", "-o", "afile/x.json"], monkeypatch, capsys)
    assert res.code == 2 and res.out == "" and ".tmp" not in res.err and "afile is not a folder" in res.err


def test_a_write_failure_names_the_target_not_the_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", openai_payload(3, 4))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(tmp_path / ".out.json.abc123.tmp"))

    monkeypatch.setattr("tempfile.mkstemp", refuse)
    res = invoke(["fit", "p.json", "--window", "100000", "-o", "out.json"], monkeypatch, capsys)
    assert res.code == 2 and res.out == ""
    assert res.err.splitlines() == ["ctxfast: error: -o out.json: cannot write: Permission denied"]


# ----------------------------------------------------------------------------------------------
# Unfittable


def _unfittable(trace: str | None) -> Unfittable:
    e = Unfittable("cannot fit: the protected set leaves 613 tokens against a ceiling of 200; short by 413",
                   [("system", 608), ("current_turn", 5)], 40, 613, 200, 413)
    if trace is not None:
        e.trace = trace  # type: ignore[attr-defined]  # the engine's Unfittable.trace
    return e


TRACE = "ceiling 200  (window 300 − reserve 100)\nstart   system 608  current_turn 5\n        total 613   over by 413\n"


@pytest.mark.parametrize("with_trace", [True, False])
def test_unfittable_prints_the_failed_attempts_trace_and_a_remedy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   with_trace: bool) -> None:
    """Regression (report #10): the CLI showed no trace on failure and no remedy."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", openai_payload(3, 4))

    def fail(*args: Any) -> Any:
        raise _unfittable(TRACE if with_trace else None)

    monkeypatch.setattr(_cli_fit, "_adapter_fit", fail)
    res = invoke(["fit", "p.json", "--window", "300", "--reserve", "100", "-o", "out.json"], monkeypatch, capsys)
    assert res.code == 2
    out = res.out.splitlines()
    assert out[0].startswith("format   openai") and out[1].startswith("encoding o200k_base")
    assert out[2:] == (TRACE.rstrip("\n").splitlines() if with_trace else [])
    assert res.err.splitlines() == [
        "ctxfast: error: p.json: cannot fit: the protected set leaves 613 tokens against a ceiling of 200; short by "
        "413; hint: raise --window to 713 or more, or choose a --policy whose floors keep less (they keep 40 tokens)"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]
    res = invoke(["fit", "p.json", "--window", "1000", "--reserve", "500", "--json"], monkeypatch, capsys)
    report = json.loads(res.out)
    assert (report["fits"], report["shortfall"], report["ceiling"]) == (False, 413, 200)
    assert report["trace_text"] == (TRACE if with_trace else None)
    assert "lower --reserve to 87 or less (now 500)" in res.err
    res = invoke(["fit", "p.json", "--window", "300", "--quiet"], monkeypatch, capsys)
    assert res.out == "" and len(res.err.splitlines()) == 1


def test_a_real_unfittable_request_names_the_payload_and_suggests_a_window(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "p.json", {"model": "gpt-4o", "max_tokens": 100,
                                "messages": [{"role": "system", "content": "rule " * 600}, {"role": "user", "content": "hi"}]})
    res = invoke(["fit", "p.json", "--window", "300"], monkeypatch, capsys)
    assert res.code == 2 and len(res.err.splitlines()) == 1
    shortfall = 613 - 200
    assert res.err.startswith("ctxfast: error: p.json: ") and f"hint: raise --window to {300 + shortfall} or more" in res.err
