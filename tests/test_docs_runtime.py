"""``help()`` documents the API at run time, and says what the stub says.

The compiled classes and functions get their ``__doc__`` from the Rust ``///`` comments (pyo3
turns them into docstrings). That runtime text is the short reference; ``_core.pyi`` may say
more. The two must agree: the first paragraph of every runtime docstring is the first paragraph
of the stub's docstring for the same name (compared without line breaks, and with the stub's
reST ````x```` written as ```x```).
"""

from __future__ import annotations

import ast
import inspect
import pydoc
import re
import typing
from pathlib import Path
from typing import Any

import pytest

import ctxfast
from ctxfast import Budget, ContextWindow, InvalidArgumentError, Policy, PromptLayer, Segment, fit

STUB = Path(ctxfast.__file__).resolve().parent / "_core.pyi"


def _summary(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line, with ````x```` as ```x```."""
    text = inspect.cleandoc(doc or "")
    return " ".join(text.split("\n\n", 1)[0].split()).replace("``", "`")


def _stub_docs() -> dict[str, str]:
    """``name`` or ``Class.member`` -> docstring; an overloaded name keeps its first overload's."""
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, ast.get_docstring(node) or "")
        elif isinstance(node, ast.ClassDef):
            out[node.name] = ast.get_docstring(node) or ""
            for m in node.body:
                if isinstance(m, ast.FunctionDef):
                    out.setdefault(f"{node.name}.{m.name}", ast.get_docstring(m) or "")
    return out


STUB_DOCS = _stub_docs()


def _exports() -> dict[str, Any]:
    """The classes and functions ``ctxfast`` exports from the Rust extension."""
    out = {}
    for name in ctxfast.__all__:
        obj = getattr(ctxfast, name)
        if getattr(obj, "__module__", None) == "ctxfast._core" and (inspect.isclass(obj) or callable(obj)):
            out[name] = obj
    return out


def _documented() -> dict[str, Any]:
    """Every exported class and function, and every public method and property of those classes
    (enum members aside: they are instances, whose ``__doc__`` is their class's)."""
    out: dict[str, Any] = {}
    for name, obj in _exports().items():
        out[name] = obj
        if inspect.isclass(obj):
            for attr, raw in vars(obj).items():
                if attr.startswith("_") or isinstance(raw, obj):
                    continue
                if isinstance(raw, staticmethod):
                    raw = raw.__func__  # the wrapper's __doc__ is staticmethod's own
                out[f"{name}.{attr}"] = raw
    return out


DOCUMENTED = _documented()


def test_the_list_reaches_every_part_of_the_api() -> None:
    """The checks below run over the whole API, not a handful of names."""
    assert {"Segment", "Budget", "Policy", "Fit", "ContextWindow", "Tokenizer", "PromptLayer", "Why", "Trace",
            "fit", "evict_indices", "approximate_tokens"} <= set(DOCUMENTED)
    assert {"Segment.layer", "Fit.cap_overruns", "ContextWindow.rewrite", "Why.status", "CacheInfo.hits",
            "WindowLedger.balanced", "Policy.preset", "Tokenizer.count"} <= set(DOCUMENTED)
    assert len(DOCUMENTED) > 150


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_runtime_doc_exists_and_agrees_with_the_stub(name: str) -> None:
    runtime = DOCUMENTED[name].__doc__
    assert (runtime or "").strip(), f"{name} has no __doc__ at run time"
    assert name in STUB_DOCS, f"{name} is not documented in {STUB.name}"
    assert _summary(runtime) == _summary(STUB_DOCS[name]), (
        f"{name}: the runtime summary and the stub's differ\n"
        f"runtime: {_summary(runtime)}\nstub:    {_summary(STUB_DOCS[name])}"
    )


def test_no_runtime_doc_points_to_an_unshipped_document() -> None:
    for name, obj in DOCUMENTED.items():
        assert not re.search(r"\bSPEC\b|\bsee section\b|\bsection \d", obj.__doc__ or "", flags=re.IGNORECASE), name


