"""The OpenTelemetry half of ``ctxfast.telemetry``: finding out whether anyone listens, cheaply,
and emitting one ``ctxfast.fit`` span and its metrics when someone does.

``opentelemetry-api`` is optional (the ``otel`` extra) and is imported on the first fit, never
at ``import ctxfast``. Without it, or without a real provider, nothing is built or emitted.

Whether anyone listens is the question every fit asks, so it must cost next to nothing:

- ``opentelemetry`` not importable, or ``configure(enabled=False)``: settled for good, a check
  is two global reads.
- Installed, but the global providers are still the API's defaults (the proxy or no-op ones):
  nobody listens. Asking the API costs about 1 µs per provider (it reads ``os.environ`` each
  time), so the answer is re-checked at most once per ``RECHECK`` seconds; an application that
  sets its providers after its first fits is picked up within that time.
- Both global providers are real: the tracer and the instruments are built once and the
  answer is settled (the API lets a process set its global providers only once).
- ``configure(tracer_provider=..., meter_provider=...)``: those providers, settled at once
  (tests, and applications that keep their providers out of the globals).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

log = logging.getLogger("ctxfast")

#: Seconds between two looks at the global providers while they are the API's defaults.
RECHECK = 1.0

#: Bucket boundaries for the token histograms (powers of two, 256 to 2M: a request's size spans
#: three orders of magnitude) and for the duration one (seconds, 50 µs to 2.5 s). Given as the
#: API's advisory boundaries (opentelemetry-api >= 1.23); a view the application sets wins.
TOKEN_BUCKETS = [0.0] + [float(2**k) for k in range(8, 22)]
DURATION_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5]

# The state, as module globals (the hot path reads two of them). `_sink` is what emits, or None;
# `_settled` says `_sink` will not change until `configure` is called again.
_api: Any = None  # (trace, metrics) modules once imported; False when they cannot be
_sink: Sink | None = None
_settled = False
_next_check = 0.0
_override: tuple[Any, Any] | None = None
_enabled = True
_usage = True
_failed = False


def sink() -> Sink | None:
    """The sink to emit to, or None when nothing listens (see the module docstring)."""
    global _next_check
    if _settled:
        return _sink
    now = time.monotonic()
    if now < _next_check:
        return _sink
    _next_check = now + RECHECK
    _resolve()
    return _sink


def configure(tracer_provider: Any = None, meter_provider: Any = None, *, enabled: bool = True,
              gen_ai_usage: bool = True) -> None:
    """See ``ctxfast.telemetry.configure``."""
    global _override, _enabled, _usage, _settled, _next_check, _sink, _failed
    _override = (tracer_provider, meter_provider) if tracer_provider is not None or meter_provider is not None else None
    _enabled, _usage = bool(enabled), bool(gen_ai_usage)
    _sink, _settled, _next_check, _failed = None, False, 0.0, False


def _import() -> Any:
    """``(trace, metrics)`` from opentelemetry-api, or False when it is not installed."""
    global _api
    if _api is None:
        try:
            from opentelemetry import metrics, trace
        except ImportError:  # also a module set to None in sys.modules
            _api = False
        else:
            _api = (trace, metrics)
    return _api


def _resolve() -> None:
    global _sink, _settled
    api: Any = _import() if _enabled else False
    if not api:
        _sink, _settled = None, True
        return
    trace, metrics = api
    if _override is not None:
        tracer_provider, meter_provider = _override
        _sink, _settled = Sink(tracer_provider, meter_provider, _usage, api), True
        return
    tracer_provider = trace.get_tracer_provider()
    meter_provider = metrics.get_meter_provider()
    tracer_provider = None if _default_tracer_provider(tracer_provider, trace) else tracer_provider
    meter_provider = None if _default_meter_provider(meter_provider, metrics) else meter_provider
    if tracer_provider is None and meter_provider is None:
        _sink = None
        return
    if _sink is None or (_sink.tracer_provider, _sink.meter_provider) != (tracer_provider, meter_provider):
        _sink = Sink(tracer_provider, meter_provider, _usage, api)
    _settled = tracer_provider is not None and meter_provider is not None


def _default_tracer_provider(provider: Any, trace: Any) -> bool:
    return isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def _default_meter_provider(provider: Any, metrics: Any) -> bool:
    # The proxy meter provider is private in the API: known by its class name.
    return isinstance(provider, metrics.NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider"


class Sink:
    """A tracer and the instruments, built once per pair of providers."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, usage: bool, api: Any) -> None:
        from ctxfast._core import __version__

        self.tracer_provider, self.meter_provider, self.usage = tracer_provider, meter_provider, usage
        self.tracer = tracer_provider.get_tracer("ctxfast", __version__) if tracer_provider is not None else None
        self.kind = api[0].SpanKind.INTERNAL
        self.meters: dict[str, Any] = {}
        if meter_provider is None:
            return
        meter = meter_provider.get_meter("ctxfast", __version__)
        for name, unit, what in COUNTERS:
            self.meters[name] = meter.create_counter(name, unit=unit, description=what)
        for name, unit, what in HISTOGRAMS:
            self.meters[name] = _histogram(meter, name, unit, what)

    def emit(self, figures: Mapping[str, Any], started_ns: int | None) -> None:
        """One span and the metrics for one fit; a failure here is logged once, never raised (a
        fit's telemetry must not fail the request)."""
        global _failed
        try:
            self._emit(figures, started_ns)
        except Exception:
            if not _failed:
                _failed = True
                log.warning("ctxfast telemetry: emitting to OpenTelemetry failed; later failures are not logged",
                            exc_info=True)

    def _emit(self, figures: Mapping[str, Any], started_ns: int | None) -> None:
        ended = time.time_ns()
        if self.tracer is not None:
            attributes = {k: _value(v) for k, v in figures.items() if v is not None and (self.usage or k not in USAGE)}
            span = self.tracer.start_span("ctxfast.fit", kind=self.kind, attributes=attributes,
                                          start_time=started_ns if started_ns is not None else ended)
            span.end(end_time=ended)
        if not self.meters:
            return
        common = {k: figures[k] for k in METRIC_ATTRIBUTES if figures.get(k) is not None}
        fitted = {**common, "gen_ai.conversation.compacted": figures["gen_ai.conversation.compacted"]}
        m = self.meters
        m["ctxfast.fits"].add(1, fitted)
        m["ctxfast.tokens.removed"].add(figures["ctxfast.tokens.removed"], common)
        m["ctxfast.units.removed"].add(figures["ctxfast.units.removed"], common)
        for rung in figures["ctxfast.rungs_fired"]:
            m["ctxfast.rung.firings"].add(1, {**common, "ctxfast.rung": rung})
        m["ctxfast.tokens.before"].record(figures["ctxfast.tokens.before"], common)
        m["ctxfast.tokens.after"].record(figures["ctxfast.tokens.after"], common)
        for name in ("ctxfast.cache.expected_read_tokens", "ctxfast.cache.expected_write_tokens"):
            if figures.get(name) is not None:
                m[name].record(figures[name], common)
        if started_ns is not None:
            m["ctxfast.fit.duration"].record(max(ended - started_ns, 0) / 1e9, fitted)


