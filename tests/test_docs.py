"""The documentation is where editors look, and the package facade stays light.

- ``ctxfast/_core.pyi`` carries the API's docstrings (hover and ``help()`` in an IDE read the
  stub), and its ``Literal`` / ``TypedDict`` types agree with what the binary really returns.
- The runtime ``__doc__`` of the main entry points exists, and ``help()`` renders it.
- ``ctxfast.openai`` and the other submodules load on first attribute access (PEP 562), so
  ``import ctxfast`` imports neither them nor ``langchain_core``.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import pydoc
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

import ctxfast
from ctxfast import (
    Budget,
    ContextWindow,
    Fit,
    Policy,
    PromptLayer,
    Segment,
    Tokenizer,
    fit,
)
from ctxfast import _core, _errors

L = PromptLayer
PACKAGE_DIR = Path(ctxfast.__file__).resolve().parent
STUB = PACKAGE_DIR / "_core.pyi"
INIT = PACKAGE_DIR / "__init__.py"

#: The submodules ``ctxfast.<name>`` may load lazily, and those that exist today.
ALLOWED_LAZY = {"openai", "anthropic", "langchain", "cli", "gemini", "chat", "stores"}
EXISTING_LAZY = {"openai", "anthropic", "chat", "langchain", "cli", "gemini", "stores"}


# --------------------------------------------------------------------------------------------
# Reading the stub


def _is_str_expr(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _members(body: list[ast.stmt], prefix: str = "") -> dict[str, str]:
    """``name -> docstring`` for every def, class and annotated attribute in ``body``.

    An attribute's docstring is the string literal right after it (the convention editors
    read); a missing docstring is recorded as "". An overloaded function is documented by its
    first overload (the others say "as above").
    """
    out: dict[str, str] = {}
    for i, node in enumerate(body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and prefix + node.name in out:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[prefix + node.name] = ast.get_docstring(node) or ""
            if isinstance(node, ast.ClassDef):
                out.update(_members(node.body, prefix + node.name + "."))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            nxt = body[i + 1] if i + 1 < len(body) else None
            doc = ""
            if isinstance(nxt, ast.Expr) and _is_str_expr(nxt):
                doc = inspect.cleandoc(str(ast.literal_eval(nxt.value)))
            out[prefix + node.target.id] = doc
    return out


@pytest.fixture(scope="module")
def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"), filename=str(STUB))


@pytest.fixture(scope="module")
def stub_docs(stub_tree: ast.Module) -> dict[str, str]:
    return _members(stub_tree.body)


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise AssertionError(f"class {name} is not in {STUB.name}")


def _return_annotation(tree: ast.Module, cls: str, member: str) -> ast.expr:
    for node in _class(tree, cls).body:
        if isinstance(node, ast.FunctionDef) and node.name == member:
            assert node.returns is not None, f"{cls}.{member} has no return annotation"
            return node.returns
    raise AssertionError(f"{cls}.{member} is not in {STUB.name}")


def _aliases(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = node.value
    return out


def _literal_values(tree: ast.Module, node: ast.expr) -> set[str]:
    """The values of a ``Literal[...]`` annotation, following module-level aliases."""
    aliases = _aliases(tree)
    while isinstance(node, ast.Name) and node.id in aliases:
        node = aliases[node.id]
    assert isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal", (
        f"not a Literal: {ast.unparse(node)}"
    )
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    values = set()
    for item in items:
        assert isinstance(item, ast.Constant) and isinstance(item.value, str), ast.unparse(item)
        values.add(item.value)
    return values


def _typed_dict_fields(tree: ast.Module, name: str) -> dict[str, ast.expr]:
    cls = _class(tree, name)
    assert any(isinstance(b, ast.Name) and b.id == "TypedDict" for b in cls.bases), f"{name} is not a TypedDict"
    return {
        n.target.id: n.annotation
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }


def _core_exports() -> dict[str, Any]:
    """Classes and functions of ``ctxfast.__all__`` that come from the Rust extension."""
    out = {}
    for name in ctxfast.__all__:
        obj = getattr(ctxfast, name)
        if getattr(obj, "__module__", None) == "ctxfast._core" and (inspect.isclass(obj) or callable(obj)):
            out[name] = obj
    return out


# --------------------------------------------------------------------------------------------
# Docstrings in the stub


def test_the_export_list_reaches_the_core() -> None:
    exports = _core_exports()
    assert {"fit", "evict_indices", "approximate_tokens", "Tokenizer", "Segment", "Budget", "Policy",
            "ContextWindow", "Fit", "Why", "Trace"} <= set(exports)


def test_every_core_export_has_a_stub_docstring(stub_docs: dict[str, str]) -> None:
    missing = [name for name in _core_exports() if not stub_docs.get(name, "").strip()]
    assert not missing, f"no docstring in {STUB.name} for {missing}"


def test_every_public_member_of_a_core_class_has_a_stub_docstring(stub_docs: dict[str, str]) -> None:
    """Whatever the binary exposes on a class (methods, properties, enum members) is documented."""
    missing = []
    for name, obj in _core_exports().items():
        if not inspect.isclass(obj):
            continue
        for attr in dir(obj):
            if attr.startswith("_") or hasattr(object, attr):
                continue
            if not stub_docs.get(f"{name}.{attr}", "").strip():
                missing.append(f"{name}.{attr}")
    assert not missing, f"no docstring in {STUB.name} for {missing}"


def test_every_definition_in_the_stub_has_a_docstring(stub_docs: dict[str, str]) -> None:
    """Dunders, internal helpers and TypedDict fields too: hover shows something everywhere."""
    empty = sorted(name for name, doc in stub_docs.items() if not doc.strip())
    assert not empty, f"empty docstrings in {STUB.name}: {empty}"
    assert len(stub_docs) > 150, "the stub parsed to suspiciously few definitions"


def test_module_values_are_documented(stub_docs: dict[str, str]) -> None:
    for name in ("__version__", "build_profile", "default_cache_capacity"):
        assert stub_docs.get(name, "").strip(), f"{name} has no docstring in {STUB.name}"
    assert f"{ctxfast.default_cache_capacity:,}" in stub_docs["default_cache_capacity"]


def test_documented_functions_say_what_they_raise(stub_docs: dict[str, str]) -> None:
    """Each ``Raises:`` section names real ctxfast exception classes only."""
    known = set(_errors.__all__)
    sections = 0
    for name, doc in stub_docs.items():
        if "Raises:" not in doc:
            continue
        sections += 1
        body = doc.split("Raises:", 1)[1]
        raised = re.findall(r"^\s{4}(\w+):", body, flags=re.MULTILINE)
        assert raised, f"{name}: empty Raises section"
        unknown = [r for r in raised if r not in known]
        assert not unknown, f"{name} documents unknown exception classes {unknown}"
    assert sections >= 40
    for entry in ("fit", "ContextWindow.fit"):
        assert "Unfittable" in stub_docs[entry].split("Raises:", 1)[1]


def test_stub_docstrings_point_to_nothing_that_is_not_shipped(stub_docs: dict[str, str]) -> None:
    for name, doc in stub_docs.items():
        assert not re.search(r"\bSPEC\b|\bsee section\b|\bsection \d", doc, flags=re.IGNORECASE), (
            f"{name} points to a document that is not shipped: {doc!r}"
        )


def test_stub_documents_the_choices_the_readme_documents(stub_docs: dict[str, str]) -> None:
    """A few defaults and limits a caller needs, checked against the binary's own values."""
    assert "65,536" in stub_docs["Tokenizer"]
    assert Tokenizer.default().cache_info().capacity == 65_536
    assert "0 (none) by default" in stub_docs["Tokenizer.approximate"]
    assert Tokenizer.approximate().cache_info().capacity == 0
    assert "4.0 by default" in stub_docs["Tokenizer.approximate"]
    assert Tokenizer.approximate().name == "approximate(4)"
    assert "3 by default" in stub_docs["Policy.seven_tier"]
    assert Policy.seven_tier().to_dict()["rungs"][1]["floor"] == {"keep_top": 3}
    assert "128" in stub_docs["Policy.troubleshooting"] and "128" in stub_docs["Policy.from_dict"]
    assert Policy.troubleshooting().to_dict()["rungs"][2]["min_tokens"] == 128
    assert '``"default"``' in stub_docs["Policy.preset"]
    assert Policy.preset("default") == Policy.context_window()
    assert "(0, 1]" in stub_docs["ContextWindow.__new__"]
    with pytest.raises(ctxfast.InvalidArgumentError):
        ContextWindow(100, low_watermark=1.5)
    assert "does not enforce it" in stub_docs["Budget.__new__"] and 'until = "cap"' in stub_docs["Budget.__new__"]
    capped = fit([Segment("word " * 50, L.RETRIEVED)], Budget(1000, caps={L.RETRIEVED: 10}))
    assert capped.cap_overruns == {L.RETRIEVED: 41} and not capped.evicted


