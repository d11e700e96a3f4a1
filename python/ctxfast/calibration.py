"""Calibrated counts: learn what the provider really counted, and catch silent truncation.

Every ``Fit`` says how far its count can be trusted, in ``fit.exactness``:

- ``"exact"``: the provider's own tokenizer and framing (OpenAI Chat text, a chat template with
  its tokenizer);
- ``"estimate"``: no public tokenizer (Anthropic, Gemini), or an approximate one;
- ``"calibrated"``: an estimate plus the offset a ``Calibration`` learnt from the provider's
  reported usage.

``fit.calibrate(usage, calibration=None)`` (this module's ``calibrate``) compares the prompt
size the server reported for the request that was sent with ``fit.total``. Usage comes as a dict
or an SDK object, alone or inside the whole response (``usage`` / ``usageMetadata``): OpenAI Chat
``prompt_tokens`` (cached: ``prompt_tokens_details.cached_tokens``), OpenAI Responses
``input_tokens`` (``input_tokens_details.cached_tokens``), Anthropic ``input_tokens`` +
``cache_read_input_tokens`` + ``cache_creation_input_tokens`` (Anthropic's ``input_tokens``
leaves the cached tokens out, so the prompt is the sum of the three) and Gemini
``promptTokenCount`` / ``prompt_token_count`` (cached: ``cachedContentTokenCount``).

What is learnt: Anthropic's server adds a fixed system and tool overhead that no public document
gives, so the model is a constant offset, ``reported - estimate``. A ``Calibration`` keeps the
last ``window`` (16) offsets and uses their ``median_high``: one odd request (an image whose size
the estimate got wrong, a retry) does not move it, and of two middle values it takes the larger,
the one that leaves more room. The offset then holds until the median moves by more than
``HOLD`` (8) tokens, so a jitter of a token or two does not change the request's fixed part (nor
the prefix a prompt cache keys on) from one turn to the next. An adapter given ``calibration=``
(``anthropic.fit_messages``, ``gemini.fit_contents``) adds the offset to its estimate: a positive
offset is a fixed ``"<calibration>"`` part in the SYSTEM layer (the last of ``fit.kept``, counted
in ``fit.total``); a negative one (the estimate over-counts) widens the budget's window by as
much, so ``fit.total`` stays the raw estimate and ``fit.ceiling`` grows, while ``fit.spare`` is
the true room either way. The fit is then labelled ``"calibrated"``; ``calibrate`` takes the
applied offset back out before it learns, so calibrating a calibrated fit does not compound.

Silent truncation: a server that counts fewer tokens than were sent has cut the prompt (an
Ollama ``num_ctx``, a proxy's limit) without saying so. The check allows a tolerance that depends
on how far the count is trusted, since an estimate may honestly over-count: 1 % for an exact
count (OpenAI tool calls and images are estimated inside an "exact" fit), 5 % or twice the learnt
spread for a calibrated one, 25 % for a plain estimate; never less than 8 tokens. A truncation
is logged as a WARNING on the ``ctxfast`` logger, and is not learnt from.
"""

from __future__ import annotations

import logging
import math
import statistics
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ctxfast._errors import ArgumentTypeError, InvalidArgumentError
from ctxfast._fields import preview
from ctxfast._usage import Usage, read_usage

if TYPE_CHECKING:
    from ctxfast._core import Budget, Fit
    from ctxfast._payload import Fixed

__all__ = ["Calibration", "CalibrationResult", "calibrate"]

log = logging.getLogger("ctxfast")

#: How many recent offsets a Calibration keeps by default.
WINDOW = 16
#: The truncation tolerances, as a share of the expected count, by exactness.
EXACT_TOLERANCE = 0.01
CALIBRATED_TOLERANCE = 0.05
ESTIMATE_TOLERANCE = 0.25
#: How far the median must move before the applied offset follows it, in tokens.
HOLD = 8
#: The smallest tolerance, in tokens: a few tokens of framing are not a truncation.
MIN_TOLERANCE = 8
#: The label of the fixed part a positive offset adds to a request.
LABEL = "<calibration>"


