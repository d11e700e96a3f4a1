"""The Rust core of ctxfast: token counting, segments, policies, ``fit`` and ``ContextWindow``.

This stub is where the API's full documentation lives: editors read it for hover help and
completion. The compiled classes and functions carry the short reference as their runtime
``__doc__`` (what ``help()`` prints), whose summary is the same as the stub's.
``python -m mypy.stubtest ctxfast._core`` checks the stub against the compiled extension, so
every name and signature here matches the binary.

Every error the core raises is a ``ctxfast.CtxfastError`` subclass from ``ctxfast._errors``,
and each also derives from the builtin that matches its meaning (``ValueError``,
``TypeError``, ...).
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, TypedDict, final, overload

import numpy as np
import numpy.typing as npt

__all__ = [
    "Budget",
    "CacheInfo",
    "CacheProfile",
    "CacheReport",
    "ChatTemplate",
    "ContextWindow",
    "Eviction",
    "Fit",
    "FitLedger",
    "Policy",
    "PromptLayer",
    "Segment",
    "Tokenizer",
    "Trace",
    "Truncation",
    "WindowLedger",
    "Why",
    "_fingerprint",
    "_fit_chat_fast",
    "_fit_records",
    "_fit_template",
    "_framing",
    "_resolve_policy",
    "_reusable_prefix",
    "_resolve_tokenizer",
    "__version__",
    "approximate_tokens",
    "build_profile",
    "default_cache_capacity",
    "encoding_for_model",
    "encoding_name_for_model",
    "evict_indices",
    "fit",
    "fit_columns",
]

__version__: str
"""The package version, e.g. ``"0.1.0"``."""

build_profile: str
"""How the extension was compiled: ``"release"`` or ``"debug"``. Benchmarks need ``"release"``."""

default_cache_capacity: int
"""Entries a tokenizer's count cache holds when no ``cache_capacity`` is given: 65,536 (~3 MB)."""

# Type-checking aliases; they do not exist at run time.
_WhyStatus = Literal["held", "evicted_recoverable", "evicted_dispensable", "rewritten", "truncated"]
_EvictionAction = Literal["drop", "digest"]
_RowAction = Literal["drop", "truncate", "digest"]
#: The names ``Policy.preset`` accepts (``ctxfast.PresetName`` at run time).
_PresetName = Literal["context_window", "default", "troubleshooting", "seven_tier", "ranked", "agent"]
#: The cache profiles ``CacheProfile`` knows by name.
_CacheName = Literal[
    "none", "openai", "gemini", "anthropic", "anthropic-1h", "anthropic-haiku-3", "anthropic-4096",
    "llama.cpp", "llamacpp", "local", "vllm",
]
_Exactness = Literal["exact", "estimate", "calibrated"]
_CutName = Literal["fresh", "kept", "moved"]

class _TraceRow(TypedDict):
    """One row of ``Trace.rows``: a unit a rung removed, shortened or digested.

    A type-checking name only: at run time each row is a plain ``dict``.
    """

    rung: str
    """The name of the rung that acted."""
    label: str
    """The unit's name: its group, else its key, else ``"#<input position>"``; with
    ``fit(..., input_name="messages")`` the input positions it covers, ``"messages[3..6]"``. A
    digest dropped later reads ``"digest of ..."``."""
    action: _RowAction
    """``"drop"``, ``"truncate"`` or ``"digest"``: what the rung did to the unit."""
    removed: int
    """How many tokens the request's total fell by."""
    layer: str
    """The display labels of the layers this row changed (troubleshooting shows
    ``"history"``; a unit spanning two layers ``"conversation+tool_result"``)."""
    layer_after: int
    """Tokens left in those labels' layers after this row: the previous figure minus
    ``removed`` (joins aside)."""
    total_after: int
    """The request's projected total after this row."""
    over_after: int
    """``total_after - ceiling``: above 0 the request is still over, 0 or below it fits."""

@final
class ChatTemplate:
    """A Hugging Face chat template, compiled once, rendered as transformers renders it.

    ChatTemplate(source, *, date=None, special_tokens=None): ``source`` is the Jinja text; ``date``
    (``"YYYY-MM-DD"``) fixes what ``strftime_now`` prints; ``special_tokens`` (``{"bos_token": ...}``) are
    passed to every render.

    Rendered in Rust by MiniJinja, set up as transformers' jinja2 environment is:
    ``trim_blocks`` and ``lstrip_blocks``, loop controls, Python's str/dict/list methods,
    a ``tojson`` that writes what ``json.dumps`` writes (no HTML escaping, keys in order),
    ``raise_exception``, ``strftime_now``, ``[::-1]`` and the ``{% generation %}`` tag.
    A template that fails to compile, or that raises while rendering, is a
    ``TemplateError`` naming the line and the reason.
    """

    def __new__(cls, source: str, *, date: str | None = None, special_tokens: Mapping[str, str] | None = None) -> ChatTemplate:
        """Compiles ``source`` once.

        Raises:
            TemplateError: the template does not compile (the message names the line).
            InvalidArgumentError: ``date`` is not ``YYYY-MM-DD`` (or ``YYYY-MM-DDTHH:MM:SS``).
        """
    @staticmethod
    def from_file(path: str | PathLike[str], *, name: str | None = None, date: str | None = None) -> ChatTemplate:
        """A template from a file: a ``chat_template.jinja``, a ``tokenizer_config.json`` (its
        ``chat_template``, the one named ``name`` when it holds several, and its special tokens), or a
        model folder holding either."""
    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        **kwargs: Any,
    ) -> str:
        """Renders ``messages`` as the server renders them: ``tools``, ``add_generation_prompt``, the
        special tokens and any other keyword (``date_string``, ``enable_thinking``, ...) are passed
        to the template, as transformers' ``apply_chat_template(tokenize=False)`` passes them.

        Raises:
            TemplateError: the template raised (``raise_exception``) or failed to render.
            ArgumentTypeError: a value is not JSON-shaped data (named by its path).
        """
    @property
    def source(self) -> str:
        """The template's Jinja text."""
    @property
    def special_tokens(self) -> dict[str, str]:
        """The special tokens every render receives (``{"bos_token": "<|begin_of_text|>", ...}``)."""
    @property
    def variables(self) -> list[str]:
        """The names the template reads from its context (``messages``, ``tools``, ``bos_token``, ...)."""

@final
class CacheInfo:
    """A snapshot of a tokenizer's count cache, from ``Tokenizer.cache_info()``.

    Two snapshots compare equal when all four fields are equal.
    """

    @property
    def hits(self) -> int:
        """Counts served from the cache."""
    @property
    def misses(self) -> int:
        """Counts the cache did not hold, which the engine computed."""
    @property
    def entries(self) -> int:
        """Texts whose count is held now."""
    @property
    def capacity(self) -> int:
        """The most entries the cache keeps; 0 means caching is off."""
    def __eq__(self, other: object, /) -> bool:
        """True when ``other`` is a ``CacheInfo`` with the same four fields."""

#: How a special-token string in a text counts (``Tokenizer(special_tokens=...)``).
_SpecialTokens = Literal["text", "matched"]
_Engine = Literal["auto", "huggingface"]

