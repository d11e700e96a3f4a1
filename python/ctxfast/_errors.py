"""The exception hierarchy. Every error ctxfast raises is a ``CtxfastError``.

Each class also derives from the builtin that matches its meaning, so existing
``except ValueError`` / ``except TypeError`` handlers keep working. The Rust core raises these
classes by name (``rust/bindings/errors.rs``, one ``import_exception!`` line each); that file and
this one are the whole mapping. Attributes travel as constructor arguments, so the Rust side can
build an error without holding the interpreter.
"""

from __future__ import annotations


class CtxfastError(Exception):
    """Base class of every ctxfast error."""


class InvalidArgumentError(CtxfastError, ValueError):
    """An argument has the right type but an impossible value (negative, NaN, unknown name...)."""


class ArgumentTypeError(CtxfastError, TypeError):
    """An argument has the wrong type."""


class TextEncodingError(CtxfastError, ValueError):
    """Text that is not valid Unicode (a lone surrogate) and so has no token count.

    Attributes: ``argument`` (the argument's name, e.g. ``"texts"``), ``index`` (for a sequence
    argument, which item held the surrogate; ``None`` for a single text) and ``position`` (the
    character offset of the surrogate in that text).
    """

    argument: str | None
    index: int | None
    position: int | None

    def __init__(
        self, message: str = "", argument: str | None = None, index: int | None = None, position: int | None = None
    ) -> None:
        super().__init__(message)
        self.argument = argument
        self.index = index
        self.position = position


class TokenizerLoadError(CtxfastError, ValueError):
    """A tokenizer definition (tokenizer.json) could not be parsed."""


class _MissingFile(CtxfastError, FileNotFoundError):
    # The message stays the sentence; `.filename` and `.errno` are set as on an OSError.
    def __init__(self, message: str = "", filename: str | None = None, errno: int | None = None) -> None:
        super().__init__(message)
        self.filename = filename
        self.errno = errno

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


class StoreError(CtxfastError, RuntimeError):
    """A window store could not load or save (its backend failed, or a stored record is damaged)."""


class StoreConflictError(StoreError):
    """Another writer saved this conversation after it was loaded: load it again, redo the turn.

    ``WindowStore.update`` does exactly that; two replicas serving one conversation never lose a
    turn, one of them redoes it.
    """


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
    - ``trace``: the rendered trace of the attempt (what each rung took before it gave up)
    """

    components: list[tuple[str, int]]
    floor_tokens: int
    total: int
    ceiling: int
    shortfall: int
    trace: str

    def __init__(
        self,
        message: str = "",
        components: list[tuple[str, int]] | None = None,
        floor_tokens: int = 0,
        total: int = 0,
        ceiling: int = 0,
        shortfall: int = 0,
        trace: str = "",
    ) -> None:
        super().__init__(message)
        self.components = list(components or [])
        self.floor_tokens = floor_tokens
        self.total = total
        self.ceiling = ceiling
        self.shortfall = shortfall
        self.trace = trace


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


class TemplateError(CtxfastError, ValueError):
    """A chat template failed to compile or to render; its own ``raise_exception`` (a template
    refusing a conversation, e.g. roles that do not alternate) is one too. The message names the
    line and the template's reason."""


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
    "TemplateError",
]

