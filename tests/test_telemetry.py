"""``ctxfast.telemetry``: the span, the metrics and the log records a serving path reads.

The OpenTelemetry SDK's in-memory exporter and reader receive the spans and metrics (given to
``telemetry.configure``, so no test touches the process's global providers); ``caplog`` the
log records. What a fit emits is content-free: every payload here carries marker words in its
texts, tool names and arguments, and no attribute, metric attribute or log record may hold one.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ctxfast
from ctxfast import Budget, PromptLayer, Segment, Tokenizer, _telemetry_otel, anthropic, chat, gemini, openai, responses, telemetry

#: Words that appear only in the payloads' content: none may reach the telemetry.
MARKERS = ("SECRETWORD", "secret_tool_name", "SECRETARG", "SECRETRESULT", "call_77")


def conversation(exchanges: int, words: int = 100) -> list[dict[str, Any]]:
    """An OpenAI Chat request: a system prompt, ``exchanges`` question/answer pairs, one tool
    round and a last question; about 2 * words tokens an exchange."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You help."}]
    for i in range(exchanges):
        out.append({"role": "user", "content": f"question {i} " + "SECRETWORD " * words})
        out.append({"role": "assistant", "content": "answer " * words})
    out.append({"role": "user", "content": "look it up"})
    out.append({"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_77", "type": "function", "function": {"name": "secret_tool_name", "arguments": '{"q": "SECRETARG"}'},
    }]})
    out.append({"role": "tool", "tool_call_id": "call_77", "content": "SECRETRESULT " * 20})
    return out