@final
class Tokenizer:
    """An exact, thread-safe token counter with a bounded per-unit count cache.

    Build one with a constructor below; share it freely across threads. ``count``,
    ``count_many`` and ``truncate`` work with every kind. ``encode`` and ``decode`` need a
    real vocabulary: they raise ``UnsupportedOperationError`` for ``approximate()`` and
    ``from_callable()`` tokenizers.

    Special-token text in a text (``<|endoftext|>``, a Llama ``<|eot_id|>`` typed by a user)
    counts as plain text by default on every engine (``special_tokens="text"``), like
    tiktoken's ``encode_ordinary`` and mistral-common; ``special_tokens="matched"`` counts each
    as its one control token, as the ``tokenizers`` package does. The embedded encodings' ids
    are identical to tiktoken's, and ``decode`` turns a special id back into its text, as
    tiktoken does.

    A surrogate pair in a ``str`` (``"\\ud83d\\udc4d"`` built by hand) is joined into its
    character, as tiktoken does; a lone surrogate raises ``TextEncodingError``.

    The count cache is keyed by a 128-bit xxh3 hash of each text and holds up to
    ``cache_capacity`` entries (default 65,536, about 3 MB). ``cache_capacity=0`` turns it
    off. A tokenizer pickles as its recipe (encoding name, tokenizer.json text, ratio or
    callable); the cache starts empty after unpickling.
    """

    @staticmethod
    def default(*, cache_capacity: int | None = None, special_tokens: _SpecialTokens | None = None) -> Tokenizer:
        """The embedded ``o200k_base`` encoding: no network, no files.

        Args:
            cache_capacity: Entries for a private count cache. When omitted, every caller
                shares one process-wide cache for this encoding.

        Returns:
            A tokenizer named ``"o200k_base"``.

        Raises:
            InvalidArgumentError: ``cache_capacity`` is negative.
            ArgumentTypeError: ``cache_capacity`` is not an int.
        """
    @staticmethod
    def from_encoding(name: str, *, cache_capacity: int | None = None, special_tokens: _SpecialTokens | None = None) -> Tokenizer:
        """An encoding embedded in the wheel: ``"o200k_base"`` or ``"cl100k_base"``.

        Args:
            name: The encoding's name.
            cache_capacity: Entries for a private count cache. When omitted, the process-wide
                cache for that encoding is shared, as ``default()`` does.

        Returns:
            A tokenizer named after the encoding.

        Raises:
            InvalidArgumentError: Unknown encoding name, or a negative ``cache_capacity``.
            ArgumentTypeError: ``name`` is not a str, or ``cache_capacity`` is not an int.
        """
    @staticmethod
    def for_model(model: str, *, cache_capacity: int | None = None, special_tokens: _SpecialTokens | None = None) -> Tokenizer:
        """The embedded encoding an OpenAI model counts with, by tiktoken's model table.

        o200k_base for gpt-4o, chatgpt-4o, gpt-4.1, gpt-4.5, gpt-5, gpt-oss and the o-series
        (o1, o3, o4); cl100k_base for gpt-4, gpt-3.5-turbo (Azure's gpt-35-turbo),
        text-embedding-3-small/large, text-embedding-ada-002, davinci-002 and babbage-002.
        Dated or suffixed snapshots (``gpt-4o-2024-08-06``, ``gpt-4-32k``) and fine-tunes
        (``ft:gpt-4o-mini:org::id``) follow their family; case, surrounding space and a
        provider prefix (``openai/gpt-4o``) are ignored. Unlike tiktoken, an ``ft:gpt-4.1``
        fine-tune counts with gpt-4.1's o200k_base, and gpt-oss with o200k_base (tiktoken's
        o200k_harmony has the same ordinary tokens).

        Args:
            model: The model name, e.g. ``"gpt-4o-mini"``.
            cache_capacity: As in ``from_encoding``.

        Returns:
            A tokenizer named after the encoding, the same as ``from_encoding``'s.

        Raises:
            InvalidArgumentError: ctxfast knows no embedded encoding for the model (tiktoken
                raises ``KeyError`` there), or ``cache_capacity`` is negative.
            ArgumentTypeError: ``model`` is not a str, or ``cache_capacity`` is not an int.
        """
    @staticmethod
    def from_file(
        path: str | PathLike[str],
        *,
        cache_capacity: int | None = None,
        special_tokens: _SpecialTokens | None = None,
        as_written: bool = False,
        engine: _Engine | None = None,
    ) -> Tokenizer:
        """A Hugging Face ``tokenizer.json`` file (Llama, Qwen, Mistral, ...).

        ``special_tokens="text"`` (the default on every engine) counts a special-token string
        in a text (``<|eot_id|>`` typed by a user) as text; ``"matched"`` as its control token, as
        the ``tokenizers`` package does. A byte-level vocabulary whose merges cannot reach some of
        its tokens (Llama 3's file as often packaged, ``ignore_merges: false``) is loaded with
        ``ignore_merges: true``, as Meta's encoder behaves; ``adjustments`` says so, and
        ``as_written=True`` keeps the file's setting. ``engine="auto"`` counts a byte-level BPE with
        the fast engine when it serves the file and agrees with the tokenizers crate at load
        (``engine`` and ``engine_note`` say which); ``"huggingface"`` always uses the crate.

        The fast engine (GitHub's ``bpe`` crate compiled from the file) serves Llama 3, Qwen2/2.5/3,
        Mistral's tekken, DeepSeek and other byte-level BPE files; it builds its automaton once
        (about 2 s) and keeps it in ``$CTXFAST_CACHE_DIR`` (default ``~/.cache/ctxfast``;
        ``CTXFAST_CACHE_DIR=off`` disables it). SentencePiece and other files stay on the crate.

        Truncation and padding settings in the file are switched off, because a counter must
        see every token. Added tokens that are not special (``special: false``) are always
        matched, as the file defines them.

        Args:
            path: The file's path.
            cache_capacity: Entries in this tokenizer's own count cache (default 65,536).
            special_tokens: ``"text"`` (default) or ``"matched"``.
            as_written: Load the file exactly as written (no ``ignore_merges`` fix).
            engine: ``"auto"`` (default) or ``"huggingface"``.

        Returns:
            A tokenizer named ``"huggingface:<model kind>"``, e.g. ``"huggingface:bpe"``.

        Raises:
            TokenizerFileNotFoundError: The file does not exist (``.filename`` and ``.errno``
                are set).
            TokenizerLoadError: The file cannot be read or is not a valid tokenizer.json.
            ArgumentTypeError: ``path`` is not a str or ``os.PathLike``.
        """
    @staticmethod
    def from_json(
        text: str,
        *,
        cache_capacity: int | None = None,
        special_tokens: _SpecialTokens | None = None,
        as_written: bool = False,
        engine: _Engine | None = None,
    ) -> Tokenizer:
        """A Hugging Face tokenizer from the text of its ``tokenizer.json``.

        Args:
            text: The JSON document.
            cache_capacity: Entries in this tokenizer's own count cache (default 65,536).

        Returns:
            A tokenizer named ``"huggingface:<model kind>"``.

        Raises:
            TokenizerLoadError: ``text`` is not a valid tokenizer.json.
            ArgumentTypeError: ``text`` is not a str.
        """
    @staticmethod
    def from_hf(
        obj: Any,
        *,
        cache_capacity: int | None = None,
        special_tokens: _SpecialTokens | None = None,
        as_written: bool = False,
        engine: _Engine | None = None,
    ) -> Tokenizer:
        """A ``tokenizers.Tokenizer``, serialised into the core once.

        Counting then makes no Python call: the same engine as ``from_json(obj.to_str())``.

        Args:
            obj: A ``tokenizers.Tokenizer`` (anything with a ``to_str()`` method).
            cache_capacity: Entries in this tokenizer's own count cache (default 65,536).

        Raises:
            ArgumentTypeError: ``obj`` has no ``to_str()`` method.
            TokenizerLoadError: Its serialisation cannot be loaded.
        """
    @staticmethod
    def approximate(
        chars_per_token: float | None = None, *, cache_capacity: int | None = None
    ) -> Tokenizer:
        """An estimate, ``ceil(characters / chars_per_token)``: for logs, never for a boundary.

        It has no vocabulary, so ``encode`` and ``decode`` raise and ``is_exact`` is False.
        By default it has no cache: counting characters costs less than hashing them.

        Args:
            chars_per_token: Characters (code points) per token, a finite number > 0;
                4.0 by default.
            cache_capacity: Entries for a count cache; 0 (none) by default.

        Returns:
            A tokenizer named ``"approximate(<ratio>)"``.

        Raises:
            InvalidArgumentError: ``chars_per_token`` is not finite or not > 0.
            ArgumentTypeError: ``chars_per_token`` is not a number.
        """
    @staticmethod
    def from_callable(
        func: Callable[[str], int], *, cache_capacity: int | None = None
    ) -> Tokenizer:
        """Any ``str -> int`` counter the caller trusts, such as a serving stack's own.

        The callable runs under the GIL and its counts go through this tokenizer's cache.
        ``truncate`` binary-searches character prefixes with it, assuming counts grow with
        length. ``encode`` and ``decode`` raise: there are no ids.

        Args:
            func: Called with one text; must return an int >= 0.
            cache_capacity: Entries in this tokenizer's own count cache (default 65,536).

        Returns:
            A tokenizer named ``"callable:<func's qualified name>"``.

        Raises:
            ArgumentTypeError: ``func`` is not callable.
        """
    def count(self, text: str, /, *, cache: bool | None = None) -> int:
        """The number of tokens in ``text``.

        A native engine releases the GIL for texts of 4 KB or more.

        Args:
            text: The text to count.
            cache: True by default: read and fill the count cache. False bypasses it.

        Raises:
            TextEncodingError: ``text`` holds a lone surrogate (the message gives its index);
                a surrogate pair is joined into its character instead.
            ArgumentTypeError: ``text`` is not a str, or ``cache`` is not a bool.
            CounterError: A ``from_callable`` function raised or returned something other
                than an int >= 0.
            TokenizationError: The tokenizer.json engine failed on this input.
        """
    def count_many(
        self, texts: Iterable[str], /, *, cache: bool | None = None
    ) -> npt.NDArray[np.int64]:
        """The count of every text, in order, as a numpy ``int64`` array.

        The GIL is released for the whole batch, and large batches are spread across cores.

        Args:
            texts: Any iterable of str (a single str is refused).
            cache: As in ``count``.

        Raises:
            ArgumentTypeError: ``texts`` is a str or not iterable, or an item is not a str.
            TextEncodingError: An item holds a lone surrogate.
            CounterError: A ``from_callable`` function failed.
        """
    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``, with no special tokens added.

        Raises:
            UnsupportedOperationError: This tokenizer has no vocabulary (``approximate`` or
                ``from_callable``).
            TextEncodingError: ``text`` holds a lone surrogate.
            ArgumentTypeError: ``text`` is not a str.
        """
    def encode_batch(self, texts: Iterable[str], /) -> list[list[int]]:
        """The token ids of every text, in order: tiktoken's ``encode_batch`` as
        ``encode_ordinary_batch`` (no special ids), in one call into the core.

        The GIL is released for the batch, and large batches are spread across cores, as in
        ``count_many``.

        Args:
            texts: Any iterable of str (a single str is refused).

        Raises:
            UnsupportedOperationError: This tokenizer has no vocabulary.
            ArgumentTypeError: ``texts`` is a str or not iterable, or an item is not a str.
            TextEncodingError: An item holds a lone surrogate (``index`` says which).
        """
    def decode(self, ids: Iterable[int]) -> str:
        """The text of a sequence of token ids.

        With the OpenAI encodings, bytes that do not form valid UTF-8 become U+FFFD and a
        special-token id gives its text (``"<|endoftext|>"``), as in tiktoken.

        Raises:
            InvalidArgumentError: An id is negative, not below 2**32, or neither a token nor
                a special token of this vocabulary (the message names it and its position).
            ArgumentTypeError: ``ids`` is a str or not iterable, or an item is not an int.
            UnsupportedOperationError: This tokenizer has no vocabulary.
        """
    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that counts at most ``max_tokens`` tokens.

        The cut falls on a token boundary and never inside a character. A ``from_callable``
        tokenizer knows no boundaries, so it returns the longest character prefix the
        callable counts within the limit.

        Args:
            text: The text to shorten.
            max_tokens: An int >= 0. Values beyond any text's size are allowed.

        Returns:
            The prefix; ``text`` itself (the same object) when it already fits.

        Raises:
            InvalidArgumentError: ``max_tokens`` is negative.
            ArgumentTypeError: ``text`` is not a str or ``max_tokens`` is not an int.
            TextEncodingError: ``text`` holds a lone surrogate.
            CounterError: A ``from_callable`` function failed.
        """
    def cache_info(self) -> CacheInfo:
        """Hits, misses, entries and capacity of this tokenizer's count cache.

        A shared cache (``default()`` or ``from_encoding(name)`` without a capacity) reports
        the totals of every user in the process.
        """
    def clear_cache(self) -> None:
        """Empties the count cache (a shared cache is emptied for every user) and, for an embedded
        encoding, the calling thread's piece cache."""
    @property
    def name(self) -> str:
        """What counts: ``"o200k_base"``, ``"cl100k_base"``, ``"huggingface:bpe"``,
        ``"approximate(4)"`` or ``"callable:<name>"``."""
    @property
    def is_exact(self) -> bool:
        """Whether counts are real tokens: False only for ``approximate()``.

        A ``from_callable`` counter is trusted and reports True.
        """
    @property
    def vocab_size(self) -> int | None:
        """The vocabulary's size; None for ``approximate()`` and ``from_callable()``.

        For the OpenAI encodings it counts ordinary tokens only (cl100k_base 100,256);
        ``n_vocab`` includes the special tokens."""
    @property
    def n_vocab(self) -> int | None:
        """tiktoken's ``n_vocab``: ids run ``0..n_vocab``, special tokens included
        (cl100k_base 100,277, o200k_base 200,019). For a tokenizer.json it equals
        ``vocab_size``; None for ``approximate()`` and ``from_callable()``."""
    @property
    def max_token_value(self) -> int | None:
        """tiktoken's ``max_token_value``: the highest id, ``n_vocab - 1``; None without a
        vocabulary."""
    @property
    def eot_token(self) -> int | None:
        """tiktoken's ``eot_token``, the id of ``<|endoftext|>`` (cl100k_base 100257,
        o200k_base 199999); None for tokenizers other than the embedded encodings."""
    @property
    def special_tokens(self) -> _SpecialTokens:
        """How a special-token string in a text counts: ``"text"`` (the default) or ``"matched"``."""
    @property
    def adjustments(self) -> list[str]:
        """What loading changed in the vocabulary's file, in words (empty: nothing)."""
    @property
    def engine(self) -> str:
        """The engine that counts: ``"bpe"`` (fast), ``"huggingface"``, ``"o200k_base"``, ``"approximate"``..."""
    @property
    def engine_note(self) -> str:
        """Why that engine counts, in words (for a tokenizer.json, why the fast engine declined)."""
    def special_tokens_in(self, text: str) -> list[str]:
        """The vocabulary's control-token strings found in ``text``, each once, in order of first
        appearance: ``<|eot_id|>`` in a user message is read as an end of turn by a server that
        renders it into a prompt."""
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles as the recipe, not the tables; the cache starts empty on the other side."""
    @staticmethod
    def _from_state(state: tuple[Any, ...]) -> Tokenizer:
        """Internal: rebuilds a tokenizer from its ``__reduce__`` recipe."""

def encoding_for_model(model: str, *, cache_capacity: int | None = None) -> Tokenizer:
    """tiktoken's ``encoding_for_model``: the model's encoding, as a ``Tokenizer``.

    The same as ``Tokenizer.for_model(model)``, whose table and differences from tiktoken's
    it shares.

    Raises:
        InvalidArgumentError: ctxfast knows no embedded encoding for the model.
        ArgumentTypeError: ``model`` is not a str, or ``cache_capacity`` is not an int.
    """

def encoding_name_for_model(model: str) -> str:
    """tiktoken's ``encoding_name_for_model``: ``"o200k_base"`` or ``"cl100k_base"``.

    By the table of ``Tokenizer.for_model``.

    Raises:
        InvalidArgumentError: ctxfast knows no embedded encoding for the model.
        ArgumentTypeError: ``model`` is not a str.
    """

def approximate_tokens(text: str) -> int:
    """An estimate at four characters a token: ``ceil(code points / 4)``.

    For log lines only; use a ``Tokenizer`` for anything that must fit.

    Raises:
        TextEncodingError: ``text`` holds a lone surrogate.
        ArgumentTypeError: ``text`` is not a str.
    """

@final
class PromptLayer:
    """Which part of a request a segment belongs to.

    Policies draw from layers. SYSTEM, TOOLS, PINNED and CURRENT_TURN are protected in every
    policy: no rung may draw from them. Wherever a layer is expected, its name is accepted too
    (case-insensitive: ``"retrieved"``, ``"RETRIEVED"``). ``int(layer)`` gives its index
    (0 to 7, in the order below).
    """

    SYSTEM: PromptLayer
    """The system prompt. Protected."""
    TOOLS: PromptLayer
    """Tool schemas. Protected."""
    PINNED: PromptLayer
    """Pinned material such as operator constraints. Protected."""
    CURRENT_TURN: PromptLayer
    """The current user turn, the task at hand. Protected. In a ``ContextWindow``, admitting a
    new current turn turns the previous one into CONVERSATION."""
    CONVERSATION: PromptLayer
    """Earlier turns of the conversation. A unit that holds a CONVERSATION segment counts as an
    exchange for ``keep_first`` / ``keep_last`` floors. The default layer of a ``Segment``."""
    TOOL_RESULT: PromptLayer
    """The output of a tool call. ``digest`` rungs act only on units that hold one."""
    RETRIEVED: PromptLayer
    """Retrieved material, such as search or RAG chunks; ranked by ``score``."""
    SUMMARY: PromptLayer
    """Summaries: ``level`` 0 is the rolling summary; a level-2 summary ``covers`` level-1 ones."""
    @staticmethod
    def from_name(name: str) -> PromptLayer:
        """A layer from its name, case-insensitive (``"retrieved"``, ``"RETRIEVED"``).

        Raises:
            InvalidArgumentError: No layer has that name (the message lists them).
            ArgumentTypeError: ``name`` is not a str.
        """
    @property
    def label(self) -> str:
        """The lowercase name used in policies and traces, e.g. ``"current_turn"``."""
    @property
    def protected(self) -> bool:
        """Whether this layer is one of the four that no rung may draw from."""
    def __eq__(self, other: object, /) -> bool:
        """Equal to the same layer, or to its index as an int (``PromptLayer.SYSTEM == 0``)."""
    def __hash__(self) -> int:
        """Layers are hashable: usable as dict keys (``Budget.caps``) and in sets."""
    def __int__(self) -> int:
        """The layer's index, 0 (SYSTEM) to 7 (SUMMARY)."""