@dataclass(frozen=True)
class CalibrationResult:
    """What ``fit.calibrate(usage)`` found: the server's count against the fit's."""

    #: Prompt tokens the server counted (cached ones included).
    reported: int
    #: Prompt tokens the fit predicted (``fit.total``, with a negative offset applied).
    predicted: int
    #: ``reported - predicted``.
    difference: int
    #: Of ``reported``, tokens the server read from its cache, if it said.
    cached_reported: int | None
    #: The cached tokens the fit predicted (``fit.cache.read``), if it has a cache profile.
    cached_predicted: int | None
    #: The fit's label: ``"exact"``, ``"calibrated"`` or ``"estimate"``.
    exactness: str
    #: The server counted fewer tokens than were sent, beyond the tolerance: the prompt was cut.
    truncated: bool
    #: One line for a human (also the WARNING's text when ``truncated``).
    message: str
    #: The calibration's offset after this observation (None without a calibration or before
    #: it learnt anything).
    offset: int | None = None
    #: Whether this observation was learnt (not for exact counts, truncations, or a calibrated
    #: fit whose applied offset is unknown).
    learned: bool = False


class _Applied(NamedTuple):
    total: int
    ceiling: int
    offset: int
    provider: str | None
    model: str | None


# What an adapter applied to each fit, by id(fit), so that calibrate can take the offset back out
# of the count (the Fit is a frozen Rust object: nothing can be attached to it). The fit's total
# and ceiling guard against a reused id; the table is bounded, and a fit it no longer knows is
# simply not learnt from.
_APPLIED: OrderedDict[int, _Applied] = OrderedDict()
_APPLIED_MAX = 4096
_applied_lock = threading.Lock()


def _text_arg(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ArgumentTypeError(f"argument '{name}' must be a str or None, not {type(value).__name__}")
    return value


class Calibration:
    """The offset between a provider's reported prompt size and ctxfast's estimate, learnt per
    provider and model from the usage of requests that were sent.

    ``provider`` and ``model`` (None: taken from the first fit it sees) must match the fits it
    learns from and is applied to; a mismatch is an ``InvalidArgumentError``. The offset is the
    ``median_high`` of the last ``window`` observations. Thread-safe.
    """

    def __init__(self, provider: str | None = None, model: str | None = None, *, window: int = WINDOW) -> None:
        self._provider = _text_arg(provider, "provider")
        self._model = _text_arg(model, "model")
        if isinstance(window, bool) or not isinstance(window, int):
            raise ArgumentTypeError(f"argument 'window' must be an int, not {type(window).__name__}")
        if window < 1:
            raise InvalidArgumentError(f"argument 'window' must be at least 1, got {window}")
        self._window = window
        self._offsets: deque[int] = deque(maxlen=window)
        self._seen = 0
        self._held: int | None = None
        self._lock = threading.Lock()

    @property
    def provider(self) -> str | None:
        """The provider it is for (``"anthropic"``, ``"gemini"``...), None until it sees a fit."""
        return self._provider

    @property
    def model(self) -> str | None:
        """The model it is for, None when not given and no adapter call named one."""
        return self._model

    @property
    def window(self) -> int:
        """How many recent observations the offset is taken from."""
        return self._window

    @property
    def observations(self) -> int:
        """How many observations it has learnt from in all."""
        return self._seen

    @property
    def offset(self) -> int | None:
        """``reported - estimate``, what adapters add: the median_high of the recent observations,
        held until that median moves by more than ``HOLD`` (8) tokens; None before any."""
        return self._held

    @property
    def spread(self) -> int:
        """The largest distance of a recent observation from the offset (0 before any)."""
        with self._lock:
            if not self._offsets:
                return 0
            mid = statistics.median_high(self._offsets)
            return max(abs(d - mid) for d in self._offsets)

    def observe(self, fit: Fit, usage: Any) -> CalibrationResult:
        """Learn from one sent request: the same as ``fit.calibrate(usage, calibration=self)``."""
        return calibrate(fit, usage, self)

    def reset(self) -> None:
        """Forget every observation (the provider and model stay)."""
        with self._lock:
            self._offsets.clear()
            self._seen = 0
            self._held = None

    def _learn(self, offset: int) -> None:
        with self._lock:
            self._offsets.append(offset)
            self._seen += 1
            # The offset an adapter adds moves only when the median moved by more than HOLD:
            # a request whose size jitters by a token would change its fixed part each turn, and
            # with it the prefix a prompt cache keys on.
            mid = statistics.median_high(self._offsets)
            if self._held is None or abs(mid - self._held) > HOLD:
                self._held = mid

    def _bind(self, provider: str | None, model: str | None) -> None:
        """Check a fit's provider and model against this calibration's, adopting them if unset."""
        with self._lock:
            for name, mine, theirs in (("provider", self._provider, provider), ("model", self._model, model)):
                if mine is not None and theirs is not None and mine != theirs:
                    raise InvalidArgumentError(
                        f"this Calibration is for {name} {preview(mine)}, but the fit is for {preview(theirs)}: "
                        f"use one Calibration per provider and model"
                    )
            self._provider = self._provider if self._provider is not None else provider
            self._model = self._model if self._model is not None else model

    def __repr__(self) -> str:
        offset = self.offset
        shown = "None" if offset is None else f"{offset:+d}"
        return (f"Calibration(provider={self._provider!r}, model={self._model!r}, offset={shown}, "
                f"observations={self._seen})")

    # A lock does not pickle: a Calibration persists as its settings and observations.
    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {"provider": self._provider, "model": self._model, "window": self._window,
                    "offsets": list(self._offsets), "seen": self._seen, "held": self._held}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["provider"], state["model"], window=state["window"])  # type: ignore[misc]
        self._offsets.extend(state["offsets"])
        self._seen = state["seen"]
        self._held = state["held"]