TOOLS = [{"type": "function", "function": {"name": "secret_tool_name", "description": "SECRETWORD",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]


class Otel:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def finished(self) -> list[Any]:
        return list(self.spans.get_finished_spans())

    def metrics(self) -> dict[str, list[Any]]:
        """Data points by metric name."""
        out: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data else []:
            for sm in rm.scope_metrics:
                assert sm.scope.name == "ctxfast"
                for m in sm.metrics:
                    out.setdefault(m.name, []).extend(m.data.data_points)
        return out


@pytest.fixture(autouse=True)
def fresh_stats() -> Iterator[None]:
    telemetry.reset_rung_stats()
    telemetry.configure()
    yield
    telemetry.configure()
    telemetry.reset_rung_stats()


@pytest.fixture
def otel() -> Iterator[Otel]:
    o = Otel()
    telemetry.configure(o.tracer_provider, o.meter_provider)
    yield o
    telemetry.configure()
    o.tracer_provider.shutdown()
    o.meter_provider.shutdown()


def no_markers(values: Any) -> None:
    text = repr(values)
    for marker in MARKERS:
        assert marker not in text, (marker, text)


# --------------------------------------------------------------------------------------------
# The span


def test_an_adapter_fit_makes_one_content_free_span_with_its_figures(otel: Otel) -> None:
    messages = conversation(10)
    out, fit = openai.fit_messages(messages, 1500, tools=TOOLS)
    assert fit.rungs_fired and fit.over_by > 0  # the request was over, and a rung trimmed it
    (span,) = otel.finished()
    assert span.name == "ctxfast.fit"
    a = dict(span.attributes)
    no_markers(a)
    assert a["gen_ai.conversation.compacted"] is True
    assert a["gen_ai.provider.name"] == "openai" and a["ctxfast.provider"] == "openai"
    assert a["gen_ai.usage.input_tokens"] == a["ctxfast.tokens.after"] == fit.total
    assert a["ctxfast.tokens.before"] == fit.ceiling + fit.over_by
    assert a["ctxfast.tokens.removed"] == fit.ledger.removed > 0
    assert a["ctxfast.tokens.before"] - a["ctxfast.tokens.removed"] == fit.total
    assert a["ctxfast.tokens.ceiling"] == fit.ceiling == 1500
    assert a["ctxfast.rungs_fired"] == tuple(fit.rungs_fired)
    assert a["ctxfast.units.removed"] == sum(fit.ledger.rung_firings.values()) > 0
    assert (a["ctxfast.items.before"], a["ctxfast.items.after"]) == (len(messages), len(out))
    assert a["ctxfast.count.exactness"] == fit.exactness == "exact"
    assert a["ctxfast.count_calls"] == fit.count_calls
    cache = fit.cache
    assert a["gen_ai.usage.cache_read.input_tokens"] == a["ctxfast.cache.expected_read_tokens"] == cache.read
    assert a["gen_ai.usage.cache_creation.input_tokens"] == a["ctxfast.cache.expected_write_tokens"] == cache.write
    assert a["ctxfast.cache.uncached_tokens"] == cache.uncached
    assert a["ctxfast.cache.unchanged_prefix_tokens"] == cache.unchanged_prefix
    assert a["ctxfast.cache.cut_moved"] is cache.moved
    assert a["ctxfast.cache.profile"] == cache.profile
    # The span covers the fit: it started before and ended after.
    assert span.end_time > span.start_time


def test_a_fit_that_kept_everything_says_it_was_not_compacted(otel: Otel) -> None:
    _, fit = openai.fit_messages(conversation(2), 100_000)
    (span,) = otel.finished()
    a = span.attributes
    assert a["gen_ai.conversation.compacted"] is False
    assert a["ctxfast.tokens.removed"] == 0 and a["ctxfast.units.removed"] == 0
    assert a["ctxfast.tokens.before"] == a["ctxfast.tokens.after"] == fit.total
    assert a["ctxfast.rungs_fired"] == ()


def test_the_span_is_a_child_of_the_callers_span(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("handle request") as parent:
        openai.fit_messages(conversation(3), 100_000)
    fit_span = next(s for s in otel.finished() if s.name == "ctxfast.fit")
    assert fit_span.parent is not None and fit_span.parent.span_id == parent.get_span_context().span_id


def _template() -> str:
    return "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"


ADAPTERS: dict[str, Callable[[list[dict[str, Any]]], tuple[list[Any], Any]]] = {
    "openai fast path": lambda m: openai.fit_messages(m, 1500),
    "openai full reader": lambda m: openai.fit_messages(tuple(m), 1500),  # a tuple: the fast path declines
    "anthropic": lambda m: anthropic.fit_messages(m[0]["content"], _anthropic(m[1:]), 1500),
    "gemini": lambda m: gemini.fit_contents(_gemini(m[1:]), 1500),
    "responses": lambda m: responses.fit_responses(m[1:-3], 1500),
    "chat": lambda m: chat.fit_messages(m[:-3], 1500, template=_template(), tokenizer=Tokenizer.default()),
}
GENAI_NAMES = {"openai fast path": "openai", "openai full reader": "openai", "anthropic": "anthropic",
               "gemini": "gcp.gemini", "responses": "openai", "chat": None}


def _anthropic(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [m for m in messages if m["role"] in ("user", "assistant") and m.get("content")]
    return out[:-1]  # ends with the question: the tool round is OpenAI's shape


def _gemini(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": "user" if m["role"] == "user" else "model", "parts": [{"text": m["content"]}]}
            for m in _anthropic(messages)]


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_every_adapter_is_observed_once(otel: Otel, adapter: str) -> None:
    out, fit = ADAPTERS[adapter](conversation(10))
    spans = otel.finished()
    assert [s.name for s in spans] == ["ctxfast.fit"]
    a = dict(spans[0].attributes)
    no_markers(a)
    assert a["ctxfast.tokens.after"] == fit.total and a["ctxfast.items.after"] == len(out)
    assert a.get("gen_ai.provider.name") == GENAI_NAMES[adapter]
    assert a["ctxfast.provider"] == fit.provider
    assert a["ctxfast.count.exactness"] == fit.exactness
    assert telemetry.rung_stats()[fit.rungs_fired[0]].requests == 1


def test_plain_fit_is_observed_and_keeps_the_cores_face(otel: Otel) -> None:
    fit = ctxfast.fit([Segment("SECRETWORD " * 50, PromptLayer.CONVERSATION), Segment("now")], Budget(30))
    (span,) = otel.finished()
    a = dict(span.attributes)
    no_markers(a)
    assert a["ctxfast.tokens.after"] == fit.total and "ctxfast.items.before" not in a
    assert "gen_ai.provider.name" not in a  # a plain fit names no provider
    # The wrapper is the core's function to help(), the docs and the stubs.
    core = ctxfast._core.fit
    assert ctxfast.fit.__wrapped__ is core
    assert (ctxfast.fit.__name__, ctxfast.fit.__module__, ctxfast.fit.__doc__) == (core.__name__, core.__module__, core.__doc__)


def test_usage_attributes_can_be_left_out(otel: Otel) -> None:
    telemetry.configure(otel.tracer_provider, otel.meter_provider, gen_ai_usage=False)
    openai.fit_messages(conversation(10), 1500)
    a = otel.finished()[0].attributes
    assert not [k for k in a if k.startswith("gen_ai.usage.")]
    assert a["ctxfast.tokens.after"] > 0 and a["ctxfast.cache.expected_read_tokens"] == 0


# --------------------------------------------------------------------------------------------
# The metrics


def test_metrics_count_fits_tokens_and_rung_firings(otel: Otel) -> None:
    fits = [openai.fit_messages(conversation(n), 1500)[1] for n in (10, 12, 1)]
    assert [bool(f.rungs_fired) for f in fits] == [True, True, False]
    m = otel.metrics()
    by_compacted = {p.attributes["gen_ai.conversation.compacted"]: p.value for p in m["ctxfast.fits"]}
    assert by_compacted == {True: 2, False: 1}
    assert all(p.attributes["gen_ai.provider.name"] == "openai" for p in m["ctxfast.fits"])
    assert sum(p.value for p in m["ctxfast.tokens.removed"]) == sum(f.ledger.removed for f in fits)
    assert sum(p.value for p in m["ctxfast.units.removed"]) == sum(sum(f.ledger.rung_firings.values()) for f in fits)
    firings = {p.attributes["ctxfast.rung"]: p.value for p in m["ctxfast.rung.firings"]}
    assert firings == {fits[0].rungs_fired[0]: 2}  # fits, not units: one each
    (after,) = m["ctxfast.tokens.after"]
    assert (after.count, after.sum) == (3, sum(f.total for f in fits))
    (before,) = m["ctxfast.tokens.before"]
    assert before.sum == sum(f.total + f.ledger.removed for f in fits)
    assert sum(p.count for p in m["ctxfast.fit.duration"]) == 3
    assert all(p.sum > 0 for p in m["ctxfast.fit.duration"])
    assert sum(p.count for p in m["ctxfast.cache.expected_read_tokens"]) == 3
    for points in m.values():
        no_markers([p.attributes for p in points])


# --------------------------------------------------------------------------------------------
# Nothing listens


def test_nothing_is_emitted_or_built_when_nothing_listens(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from opentelemetry import metrics, trace

    # The process's global providers are the API's defaults: nobody listens.
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
    assert type(metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider"

    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("built or emitted with nothing listening")

    monkeypatch.setattr(telemetry, "_figures", fail)
    monkeypatch.setattr(_telemetry_otel.Sink, "emit", fail)
    caplog.set_level(logging.INFO, logger="ctxfast")
    assert telemetry.now() is None and _telemetry_otel.sink() is None
    _, fit = openai.fit_messages(conversation(10), 1500)
    ctxfast.fit([Segment("a b c")], Budget(100))
    assert fit.rungs_fired
    assert telemetry.rung_stats()[fit.rungs_fired[0]].requests == 2  # the stats are kept anyway
    assert not [r for r in caplog.records if r.levelno == logging.DEBUG]


def test_enabled_false_turns_opentelemetry_off(otel: Otel) -> None:
    telemetry.configure(otel.tracer_provider, otel.meter_provider, enabled=False)
    openai.fit_messages(conversation(10), 1500)
    assert otel.finished() == [] and otel.metrics() == {}


def test_global_providers_are_found_once_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's providers are asked at most once per RECHECK seconds while they are defaults,
    and used once real (here the getters are patched: a process sets its globals only once)."""
    from opentelemetry import metrics, trace

    o = Otel()
    monkeypatch.setattr(_telemetry_otel, "RECHECK", 3600.0)
    telemetry.configure()
    openai.fit_messages(conversation(2), 100_000)  # looks, finds the defaults
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: o.tracer_provider)
    monkeypatch.setattr(metrics, "get_meter_provider", lambda: o.meter_provider)
    openai.fit_messages(conversation(2), 100_000)
    assert o.finished() == []  # not asked again yet
    monkeypatch.setattr(_telemetry_otel, "_next_check", 0.0)
    openai.fit_messages(conversation(2), 100_000)
    assert [s.name for s in o.finished()] == ["ctxfast.fit"]
    assert _telemetry_otel._settled  # both real: never asked again
    assert sum(p.value for p in o.metrics()["ctxfast.fits"]) == 1


def test_without_opentelemetry_fits_log_and_count(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # `import opentelemetry` now fails
    monkeypatch.setattr(_telemetry_otel, "_api", None)
    telemetry.configure()
    caplog.set_level(logging.DEBUG, logger="ctxfast")
    _, fit = openai.fit_messages(conversation(10), 1500)
    assert _telemetry_otel._api is False and _telemetry_otel.sink() is None and telemetry.now() is None
    assert [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert telemetry.rung_stats()[fit.rungs_fired[0]].fired == 1


def test_import_ctxfast_does_not_import_opentelemetry() -> None:
    code = ("import sys, ctxfast, ctxfast.openai; assert 'opentelemetry' not in sys.modules, 'imported'; "
            "sys.modules['opentelemetry'] = None; ctxfast.fit([ctxfast.Segment('a')], ctxfast.Budget(10)); "
            "assert ctxfast.telemetry.rung_stats() == {}; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.strip() == "ok", done.stderr


def test_an_application_without_logging_configured_sees_nothing_on_stderr() -> None:
    # A WARNING-worthy traffic (a rung acting on every request) with no logging configured: the
    # library's records go nowhere, where Python's last-resort handler would print them.
    code = ("import ctxfast; from ctxfast import openai\n"
            "m = [{'role': 'user', 'content': 'q ' * 300}, {'role': 'assistant', 'content': 'a ' * 300}] * 20\n"
            "m.append({'role': 'user', 'content': 'now?'})\n"
            "for _ in range(40): openai.fit_messages(m, 2000)\n"
            "assert any(s.fired > 30 for s in ctxfast.telemetry.rung_stats().values())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_a_failing_exporter_never_fails_the_fit(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def get_tracer(self, *args: Any, **kwargs: Any) -> Broken:
            return self

        def start_span(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("exporter down")

    telemetry.configure(tracer_provider=Broken())
    caplog.set_level(logging.WARNING, logger="ctxfast")
    for _ in range(3):
        out, _fit = openai.fit_messages(conversation(3), 100_000)
        assert out
    warnings = [r for r in caplog.records if "OpenTelemetry failed" in r.getMessage()]
    assert len(warnings) == 1


# --------------------------------------------------------------------------------------------
# Log records


def test_one_content_free_debug_record_per_fit(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="ctxfast")
    _, fit = openai.fit_messages(conversation(10), 1500, tools=TOOLS)
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.name == "ctxfast"]
    assert len(debug) == 1
    record = debug[0]
    assert f"-> {fit.total} tokens under a ceiling of 1500" in record.getMessage()
    assert fit.rungs_fired[0] in record.getMessage()
    fields = record.__dict__
    assert fields["ctxfast.tokens.after"] == fit.total and fields["ctxfast.tokens.removed"] == fit.ledger.removed
    assert fields["ctxfast.rungs_fired"] == fit.rungs_fired and fields["gen_ai.provider.name"] == "openai"
    no_markers([record.getMessage(), {k: v for k, v in fields.items() if k.startswith(("ctxfast.", "gen_ai."))}])
    # The INFO line the adapters always logged is still there, once.
    assert len([r for r in caplog.records if r.levelno == logging.INFO]) == 1


def test_a_rung_firing_on_most_requests_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ctxfast")
    rung = ""
    for _ in range(telemetry.BUSY_MIN_REQUESTS - 1):
        rung = openai.fit_messages(conversation(10), 1500)[1].rungs_fired[0]
    assert not caplog.records  # 19 requests: too few to say
    for _ in range(30):
        openai.fit_messages(conversation(10), 1500)
    busy = [r for r in caplog.records if "undersized" in r.getMessage()]
    assert len(busy) == 1, [r.getMessage() for r in busy]  # once per WARN_INTERVAL, not per request
    assert f"rung {rung} acted on 20 of the last 20 requests (100%)" in busy[0].getMessage()
    assert busy[0].__dict__["ctxfast.rung.share"] == 1.0
    telemetry.reset_rung_stats()  # a reset lets it warn again
    for _ in range(telemetry.BUSY_MIN_REQUESTS):
        openai.fit_messages(conversation(10), 1500)
    assert len([r for r in caplog.records if "undersized" in r.getMessage()]) == 2


def test_a_rung_firing_on_a_minority_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ctxfast")
    for i in range(40):
        openai.fit_messages(conversation(10 if i % 5 < 2 else 1), 1500)  # 40% fire
    assert not [r for r in caplog.records if "undersized" in r.getMessage()]
    (stats,) = telemetry.rung_stats().values()
    assert (stats.requests, stats.fired, stats.share) == (40, 16, 0.4)


def test_an_estimate_near_the_ceiling_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ctxfast")
    estimate = Tokenizer.approximate()
    roomy = ctxfast.fit([Segment("word " * 40)], Budget(1000), tokenizer=estimate)
    exact = ctxfast.fit([Segment("word " * 40)], Budget(41))
    assert roomy.exactness == "estimate" and exact.exactness == "exact" and exact.total >= 0.95 * exact.ceiling
    assert not caplog.records  # far from the ceiling, or exact
    near = ctxfast.fit([Segment("word " * 40)], Budget(51), tokenizer=estimate)
    assert near.exactness == "estimate" and near.total >= 0.95 * near.ceiling
    ctxfast.fit([Segment("word " * 40)], Budget(51), tokenizer=estimate)  # within WARN_INTERVAL: quiet
    (warning,) = caplog.records
    assert warning.levelno == logging.WARNING
    assert f"an estimated count of {near.total} tokens is within 5% of the ceiling of 51" in warning.getMessage()


# --------------------------------------------------------------------------------------------
# Rung stats across requests


def test_rung_stats_count_requests_not_units() -> None:
    fits = [openai.fit_messages(conversation(10 if i < 4 else 1), 1500)[1] for i in range(10)]
    rung = fits[0].rungs_fired[0]
    assert fits[0].ledger.rung_firings[rung] > 1  # the ledger counts units...
    stats = telemetry.rung_stats()
    assert stats == {rung: telemetry.RungStats(10, 4, 0.4, sum(f.ledger.rung_firings.get(rung, 0) for f in fits))}
    assert telemetry.rung_stats() == stats  # reading does not count a request
    telemetry.reset_rung_stats()
    assert telemetry.rung_stats() == {}
    openai.fit_messages(conversation(10), 1500)
    assert telemetry.rung_stats()[rung][:3] == (1, 1, 1.0)


def test_rung_stats_are_exact_across_threads() -> None:
    segments = [Segment("word " * 30, PromptLayer.CONVERSATION), Segment("now", PromptLayer.CURRENT_TURN)]

    def work(n: int) -> None:
        for i in range(50):
            ctxfast.fit(segments, Budget(10 if i % 2 else 1000))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (stats,) = telemetry.rung_stats().values()
    assert (stats.requests, stats.fired) == (400, 200)


def test_rung_stats_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "MAX_RUNGS", 2)
    class Fake:
        total, ceiling, over_by, count_calls = 1, 10, 0, 1

        def __init__(self, rung: str) -> None:
            self.rungs_fired = [rung]
            self.ledger = type("L", (), {"rung_firings": {rung: 1}, "removed": 0})()

    for name in ("a", "b", "c", "a"):
        telemetry.observe(Fake(name))
    assert {k: (v.requests, v.fired) for k, v in telemetry.rung_stats().items()} == {"a": (4, 2), "b": (4, 1)}