@final
class Segment:
    """One piece of a request, immutable once built; a missing ``layer`` is CONVERSATION.

    Its token count is computed once and remembered for the last tokenizer that counted it,
    so fitting the same segments again counts nothing.
    """

    def __new__(
        cls,
        text: str,
        layer: PromptLayer | str | None = None,
        key: str | int | None = None,
        score: float | None = None,
        *,
        tokens: int | None = None,
        recoverable: bool | None = None,
        stale: bool | None = None,
        group: str | int | None = None,
        level: int | None = None,
        covers: Iterable[str] | None = None,
        meta: Any = None,
    ) -> Segment:
        """Builds a segment, checking every field once.

        Args:
            text: What is sent.
            layer: A ``PromptLayer`` or its name; CONVERSATION by default.
            key: An identity (str, or an int kept as its decimal text). ``ContextWindow``
                refuses a second segment with a key it already holds, and ``why(key)`` answers
                for it. Traces use it as the label when there is no group.
            score: Relevance in [0, 1], 0.0 by default. ``lowest_score`` orders take low
                scores first; a group's score is its highest member's.
            tokens: The segment's whole cost, given by the caller (e.g. with message framing).
                It is used as is and never recounted.
            recoverable: True when an authoritative copy exists outside the request, so it can
                be fetched again. The ``rank`` order takes recoverable units first. False by
                default.
            stale: True when the content is out of date; ``rank`` takes stale units early and
                ``filter = "stale"`` rungs take only these. False by default.
            group: Segments sharing a group form one eviction unit (an exchange, a tool call
                with its result) that never leaves by halves. Str, or an int kept as text.
            level: The summary level, read by ``filter = "level:N"`` rungs
                (0 = the rolling summary).
            covers: Keys of level-1 summaries this level-2 summary covers
                (``filter = "covered"``).
            meta: Any object, returned unchanged with the segment. A mapping with ``"tool"``,
                ``"arguments"`` and ``"step"`` keys describes a tool call for digests.

        Raises:
            ArgumentTypeError: A field has the wrong type, e.g. a non-bool ``recoverable``, a
                bool ``score``, or a single str for ``covers``.
            InvalidArgumentError: ``score`` is outside [0, 1], ``tokens`` is negative, or
                ``layer`` names no layer.
            TextEncodingError: ``text`` holds a lone surrogate.
        """
    @property
    def text(self) -> str:
        """The text that is sent."""
    @property
    def layer(self) -> PromptLayer:
        """The layer this segment belongs to."""
    @property
    def key(self) -> str | None:
        """The identity key (an int key comes back as its decimal text), or None."""
    @property
    def score(self) -> float:
        """Relevance in [0, 1]; 0.0 unless given."""
    @property
    def tokens(self) -> int | None:
        """The count the caller gave (``tokens=``), or None; ``count()`` gives the counted one."""
    @property
    def recoverable(self) -> bool:
        """Whether an authoritative copy exists outside the request."""
    @property
    def stale(self) -> bool:
        """Whether the content is marked out of date."""
    @property
    def group(self) -> str | None:
        """The eviction unit this segment belongs to, or None (a unit of its own)."""
    @property
    def level(self) -> int | None:
        """The summary level, or None."""
    @property
    def covers(self) -> tuple[str, ...]:
        """Keys of the level-1 summaries this summary covers; empty unless given."""
    @property
    def meta(self) -> Any:
        """The caller's object, unchanged, or None.

        Segments ctxfast makes carry their own: a digest record from ``fit`` has
        ``{"digest_of": [member keys], "rung": name}``, and a window surrogate has
        ``{"lossy": True, "source_key": key, "provenance": who}``.
        """
    def count(self, tokenizer: Tokenizer | Callable[[str], int] | None = None) -> int:
        """This segment's token count under ``tokenizer``, computed once.

        A caller-given ``tokens=`` is returned as is.

        Args:
            tokenizer: A ``Tokenizer``, a ``str -> int`` callable, or None for the embedded
                o200k_base encoding.

        Raises:
            ArgumentTypeError: ``tokenizer`` is neither a Tokenizer nor callable.
            CounterError: A counting callable failed.
        """
    def replace(self, **changes: Any) -> Segment:
        """A copy with some fields changed, e.g. ``seg.replace(stale=True)``.

        Accepts ``text`` and every constructor field; the new values are checked as in the
        constructor.

        Raises:
            ArgumentTypeError: A name that is not a field, or a value of the wrong type.
            InvalidArgumentError: An impossible value.
        """
    def __eq__(self, other: object, /) -> bool:
        """True when ``other`` is a Segment with equal fields and an equal ``meta``."""
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles every field, ``meta`` included (it must be picklable)."""
    @staticmethod
    def _restore(
        text: str, layer: PromptLayer, key: str | None, score: float, kwargs: dict[str, Any]
    ) -> Segment:
        """Internal: the unpickling constructor."""

@final
class Budget:
    """A token budget: the whole window, what is reserved for the answer, optional caps.

    Caps are reported, never enforced, unless a rung says ``until = "cap"``: ``fit`` lists a
    layer that starts over its cap in ``Fit.cap_overruns`` and on a ``cap`` line of the trace.
    """

    # Three forms of one signature, so a caps dict built beforehand type-checks whether its keys
    # are layers, layer names or both (a Mapping's key type is invariant, so
    # ``dict[str, int]`` is not a ``Mapping[PromptLayer | str, int]``).
    @overload
    def __new__(
        cls,
        window: int,
        reserve: int | None = None,
        caps: Mapping[PromptLayer | str, int] | None = None,
    ) -> Budget:
        """Builds a budget; the request may carry ``window - reserve`` input tokens.

        Args:
            window: The model's context window in tokens, > 0.
            reserve: Tokens kept free for the answer, 0 by default; must be < ``window``.
            caps: Per-layer sizes, keyed by ``PromptLayer`` or layer name (a
                ``dict[PromptLayer, int]``, a ``dict[str, int]`` or a mix). ``fit`` reports a
                layer that starts over its cap (``Fit.cap_overruns`` and a ``cap`` line in the
                trace) and does not enforce it, unless the policy has a rung with
                ``until = "cap"``, which trims its layers down to their caps.

        Raises:
            InvalidArgumentError: ``window`` is 0, ``reserve >= window``, a count is negative,
                a count is a float, or a caps key names no layer.
            ArgumentTypeError: A count is not an int (bools are refused), or ``caps`` is not a
                mapping.
        """
    @overload
    def __new__(
        cls, window: int, reserve: int | None = None, caps: Mapping[PromptLayer, int] | None = None
    ) -> Budget:
        """As above, with ``caps`` keyed by ``PromptLayer`` (e.g. a ``dict[PromptLayer, int]``)."""
    @overload
    def __new__(
        cls, window: int, reserve: int | None = None, caps: Mapping[str, int] | None = None
    ) -> Budget:
        """As above, with ``caps`` keyed by layer name (e.g. a ``dict[str, int]``)."""
    @property
    def window(self) -> int:
        """The whole context window, in tokens."""
    @property
    def reserve(self) -> int:
        """Tokens kept free for the answer."""
    @property
    def ceiling(self) -> int:
        """``window - reserve``: the most input tokens a request may carry."""
    @property
    def caps(self) -> dict[PromptLayer, int]:
        """The per-layer caps that were given (a new dict each call)."""
    def __eq__(self, other: object, /) -> bool:
        """Equal window, reserve and caps."""
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles as ``Budget(window, reserve, caps)``."""

