"""The ``ctxfast`` command line, end to end: ``python -m ctxfast ...`` in a subprocess.

Bad input must print exactly one line on stderr, ``ctxfast: error: ...``, exit with status 2 and
write nothing: no output file, no temporary file beside it, and an existing output file is left
as it was.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxfast import Budget, Policy, Tokenizer
from ctxfast import anthropic as anthropic_adapter
from ctxfast import openai as openai_adapter
from helpers import words
from sessions import anthropic_payload, assert_anthropic_tool_order, assert_openai_tool_order, openai_payload

PRESETS = ("context_window", "troubleshooting", "seven_tier", "ranked", "agent")


def run(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "ctxfast", *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", env=env, timeout=timeout)


def squash(text: str) -> list[str]:
    """Lines with runs of spaces collapsed (the trace pads numbers to align columns)."""
    return [" ".join(line.split()) for line in text.splitlines()]


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str, stdout_empty: bool = True) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, f"stderr has {len(lines)} lines:\n{proc.stderr}"
    assert lines[0].startswith("ctxfast: error: "), lines[0]
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    if stdout_empty:
        assert proc.stdout == ""
    return lines[0]


# ----------------------------------------------------------------------------------------------
# Payloads (tests/sessions.py)


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def expected_fit(data: dict[str, Any], fmt: str, window: int, reserve: int, policy: Policy):
    tok = Tokenizer.from_encoding("o200k_base")
    if fmt == "anthropic":
        return anthropic_adapter.fit_messages(data.get("system"), data["messages"], Budget(window, reserve),
                                              tools=data.get("tools"), policy=policy, tokenizer=tok,
                                              model=data.get("model"))
    return openai_adapter.fit_messages(data["messages"], Budget(window, reserve), tools=data.get("tools"),
                                       policy=policy, tokenizer=tok)


def occupancy_rows(stdout: str) -> dict[str, tuple[int, int]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("occupancy (ceiling"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.strip() or line.startswith("wrote "):
            break
        numbers = re.findall(r"\d[\d,]*", line)
        rows[line.split()[0]] = (int(numbers[0].replace(",", "")), int(numbers[1].replace(",", "")))
    return rows


# ----------------------------------------------------------------------------------------------
# demo


def test_demo_prints_the_seed_000_trace(tmp_path: Path) -> None:
    proc = run(tmp_path, "demo")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = squash(proc.stdout)
    expected = [
        "ceiling 28,000 (window 32,000 − reserve 4,000)",
        "start system 1,462 tools 2,840 retrieval 15,900 history 12,300",
        "total 32,502 over by 4,502",
        "ex2 −1,180 history 11,120 total 31,322 over by 3,322",
        "ex3 − 940 history 10,180 total 30,382 over by 2,382",
        "ex4 −1,510 history 8,670 total 28,872 over by 872",
        "ex5 − 760 history 7,910 total 28,112 over by 112",
        "ex6 −1,020 history 6,890 total 27,092 fits, 908 spare",
    ]
    positions = [lines.index(line) for line in expected]  # each present, verbatim up to spacing
    assert positions == sorted(positions)
    assert positions[3:] == list(range(positions[3], positions[3] + 5)), "the five rows are consecutive"
    assert any(line.startswith("rung 1 history.drop_oldest_exchange") for line in lines)
    assert any(line.startswith("send 27,092 tokens") for line in lines)
    assert any(line.startswith("occupancy (ceiling 28,000)") for line in lines)
    assert "ex1 " not in proc.stdout and "ex7 " not in proc.stdout  # the floors: first and last 3


# ----------------------------------------------------------------------------------------------
# fit


@pytest.mark.parametrize("policy", PRESETS)
def test_fit_openai_writes_a_valid_payload(tmp_path: Path, policy: str) -> None:
    data = openai_payload()
    payload = write(tmp_path / "payload.json", data)
    full = expected_fit(data, "openai", 10**7, 0, Policy.agent())[1].total
    window, reserve = full // 2 + 1000, 1000
    proc = run(tmp_path, "fit", payload.name, "--window", str(window), "--reserve", str(reserve),
               "--policy", policy, "-o", "out.json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert listing(tmp_path) == ["out.json", "payload.json"]
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    messages, fit = expected_fit(data, "openai", window, reserve, Policy.preset(policy))
    assert out == {**data, "messages": messages}  # model, temperature, tools kept as they were
    assert_openai_tool_order(out["messages"])
    assert out["messages"][0] == data["messages"][0] and out["messages"][-1] == data["messages"][-1]
    assert fit.total <= window - reserve
    lines = squash(proc.stdout)
    # The header says which format and encoding were used, and why (the payload names gpt-4o).
    assert lines[0].startswith("format openai, detected by model 'gpt-4o'")
    assert lines[1] == "encoding o200k_base, the encoding of 'gpt-4o'"
    assert lines[2] == f"ceiling {window - reserve:,} (window {window:,} − reserve {reserve:,})"
    assert lines[3].startswith("start ")
    assert any(line.startswith("send ") for line in lines)
    assert lines[-1] == f"wrote out.json ({len(messages)} messages, {fit.total:,} tokens)"
    assert f"occupancy (ceiling {window - reserve:,})" in proc.stdout
    assert {"system", "tools", "current_turn"} <= set(occupancy_rows(proc.stdout))


@pytest.mark.parametrize("policy", PRESETS)
def test_fit_occupancy_table_adds_up(tmp_path: Path, policy: str) -> None:
    data = openai_payload()
    write(tmp_path / "payload.json", data)
    full = expected_fit(data, "openai", 10**7, 0, Policy.agent())[1].total
    window = full // 2
    proc = run(tmp_path, "fit", "payload.json", "--window", str(window), "--policy", policy)
    assert proc.returncode == 0, proc.stderr
    _, fit = expected_fit(data, "openai", window, 0, Policy.preset(policy))
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("occupancy (ceiling"))
    labels = [line.split()[0] for line in lines[start + 2:]]
    assert len(labels) == len(set(labels)), f"a layer label appears twice: {labels}"
    rows = occupancy_rows(proc.stdout)
    assert sum(after for _, after in rows.values()) == fit.total
    assert sum(before for before, _ in rows.values()) == full
    assert rows["tools"][0] == rows["tools"][1] and rows["system"][0] == rows["system"][1]


@pytest.mark.parametrize("explicit", [False, True])
def test_fit_anthropic(tmp_path: Path, explicit: bool) -> None:
    data = anthropic_payload()
    payload = write(tmp_path / "payload.json", data)
    full = expected_fit(data, "anthropic", 10**7, 0, Policy.agent())[1].total
    window = full // 3 + 2000
    args = ["fit", payload.name, "--window", str(window), "--reserve", "2000", "-o", "fitted.json"]
    proc = run(tmp_path, *args, *(["--format", "anthropic"] if explicit else []))
    assert proc.returncode == 0, proc.stderr
    out = json.loads((tmp_path / "fitted.json").read_text(encoding="utf-8"))
    messages, fit = expected_fit(data, "anthropic", window, 2000, Policy.agent())
    assert out == {**data, "messages": messages}
    assert_anthropic_tool_order(out["messages"])
    assert fit.total <= window - 2000 and fit.evicted
    # model= was passed: the documented tool-use system prompt for claude-sonnet-4-5 is in the count
    assert dict(fit.trace.start)["tools"] >= 496
    assert f"wrote fitted.json ({len(messages)} messages, {fit.total:,} tokens)" in proc.stdout
    assert listing(tmp_path) == ["fitted.json", "payload.json"]


def test_fit_with_a_policy_toml_file(tmp_path: Path) -> None:
    (tmp_path / "team.toml").write_text(
        'name = "team"\n'
        "[labels]\n"
        'conversation = "history"\n'
        "[[rungs]]\n"
        'name = "history.drop_oldest_exchange"\n'
        'layers = ["conversation", "tool_result"]\n'
        'order = "oldest"\n'
        'action = "drop"\n'
        "floor = { keep_last = 1 }\n",
        encoding="utf-8",
    )
    data = openai_payload(3, 10)
    write(tmp_path / "p.json", data)
    full = expected_fit(data, "openai", 10**7, 0, Policy.agent())[1].total
    proc = run(tmp_path, "fit", "p.json", "--window", str(full // 2), "--policy", "team.toml", "-o", "o.json")
    assert proc.returncode == 0, proc.stderr
    assert "history.drop_oldest_exchange" in proc.stdout
    assert "history" in occupancy_rows(proc.stdout)
    messages, fit = expected_fit(data, "openai", full // 2, 0, Policy.from_toml(tmp_path / "team.toml"))
    assert json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))["messages"] == messages
    assert not any(str(m.get("content", "")).startswith("[compacted]") for m in messages)  # drop, never digest


def test_fit_bare_list_and_no_output(tmp_path: Path) -> None:
    data = openai_payload(4, 3)["messages"]
    write(tmp_path / "list.json", data)
    proc = run(tmp_path, "fit", "list.json", "--window", "100000")
    assert proc.returncode == 0, proc.stderr
    assert "nothing removed" in proc.stdout and "wrote" not in proc.stdout
    assert listing(tmp_path) == ["list.json"]


def test_fit_overwrites_an_existing_output_whole(tmp_path: Path) -> None:
    data = openai_payload(5, 6)
    write(tmp_path / "p.json", data)
    (tmp_path / "o.json").write_text("old contents that are longer than nothing " * 1000, encoding="utf-8")
    proc = run(tmp_path, "fit", "p.json", "--window", "100000", "-o", "o.json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "o.json").read_text(encoding="utf-8")) == data
    assert listing(tmp_path) == ["o.json", "p.json"]


# ----------------------------------------------------------------------------------------------
# count and policy show


def test_count_many_files_with_progress(tmp_path: Path) -> None:
    rng = random.Random(7)
    tok = Tokenizer.default()
    names, expected = [], {}
    samples = ["", "x", "naïve café 日本語 🎉", "def f(x):\n    return x ** 2\n", '{"a": [1, 2, {"b": null}]}']
    for i in range(170):
        name = f"doc_{i:03d}.txt"
        text = samples[i] if i < len(samples) else words(rng.randint(1, 400), rng) + "\n" * rng.randint(0, 3)
        (tmp_path / name).write_text(text, encoding="utf-8")
        names.append(name)
        expected[name] = tok.count(text)
    proc = run(tmp_path, "count", *names)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ""
    lines = proc.stdout.splitlines()
    assert len(lines) == len(names) + 1
    got = []
    for line in lines[:-1]:
        number, name = line.split(maxsplit=1)
        got.append((name, int(number.replace(",", ""))))
    assert got == [(n, expected[n]) for n in names]  # in argument order
    total = sum(expected.values())
    assert " ".join(lines[-1].split()) == f"{total:,} total ({len(names)} files, o200k_base)"


def test_count_one_file_and_encoding(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("The keepalive timeout is shorter than the idle timeout.", encoding="utf-8")
    proc = run(tmp_path, "count", "a.txt", "--encoding", "cl100k_base")
    assert proc.returncode == 0
    n = Tokenizer.from_encoding("cl100k_base").count((tmp_path / "a.txt").read_text(encoding="utf-8"))
    assert proc.stdout.split() == [str(n), "a.txt"]


@pytest.mark.parametrize("preset", PRESETS)
def test_policy_show_every_preset(tmp_path: Path, preset: str) -> None:
    proc = run(tmp_path, "policy", "show", preset)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.rstrip("\n") == Policy.preset(preset).describe().rstrip("\n")
    assert proc.stdout.startswith(f"policy {preset}") and "never:" in proc.stdout


def test_policy_show_a_toml_file(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text('name = "mine"\n[[rungs]]\nname = "r1"\nlayers = ["retrieved"]\n'
                                     'order = "lowest_score"\naction = "drop"\n', encoding="utf-8")
    proc = run(tmp_path, "policy", "show", "p.toml")
    assert proc.returncode == 0
    assert proc.stdout.startswith("policy mine") and "r1" in proc.stdout


# ----------------------------------------------------------------------------------------------
# Bad input: one line, status 2, nothing written

BIG_SYSTEM = {"messages": [{"role": "system", "content": "rule " * 600}, {"role": "user", "content": "hi"}]}
GOOD = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]}

ERROR_CASES = {
    # id: (payload file contents (str) or None, extra args, needles)
    "missing payload": (None, ["--window", "1000"], ["missing.json", "no such file"]),
    # A missing value: every Python's json names the same place (trailing commas it reports in
    # different places since 3.13).
    "malformed JSON": ('{\n  "messages": [\n    {"role": "user", "content": }\n  ]\n}',
                       ["--window", "1000"], ["payload.json", "line 3, column 33"]),
    "not an object": ("42", ["--window", "1000"], ["payload.json", "'messages'"]),
    "object without messages": ('{"model": "gpt-4o"}', ["--window", "1000"], ["payload.json", "'messages'"]),
    "messages not a list": ('{"messages": "hi"}', ["--window", "1000"], ["payload.json", "messages"]),
    "empty messages": ("[]", ["--window", "1000"], ["payload.json", "'messages' is empty"]),
    "message without role": (json.dumps({"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}),
                             ["--window", "1000"], ["payload.json", "messages[1]", "role"]),
    # A system role is an OpenAI signal, the top-level system an Anthropic one: --format settles it.
    "anthropic bad role": (json.dumps({"system": "s", "messages": [{"role": "system", "content": "x"}]}),
                           ["--window", "1000", "--format", "anthropic"], ["messages[0].role"]),
    "unknown preset": (json.dumps(GOOD), ["--window", "1000", "--policy", "nope"], ["unknown policy preset", "nope"]),
    # The engine words the shortfall; the CLI names the payload and adds a remedy for its options.
    "unfittable": (json.dumps(BIG_SYSTEM), ["--window", "300", "--reserve", "100"],
                   ["payload.json: ", "200", "413", "hint: raise --window to 713 or more"]),
    "reserve = window": (json.dumps(GOOD), ["--window", "100", "--reserve", "100"], ["reserve"]),
    "unknown encoding": (json.dumps(GOOD), ["--window", "1000", "--encoding", "p50k"], ["p50k"]),
    "missing policy file": (json.dumps(GOOD), ["--window", "1000", "--policy", "missing.toml"], ["missing.toml"]),
    "not UTF-8": (b"\xff\xfe{}", ["--window", "1000"], ["payload.json", "cannot read"]),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_fit_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, case: str) -> None:
    contents, extra, needles = ERROR_CASES[case]
    name = "missing.json" if contents is None else "payload.json"
    if isinstance(contents, bytes):
        (tmp_path / name).write_bytes(contents)
    elif contents is not None:
        (tmp_path / name).write_text(contents, encoding="utf-8")
    (tmp_path / "bad.toml").write_text('name = "x"\n[[rungs]\n', encoding="utf-8")
    before = listing(tmp_path)
    proc = run(tmp_path, "fit", name, *extra, "-o", "out.json")
    # Changed (report #10): an Unfittable prints what it tried (the header, the failed
    # attempt's trace) on stdout; stderr still has the one error line.
    assert_one_line_error(proc, *needles, stdout_empty=case != "unfittable")
    assert listing(tmp_path) == before, "an output or temporary file was left behind"


@pytest.mark.parametrize("case", ["unfittable", "message without role", "malformed JSON"])
def test_failed_run_leaves_an_existing_output_alone(tmp_path: Path, case: str) -> None:
    contents, extra, needles = ERROR_CASES[case]
    (tmp_path / "payload.json").write_text(contents, encoding="utf-8")
    out = tmp_path / "out.json"
    out.write_text('{"messages": ["the previous good result"]}\n', encoding="utf-8")
    stat = out.stat()
    proc = run(tmp_path, "fit", "payload.json", *extra, "-o", "out.json")
    # Changed (report #10): an Unfittable prints what it tried (the header, the failed
    # attempt's trace) on stdout; stderr still has the one error line.
    assert_one_line_error(proc, *needles, stdout_empty=case != "unfittable")
    assert out.read_text(encoding="utf-8") == '{"messages": ["the previous good result"]}\n'
    assert out.stat().st_mtime_ns == stat.st_mtime_ns
    assert listing(tmp_path) == ["out.json", "payload.json"]


def test_output_into_a_missing_directory(tmp_path: Path) -> None:
    write(tmp_path / "p.json", GOOD)
    proc = run(tmp_path, "fit", "p.json", "--window", "1000", "-o", "no/such/dir/out.json")
    # Changed (report #9): the check comes before the trace is printed, so stdout stays empty.
    assert_one_line_error(proc, "no/such/dir/out.json", "cannot write")
    assert listing(tmp_path) == ["p.json"]


def test_count_bad_input(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("fine", encoding="utf-8")
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe\x00")
    assert_one_line_error(run(tmp_path, "count", "a.txt", "nope.txt"), "nope.txt", "no such file")
    assert_one_line_error(run(tmp_path, "count", "a.txt", "--encoding", "nope"), "--encoding nope")


def test_count_skips_binary_and_non_utf8_files_and_says_so(tmp_path: Path) -> None:
    """Changed (issue 10, report #19): a binary or non-UTF-8 file, named or found in a folder,
    is listed as skipped with the reason instead of aborting the whole count."""
    (tmp_path / "a.txt").write_text("fine", encoding="utf-8")
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "c.txt").write_bytes(b"caf\xe9")
    proc = run(tmp_path, "count", "a.txt", "b.bin", "c.txt")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert squash(proc.stdout) == [
        f"{Tokenizer.default().count('fine')} a.txt",
        "skipped b.bin (binary)",
        "skipped c.txt (not UTF-8)",
        f"{Tokenizer.default().count('fine')} total (1 file, 2 skipped, o200k_base)",
    ]


def test_a_policy_toml_error_keeps_its_caret_diagram(tmp_path: Path) -> None:
    """Regression (report #9): the parser's multi-line message was squashed onto one line."""
    from ctxfast import CtxfastError

    write(tmp_path / "p.json", GOOD)
    (tmp_path / "bad.toml").write_text('name = "x"\n[[rungs]\n', encoding="utf-8")
    proc = run(tmp_path, "fit", "p.json", "--window", "1000", "--policy", "bad.toml", "-o", "out.json")
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    with pytest.raises(CtxfastError) as info:
        Policy.from_toml(tmp_path / "bad.toml")
    own = str(info.value).strip("\n").splitlines()
    assert len(own) > 2, "the parser's message has a diagram"
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("ctxfast: error: --policy: bad.toml: ") and "line 2" in lines[0]
    assert lines[1:] == [line.rstrip() for line in own[1:]]
    assert any(line.rstrip().endswith("^") for line in lines)
    assert listing(tmp_path) == ["bad.toml", "p.json"]


def test_policy_show_unknown(tmp_path: Path) -> None:
    assert_one_line_error(run(tmp_path, "policy", "show", "nope"), "nope", "presets")


# ----------------------------------------------------------------------------------------------
# Regressions


@pytest.mark.parametrize("extra", [["--window", "-5"], ["--window", "abc"], [], ["--window", "100", "-o", "."]],
                         ids=["negative window", "non-integer window", "missing window", "output is a directory"])
def test_usage_errors_are_one_line(tmp_path: Path, extra: list[str]) -> None:
    """Regression: click's own usage errors printed a 4-line 'Usage: ... Error: ...' block."""
    write(tmp_path / "p.json", GOOD)
    assert_one_line_error(run(tmp_path, "fit", "p.json", *extra), "window" if "-o" not in extra else ".")


@pytest.mark.parametrize("payload", [
    {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": 5}]},
    {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": ["c"]}]},
    {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": 7}]}]},
], ids=["tool_calls int", "tool_calls item str", "image_url int"])
def test_malformed_fields_are_one_line_errors(tmp_path: Path, payload: dict) -> None:
    """Regression: malformed fields the adapters did not validate crashed the CLI with a traceback."""
    write(tmp_path / "p.json", payload)
    proc = run(tmp_path, "fit", "p.json", "--window", "1000", "-o", "out.json")
    assert_one_line_error(proc, "p.json", "messages[")
    assert listing(tmp_path) == ["p.json"]


def test_tool_result_content_int_is_a_one_line_error(tmp_path: Path) -> None:
    """Regression: int tool_result content crashed the CLI with a traceback and exit status 1."""
    write(tmp_path / "p.json", {"system": "s", "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": 5}]}]})
    proc = run(tmp_path, "fit", "p.json", "--window", "1000", "-o", "out.json")
    assert_one_line_error(proc, "messages[2]")
    assert listing(tmp_path) == ["p.json"]


def test_missing_policy_file_is_named_as_the_policy(tmp_path: Path) -> None:
    """Regression: a missing --policy file was reported as "PAYLOAD: [Errno 2] None: 'missing.toml'"."""
    write(tmp_path / "p.json", GOOD)
    line = assert_one_line_error(run(tmp_path, "fit", "p.json", "--window", "1000", "--policy", "missing.toml"))
    assert "None" not in line and not line.startswith("ctxfast: error: p.json")


def test_count_failure_with_progress_is_one_line(tmp_path: Path) -> None:
    """Regression: with >= 128 files the live progress bar left an extra empty line on stderr."""
    names = []
    for i in range(150):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}", encoding="utf-8")
        names.append(f"f{i}.txt")
    assert_one_line_error(run(tmp_path, "count", *names, "missing.txt"), "missing.txt")
