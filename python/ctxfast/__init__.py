"""ctxfast: build an LLM request under a token budget, and evict by a written policy.

The heavy lifting (tokenizing, the per-unit count cache, ranking and the eviction ladder) runs
in the Rust extension ``ctxfast._core``; this package is its typed facade.
"""

from __future__ import annotations

from ctxfast._core import (
    CacheInfo,
    Tokenizer,
    __version__,
    approximate_tokens,
    build_profile,
    default_cache_capacity,
)
from ctxfast._errors import (
    ArgumentTypeError,
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
    "CacheInfo",
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