@final
class Policy:
    """A reviewable order of sacrifice: an ordered list of rungs plus the protected set.

    ``fit`` runs the rungs in order while the request is over its ceiling (a rung with
    ``until = "cap"`` runs while its layer is over its ``Budget`` cap). Each rung draws from
    some layers, in an order (``oldest``, ``newest``, ``lowest_score``, ``largest`` or
    ``rank``), with an action (``drop``, ``truncate`` or ``digest``) and a floor it never goes
    below. Ties are broken by input position, so the same input always gives the same output.
    Build one from a preset, a dict or TOML; ``describe()`` prints it as a table.
    """

    @staticmethod
    def context_window() -> Policy:
        """The default (of ``fit`` and ``ContextWindow``): drop conversation, with its tool
        results and summaries, oldest first; then retrieved, lowest score first."""
    @staticmethod
    def troubleshooting() -> Policy:
        """Drop whole exchanges oldest first, keeping the first one and the last three; then
        retrieved chunks lowest score first, keeping the top four; then truncate the
        lowest-scored chunk body, never below 128 tokens. Traces label the conversation layers
        ``"history"`` and retrieved ``"retrieval"``."""
    @staticmethod
    def seven_tier(top_k: int | None = None) -> Policy:
        """Stale tool results oldest first; retrieved below the top ``top_k`` (3 by default),
        lowest score first; level-1 summaries covered by a held level-2 summary; the rolling
        summary (level 0); then recent conversation turns (with their tool results), oldest
        first. A tool result that is not stale and belongs to no turn is output the model has
        not used yet: it goes last, on its own rung (``unconsumed_tool_results``).

        Raises:
            InvalidArgumentError: ``top_k`` is negative.
            ArgumentTypeError: ``top_k`` is not an int.
        """
    @staticmethod
    def ranked(keep_last: int | None = None) -> Policy:
        """One rung over every unprotected layer in ``rank`` order: recoverable first, stale
        first, lowest score first, largest first. The last ``keep_last`` exchanges (2 by
        default) are kept.

        Raises:
            InvalidArgumentError: ``keep_last`` is negative.
            ArgumentTypeError: ``keep_last`` is not an int.
        """
    @staticmethod
    def agent(keep_last: int | None = None) -> Policy:
        """The adapters' default, for agent transcripts: old tool exchanges are digested, then
        dropped, oldest first, keeping the last ``keep_last`` exchanges (2 by default).

        Old tool exchanges (or tool rounds of an agent loop) are replaced by their digests,
        oldest first, then dropped, oldest first; both rungs keep the last ``keep_last``
        exchanges verbatim. Only then are those last exchanges digested, then dropped, and
        then retrieved material goes, lowest score first. A digest summarises tool arguments
        and results to a bounded length. A tool call never loses its result: the exchange
        goes whole, or is replaced whole by its record.

        Raises:
            InvalidArgumentError: ``keep_last`` is negative.
            ArgumentTypeError: ``keep_last`` is not an int.
        """
    @staticmethod
    def preset(name: _PresetName) -> Policy:
        """A preset by name: ``"context_window"`` (alias ``"default"``), ``"troubleshooting"``,
        ``"seven_tier"``, ``"ranked"`` or ``"agent"``, with its default arguments.

        The parameter is typed as a ``Literal`` of those names (``ctxfast.PresetName``), so a
        type checker catches a misspelt preset. A name read from configuration is checked at
        run time; ``fit`` and ``ContextWindow`` also take a preset name as any ``str``.

        Raises:
            InvalidArgumentError: No preset has that name (the message lists them).
            ArgumentTypeError: ``name`` is not a str.
        """
    @staticmethod
    def from_dict(d: dict[str, Any]) -> Policy:
        """A policy from its dict form, the same fields as a TOML policy file.

        Top-level fields:

        - ``rungs`` (required): a list of rung tables, tried in order.
        - ``name``: shown by ``describe()`` and ``Policy.name``.
        - ``protected``: layer names no rung may draw from. It can only add layers: it must
          include system, tools, pinned and current_turn, which is also the default.
        - ``labels``: ``{layer: display label}`` for traces; layers sharing a label show as one.

        Rung fields:

        - ``name``, ``layers`` (a layer name or a list) and ``order`` (``oldest``, ``newest``,
          ``lowest_score``, ``largest`` or ``rank``) are required.
        - ``action``: ``drop`` (the default), ``truncate`` or ``digest``. A digest replaces a
          unit holding a TOOL_RESULT with a short record, and only when that is smaller.
        - ``filter``: the rung takes only units that are ``stale``, ``recoverable``,
          ``covered`` (level-1 summaries a held level-2 summary covers) or at summary level N
          (``"level:N"`` or ``{"level": N}``).
        - ``until``: ``"fits"`` (the default) runs the rung only while the request is over its
          ceiling. ``"cap"`` runs it, even when the request fits, only while the layer it
          draws from is over its ``Budget`` cap: the way to enforce caps.
        - ``floor``: ``{keep_first, keep_last, keep_top, min_tokens}``. ``keep_first`` and
          ``keep_last`` count exchanges, ``keep_top`` keeps the highest scores, and
          ``min_tokens`` stops before the rung's layers fall under that size.
        - ``min_tokens``: for truncate rungs only; a body is never cut below it (128 by
          default), nor a non-empty body to nothing.
        - ``until``: ``"fits"`` (the default) takes while the request is over its ceiling;
          ``"cap"`` takes while a layer the rung draws from is over its ``Budget`` cap, and
          runs even when the request already fits.

        ``PromptLayer`` values are accepted wherever a layer name is. ``Policy.from_dict(
        p.to_dict()) == p``.

        Raises:
            InvalidArgumentError: A missing or unknown field, an unknown value, or a rung
                that draws from a protected layer. The message names the field, e.g.
                ``policy rungs[1].order``.
            ArgumentTypeError: ``d`` is not a dict, or holds a value of an unsupported type.
        """
    @staticmethod
    def from_toml(path: str | PathLike[str]) -> Policy:
        """A policy from a TOML file, with the same fields as ``from_dict``.

        Raises:
            CtxfastFileNotFoundError: The file does not exist.
            InvalidArgumentError: The file cannot be read, is not valid TOML, or is not a
                valid policy. The message names the path.
            ArgumentTypeError: ``path`` is not a str or ``os.PathLike``.
        """
    @staticmethod
    def from_toml_str(text: str) -> Policy:
        """A policy from TOML text, with the same fields as ``from_dict``.

        Raises:
            InvalidArgumentError: The text is not valid TOML or not a valid policy.
            ArgumentTypeError: ``text`` is not a str.
        """
    def to_dict(self) -> dict[str, Any]:
        """The dict form: ``name`` (when set), ``protected``, ``labels`` (only the ones that
        differ from the layer names) and ``rungs``. ``from_dict`` reads it back equal."""
    def describe(self) -> str:
        """The documented order, first to go … never, within 80 columns.

        Each rung gets a numbered line with its name, then one line each for the layers it
        draws from, its order, its action, its floor and (for a cap rung) what it enforces.
        The last line lists the protected layers. ``str(policy)`` gives the same text.
        """
    @property
    def name(self) -> str | None:
        """The preset's name or the ``name`` field; None for an unnamed custom policy."""
    @property
    def rung_names(self) -> list[str]:
        """The rungs' names, in the order they run."""
    @property
    def protected(self) -> frozenset[PromptLayer]:
        """The layers no rung of this policy may draw from."""
    def __eq__(self, other: object, /) -> bool:
        """Same rungs, protected set, labels and name."""
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles as ``Policy.from_dict(self.to_dict())``."""

@final
class Eviction:
    """A segment that left the request in a ``fit``, from ``Fit.evicted``."""

    @property
    def segment(self) -> Segment:
        """The segment exactly as it was given: nothing is lost.

        When a later rung drops a digest record made in the same fit, this is the record.
        """
    @property
    def rung(self) -> str:
        """The name of the rung that took it."""
    @property
    def rung_index(self) -> int:
        """The rung's position in ``Policy.rung_names``, from 0."""
    @property
    def tokens(self) -> int:
        """Its token count when it left (after any truncation)."""
    @property
    def action(self) -> _EvictionAction:
        """``"drop"``, or ``"digest"`` when it was folded into a digest record that is sent
        in its place."""

