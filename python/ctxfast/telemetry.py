"""Telemetry a serving path can use: log records, per-rung firing shares, OpenTelemetry.

Every fit made through ``ctxfast.fit`` or an adapter (``openai``, ``anthropic``, ``gemini``,
``langchain``, ``chat``, the Responses API) is observed here once it succeeded:

- **Per-rung firing shares**, always kept (a counter per fit, a lock when a rung acted):
  ``rung_stats()`` says, per rung name, on how many of the requests observed it acted. A history
  rung that fires on 40% of requests says the history slice is undersized.
- **The** ``ctxfast`` **logger**: one DEBUG record per fit, built only when DEBUG is enabled, with
  numbers and rung names only and the same figures in the record's attributes (``extra``: the
  span's attribute names, e.g. ``record.__dict__["ctxfast.tokens.after"]``) for structured
  loggers. A WARNING when a rung fires on most requests (more than ``BUSY_SHARE`` of at least
  ``BUSY_MIN_REQUESTS``), and when an *estimated* count comes within ``NEAR_CEILING`` of the
  ceiling (an estimate can be off, and there is little room for it to be); each kind at most
  once per ``WARN_INTERVAL`` seconds (per rung for the first), so a busy server is not flooded.
- **OpenTelemetry**, when ``opentelemetry-api`` is installed (the ``otel`` extra) and a real
  tracer or meter provider is set (globally, or by ``configure``): a ``ctxfast.fit`` span and
  counters and histograms under the same names. How a fit finds out cheaply whether anyone
  listens is in ``ctxfast._telemetry_otel``.

Content-free: no message text, key, tool name or label is ever emitted, only counts, the
rung names (the policy's), the provider's name and the count's exactness.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from ctxfast import _telemetry_otel as _otel

__all__ = ["RungStats", "configure", "now", "observe", "reset_rung_stats", "rung_stats"]

log = logging.getLogger("ctxfast")
# A library's records go where the application's logging configuration sends them: without one,
# nothing reaches stderr (Python's last-resort handler would print every WARNING).
log.addHandler(logging.NullHandler())

#: A rung that acts on more than this share of requests gets a WARNING...
BUSY_SHARE = 0.5
#: ...once this many requests were observed (fewer say little).
BUSY_MIN_REQUESTS = 20
#: An estimated count at or above this share of the ceiling gets a WARNING.
NEAR_CEILING = 0.95
#: Seconds between two WARNINGs of one kind (of one rung).
WARN_INTERVAL = 600.0
#: Rung names tracked at most; a policy has a handful, so more means generated names, and those
#: past the bound are not tracked (the stats stay bounded in a long-running process).
MAX_RUNGS = 256


class RungStats(NamedTuple):
    """One rung's record across the requests observed since the last ``reset_rung_stats()``."""

    #: Requests observed (all of them: a fit does not say which policy's rungs could have run).
    requests: int
    #: Requests in which the rung acted.
    fired: int
    #: ``fired / requests``.
    share: float
    #: Units it acted on, summed (``Fit.ledger.rung_firings``: dropped, digested or truncated).
    units: int


