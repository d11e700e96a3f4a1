"""ctxfast: build an LLM request under a token budget, and evict by a written policy.

The heavy lifting (tokenizing, the per-unit count cache, ranking and the eviction ladder) runs
in the Rust extension ``ctxfast._core``; this package is its typed facade. ``help()`` on any
class or function gives its short reference; the full documentation is in ``ctxfast/_core.pyi``,
where editors read it.

The adapters and the command line are submodules, loaded on first use, so ``import ctxfast``
stays light: ``ctxfast.openai`` (Chat Completions and the Responses API), ``ctxfast.anthropic``,
``ctxfast.gemini``, ``ctxfast.langchain`` (needs the
``langchain`` extra) and ``ctxfast.cli`` work without importing them first.
"""

from __future__ import annotations

import importlib as _importlib
import importlib.util as _importlib_util
import typing as _typing
from types import ModuleType as _ModuleType

from ctxfast._core import (
    Budget,
    CacheInfo,
    CacheProfile,
    CacheReport,
    ChatTemplate,
    ContextWindow,
    Eviction,
    Fit,
    FitLedger,
    Policy,
    PromptLayer,
    Segment,
    Tokenizer,
    Trace,
    Truncation,
    WindowLedger,
    Why,
    __version__,
    approximate_tokens,
    build_profile,
    default_cache_capacity,
    encoding_for_model,
    encoding_name_for_model,
    evict_indices,
    fit,
    fit_columns,
)
from ctxfast import telemetry as telemetry
from ctxfast._errors import (
    ArgumentTypeError,
    BudgetLedgerInconsistency,
    UnknownKeyError,
    UntaggedRewriteError,
    ContextWindowExceededError,
    CtxfastFileNotFoundError,
    Unfittable,
    CounterError,
    CtxfastError,
    InvalidArgumentError,
    TextEncodingError,
    TokenizationError,
    TokenizerFileNotFoundError,
    TemplateError,
    TokenizerLoadError,
    UnsupportedOperationError,
    StoreConflictError,
    StoreError,
)

# Pure Python (no submodule, no optional dependency): learning the provider's reported counts.
from ctxfast.calibration import Calibration, CalibrationResult

if not _typing.TYPE_CHECKING:
    # ``fit`` (and ``fit_columns``) reports each fit to ``ctxfast.telemetry`` (rung stats, the DEBUG record, the span):
    # a wrapper with the core's name, docstring and signature, under 1 µs a call when nothing
    # listens (README, "Telemetry"). Type checkers see the core's ``fit`` itself.
    fit = telemetry._wrap(fit)
    fit_columns = telemetry._wrap(fit_columns)

if _typing.TYPE_CHECKING:
    from ctxfast._core import _PresetName as PresetName
else:
    #: The preset names ``Policy.preset`` accepts, as a type: annotate a variable with it and a
    #: type checker catches a misspelt preset. ``typing.get_args(PresetName)`` lists them.
    PresetName = _typing.Literal["context_window", "default", "troubleshooting", "seven_tier", "ranked", "agent"]

__all__ = [
    "ArgumentTypeError",
    "Budget",
    "BudgetLedgerInconsistency",
    "CacheInfo",
    "CacheProfile",
    "CacheReport",
    "Calibration",
    "CalibrationResult",
    "ChatTemplate",
    "ContextWindow",
    "UnknownKeyError",
    "UntaggedRewriteError",
    "WindowLedger",
    "Why",
    "ContextWindowExceededError",
    "CtxfastFileNotFoundError",
    "Eviction",
    "Fit",
    "FitLedger",
    "Policy",
    "PresetName",
    "PromptLayer",
    "Segment",
    "Trace",
    "Truncation",
    "Unfittable",
    "encoding_for_model",
    "encoding_name_for_model",
    "evict_indices",
    "fit",
    "fit_columns",
    "CounterError",
    "CtxfastError",
    "InvalidArgumentError",
    "TemplateError",
    "TextEncodingError",
    "TokenizationError",
    "Tokenizer",
    "TokenizerFileNotFoundError",
    "TokenizerLoadError",
    "UnsupportedOperationError",
    "StoreConflictError",
    "StoreError",
    "__version__",
    "approximate_tokens",
    "build_profile",
    "default_cache_capacity",
]

#: Submodules that ``ctxfast.<name>`` imports on first access (PEP 562). Names whose module
#: does not exist (yet) raise ``AttributeError``, as any missing attribute does.
_LAZY_SUBMODULES = ("anthropic", "chat", "cli", "gemini", "langchain", "openai", "stores")

if _typing.TYPE_CHECKING:
    # For type checkers, which do not run ``__getattr__``: every existing lazy submodule.
    from ctxfast import anthropic as anthropic
    from ctxfast import chat as chat
    from ctxfast import cli as cli
    from ctxfast import gemini as gemini
    from ctxfast import langchain as langchain
    from ctxfast import openai as openai
    from ctxfast import stores as stores


def _load_submodule(name: str) -> _ModuleType:
    """Imports ``ctxfast.<name>`` for an allowed name, or raises ``AttributeError``."""
    if name in _LAZY_SUBMODULES:
        qualified = f"{__name__}.{name}"
        try:
            return _importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            # A dependency the submodule needs is missing: that error is the useful one.
            if exc.name != qualified:
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _available_submodules() -> list[str]:
    """The lazy submodules that exist, found without importing them."""
    return [
        n
        for n in _LAZY_SUBMODULES
        if n in globals() or _importlib_util.find_spec(f"{__name__}.{n}") is not None
    ]


if not _typing.TYPE_CHECKING:
    # Hidden from type checkers, so a misspelt ``ctxfast.<name>`` stays a type error.

    def __getattr__(name: str) -> _ModuleType:
        return _load_submodule(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_available_submodules()})
