"""The exception hierarchy. Every error ctxfast raises is a ``CtxfastError``.

Each class also derives from the builtin that matches its meaning, so existing
``except ValueError`` / ``except TypeError`` handlers keep working. The Rust core raises these
classes by name (``rust/bindings/errors.rs``); that file and this one are the whole mapping.
"""

from __future__ import annotations


class CtxfastError(Exception):
    """Base class of every ctxfast error."""


class InvalidArgumentError(CtxfastError, ValueError):
    """An argument has the right type but an impossible value (negative, NaN, unknown name...)."""


class ArgumentTypeError(CtxfastError, TypeError):
    """An argument has the wrong type."""


class TextEncodingError(CtxfastError, ValueError):
    """Text that is not valid Unicode (a lone surrogate) and so has no token count."""


class TokenizerLoadError(CtxfastError, ValueError):
    """A tokenizer definition (tokenizer.json) could not be parsed."""


class _MissingFile(CtxfastError, FileNotFoundError):
    # `.filename` and `.errno` are set after construction; the message stays the sentence.
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class TokenizerFileNotFoundError(_MissingFile):
    """A tokenizer file does not exist."""


class UnsupportedOperationError(CtxfastError, NotImplementedError):
    """The tokenizer cannot do this (ids from the character estimate or a callable counter)."""


class TokenizationError(CtxfastError, RuntimeError):
    """The tokenizer engine failed on this input."""


class CounterError(CtxfastError, RuntimeError):
    """A user-supplied counting callable raised or returned something that is not a count."""


class CtxfastFileNotFoundError(_MissingFile):
    """A file ctxfast was asked to read (a policy, a payload) does not exist."""


class Unfittable(CtxfastError):
    """The protected set plus the floors cannot fit under the ceiling.

    Raised instead of sending a damaged or empty request. Attributes:

    - ``components``: ``[(label, tokens), ...]`` for every protected component still held
    - ``floor_tokens``: tokens the policy's floors kept on top of the protected set
    - ``total``: the request's size after every rung ran
    - ``ceiling``: the most input tokens allowed (window - reserve)
    - ``shortfall``: ``total - ceiling``
    """

    components: list[tuple[str, int]]
    floor_tokens: int
    total: int
    ceiling: int
    shortfall: int

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.components = []
        self.floor_tokens = 0
        self.total = 0
        self.ceiling = 0
        self.shortfall = 0


#: The name ContextWindow users know it by.
ContextWindowExceededError = Unfittable


class UnknownKeyError(CtxfastError, KeyError):
    """A key the window never admitted (why) or does not hold now (discard, rewrite...)."""

    def __str__(self) -> str:
        # KeyError would quote the message; this one is a sentence.
        return str(self.args[0]) if self.args else ""


class UntaggedRewriteError(CtxfastError, RuntimeError):
    """A rewrite without provenance. An untagged surrogate cannot say what it stands for, so
    drop the span instead (ContextWindow.discard) and let it be re-fetched."""


class BudgetLedgerInconsistency(CtxfastError, RuntimeError):
    """A "compression" that is not smaller than its original and has no external copy."""


__all__ = [
    "ArgumentTypeError",
    "BudgetLedgerInconsistency",
    "UnknownKeyError",
    "UntaggedRewriteError",
    "ContextWindowExceededError",
    "CtxfastFileNotFoundError",
    "Unfittable",
    "CounterError",
    "CtxfastError",
    "InvalidArgumentError",
    "TextEncodingError",
    "TokenizationError",
    "TokenizerFileNotFoundError",
    "TokenizerLoadError",
    "UnsupportedOperationError",
]