class _Stats:
    """Process-wide firing counts, guarded by one lock (fits run on many threads).

    Most requests fire no rung, and for those the only work is counting the request: one
    ``next()`` on an ``itertools.count``, a single C call the GIL keeps atomic (about 30 ns; the
    lock costs 150 ns). Reading the count takes a value from it too, so the lock-holding readers
    count their own reads (``taken``) and subtract them: ``requests = next(counter) - base -
    taken``, where ``base`` is the value the last reset took."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counter = itertools.count()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.base = next(self.counter)
            self.taken = 0
            self.fired: dict[str, int] = {}
            self.units: dict[str, int] = {}
            self.warned: dict[str, float] = {}
            self.near_warned: float | None = None
            self.near_since = 0  # estimated fits near the ceiling since the last such WARNING

    def requests(self) -> int:
        """Requests counted since the reset; call it with the lock held."""
        self.taken += 1
        return next(self.counter) - self.base - self.taken

    def record(self, fired: list[str], units: dict[str, int] | None) -> list[tuple[str, int, int]]:
        """Counts one request in which rungs acted (``observe`` counts the others with a bare
        ``next(counter)``); returns ``(rung, fired, requests)`` for each rung to warn about."""
        busy: list[tuple[str, int, int]] = []
        with self.lock:
            n = next(self.counter) - self.base - self.taken
            clock = time.monotonic() if n >= BUSY_MIN_REQUESTS else 0.0
            for name in fired:
                count = self.fired.get(name)
                if count is None:
                    if len(self.fired) >= MAX_RUNGS:
                        continue
                    count = 0
                self.fired[name] = count = count + 1
                if units:
                    self.units[name] = self.units.get(name, 0) + units.get(name, 0)
                if n >= BUSY_MIN_REQUESTS and count > BUSY_SHARE * n:
                    last = self.warned.get(name)
                    if last is None or clock - last >= WARN_INTERVAL:
                        self.warned[name] = clock
                        busy.append((name, count, n))
        return busy

    def near_ceiling(self) -> int:
        """Counts an estimate near the ceiling; returns how many to report now (0: stay quiet)."""
        with self.lock:
            self.near_since += 1
            clock = time.monotonic()
            if self.near_warned is not None and clock - self.near_warned < WARN_INTERVAL:
                return 0
            self.near_warned, count, self.near_since = clock, self.near_since, 0
            return count

    def snapshot(self) -> dict[str, RungStats]:
        with self.lock:
            n = self.requests()
            return {
                name: RungStats(n, count, count / n if n else 0.0, self.units.get(name, 0))
                for name, count in self.fired.items()
            }


_STATS = _Stats()
_COUNTER = _STATS.counter


def rung_stats() -> dict[str, RungStats]:
    """Per rung name that acted at least once: requests observed, requests it acted in, their
    share, and the units it acted on; across every fit observed since the last reset (or the
    start of the process), whichever thread made it."""
    return _STATS.snapshot()


def reset_rung_stats() -> None:
    """Start counting afresh (and let the WARNINGs fire again at once)."""
    _STATS.reset()


def configure(
    tracer_provider: Any = None,
    meter_provider: Any = None,
    *,
    enabled: bool = True,
    gen_ai_usage: bool = True,
) -> None:
    """Where the OpenTelemetry spans and metrics go.

    By default (and after ``configure()`` with no arguments) they go to the global providers
    (``trace.set_tracer_provider``, ``metrics.set_meter_provider``), once real ones are set.
    Pass ``tracer_provider`` / ``meter_provider`` to use those instead (tests use the SDK's
    in-memory exporter and reader this way); a provider not passed is then not used.
    ``enabled=False`` turns OpenTelemetry off whatever is set; the log records and the rung
    stats stay. ``gen_ai_usage=False`` leaves the ``gen_ai.usage.*`` span attributes out: they
    carry ctxfast's prediction, and a backend that sums usage over every span would add it to
    the provider client's span's actual figures.
    """
    _otel.configure(tracer_provider, meter_provider, enabled=enabled, gen_ai_usage=gen_ai_usage)


def now() -> int | None:
    """The time to pass as ``observe(..., started_ns=)``: ``time.time_ns()`` when OpenTelemetry
    listens (the span's start and ``ctxfast.fit.duration``), else None at next to no cost."""
    return time.time_ns() if _otel.sink() is not None else None


def _wrap(core_fit: Callable[..., Any]) -> Callable[..., Any]:
    """``ctxfast.fit``: the core's ``fit``, observed. ``functools.wraps`` keeps its name, module,
    docstring and signature (through ``__wrapped__``), so ``help()`` and the stub checks see the
    core's. Written for the idle path: one look at the sink, no keyword arguments passed on."""
    sink_of, time_ns = _otel.sink, time.time_ns

    @functools.wraps(core_fit)
    def fit(*args: Any, **kwargs: Any) -> Any:
        sink = _otel._sink if _otel._settled else sink_of()
        started = None if sink is None else time_ns()
        result = core_fit(*args, **kwargs)
        _observe(result, None, None, None, started, sink)
        return result

    return fit


#: The fit attributes that newer cores have: looked up once per class, so a class without one
#: costs no AttributeError per fit.
_OPTIONAL = ("exactness", "provider", "cache")
_HAS: dict[type, frozenset[str]] = {}


def _has(fit: Any) -> frozenset[str]:
    has = _HAS[type(fit)] = frozenset(n for n in _OPTIONAL if hasattr(type(fit), n) or hasattr(fit, n))
    return has


def _get(fit: Any, name: str) -> Any:
    has = _HAS.get(type(fit))
    if has is None:  # not `or`: an empty set (a core without any of them) is an answer too
        has = _has(fit)
    return getattr(fit, name, None) if name in has else None


def observe(
    fit: Any,
    *,
    provider: str | None = None,
    items_in: int | None = None,
    items_out: int | None = None,
    started_ns: int | None = None,
) -> None:
    """Record one successful fit: the rung stats, the log records, the span and metrics.

    The fit entry points call it (``ContextWindow.fit``, which returns segments, is not one).
    ``provider`` is the GenAI provider name (``"openai"``, ``"anthropic"``,
    ``"gcp.gemini"``...; by default the one ``fit.provider`` names, if any); ``items_in`` /
    ``items_out`` the messages (items, contents) sent in and kept; ``started_ns`` the
    ``now()`` taken when the fit started, for the span's start and the duration metric.
    """
    _observe(fit, provider, items_in, items_out, started_ns, _otel._sink if _otel._settled else _otel.sink())


def _observe(fit: Any, provider: str | None, items_in: int | None, items_out: int | None,
             started_ns: int | None, sink: _otel.Sink | None) -> None:
    # The path every fit takes when nothing listens, kept to a few attribute reads (about
    # 0.3 µs): the request counted by one next(), the optional fields looked up per class.
    fired = fit.rungs_fired
    if fired:
        busy = _STATS.record(fired, fit.ledger.rung_firings)
    else:
        next(_COUNTER)
        busy = []
    for name, count, n in busy:
        log.warning(
            "ctxfast: rung %s acted on %d of the last %d requests (%.0f%%): the slice it trims is "
            "undersized for this traffic", name, count, n, 100.0 * count / n,
            extra={"ctxfast.rung": name, "ctxfast.rung.share": count / n},
        )
    has = _HAS.get(type(fit))
    if has is None:
        has = _has(fit)
    exactness = fit.exactness if "exactness" in has else None
    if exactness == "estimate" and fit.total >= NEAR_CEILING * fit.ceiling:
        times = _STATS.near_ceiling()
        if times:
            log.warning(
                "ctxfast: an estimated count of %d tokens is within %.0f%% of the ceiling of %d (%d such "
                "fit%s since the last warning): the provider may count more, so calibrate the counts or "
                "leave more reserve", fit.total, 100 * (1 - NEAR_CEILING), fit.ceiling, times, "" if times == 1 else "s",
                extra={"ctxfast.tokens.after": fit.total, "ctxfast.tokens.ceiling": fit.ceiling},
            )
    debug = log.isEnabledFor(logging.DEBUG)
    if sink is None and not debug:
        return
    figures = _figures(fit, provider, items_in, items_out, exactness)
    if debug:
        log.debug(
            "ctxfast fit: %d -> %d tokens under a ceiling of %d (%s count); removed %d tokens, %d units; rungs: %s",
            figures["ctxfast.tokens.before"], fit.total, fit.ceiling, exactness or "unlabelled",
            figures["ctxfast.tokens.removed"], figures["ctxfast.units.removed"], ", ".join(fired) or "none",
            extra=figures,
        )
    if sink is not None:
        sink.emit(figures, started_ns)


def _figures(fit: Any, provider: str | None, items_in: int | None, items_out: int | None,
             exactness: str | None) -> dict[str, Any]:
    """The span's attributes (None: absent), by their names: numbers and names only."""
    ledger = fit.ledger
    removed = ledger.removed
    rows = fit.trace.rows if fit.rungs_fired or removed else []
    truncations = sum(1 for r in rows if r["action"] == "truncate")
    source = _get(fit, "provider")
    provider = provider or _GENAI_PROVIDERS.get(source or "")
    before = _tokens_before(fit, rows, removed)
    cache = _get(fit, "cache")
    read = getattr(cache, "read", None)
    write = getattr(cache, "write", None)
    return {
        "gen_ai.provider.name": provider,
        "ctxfast.provider": source,
        "gen_ai.conversation.compacted": bool(removed or rows),
        "gen_ai.usage.input_tokens": fit.total,
        "gen_ai.usage.cache_read.input_tokens": read,
        "gen_ai.usage.cache_creation.input_tokens": write,
        "ctxfast.tokens.before": before,
        "ctxfast.tokens.after": fit.total,
        "ctxfast.tokens.removed": removed,
        "ctxfast.tokens.ceiling": fit.ceiling,
        "ctxfast.tokens.evicted": ledger.evicted_recoverable + ledger.evicted_dispensable,
        "ctxfast.tokens.digested": ledger.digested,
        "ctxfast.tokens.truncated": ledger.truncated,
        "ctxfast.rungs_fired": list(fit.rungs_fired),
        "ctxfast.units.removed": len(rows) - truncations,
        "ctxfast.units.truncated": truncations,
        "ctxfast.items.before": items_in,
        "ctxfast.items.after": items_out,
        "ctxfast.cache.expected_read_tokens": read,
        "ctxfast.cache.expected_write_tokens": write,
        "ctxfast.cache.uncached_tokens": getattr(cache, "uncached", None),
        "ctxfast.cache.unchanged_prefix_tokens": getattr(cache, "unchanged_prefix", None),
        "ctxfast.cache.cut_moved": getattr(cache, "moved", None),
        "ctxfast.cache.cut": getattr(cache, "cut", None),
        "ctxfast.cache.expected_cost": getattr(cache, "cost", None),
        "ctxfast.cache.profile": getattr(cache, "profile", None),
        "ctxfast.count.exactness": exactness,
        "ctxfast.count_calls": fit.count_calls,
    }


#: ``Fit.provider`` (the adapter's name) as the GenAI conventions' ``gen_ai.provider.name``; the
#: others (``chat``: an open model's template) have no GenAI name and get ``ctxfast.provider`` only.
_GENAI_PROVIDERS = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini"}


def _tokens_before(fit: Any, rows: list[dict[str, Any]], removed: int) -> int:
    """The request's size before any rung ran. Over the ceiling it is exactly ``ceiling +
    over_by`` (the core's own start total); a fit that removed nothing sent it whole; otherwise
    (rungs that ran under the ceiling, e.g. to a cap) the first removal's total before it."""
    if fit.over_by:
        return int(fit.ceiling + fit.over_by)
    if not rows:
        return int(fit.total + removed)
    first = rows[0]
    return int(first["total_after"] + first["removed"])