# --------------------------------------------------------------------------------------------
# Literal and TypedDict types against the binary's real values


def _tool_exchange(i: int) -> list[Segment]:
    group = f"ex{i}"
    return [
        Segment(f"please read file {i}", L.CONVERSATION, group=group, key=f"ask{i}"),
        Segment("calling the tool", L.CONVERSATION, group=group,
                meta={"tool": "read_file", "arguments": {"path": f"a{i}.py"}, "step": i}),
        Segment("line of output\n" * 60, L.TOOL_RESULT, group=group, key=f"result{i}"),
    ]


def _agent_request() -> list[Segment]:
    exchanges = [s for i in range(5) for s in _tool_exchange(i)]
    return [Segment("You are a careful agent.", L.SYSTEM), *exchanges, Segment("What next?", L.CURRENT_TURN)]


CUT_POLICY = {
    "name": "cut",
    "rungs": [
        {"name": "cut_chunks", "layers": ["retrieved"], "order": "largest", "action": "truncate", "min_tokens": 8},
    ],
}


@pytest.fixture(scope="module")
def fits() -> list[Fit]:
    """Fits whose rungs drop, digest and truncate."""
    segs = _agent_request()
    total = sum(s.count() for s in segs)
    digest_only = fit(segs, Budget(total - 100), Policy.agent())
    digest_and_drop = fit(segs, Budget(total // 3), Policy.agent())
    chunks = [Segment("q", L.CURRENT_TURN), *[Segment("word " * 400, L.RETRIEVED, key=f"c{i}") for i in range(2)]]
    truncating = fit(chunks, Budget(sum(s.count() for s in chunks) - 150), Policy.from_dict(CUT_POLICY))
    return [digest_only, digest_and_drop, truncating]


def test_trace_rows_match_their_typeddict(stub_tree: ast.Module, fits: list[Fit]) -> None:
    annotation = _return_annotation(stub_tree, "Trace", "rows")
    assert isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) == "list"
    row_type = annotation.slice
    assert isinstance(row_type, ast.Name)
    fields = _typed_dict_fields(stub_tree, row_type.id)
    assert set(fields) == {"rung", "label", "action", "removed", "layer", "layer_after", "total_after", "over_after"}
    actions = _literal_values(stub_tree, fields["action"])
    rows = [row for f in fits for row in f.trace.rows]
    assert rows
    seen = set()
    for row in rows:
        assert set(row) == set(fields), row
        for key, ann in fields.items():
            if ast.unparse(ann) in ("int", "str"):
                assert type(row[key]).__name__ == ast.unparse(ann), (key, row)
        seen.add(row["action"])
    assert seen == actions == {"drop", "truncate", "digest"}


def test_eviction_action_literal_matches_the_binary(stub_tree: ast.Module, fits: list[Fit]) -> None:
    declared = _literal_values(stub_tree, _return_annotation(stub_tree, "Eviction", "action"))
    seen = {e.action for f in fits for e in f.evicted}
    assert seen == declared == {"drop", "digest"}


def test_why_status_literal_matches_the_binary(stub_tree: ast.Module) -> None:
    declared = _literal_values(stub_tree, _return_annotation(stub_tree, "Why", "status"))
    w = ContextWindow(200, policy=Policy.from_dict(CUT_POLICY))
    w.admit_many([
        Segment("You are terse.", L.SYSTEM, key="held"),
        Segment("a fetched page", L.RETRIEVED, key="recoverable", recoverable=True),
        Segment("small talk", L.CONVERSATION, key="dispensable"),
        Segment("a long explanation " * 12, L.CONVERSATION, key="rewritten"),
        Segment("word " * 400, L.RETRIEVED, key="truncated"),
    ])
    w.fit()
    w.discard("recoverable")
    w.discard("dispensable")
    assert w.rewrite("rewritten", "explained", provenance="test") is True
    statuses = {x.key: x.status for x in w.ledger_entries()}
    assert statuses == {
        "held": "held",
        "recoverable": "evicted_recoverable",
        "dispensable": "evicted_dispensable",
        "rewritten": "rewritten",
        "truncated": "truncated",
    }
    assert set(statuses.values()) == declared
    assert w.ledger.balanced


# --------------------------------------------------------------------------------------------
# Runtime docs and help()

ENTRY_POINTS: list[Any] = [
    ctxfast.fit, ctxfast.evict_indices, ctxfast.approximate_tokens, ctxfast.Budget,
    Tokenizer.default, Tokenizer.from_hf, Tokenizer.approximate, Tokenizer.from_callable,
    Tokenizer.count_many, Tokenizer.truncate,
    Segment.count, Segment.replace,
    Policy.context_window, Policy.troubleshooting, Policy.seven_tier, Policy.ranked, Policy.agent,
    Policy.preset, Policy.from_toml, Policy.describe,
    Fit.kept, Fit.evicted, Fit.explain,
    ContextWindow.admit, ContextWindow.admit_many, ContextWindow.fit, ContextWindow.why,
    ContextWindow.rewrite, ContextWindow.digest, ContextWindow.discard,
    ContextWindow.to_bytes, ContextWindow.from_bytes,
]


@pytest.mark.parametrize("obj", ENTRY_POINTS, ids=lambda o: getattr(o, "__qualname__", repr(o)))
def test_entry_points_have_a_runtime_docstring(obj: Any) -> None:
    assert (obj.__doc__ or "").strip(), f"{obj!r} has no __doc__ at run time"


def test_package_modules_and_errors_have_runtime_docstrings() -> None:
    for module in (ctxfast, ctxfast.openai, ctxfast.anthropic, ctxfast.langchain, ctxfast.cli, _errors):
        assert (module.__doc__ or "").strip(), module.__name__
    for name in _errors.__all__:
        assert (getattr(_errors, name).__doc__ or "").strip(), name


def _squeezed(text: str) -> str:
    # Without white space, and without the " |  " that prefixes a class page's lines.
    return "".join(text.replace("|", " ").split())


def test_help_renders_fit(capsys: pytest.CaptureFixture[str]) -> None:
    help(ctxfast.fit)
    out = capsys.readouterr().out
    # Python 3.13's pydoc breaks long signatures over lines: compare without white space.
    assert _squeezed(
        "fit(segments, budget, policy=None, tokenizer=None, separator=None, *, framing=None, input_name=None, previous=None, cache=None)"
    ) in _squeezed(out)
    first_line = (ctxfast.fit.__doc__ or "").strip().splitlines()[0]
    assert first_line in out


def test_help_renders_classes_with_their_methods() -> None:
    page = pydoc.render_doc(ContextWindow, renderer=pydoc.plaintext)
    signature = "ContextWindow(limit_tokens, tokenizer=None, policy=None, reserve=None, *, low_watermark=None, why_horizon=None, cache=None)"
    assert _squeezed(signature) in _squeezed(page)
    for method in (ContextWindow.admit, ContextWindow.fit, ContextWindow.rewrite):
        assert (method.__doc__ or "").strip().splitlines()[0] in page
    page = pydoc.render_doc(Budget, renderer=pydoc.plaintext)
    assert _squeezed((Budget.__doc__ or "").strip()) in _squeezed(page)


def test_help_renders_the_package() -> None:
    page = pydoc.render_doc(ctxfast, renderer=pydoc.plaintext)
    assert (ctxfast.__doc__ or "").strip().splitlines()[0] in page


# --------------------------------------------------------------------------------------------
# Lazy submodules (PEP 562)

LAZY_PROBE = textwrap.dedent(
    """
    import json, sys

    def loaded():
        mods = ("langchain_core", "click", "rich") + tuple("ctxfast." + n for n in sorted(%r))
        return sorted(m for m in mods if m in sys.modules)

    import ctxfast
    states = {"import ctxfast": loaded()}
    states["dir"] = [n for n in dir(ctxfast) if n in %r]
    states["after dir"] = loaded()
    assert callable(ctxfast.openai.fit_messages)
    assert ctxfast.openai is sys.modules["ctxfast.openai"]
    states["ctxfast.openai"] = loaded()
    assert callable(ctxfast.anthropic.fit_messages)
    states["ctxfast.anthropic"] = loaded()
    assert callable(ctxfast.langchain.trim_messages)
    states["ctxfast.langchain"] = loaded()
    assert callable(ctxfast.cli.main)
    states["ctxfast.cli"] = loaded()
    print(json.dumps(states))
    """
) % (sorted(ALLOWED_LAZY), sorted(ALLOWED_LAZY))


@pytest.fixture(scope="module")
def lazy_states() -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-c", LAZY_PROBE], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    states: dict[str, list[str]] = json.loads(result.stdout.strip().splitlines()[-1])
    return states


def test_import_ctxfast_is_light() -> None:
    """The one-line check a user would run in a fresh interpreter."""
    code = "import ctxfast, sys; assert 'langchain_core' not in sys.modules"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr


def test_import_ctxfast_loads_no_submodule_and_no_optional_dependency(lazy_states: dict[str, list[str]]) -> None:
    assert lazy_states["import ctxfast"] == []


def test_each_submodule_loads_on_first_access(lazy_states: dict[str, list[str]]) -> None:
    assert lazy_states["ctxfast.openai"] == ["ctxfast.openai"]
    assert lazy_states["ctxfast.anthropic"] == ["ctxfast.anthropic", "ctxfast.openai"]
    # The LangChain adapter imports langchain_core only when it builds a message.
    assert "ctxfast.langchain" in lazy_states["ctxfast.langchain"]
    assert "langchain_core" not in lazy_states["ctxfast.langchain"]
    assert {"ctxfast.cli", "click", "rich"} <= set(lazy_states["ctxfast.cli"])


def test_allow_list_is_fixed() -> None:
    assert set(ctxfast._LAZY_SUBMODULES) == ALLOWED_LAZY
    assert all(name not in ctxfast.__all__ for name in ALLOWED_LAZY), "submodules stay out of `import *`"


def _exists(name: str) -> bool:
    return importlib.util.find_spec(f"ctxfast.{name}") is not None


def test_the_existing_submodules_are_the_expected_ones() -> None:
    assert {n for n in ALLOWED_LAZY if _exists(n)} == EXISTING_LAZY


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"^module 'ctxfast' has no attribute 'no_such_thing'$"):
        ctxfast.no_such_thing  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(ctxfast, "no_such_thing")
    for name in ALLOWED_LAZY - EXISTING_LAZY:
        if not _exists(name):
            assert not hasattr(ctxfast, name), name