@final
class Truncation:
    """A body a ``truncate`` rung shortened and that is still sent, from ``Fit.truncated``."""

    @property
    def original(self) -> Segment:
        """The segment as it was given."""
    @property
    def segment(self) -> Segment:
        """The shortened segment, as sent (it is also in ``Fit.kept``): the original's fields
        and ``meta`` with the new text."""
    @property
    def rung(self) -> str:
        """The name of the rung that shortened it."""
    @property
    def tokens_before(self) -> int:
        """Its token count before the rung shortened it."""
    @property
    def tokens_after(self) -> int:
        """Its token count as sent."""

@final
class Trace:
    """The eviction trace of a ``fit``: what a reviewer reads to see why a request looks the
    way it does. ``str(trace)`` renders it, the same text as ``Fit.explain()``."""

    @property
    def rows(self) -> list[_TraceRow]:
        """One dict per removal, rung by rung in the order the rungs ran.

        A row covers one unit that was dropped, truncated or digested. Keys: ``rung``,
        ``label``, ``action``, ``removed``, ``layer``, ``layer_after``, ``total_after`` and
        ``over_after``.
        """
    @property
    def start(self) -> list[tuple[str, int]]:
        """``[(label, tokens), ...]``: each layer's size before any rung ran, in a fixed order
        (system, tools, pinned, retrieved, summary, conversation, tool_result, current_turn).
        Layers that share a display label are summed under it."""

@final
class FitLedger:
    """Where a fit's removed tokens went, for metrics."""

    @property
    def evicted_recoverable(self) -> int:
        """Tokens of dropped segments that were ``recoverable``."""
    @property
    def evicted_dispensable(self) -> int:
        """Tokens of dropped segments that were not ``recoverable`` (dropped digest records
        count here)."""
    @property
    def truncated(self) -> int:
        """Tokens that truncation cut from bodies."""
    @property
    def digested(self) -> int:
        """Tokens the digests saved: their exchanges' tokens less the records' own."""
    @property
    def rung_firings(self) -> dict[str, int]:
        """Rows (units acted on) per rung name, for the rungs that fired."""
    @property
    def removed(self) -> int:
        """Every token taken out of the request, whichever way: the sum of the four above."""

@final
class CacheProfile:
    """A prompt cache: what it reuses, writes and charges, with prices per uncached input token.

    The presets and their sources are in the README's "Prompt caching" section: ``"openai"``
    (automatic, from 1,024 tokens in 128-token steps, reads at 0.1), ``"gemini"`` (implicit, from
    1,024 tokens, reads at 0.25), ``"anthropic"`` (``cache_control`` breakpoints, 1,024-token
    minimum, reads 0.1, five-minute writes 1.25), ``"anthropic-1h"`` (writes 2.0),
    ``"anthropic-haiku-3"`` (2,048 minimum), ``"anthropic-4096"`` (Opus 4.5, Haiku 4.5),
    ``"llama.cpp"`` (the server keeps the previous request's KV cache, token by token),
    ``"vllm"`` (16-token blocks) and ``"none"``.
    """

    def __new__(
        cls,
        name: _CacheName | str = "openai",
        *,
        min_prefix: int | None = None,
        increment: int | None = None,
        read_price: float | None = None,
        write_price: float | None = None,
        low_watermark: float | None = None,
        lookahead_turns: int | None = None,
    ) -> CacheProfile:
        """A preset by name, with any field overridden.

        Args:
            name: The preset.
            min_prefix: The shortest prefix the cache holds, in tokens.
            increment: A cached prefix is a whole number of these beyond ``min_prefix``.
            read_price: A cached token read, per uncached token, in [0, 100].
            write_price: A token written to the cache, per uncached token, in [0, 100].
            low_watermark: When the cut must move, the share of the ceiling it moves down to
                at least, in (0, 1]; 0.7 by default.
            lookahead_turns: When the cut must move, room is made for this many more turns
                like the last one; 8 by default.

        Raises:
            InvalidArgumentError: The name is not a preset, or a value is out of range.
            ArgumentTypeError: A value has the wrong type.
        """
    @property
    def name(self) -> str:
        """The preset it started from."""
    @property
    def style(self) -> Literal["none", "automatic", "breakpoints", "local"]:
        """How the cache decides what it holds."""
    @property
    def min_prefix(self) -> int:
        """The shortest prefix the cache holds."""
    @property
    def increment(self) -> int:
        """The step a cached prefix grows in."""
    @property
    def read_price(self) -> float:
        """A cached token read, per uncached token."""
    @property
    def write_price(self) -> float:
        """A token written to the cache, per uncached token (1.0: no surcharge)."""
    @property
    def low_watermark(self) -> float:
        """When the cut must move, the share of the ceiling it moves down to at least."""
    @property
    def lookahead_turns(self) -> int:
        """When the cut must move, room is made for this many more turns like the last one."""
    def __eq__(self, other: object, /) -> bool:
        """Equal in every field."""
    def __hash__(self) -> int:
        """Hashes by every field."""

@final
class CacheReport:
    """What the provider's prompt cache is predicted to do with a fitted request (``Fit.cache``).

    ``str(report)`` is the trace's ``cache`` line.
    """

    @property
    def profile(self) -> str:
        """The profile's name."""
    @property
    def previous(self) -> bool:
        """Whether the fit was given the previous request (``previous=``)."""
    @property
    def unchanged_prefix(self) -> int:
        """Leading tokens the same as the previous request's (0 without one). For a chat
        template fit it is measured on the rendered prompts' token ids."""
    @property
    def read(self) -> int:
        """Tokens predicted to be read from the cache."""
    @property
    def write(self) -> int:
        """Tokens predicted to be written to it (breakpoint caches; 0 where writes are free)."""
    @property
    def uncached(self) -> int:
        """Tokens prefilled at the full price."""
    @property
    def cost(self) -> float:
        """The request's input price in uncached-token units:
        ``uncached + read * read_price + write * write_price``."""
    @property
    def cut(self) -> _CutName:
        """``"fresh"`` (no previous request: a plain fit), ``"kept"`` (the previous cut still
        fits; what it sent starts this request) or ``"moved"``."""
    @property
    def moved(self) -> bool:
        """Whether the cut moved since the previous request."""
    @property
    def target(self) -> int | None:
        """What a moved cut evicted down to; None when it evicted exactly to fit, or did not
        move."""

