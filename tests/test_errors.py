"""The error path: every class the Rust bindings raise exists in ``ctxfast._errors`` (pyo3's
``import_exception!`` would fail at raise time otherwise), is exported, and carries the attributes
its constructor is given by the core."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ctxfast
from ctxfast import _errors

ERRORS_RS = Path(__file__).resolve().parent.parent / "rust" / "bindings" / "errors.rs"


def imported_names() -> list[str]:
    return re.findall(r"import_exception!\(ctxfast\._errors, (\w+)\);", ERRORS_RS.read_text(encoding="utf-8"))


def test_errors_rs_imports_the_classes_it_raises() -> None:
    names = imported_names()
    assert len(names) >= 13
    assert "Unfittable" in names and "TextEncodingError" in names


@pytest.mark.parametrize("name", imported_names())
def test_every_class_the_bindings_raise_exists_and_is_exported(name: str) -> None:
    cls = getattr(_errors, name)
    assert issubclass(cls, ctxfast.CtxfastError)
    assert name in _errors.__all__ and name in ctxfast.__all__
    assert getattr(ctxfast, name) is cls


def test_unfittable_carries_its_fields_from_the_core() -> None:
    with pytest.raises(ctxfast.Unfittable) as info:
        ctxfast.fit([ctxfast.Segment("a b c d e f g h", ctxfast.PromptLayer.SYSTEM)], ctxfast.Budget(3))
    err = info.value
    assert err.components == [("system", err.total)]
    assert err.ceiling == 3 and err.shortfall == err.total - 3 and err.floor_tokens == 0
    assert "short by" in str(err)
    assert isinstance(err, ctxfast.ContextWindowExceededError)


def test_missing_files_carry_filename_and_errno(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ctxfast.TokenizerFileNotFoundError) as info:
        ctxfast.Tokenizer.from_file(missing)
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.filename == str(missing) and info.value.errno == 2
    assert str(info.value).startswith("cannot read tokenizer file")
    with pytest.raises(ctxfast.CtxfastFileNotFoundError) as pol:
        ctxfast.Policy.from_toml(tmp_path / "policy.toml")
    assert pol.value.filename == str(tmp_path / "policy.toml")


def test_core_errors_map_to_their_builtin_too() -> None:
    with pytest.raises(ValueError):
        ctxfast.Budget(10, 10)
    with pytest.raises(KeyError):
        ctxfast.ContextWindow(100).why("never")
    with pytest.raises(NotImplementedError):
        ctxfast.Tokenizer.from_callable(len).encode("x")