def _fake_importlib(error: ModuleNotFoundError) -> types.SimpleNamespace:
    def import_module(name: str) -> types.ModuleType:
        raise error

    return types.SimpleNamespace(import_module=import_module)


def test_an_allowed_name_without_a_module_is_an_attribute_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(ctxfast, "gemini", raising=False)
    monkeypatch.setattr(ctxfast, "_importlib", _fake_importlib(ModuleNotFoundError("gone", name="ctxfast.gemini")))
    with pytest.raises(AttributeError, match="has no attribute 'gemini'"):
        ctxfast.gemini  # type: ignore[attr-defined]  # noqa: B018


def test_a_missing_dependency_of_a_submodule_is_not_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ctxfast.chat`` needing an uninstalled package says so, instead of "no attribute"."""
    monkeypatch.delattr(ctxfast, "chat", raising=False)
    monkeypatch.setattr(ctxfast, "_importlib", _fake_importlib(ModuleNotFoundError("no google", name="google")))
    with pytest.raises(ModuleNotFoundError, match="no google"):
        ctxfast.chat  # type: ignore[attr-defined]  # noqa: B018


def test_dir_lists_submodules_before_they_are_loaded(lazy_states: dict[str, list[str]]) -> None:
    assert set(lazy_states["dir"]) == {n for n in ALLOWED_LAZY if _exists(n)} == EXISTING_LAZY
    assert lazy_states["after dir"] == [], "dir() must not import the submodules"


def test_dir_lists_the_submodules_and_the_api() -> None:
    names = dir(ctxfast)
    assert names == sorted(names)
    assert EXISTING_LAZY <= set(names)
    assert set(ctxfast.__all__) <= set(names)
    for name in ALLOWED_LAZY - EXISTING_LAZY:
        assert (name in names) == _exists(name), name


def test_type_checkers_are_told_about_every_existing_submodule() -> None:
    """Each existing lazy submodule is imported under TYPE_CHECKING (mypy does not run __getattr__)."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    declared = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module == "ctxfast":
                    declared |= {a.name for a in stmt.names if a.asname == a.name}
    assert declared == {n for n in ALLOWED_LAZY if _exists(n)}


MYPY_PROBE = textwrap.dedent(
    """\
    from typing import Any

    import ctxfast


    def send(messages: list[dict[str, Any]]) -> int:
        kept, result = ctxfast.openai.fit_messages(messages, ctxfast.Budget(8_000, 1_000))
        return result.total + len(kept)


    def trim(messages: list[Any]) -> list[Any]:
        return ctxfast.langchain.trim_messages(messages, max_tokens=100)


    def claude(messages: list[dict[str, Any]]) -> ctxfast.Fit:
        return ctxfast.anthropic.fit_messages(None, messages, 8_000)[1]


    entry = ctxfast.cli.main
    ctxfast.no_such_submodule
    """
)


def test_mypy_strict_accepts_lazy_submodule_access(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(MYPY_PROBE, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), str(probe)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    bad_line = MYPY_PROBE.splitlines().index("ctxfast.no_such_submodule") + 1
    # Exactly one error: the misspelt name (so __getattr__ does not hide typos from mypy).
    assert len(errors) == 1, f"{result.stdout}\n{result.stderr}"
    assert f"probe.py:{bad_line}:" in errors[0] and 'has no attribute "no_such_submodule"' in errors[0], errors