@final
class Fit:
    """The result of ``fit``: what to send, what left, and the trace that explains it."""

    @property
    def kept(self) -> list[Segment]:
        """What to send, in input order.

        These are the caller's own Segment objects where unchanged. A shortened body appears
        as a new segment. A digest record appears where its exchange began.
        """
    @property
    def evicted(self) -> list[Eviction]:
        """What left, one entry per segment, in removal order (the trace's order)."""
    @property
    def truncated(self) -> list[Truncation]:
        """Bodies that were shortened and are still sent. A body that is truncated and then
        dropped by a later rung is an eviction, not a truncation."""
    @property
    def total(self) -> int:
        """The authoritative token count of what is sent.

        It is the sum of the kept segments' counts. With ``separator=``, it is the exact
        count of the joined text.
        """
    @property
    def ceiling(self) -> int:
        """``window - reserve``: the most input tokens allowed."""
    @property
    def spare(self) -> int:
        """``ceiling - total``: room left for input."""
    @property
    def over_by(self) -> int:
        """How far over the ceiling the request was before any rung ran; 0 if it fitted."""
    @property
    def cap_overruns(self) -> dict[PromptLayer, int]:
        """``{layer: tokens over its cap}`` for each capped layer that started over its
        ``Budget`` cap. Caps are reported, never enforced, unless a rung says
        ``until = "cap"``."""
    @property
    def trace(self) -> Trace:
        """The eviction trace; ``explain()`` renders it."""
    @property
    def rungs_fired(self) -> list[str]:
        """Names of the rungs that acted, in the order they first did."""
    @property
    def count_calls(self) -> int:
        """How many authoritative counts the fit made, however many rungs fired.

        This is 1, plus one each time a joined count (``separator=``) came out over the
        ceiling and another rung had to run. For ``chat.fit_messages`` it is the renders
        counted: one (two with tool schemas, with and without them) to price the request, and
        the same again for each check of what a fit kept.
        """
    @property
    def prompt(self) -> str | None:
        """The prompt as the chat template rendered it, whose count is ``total``
        (``chat.fit_messages``); None for the other fits."""
    @property
    def cache(self) -> CacheReport:
        """What the provider's prompt cache is predicted to do with this request, against the
        previous one when ``previous=`` was given."""
    @property
    def exactness(self) -> _Exactness:
        """How ``total`` was counted: ``"exact"`` (the provider's tokenizer and framing),
        ``"estimate"`` (Anthropic, Gemini, ``Tokenizer.approximate``) or ``"calibrated"`` (an
        estimate corrected by a ``Calibration`` learnt from the provider's reported usage)."""
    @property
    def provider(self) -> str | None:
        """The adapter that made the fit (``"openai"``, ``"openai-responses"``,
        ``"anthropic"``, ``"gemini"``, ``"chat"``); None for ``ctxfast.fit`` and
        ``ContextWindow``."""
    def calibrate(self, usage: Any, calibration: Any = None) -> Any:
        """Compares this fit with the usage the provider reported for the request it sent.

        Args:
            usage: The provider's usage (``prompt_tokens``, ``input_tokens`` and its cache
                fields, ``promptTokenCount``), as a dict, an SDK object or the whole response.
            calibration: A ``ctxfast.Calibration`` to teach; None to only compare.

        Returns:
            A ``ctxfast.CalibrationResult``: the difference, and whether the server silently
            truncated the request.
        """
    @property
    def ledger(self) -> FitLedger:
        """Where the removed tokens went."""
    def texts(self) -> list[str]:
        """The kept texts, in order."""
    def explain(self) -> str:
        """The trace, rendered for a reviewer.

        It shows the ceiling, each layer's size at the start and any cap overruns. Then each
        rung that fired follows, one row per unit with the totals after it (a row takes two
        lines when one would pass 80 columns), and "floor reached" under a rung a floor
        stopped. The last line is a summary: tokens sent, units dropped, digested or
        truncated, "floor not reached" when no floor was needed, and the number of counts.
        """

def fit(
    segments: Iterable[Segment],
    budget: Budget,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    separator: str | None = None,
    *,
    framing: int | None = None,
    input_name: str | None = None,
    previous: Fit | None = None,
    cache: CacheProfile | _CacheName | str | None = None,
) -> Fit:
    """Fits ``segments`` under ``budget`` by ``policy``, or raises ``Unfittable``.

    The segments are counted once, in one batch (counts they remember are reused). The rungs
    then run in order against projected totals while the request is over the ceiling, and
    nothing is re-counted along the way. At the end one authoritative count is made of what
    is sent (see ``Fit.count_calls``). A rung stops at its floor, and protected layers are
    never touched. Input order is the age order, and ties are broken by input position, so
    the same input always gives the same output.

    Args:
        segments: The request, in order: a non-empty iterable of ``Segment``.
        budget: The window, reserve and caps.
        policy: A ``Policy`` or a preset name; ``Policy.context_window()`` by default.
        tokenizer: A ``Tokenizer``, a ``str -> int`` callable, or None for the embedded
            o200k_base encoding. A plain callable is wrapped once and reused, so its counts
            stay cached across calls. ``tok.count`` of a ``Tokenizer`` counts natively.
        separator: Set it when the payload is sent as one text, the kept texts joined by
            ``separator``. The separator's tokens then count at each join, and the total is
            the exact count of the joined text. For the embedded encodings only the text
            around each join is re-tokenized. Other tokenizers count the joined text whole.
        framing: What each segment the ladder creates (a digest record) costs beyond its
            text, e.g. a chat message's framing; 0 by default. Adapters set it so the
            projection stays exact.
        input_name: What the caller's input is called (the adapters pass ``"messages"``):
            the trace and ``Unfittable`` then name units by the positions they cover,
            ``messages[3..6]``. A segment whose ``meta`` has a str ``"fixed"`` is named by
            that label instead (``<reply priming>``).
        previous: The previous turn's ``Fit``. Its cut is repeated while the request still
            fits (what it sent stays the start of what is sent, and the provider's cache reads
            it); when the cut must move it moves far enough that the next turns append again.
            ``Fit.cache`` and the trace's ``cache`` line say what happened.
        cache: A ``CacheProfile`` or its name; ``"none"`` here (no hysteresis), the
            provider's own in each adapter.

    Returns:
        A ``Fit``: ``kept`` (what to send), ``evicted``, ``truncated``, ``total``, the trace.

    Raises:
        Unfittable: The protected set plus the floors cannot fit under the ceiling. Its
            ``components``, ``floor_tokens``, ``total``, ``ceiling`` and ``shortfall`` say
            by how much; ``trace`` is the attempt's rendered trace.
        InvalidArgumentError: ``segments`` is empty, ``policy`` names no preset, or
            ``framing`` is negative.
        ArgumentTypeError: An argument has the wrong type (e.g. an item that is not a
            Segment, a budget that is not a ``Budget``).
        CounterError: A counting callable raised or returned something other than an
            int >= 0.
        TextEncodingError: ``separator`` holds a lone surrogate.
    """

def fit_columns(
    texts: list[str],
    budget: Budget,
    *,
    layers: list[PromptLayer | str] | None = None,
    keys: list[str | int | None] | None = None,
    scores: list[float] | None = None,
    groups: list[str | int | None] | None = None,
    tokens: list[int | None] | None = None,
    recoverable: list[bool] | None = None,
    stale: list[bool] | None = None,
    tools: list[tuple[str, str | None] | tuple[str, str | None, int | None] | None] | None = None,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    separator: str | None = None,
    previous: Fit | None = None,
    cache: CacheProfile | _CacheName | str | None = None,
) -> Fit:
    """Fits a request given as columns, one item a row: the same ``Fit`` as ``fit`` over
    ``[Segment(texts[i], layers[i], keys[i], scores[i], tokens=tokens[i], ...)]``.

    For a server that holds its request as strings: the whole request crosses into the core
    once, without a ``Segment`` object built per row, and the ``Fit``'s segments are only made
    when ``kept`` / ``evicted`` / ``truncated`` are read. Each carries ``meta={"index": i}``
    (with ``"tool"`` and ``"arguments"`` for a row with a tool call), naming its row.

    Args:
        texts: The request, in order: a non-empty list of str.
        budget: The window, reserve and caps.
        layers: Per row, a ``PromptLayer`` or its name; CONVERSATION for every row when None.
        keys: Per row, a key (str, int or None); no keys when None.
        scores: Per row, a relevance in [0, 1] (None for 0.0); 0.0 for every row when None.
        groups: Per row, an eviction group (str, int or None).
        tokens: Per row, a count the caller already has, or None to count the text.
        recoverable: Per row, whether an authoritative copy exists outside the request.
        stale: Per row, whether the content is out of date.
        tools: Per row, None or ``(name, arguments)`` or ``(name, arguments, step)``: what a
            digest record says of a tool call (a ``Segment``'s ``meta`` "tool", "arguments",
            "step").
        policy: As ``fit``'s.
        tokenizer: As ``fit``'s.
        separator: As ``fit``'s.
        previous: As ``fit``'s.
        cache: As ``fit``'s.

    Returns:
        A ``Fit``, as ``fit`` returns it.

    Raises:
        Unfittable: As ``fit``.
        InvalidArgumentError: ``texts`` is empty, a column's length differs from ``texts``',
            a score is outside [0, 1] or a count is negative (the message names the row,
            ``scores[3]``).
        ArgumentTypeError: A column or one of its items has the wrong type.
    """

def evict_indices(
    tokens: npt.ArrayLike,
    recoverable: npt.ArrayLike,
    stale: npt.ArrayLike,
    relevance: npt.ArrayLike,
    protected: npt.ArrayLike,
    deficit: int,
) -> npt.NDArray[np.int64]:
    """The rank order alone, for callers with their own structures.

    Returns the indices to evict, in rank order, to free at least ``deficit`` tokens. Rank
    order is recoverable first, stale first, lowest relevance first, largest first, then
    position. Protected entries are never returned. When the others cannot cover the deficit,
    all of them are returned.

    Args:
        tokens: Each entry's size: 1-d, ints >= 0.
        recoverable: 1-d bools: an external copy exists.
        stale: 1-d bools: the entry is out of date.
        relevance: 1-d floats in [0, 1].
        protected: 1-d bools: never evict.
        deficit: Tokens to free, an int >= 0.

    Returns:
        A numpy ``int64`` array of indices into the inputs.

    Raises:
        InvalidArgumentError: An array is not 1-d, the lengths differ, a token count is
            negative, a relevance is outside [0, 1], or ``deficit`` is negative.
        ArgumentTypeError: An input cannot be read as an array of its dtype, or ``deficit``
            is not an int.
    """

