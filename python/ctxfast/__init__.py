"""ctxfast: build an LLM request under a token budget, and evict by a written policy.

The heavy lifting (tokenizing, the per-unit count cache, ranking and the eviction ladder) runs
in the Rust extension ``ctxfast._core``; this package is its typed facade.
"""

from __future__ import annotations

from ctxfast._core import (
    Budget,
    CacheInfo,
    Eviction,
    Fit,
    FitLedger,
    Policy,
    PromptLayer,
    Segment,
    Tokenizer,
    Trace,
    Truncation,
    __version__,
    approximate_tokens,
    build_profile,
    default_cache_capacity,
    evict_indices,
    fit,
)
from ctxfast._errors import (
    ArgumentTypeError,
    ContextWindowExceededError,
    CtxfastFileNotFoundError,
    Unfittable,
    CounterError,
    CtxfastError,
    InvalidArgumentError,
    TextEncodingError,
    TokenizationError,
    TokenizerFileNotFoundError,
    TokenizerLoadError,
    UnsupportedOperationError,
)

__all__ = [
    "ArgumentTypeError",
    "Budget",
    "CacheInfo",
    "ContextWindowExceededError",
    "CtxfastFileNotFoundError",
    "Eviction",
    "Fit",
    "FitLedger",
    "Policy",
    "PromptLayer",
    "Segment",
    "Trace",
    "Truncation",
    "Unfittable",
    "evict_indices",
    "fit",
    "CounterError",
    "CtxfastError",
    "InvalidArgumentError",
    "TextEncodingError",
    "TokenizationError",
    "Tokenizer",
    "TokenizerFileNotFoundError",
    "TokenizerLoadError",
    "UnsupportedOperationError",
    "__version__",
    "approximate_tokens",
    "build_profile",
    "default_cache_capacity",
]