# ------------------------------------------------------------------------------------------------
# The adapters' side: apply a learnt offset, then remember what was applied


def apply(
    calibration: Calibration | None, fixed: list[Fixed], budget: Budget | int, provider: str, model: str | None = None,
) -> tuple[Budget | int, str | None, _Applied | None]:
    """For an adapter, before its fit: ``(budget, exactness, pending)``. With a learnt offset, a
    positive one is appended to ``fixed`` as the ``"<calibration>"`` SYSTEM part, a negative one
    widens the budget, and ``exactness`` is ``"calibrated"``; otherwise budget and ``fixed`` stay
    as they were and ``exactness`` is None (the adapter's own label). Pass ``pending`` and the fit
    to ``settle`` afterwards."""
    if calibration is None:
        return budget, None, None
    if not isinstance(calibration, Calibration):
        raise ArgumentTypeError(
            f"argument 'calibration' must be a ctxfast.Calibration or None, not {type(calibration).__name__}"
        )
    calibration._bind(provider, model)
    # Read once: another thread may learn while this request is fitted.
    offset = calibration.offset
    pending = _Applied(0, 0, offset or 0, provider, model)
    if offset is None:
        return budget, None, pending
    # Imported here: `import ctxfast` loads this module, and stays light.
    from ctxfast._core import Budget, PromptLayer
    from ctxfast._payload import Fixed, resolve_budget

    if offset > 0:
        fixed.append(Fixed(LABEL, PromptLayer.SYSTEM, [], offset, where="calibration"))
    elif offset < 0:
        b = resolve_budget(budget)
        budget = Budget(b.window - offset, b.reserve, b.caps)
    return budget, "calibrated", pending


def settle(pending: _Applied | None, fit: Fit) -> None:
    """For an adapter, after its fit: remember what ``apply`` did to ``fit``, for ``calibrate``."""
    if pending is None:
        return
    entry = pending._replace(total=fit.total, ceiling=fit.ceiling)
    with _applied_lock:
        _APPLIED[id(fit)] = entry
        _APPLIED.move_to_end(id(fit))
        while len(_APPLIED) > _APPLIED_MAX:
            _APPLIED.popitem(last=False)


def _applied(fit: Any) -> _Applied | None:
    with _applied_lock:
        entry = _APPLIED.get(id(fit))
    if entry is None or (entry.total, entry.ceiling) != (fit.total, fit.ceiling):
        return None
    return entry


# ------------------------------------------------------------------------------------------------
# The check