@final
class Why:
    """Why a key is held or absent, from ``ContextWindow.why`` and ``ledger_entries``."""

    @property
    def key(self) -> str:
        """The key asked about."""
    @property
    def status(self) -> _WhyStatus:
        """What happened to the key's segment, in one word.

        - ``"held"``: held as admitted.
        - ``"truncated"``: still held, shortened by a truncate rung.
        - ``"evicted_recoverable"``: left the window (a rung or ``discard``); an authoritative
          copy exists outside it.
        - ``"evicted_dispensable"``: left the window; judged dispensable.
        - ``"rewritten"``: replaced by a tagged lossy surrogate, a ``rewrite`` summary or a
          digest record.
        """
    @property
    def cycle(self) -> int:
        """The window's cycle (fits completed so far) when this status was recorded."""
    @property
    def rung(self) -> str | None:
        """What acted: a rung's name, or ``"discard"``, ``"rewrite"`` or ``"digest"`` when the
        method of that name did. None while simply held. A rung may carry any name, so use
        ``cause`` to tell a rung from the caller's own levers."""
    @property
    def cause(self) -> Literal["rung", "digest", "discard", "rewrite", "digest_call"] | None:
        """What ``rung`` stands for, typed: ``"rung"`` (dropped or truncated by the policy's
        rung), ``"digest"`` (folded into a digest record by a rung), ``"discard"``,
        ``"rewrite"`` or ``"digest_call"`` (the window methods of those names). None while
        simply held."""
    @property
    def tokens_before(self) -> int:
        """Its tokens before the change ``status`` reports (while held: as admitted)."""
    @property
    def tokens_after(self) -> int:
        """Its tokens now: the same while held, 0 once evicted, the shortened size when
        truncated, the surrogate's size when rewritten."""
    @property
    def provenance(self) -> str | None:
        """Who made the surrogate (``rewrite``'s ``provenance``, or ``"digest"``); else None."""
    @property
    def layer(self) -> PromptLayer:
        """The layer the segment was last held in."""
    @property
    def admissions(self) -> int:
        """How many times the key was admitted (it can come back after it left)."""

@final
class WindowLedger:
    """A ``ContextWindow``'s counters and token totals, for metrics.

    The token totals always balance (``balanced``): admitted + surrogates added == held +
    evicted recoverable + evicted dispensable + rewritten away + truncated away.
    """

    @property
    def admitted(self) -> int:
        """Segments admitted (refused duplicates not included)."""
    @property
    def refused_duplicates(self) -> int:
        """Admissions refused because the key was already held."""
    @property
    def fits(self) -> int:
        """Completed ``fit()`` calls."""
    @property
    def fits_that_evicted(self) -> int:
        """Fits that removed or truncated something."""
    @property
    def evictions(self) -> int:
        """Segments a rung dropped."""
    @property
    def rewrites(self) -> int:
        """Rewrites applied, deferred ones included once they land."""
    @property
    def deferred_rewrites(self) -> int:
        """Rewrites deferred to the next ``fit()``."""
    @property
    def digests(self) -> int:
        """Digest records made, by a digest rung or ``digest()``."""
    @property
    def truncations(self) -> int:
        """Bodies a truncate rung shortened."""
    @property
    def discards(self) -> int:
        """Segments removed by ``discard()``."""
    @property
    def rung_firings(self) -> dict[str, int]:
        """Units acted on per rung name, over every fit: which rung fires tells which slice is
        undersized."""
    @property
    def tokens_admitted(self) -> int:
        """Tokens of every segment admitted."""
    @property
    def tokens_held(self) -> int:
        """Tokens held now."""
    @property
    def tokens_surrogates_added(self) -> int:
        """Tokens of the surrogates and digest records put in."""
    @property
    def tokens_evicted_recoverable(self) -> int:
        """Tokens of recoverable segments that left (rungs and discards)."""
    @property
    def tokens_evicted_dispensable(self) -> int:
        """Tokens of other segments that left (rungs and discards)."""
    @property
    def tokens_rewritten_away(self) -> int:
        """Tokens of originals replaced by surrogates or digest records."""
    @property
    def tokens_truncated_away(self) -> int:
        """Tokens that truncation cut from held bodies."""
    @property
    def balanced(self) -> bool:
        """Whether the token totals balance; always True unless something is wrong."""