def test_help_fit_documents_fit_and_mentions_no_spec() -> None:
    page = pydoc.render_doc(ctxfast.fit, renderer=pydoc.plaintext)
    assert "SPEC" not in page and "section 5" not in page
    for word in ("Unfittable", "segments", "budget", "policy", "tokenizer", "separator", "framing", "Fit"):
        assert word in page, word


def test_help_segment_says_the_default_layer() -> None:
    page = pydoc.render_doc(Segment, renderer=pydoc.plaintext)
    assert "a missing `layer` is CONVERSATION" in " ".join(page.replace("|", " ").split())
    assert "layer=CONVERSATION" in page
    assert Segment("x").layer == PromptLayer.CONVERSATION
    # The properties are documented on the page too (report #12: they had no text).
    assert "The layer this segment belongs to." in page


def test_help_budget_says_caps_are_reported_not_enforced() -> None:
    doc = " ".join((Budget.__doc__ or "").split())
    assert "Caps are reported, never enforced, unless a rung says `until = \"cap\"`" in doc
    capped = fit([Segment("word " * 50, PromptLayer.RETRIEVED)], Budget(1000, caps={PromptLayer.RETRIEVED: 10}))
    assert capped.cap_overruns == {PromptLayer.RETRIEVED: 41} and not capped.evicted


@pytest.mark.parametrize("name", ["Segment", "Budget", "ContextWindow", "fit", "evict_indices", "approximate_tokens",
                                  "Policy.preset", "Policy.from_dict", "Tokenizer.count", "ContextWindow.rewrite"])
def test_help_shows_a_signature(name: str) -> None:
    obj = DOCUMENTED[name]
    params = list(inspect.signature(obj).parameters)
    assert params, name
    # The runtime names are the stub's (stubtest checks the rest of the signature).
    assert all(p in STUB_SIGNATURE_NAMES[name] for p in params if p not in ("self", "cls")), (name, params)


def _stub_parameter_names() -> dict[str, set[str]]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    out: dict[str, set[str]] = {}

    def names(f: ast.FunctionDef) -> set[str]:
        a = f.args
        return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]} | ({a.kwarg.arg} if a.kwarg else set())

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, set()).update(names(node))
        elif isinstance(node, ast.ClassDef):
            for m in node.body:
                if isinstance(m, ast.FunctionDef):
                    key = node.name if m.name == "__new__" else f"{node.name}.{m.name}"
                    out.setdefault(key, set()).update(names(m))
    return out


STUB_SIGNATURE_NAMES = _stub_parameter_names()


# --------------------------------------------------------------------------------------------
# ctxfast.PresetName: the Literal that Policy.preset takes


def _stub_preset_names() -> set[str]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "_PresetName":
            value = node.value
            assert isinstance(value, ast.Subscript) and ast.unparse(value.value) == "Literal"
            assert isinstance(value.slice, ast.Tuple)
            return {ast.literal_eval(e) for e in value.slice.elts}
    raise AssertionError("_PresetName is not in the stub")


def test_preset_name_is_the_stubs_literal() -> None:
    assert set(typing.get_args(ctxfast.PresetName)) == _stub_preset_names()
    assert "PresetName" in ctxfast.__all__


def test_every_preset_name_is_accepted_and_every_preset_is_named() -> None:
    names = typing.get_args(ctxfast.PresetName)
    for name in names:
        assert isinstance(Policy.preset(name), Policy), name
    with pytest.raises(InvalidArgumentError) as info:
        Policy.preset("no_such_preset")  # type: ignore[arg-type]
    # Every preset the error offers must be in the Literal, or the stub would reject it.
    offered = set()
    for word in re.findall(r"[a-z][a-z0-9_]*", str(info.value)):
        try:
            Policy.preset(word)  # type: ignore[arg-type]
        except InvalidArgumentError:
            continue
        offered.add(word)
    assert offered, str(info.value)
    assert offered <= set(names), offered - set(names)
    assert Policy.preset("default") == Policy.context_window()


def test_fit_and_window_take_a_preset_name() -> None:
    """The str form stays accepted where a name from configuration is passed at run time."""
    name: str = "ranked"
    assert ContextWindow(100, policy=name).policy == Policy.ranked()
    assert fit([Segment("hi", PromptLayer.CURRENT_TURN)], Budget(100), name).total > 0