def calibrate(fit: Fit, usage: Any, calibration: Calibration | None = None) -> CalibrationResult:
    """Compare the server's reported prompt size for the request ``fit`` produced with
    ``fit.total``; flag a silent truncation (and log a WARNING); with ``calibration``, learn the
    offset from it. ``fit.calibrate(usage, calibration)`` calls this."""
    if calibration is not None and not isinstance(calibration, Calibration):
        raise ArgumentTypeError(
            f"argument 'calibration' must be a ctxfast.Calibration or None, not {type(calibration).__name__}"
        )
    total = getattr(fit, "total", None)
    if isinstance(total, bool) or not isinstance(total, int):
        raise ArgumentTypeError(f"argument 'fit' must be a ctxfast.Fit, not {type(fit).__name__}")
    provider = getattr(fit, "provider", None)
    exactness = str(getattr(fit, "exactness", "exact"))
    read = read_usage(usage, provider)
    entry = _applied(fit)
    if calibration is not None:
        calibration._bind(provider, entry.model if entry is not None else None)
    # A negative offset widened the budget instead of adding a part: it is not in fit.total.
    applied = entry.offset if entry is not None else 0
    raw = total - max(applied, 0)
    predicted = raw + applied
    unknown = exactness == "calibrated" and entry is None
    learnt = calibration.offset if calibration is not None else None

    # What the server should have counted, how far the count is trusted, and how much it may
    # honestly over-count by (see the module docstring).
    expected, basis, share, spread = predicted, exactness, ESTIMATE_TOLERANCE, 0
    if exactness == "exact":
        share = EXACT_TOLERANCE
    elif exactness == "calibrated" or learnt is not None:
        # A plain estimate is held to the calibrated count once the calibration knows better.
        expected = predicted if exactness == "calibrated" or learnt is None else raw + learnt
        basis, share = "calibrated", CALIBRATED_TOLERANCE
        spread = calibration.spread if calibration is not None else 0
    tolerance = max(MIN_TOLERANCE, math.ceil(expected * share), 2 * spread)
    truncated = read.prompt < expected - tolerance

    learned = False
    if calibration is not None and exactness != "exact" and not truncated and not unknown:
        calibration._learn(read.prompt - raw)
        learned = True
    offset = calibration.offset if calibration is not None else None
    cache = getattr(fit, "cache", None)
    # The "none" profile predicts no cache at all, which is no prediction of what a server cached.
    cached_predicted = getattr(cache, "read", None) if getattr(cache, "profile", "none") != "none" else None
    message = _message(read, predicted, expected, exactness, basis, truncated, calibration, learned, unknown,
                       cached_predicted)
    if truncated:
        log.warning("%s", message)
    return CalibrationResult(read.prompt, predicted, read.prompt - predicted, read.cached, cached_predicted,
                             exactness, truncated, message, offset, learned)


def _message(
    read: Usage, predicted: int, expected: int, exactness: str, basis: str, truncated: bool,
    calibration: Calibration | None, learned: bool, unknown: bool, cached_predicted: int | None,
) -> str:
    reported = read.prompt
    if truncated:
        missing = expected - reported
        text = (f"silent truncation: the server counted {_tokens(reported)}, but {expected:,} were sent "
                f"({basis} count); {missing:,} tokens ({missing / max(expected, 1):.0%}) never reached the "
                "model. Check the server's context limit (Ollama num_ctx, vLLM max_model_len, a proxy's cap)")
    elif reported == predicted:
        text = f"the server counted {_tokens(reported)}, as predicted ({exactness})"
    else:
        diff = reported - predicted
        text = (f"the server counted {_tokens(reported)}, {abs(diff):,} {'more' if diff > 0 else 'fewer'} "
                f"than the {predicted:,} predicted ({exactness})")
    if read.cached is not None:
        text += f"; {read.cached:,} cached" + (f" ({cached_predicted:,} predicted)" if cached_predicted is not None else "")
    if calibration is not None:
        if learned:
            seen = calibration.observations
            text += f"; calibration offset now {calibration.offset:+,} ({seen} observation{'s' * (seen != 1)})"
        elif exactness == "exact":
            text += "; an exact count: nothing to learn"
        elif unknown:
            text += "; the offset applied to this fit is no longer known: not learnt"
        else:
            text += "; not learnt"
    return text


def _tokens(n: int) -> str:
    return f"{n:,} prompt token{'s' * (n != 1)}"