@final
class ContextWindow:
    """A token window across turns, one per conversation.

    It admits segments by key, evicts by policy, and keeps a ledger that can answer for every
    key ever admitted. A window is safe to share between threads. Its calls are serialised by
    a lock that is always taken with the GIL released, so they never deadlock and never see
    half a change. It persists with ``to_bytes()`` / ``from_bytes()`` or with pickle.
    """

    def __new__(
        cls,
        limit_tokens: int,
        tokenizer: Tokenizer | Callable[[str], int] | None = None,
        policy: Policy | str | None = None,
        reserve: int | None = None,
        *,
        low_watermark: float | None = None,
        why_horizon: int | None = None,
        cache: CacheProfile | _CacheName | str | None = None,
    ) -> ContextWindow:
        """Makes an empty window.

        Args:
            limit_tokens: The model's context window in tokens, > 0.
            tokenizer: A ``Tokenizer``, a ``str -> int`` callable, or None for the embedded
                o200k_base encoding.
            policy: A ``Policy`` or a preset name; ``Policy.context_window()`` by default.
            reserve: Tokens kept free for the answer, 0 by default; must be < ``limit_tokens``.
            low_watermark: A fraction in (0, 1]. When a fit has to evict, it goes down to
                ``floor(ceiling * low_watermark)``, so the next turns append without moving
                the cut and the provider's prompt cache survives. If the protected set and
                floors cannot get that low, the fit targets the ceiling. None (the default)
                and 1.0 evict just to the ceiling.
            why_horizon: Opt-in bound on the ``why`` history: the answer for a key that left
                more than this many fits ago is forgotten (``why`` then raises
                ``UnknownKeyError``), so a long conversation's ledger and saved state stay
                bounded by what is held. None (the default) keeps every answer, as the ledger
                promises; held keys always keep theirs.
            cache: A ``CacheProfile`` or its name: ``last_fit.cache`` reports against it, and
                its low watermark is the default ``low_watermark``.

        Raises:
            InvalidArgumentError: ``limit_tokens`` is 0 or above 2**48 - 1, ``reserve >= limit_tokens``,
                ``low_watermark`` is outside (0, 1], or ``policy`` names no preset.
            ArgumentTypeError: An argument has the wrong type.
        """
    def admit(self, segment: Segment) -> bool:
        """Holds ``segment`` unless its key is already held, in any layer.

        The segment is counted here, once. A ``key=None`` segment is never deduplicated.
        Admitting a CURRENT_TURN segment turns the previously held current turn into
        CONVERSATION (same text, same place). Admission never evicts; call ``fit()``.

        Returns:
            True when admitted; False when the key was already held (the segment is refused
            and counted in ``ledger.refused_duplicates``).

        Raises:
            ArgumentTypeError: ``segment`` is not a Segment.
            CounterError: A counting callable failed.
        """
    def admit_many(self, segments: Iterable[Segment]) -> list[bool]:
        """Admits a whole turn in one call: each segment in order, as ``admit`` does.

        Returns:
            One bool per segment: True when admitted, False when refused as a duplicate.

        Raises:
            ArgumentTypeError: ``segments`` is not iterable, or an item is not a Segment.
            CounterError: A counting callable failed.
        """
    def fit(self) -> list[Segment]:
        """Evicts by the policy until what is held fits under the ceiling.

        The keys of what left are freed, so it can be admitted again later. Rewrites
        deferred in this cycle land as the fit returns, and a new cycle begins. The full
        result (trace included) is ``last_fit``.

        Returns:
            What left, in eviction order: segments dropped, or folded into a digest record.
            Originals replaced by a deferred rewrite are not listed.

        Raises:
            Unfittable: The protected set plus the floors cannot fit; the window is left
                unchanged.
            CounterError: A counting callable failed.
        """
    def texts(self, layer: PromptLayer | str) -> list[str]:
        """The texts held in ``layer``, in admission order.

        Raises:
            InvalidArgumentError: ``layer`` names no layer.
            ArgumentTypeError: ``layer`` is neither a PromptLayer nor a str.
        """
    def segments(self, layer: PromptLayer | str | None = None) -> list[Segment]:
        """The held segments of ``layer``, or of every layer when None, in admission order.

        Unchanged segments are the caller's own objects. A segment changed in place
        (truncated, marked stale, or a current turn that became conversation) is a new
        object, and so is each surrogate or digest record.

        Raises:
            InvalidArgumentError: ``layer`` names no layer.
            ArgumentTypeError: ``layer`` is neither a PromptLayer nor a str.
        """
    @property
    def tokens(self) -> int:
        """Tokens held now."""
    @property
    def last_fit(self) -> Fit | None:
        """The ``Fit`` of the latest successful ``fit()``; None before the first."""
    def why(self, key: str) -> Why:
        """Why ``key`` is held or absent: status, cycle, rung, and tokens before and after.

        It answers for every key ever admitted. An int key given to ``Segment`` is asked
        for as its decimal text.

        Raises:
            UnknownKeyError: The key was never admitted (a ``KeyError``).
            ArgumentTypeError: ``key`` is not a str.
        """
    def ledger_entries(self) -> list[Why]:
        """The current answer for every key ever admitted, sorted by key."""
    @property
    def ledger(self) -> WindowLedger:
        """The window's counters and token totals (a snapshot)."""
    def discard(self, key: str) -> Segment:
        """Removes the held segment with ``key`` now.

        It is recorded like an eviction (rung ``"discard"``) and the key is freed. Use it to
        drop a span instead of rewriting it without provenance.

        Returns:
            The segment removed.

        Raises:
            UnknownKeyError: No segment with that key is held.
            ArgumentTypeError: ``key`` is not a str.
        """
    def mark_stale(self, key: str) -> None:
        """Flags the held segment with ``key`` stale, so stale-first rungs take it early.

        Raises:
            UnknownKeyError: No segment with that key is held.
            ArgumentTypeError: ``key`` is not a str.
        """
    def rewrite(self, key: str, surrogate_text: str, *, provenance: str | None = None) -> bool:
        """Replaces the held segment with ``key`` by a tagged lossy surrogate.

        The surrogate's text is ``"[lossy summary of KEY by PROVENANCE] " + surrogate_text``,
        counted with its tag. Its ``meta`` is ``{"lossy": True, "source_key": key,
        "provenance": provenance}``. It keeps the original's layer, group, score and
        recoverability but not the key: the key is freed, and ``why(key)`` reports
        ``"rewritten"``.

        A rewrite is deferred when this cycle admitted new non-recoverable content. The next
        ``fit()`` then counts the original, and the surrogate replaces it as that fit
        returns.

        Args:
            key: The held segment's key.
            surrogate_text: The summary that stands in for it.
            provenance: Who made the summary, e.g. a model name. Required.

        Returns:
            True when applied now, False when deferred.

        Raises:
            UntaggedRewriteError: ``provenance`` is missing or blank. Drop the span with
                ``discard(key)`` instead, so it can be fetched again.
            BudgetLedgerInconsistency: The surrogate is not smaller than the original and
                the original is not recoverable.
            UnknownKeyError: No segment with that key is held.
            ArgumentTypeError: An argument is not a str.
        """
    def digest(self, key: str) -> Segment:
        """Replaces the tool exchange holding ``key`` by its short durable record now.

        The exchange is the held segments of ``key``'s group (the segment alone when it has
        no group), and it must hold a TOOL_RESULT.
        The record, a CONVERSATION segment, reads like ``[compacted] step 16: asked "…";
        called read_file(src/a.py) -> 412 lines, 9,020 tokens: <first line>; answered "…"``.
        No model is called. The members' keys are freed and reported as ``"rewritten"``.

        Returns:
            The record, whose ``meta`` is ``{"lossy": True, "source_key": key,
            "provenance": "digest"}``.

        Raises:
            InvalidArgumentError: ``key``'s group holds no TOOL_RESULT segment.
            BudgetLedgerInconsistency: The record would not be smaller and not every member
                is recoverable.
            UnknownKeyError: No segment with that key is held.
            ArgumentTypeError: ``key`` is not a str.
        """
    def __contains__(self, key: str, /) -> bool:
        """Whether a segment with ``key`` is held now (``key in window``)."""
    def __len__(self) -> int:
        """The number of segments held."""
    @property
    def limit_tokens(self) -> int:
        """The whole context window, in tokens."""
    @property
    def reserve(self) -> int:
        """Tokens kept free for the answer."""
    @property
    def ceiling(self) -> int:
        """``limit_tokens - reserve``: the most tokens a fit leaves held."""
    @property
    def low_watermark(self) -> float | None:
        """The fraction of the ceiling an evicting fit goes down to, or None."""
    @property
    def cache(self) -> CacheProfile | None:
        """The prompt cache the window reports against (``last_fit.cache``), or None."""
    @property
    def why_horizon(self) -> int | None:
        """Fits a key's ``why`` answer is kept after it leaves, or None (kept for good)."""
    @property
    def cycle(self) -> int:
        """Fits completed so far; a cycle is the admissions since the previous fit."""
    @property
    def stable_prefix_tokens(self) -> int:
        """Tokens at the front of what is held that did not change since the previous fit:
        what a provider's prompt cache can reuse."""
    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer that counts for this window (a callable given is wrapped in one)."""
    @property
    def policy(self) -> Policy:
        """The window's policy (a new, equal Policy object each call)."""
    def to_bytes(self) -> bytes:
        """The whole state as a versioned binary snapshot, to park a session in any store.

        It holds the segments, ledger, counters and policy, and the tokenizer's recipe when
        it is an embedded encoding or the estimate. It ends with an xxh3-128 digest: bytes
        changed or cut in a store are refused on load. ``to_json()`` is the readable form.

        Raises:
            InvalidArgumentError: A held segment's ``meta`` is not JSON-serialisable; pickle
                the window instead (pickle takes any picklable ``meta``).
        """
    def to_json(self) -> str:
        """The whole state as JSON text, for people to read; ``from_bytes`` reads it too."""
    @property
    def revision(self) -> int:
        """A number that grows with every change; pass it to ``delta_since`` later."""
    def delta_since(self, revision: int) -> bytes:
        """What changed since ``revision``, for ``apply_delta`` or ``from_bytes(deltas=...)``.

        A store keeps a snapshot and appends one delta per turn. The delta names the revision
        it follows and the digest of the state it leads to, so it applies in order, once.

        Raises:
            InvalidArgumentError: ``revision`` is ahead of the window, or older than the
                revision the window was made or restored at.
        """
    def apply_delta(self, delta: bytes) -> None:
        """Applies a ``delta_since`` result in place: all of it, or (refused) none of it.

        Raises:
            InvalidArgumentError: The delta is damaged, does not follow this window's
                revision, or does not lead to the state it was written from.
        """
    @staticmethod
    def from_bytes(
        data: bytes | bytearray | memoryview | str,
        tokenizer: Tokenizer | Callable[[str], int] | None = None,
        *,
        deltas: Iterable[bytes] | None = None,
    ) -> ContextWindow:
        """Restores ``to_bytes()`` (or ``to_json()``) output, ledger and all, then ``deltas``.

        Args:
            data: The saved snapshot (binary, or the JSON form as bytes or text).
            tokenizer: Overrides the saved tokenizer. It is required when the window counted
                with a tokenizer.json or a callable, whose recipe is not saved.
            deltas: ``delta_since`` results to apply in order after the snapshot.

        Raises:
            InvalidArgumentError: ``data`` is not a saved ContextWindow, a delta does not
                apply, or a tokenizer is needed and was not given.
            ArgumentTypeError: ``data`` is not bytes, or ``tokenizer`` has the wrong type.
        """
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles the whole state with the tokenizer (a callable must be picklable)."""
    @staticmethod
    def _restore(core: bytes, metas: dict[int, Any], tokenizer: Any) -> ContextWindow:
        """Internal: the unpickling constructor."""

def _resolve_tokenizer(tokenizer: Tokenizer | Callable[[str], int] | None = None) -> Tokenizer:
    """Private, for the adapters: the ``tokenizer`` argument resolved exactly as ``fit`` resolves
    it (None: the embedded o200k_base; a plain callable: one wrapper, and one count cache, per
    callable)."""

def _resolve_policy(policy: Policy | str | None = None, default: str = "context_window") -> Policy:
    """Private, for the adapters: the ``policy`` argument resolved as ``fit`` resolves it, with
    ``default`` naming the preset used for None."""

#: What the adapters rebuild from: the kept order (a record's index, or ``-(d + 1)`` for digest
#: ``d``), the digests' texts, the shortened texts by record, and the Fit.
_Rebuild = tuple[list[int], list[str], dict[int, str], Fit]

def _fit_records(
    strings: list[str],
    ends: list[int],
    extra: list[int],
    layers: list[PromptLayer],
    groups: list[str | None],
    texts: list[str],
    calls: Sequence[tuple[str, str | None] | None],
    labels: list[str],
    budget: Budget,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    *,
    framing: int = 0,
    input_name: str = "messages",
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
    cache_default: str = "none",
    provider: str | None = None,
    exactness: str | None = None,
    breakpoints: list[int] | None = None,
) -> _Rebuild:
    """Counts, fits and returns what the adapter rebuilds from (private; the adapters' entry)."""

def _fit_template(
    template: ChatTemplate,
    messages: list[Any],
    layers: list[PromptLayer],
    groups: list[str | None],
    texts: list[str],
    calls: Sequence[tuple[str, str | None] | None],
    context: dict[str, Any],
    budget: Budget,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    *,
    input_name: str = "messages",
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
) -> tuple[list[int], list[str], dict[int, str], Fit, list[tuple[int, str]]]:
    """Fits an open model's request by its rendered chat template (private; ``chat.fit_messages``)."""

def _reusable_prefix(previous: str, current: str, tokenizer: Tokenizer | Callable[[str], int]) -> int:
    """Tokens two rendered prompts share from their start: what a server's prompt cache reuses
    from ``previous`` when ``current`` is sent (private; ``chat.reusable_prefix``)."""

def _fit_chat_fast(
    messages: Any,
    schema: list[str],
    schema_tokens: tuple[int, int],
    budget: Budget,
    policy: Policy | str | None = None,
    tokenizer: Tokenizer | Callable[[str], int] | None = None,
    *,
    pin_first_user: bool = False,
    previous: Fit | None = None,
    cache: CacheProfile | str | None = None,
) -> _Rebuild | None:
    """Fits a Chat Completions message list, or returns None for the Python reader to do it (see the
    module docstring)."""

def _fingerprint(value: Any) -> int | None:
    """The fingerprint of ``value`` as an int, or None when it holds something other than JSON-shaped
    data (private: the adapters' render caches)."""

def _framing(name: str) -> dict[str, int]:
    """``{"per_message": 3, "per_name": 1, "per_tool_call": 3, "reply_priming": 3}`` for ``name``
    (private: the adapters' constants)."""
