# Stubs for the Rust extension; checked against the binary by `python -m mypy.stubtest ctxfast._core`.
from collections.abc import Callable, Iterable
from os import PathLike
from typing import Any, final

import numpy as np
import numpy.typing as npt

__version__: str
build_profile: str
default_cache_capacity: int

@final
class CacheInfo:
    @property
    def hits(self) -> int: ...
    @property
    def misses(self) -> int: ...
    @property
    def entries(self) -> int: ...
    @property
    def capacity(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...

@final
class Tokenizer:
    """An exact, thread-safe token counter with a bounded per-unit count cache."""

    @staticmethod
    def default(*, cache_capacity: int | None = None) -> Tokenizer:
        """The embedded o200k_base encoding. Without cache_capacity, one process-wide cache."""
    @staticmethod
    def from_encoding(name: str, *, cache_capacity: int | None = None) -> Tokenizer:
        """"o200k_base" or "cl100k_base", embedded in the wheel."""
    @staticmethod
    def from_file(path: str | PathLike[str], *, cache_capacity: int | None = None) -> Tokenizer:
        """A Hugging Face tokenizer.json file."""
    @staticmethod
    def from_json(text: str, *, cache_capacity: int | None = None) -> Tokenizer:
        """The text of a Hugging Face tokenizer.json."""
    @staticmethod
    def from_hf(obj: Any, *, cache_capacity: int | None = None) -> Tokenizer:
        """A tokenizers.Tokenizer, serialised into the core once."""
    @staticmethod
    def approximate(
        chars_per_token: float | None = None, *, cache_capacity: int | None = None
    ) -> Tokenizer:
        """ceil(characters / chars_per_token), 4.0 by default. An estimate, for logs only."""
    @staticmethod
    def from_callable(
        func: Callable[[str], int], *, cache_capacity: int | None = None
    ) -> Tokenizer:
        """Any str -> int counter the caller trusts."""
    def count(self, text: str, /, *, cache: bool = True) -> int: ...
    def count_many(
        self, texts: Iterable[str], /, *, cache: bool = True
    ) -> npt.NDArray[np.int64]: ...
    def encode(self, text: str) -> list[int]: ...
    def decode(self, ids: Iterable[int]) -> str: ...
    def truncate(self, text: str, max_tokens: int) -> str: ...
    def cache_info(self) -> CacheInfo: ...
    def clear_cache(self) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def is_exact(self) -> bool: ...
    @property
    def vocab_size(self) -> int | None: ...
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]: ...
    @staticmethod
    def _from_state(state: tuple[Any, ...]) -> Tokenizer: ...

def approximate_tokens(text: str) -> int:
    """Four characters a token."""
