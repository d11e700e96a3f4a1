"""F14 (reliability attack 2026-12): the CLI prints one line naming the problem and exits 2 on
deep JSON, huge integers, wrong field types and every adapter error; never a traceback, and
nothing is left behind (no output file, no temporary file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

U = {"role": "user", "content": "hello"}


def run(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "ctxfast", *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", env=env, timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, f"stderr has {len(lines)} lines:\n{proc.stderr[-2000:]}"
    assert lines[0].startswith("ctxfast: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert proc.stdout == ""
    return lines[0]


def fit_fails(tmp_path: Path, text: str, *needles: str) -> str:
    (tmp_path / "p.json").write_text(text, encoding="utf-8")
    line = one_line_error(run(tmp_path, "fit", "p.json", "--window", "1000", "-o", "out.json"), *needles)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"], "something was left behind"
    assert len(line) < 1000
    return line


def test_f14_deep_array(tmp_path: Path) -> None:
    fit_fails(tmp_path, "[" * 100_000 + "]" * 100_000, "p.json", "nested too deeply")


def test_f14_deep_content(tmp_path: Path) -> None:
    fit_fails(tmp_path, '{"messages": [{"role": "user", "content": ' + "[" * 50_000 + "]" * 50_000 + "}]}",
              "p.json", "nested too deeply")


@pytest.mark.parametrize("field", ["name", "content"])
def test_f14_five_thousand_digit_int(tmp_path: Path, field: str) -> None:
    text = '{"messages": [{"role": "user", "content": "x", "%s": %s}]}' % (field, "9" * 5000)
    fit_fails(tmp_path, text, "p.json", "4300")  # the wording after it differs by Python version


@pytest.mark.parametrize("tools", ["5", "true", '"read"', "{}"])
def test_f14_tools_of_the_wrong_type(tmp_path: Path, tools: str) -> None:
    # "model" says OpenAI: a payload without any format signal is refused before the adapter
    # sees its tools (issue 10, report #3).
    fit_fails(tmp_path, '{"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}], "tools": %s}' % tools,
              "p.json", "tools")


def test_anthropic_tools_and_system_of_the_wrong_type(tmp_path: Path) -> None:
    fit_fails(tmp_path, json.dumps({"system": "s", "messages": [U], "tools": 5}), "p.json", "tools")
    fit_fails(tmp_path, json.dumps({"system": 5, "messages": [U]}), "p.json", "system")


def nested(levels: int) -> str:
    return '{"a": ' * levels + "1" + "}" * levels


@pytest.mark.parametrize(
    "payload,needle",
    [
        ('{"model": "gpt-4o", "messages": [{"role": "user", "content": [%s]}]}' % nested(500), "messages[0].content[0]"),
        ('{"messages": [{"role": %s, "content": "x"}]}' % nested(500), "messages[0]"),
        ('{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": null, "tool_calls": '
         '[{"id": "a", "function": {"name": %s, "arguments": "{}"}}]}]}' % nested(500),
         "messages[1].tool_calls[0].function.name"),
        ('{"system": "s", "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": '
         '[{"type": "tool_use", "id": "a", "name": "f", "input": %s}]}]}' % nested(500), "messages[1].content[0].input"),
        ('{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": '
         '{"name": %s}}]}' % nested(500), "tools[0].function.name"),
    ],
    ids=["content part", "role", "function name", "tool_use input", "tool name"],
)
def test_deep_but_parseable_fields_are_adapter_errors(tmp_path: Path, payload: str, needle: str) -> None:
    fit_fails(tmp_path, payload, "p.json", needle)


def test_f12_pairing_error_is_one_line(tmp_path: Path) -> None:
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}
    payload = {"messages": [U, call, {"role": "user", "content": "hurry"},
                            {"role": "tool", "tool_call_id": "c1", "content": "r"}]}
    fit_fails(tmp_path, json.dumps(payload), "p.json", "messages[3]", "messages[1]", "stands between")


def test_surrogate_in_a_tool_is_one_line(tmp_path: Path) -> None:
    payload = '{"messages": [{"role": "user", "content": "x"}], "tools": [{"function": {"name": "f\\ud800"}}]}'
    fit_fails(tmp_path, payload, "p.json", "tools[0]")


def test_surrogate_in_an_uncounted_field_is_still_written(tmp_path: Path) -> None:
    # A "\ud800" escape in a field no adapter reads has no UTF-8 form: the output is escaped JSON.
    (tmp_path / "p.json").write_text('{"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}], '
                                     '"extra": "\\ud800"}', encoding="utf-8")
    proc = run(tmp_path, "fit", "p.json", "--window", "1000", "-o", "out.json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["extra"] == "\ud800"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "p.json"]


def test_output_onto_the_input_still_ends_complete(tmp_path: Path) -> None:
    payload = {"model": "gpt-4o",
               "messages": [U, {"role": "assistant", "content": "hi " * 500}, {"role": "user", "content": "now?"}]}
    (tmp_path / "p.json").write_text(json.dumps(payload), encoding="utf-8")
    proc = run(tmp_path, "fit", "p.json", "--window", "100", "-o", "p.json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert out["messages"][-1] == {"role": "user", "content": "now?"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


def test_a_policy_name_too_long_for_a_path(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps({"messages": [U]}), encoding="utf-8")
    one_line_error(run(tmp_path, "fit", "p.json", "--window", "1000", "--policy", "a" * 5000), "--policy")
    one_line_error(run(tmp_path, "policy", "show", "a" * 5000), "unknown policy")


def test_messages_of_the_wrong_type(tmp_path: Path, ) -> None:
    for messages in ("5", '"hi"', "[5]", "[[]]", '[{"role": 5}]'):
        fit_fails(tmp_path, '{"messages": %s}' % messages, "p.json", "messages")


def test_junk_in_every_field_of_a_payload(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A compact version of the attack's row 14, in-process (``cli.main``) so that every field
    of two small payloads meets every junk value JSON can hold: each run ends with status 0 and
    a written payload, or status 2 and one line; never another exception, never a leftover."""
    from ctxfast import cli

    openai_base: dict[str, Any] = {"messages": [
        U, {"role": "assistant", "content": None, "name": "bot",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "r"}]},
        {"role": "user", "content": "now?"}],
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {"properties": {
            "p": {"type": "string", "enum": ["a"]}}}}}]}
    anthropic_base: dict[str, Any] = {"system": [{"type": "text", "text": "s"}], "model": "claude-sonnet-4-5",
                                      "tool_choice": {"type": "auto"}, "messages": [
        U, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "a"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "r"}]}]},
        {"role": "user", "content": "now?"}],
        "tools": [{"name": "read", "input_schema": {"type": "object"}}]}
    junk = ["5", "true", "null", '"\\ud800"', "[]", "{}", "9" * 4000, nested(300), "[" * 5000 + "]" * 5000,
            '{"1": [null]}']

    def paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        out = [path] if path else []
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            out += paths(v, (*path, k))
        return out

    monkeypatch.chdir(tmp_path)
    runs = 0
    for base in (openai_base, anthropic_base):
        for path in paths(base):
            for bad in junk:
                data = json.loads(json.dumps(base))
                node = data
                for k in path[:-1]:
                    node = node[k]
                node[path[-1]] = "@@JUNK@@"
                Path("p.json").write_text(json.dumps(data).replace('"@@JUNK@@"', bad), encoding="utf-8")
                with pytest.raises(SystemExit) as info:
                    cli.main(["fit", "p.json", "--window", "1000", "-o", "out.json"])
                err = capsys.readouterr().err
                if info.value.code == 0:
                    assert json.loads(Path("out.json").read_text(encoding="utf-8"))["messages"]
                    Path("out.json").unlink()
                else:
                    assert info.value.code == 2, (path, bad[:20], info.value.code)
                    lines = err.splitlines()
                    assert len(lines) == 1 and lines[0].startswith("ctxfast: error: p.json"), (path, bad[:20], err[-500:])
                assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"], (path, bad[:20])
                runs += 1
    assert runs > 400