def _value(v: Any) -> Any:
    # OTel attribute values are scalars or homogeneous sequences: the rung list as a tuple.
    return tuple(v) if isinstance(v, Sequence) and not isinstance(v, str) else v


def _histogram(meter: Any, name: str, unit: str, what: str) -> Any:
    buckets = DURATION_BUCKETS if unit == "s" else TOKEN_BUCKETS
    try:
        return meter.create_histogram(name, unit=unit, description=what, explicit_bucket_boundaries_advisory=buckets)
    except TypeError:  # opentelemetry-api < 1.23 has no advisory boundaries
        return meter.create_histogram(name, unit=unit, description=what)


#: The span attributes in the GenAI conventions' usage namespace: predictions here, which a
#: backend that sums usage over all spans would add to the provider client's actual figures
#: (``configure(gen_ai_usage=False)`` leaves them out).
USAGE = frozenset({
    "gen_ai.usage.input_tokens", "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens",
})

#: The span attributes that metrics carry too: low-cardinality ones only.
METRIC_ATTRIBUTES = ("gen_ai.provider.name", "ctxfast.provider", "ctxfast.count.exactness")

#: ``(name, unit, description)`` of each counter and histogram (the README lists the same).
COUNTERS = (
    ("ctxfast.fits", "{fit}", "Fits made"),
    ("ctxfast.tokens.removed", "{token}", "Tokens the fits took out of their requests"),
    ("ctxfast.units.removed", "{unit}", "Eviction units (exchanges, tool rounds, segments) dropped or digested"),
    ("ctxfast.rung.firings", "{firing}", "Fits in which a rung acted, by rung (ctxfast.rung)"),
)
HISTOGRAMS = (
    ("ctxfast.tokens.before", "{token}", "A request's tokens before any rung ran"),
    ("ctxfast.tokens.after", "{token}", "A request's tokens as sent"),
    ("ctxfast.cache.expected_read_tokens", "{token}", "Tokens the provider's prompt cache is predicted to read"),
    ("ctxfast.cache.expected_write_tokens", "{token}", "Tokens the provider's prompt cache is predicted to write"),
    ("ctxfast.fit.duration", "s", "Time a fit took, when its entry point measured it"),
)
