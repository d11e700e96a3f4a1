//! What `fit` returns to Python: `Fit` with its `Eviction`s, `Truncation`s, `Trace` and
//! `FitLedger`. `outcome_build` makes one from the core's outcome; the segments it names are
//! the caller's own objects, or (for the adapters' columnar entry) made only when asked for.

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList};

use super::cache_plan::CacheReport;
use super::layer::PromptLayer;
use super::outcome_build::{Originals, SegRef};
use super::segment::Segment;
use crate::engine::cache::Sent;
use crate::engine::{self, Layer};

/// A segment that left the request in a `fit`, from `Fit.evicted`.
#[pyclass(frozen, module = "ctxfast._core", name = "Eviction", get_all)]
pub struct Eviction {
    /// The segment exactly as it was given: nothing is lost.
    pub(super) segment: Py<Segment>,
    /// The name of the rung that took it.
    pub(super) rung: String,
    /// The rung's position in `Policy.rung_names`, from 0.
    pub(super) rung_index: usize,
    /// Its token count when it left (after any truncation).
    pub(super) tokens: usize,
    /// `"drop"`, or `"digest"` when it was folded into a digest record that is sent in its
    /// place.
    pub(super) action: &'static str,
}

#[pymethods]
impl Eviction {
    fn __repr__(&self, py: Python<'_>) -> String {
        let seg = self.segment.bind(py).repr().map(|r| r.to_string()).unwrap_or_default();
        format!("Eviction({seg}, rung={:?}, tokens={}, action={:?})", self.rung, self.tokens, self.action)
    }
}

/// A body a `truncate` rung shortened and that is still sent, from `Fit.truncated`.
#[pyclass(frozen, module = "ctxfast._core", name = "Truncation", get_all)]
pub struct Truncation {
    /// The segment as it was given.
    pub(super) original: Py<Segment>,
    /// The shortened segment, as sent (it is also in `Fit.kept`): the original's fields and
    /// `meta` with the new text.
    pub(super) segment: Py<Segment>,
    /// The name of the rung that shortened it.
    pub(super) rung: String,
    /// Its token count before the rung shortened it.
    pub(super) tokens_before: usize,
    /// Its token count as sent.
    pub(super) tokens_after: usize,
}

#[pymethods]
impl Truncation {
    fn __repr__(&self) -> String {
        format!("Truncation(rung={:?}, tokens {} -> {})", self.rung, self.tokens_before, self.tokens_after)
    }
}

/// The eviction trace of a `fit`: what a reviewer reads to see why a request looks the way
/// it does. `str(trace)` renders it, the same text as `Fit.explain()`.
#[pyclass(frozen, module = "ctxfast._core", name = "Trace")]
pub struct Trace {
    pub inner: engine::trace::Trace,
}

#[pymethods]
impl Trace {
    fn __str__(&self) -> String {
        self.inner.render()
    }
    fn __repr__(&self) -> String {
        self.inner.render()
    }
    /// One dict per removal, rung by rung in the order the rungs ran.
    #[getter]
    fn rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for s in &self.inner.sections {
            for r in &s.rows {
                let d = PyDict::new(py);
                d.set_item("rung", &s.name)?;
                d.set_item("label", r.label.as_str())?;
                d.set_item("action", r.action)?;
                d.set_item("removed", r.delta)?;
                d.set_item("layer", &*r.layer)?;
                d.set_item("layer_after", r.layer_after)?;
                d.set_item("total_after", r.total_after)?;
                d.set_item("over_after", r.over_after)?;
                out.append(d)?;
            }
        }
        Ok(out)
    }
    /// `[(label, tokens), ...]`: each layer's size before any rung ran, in a fixed order (system,
    /// tools, pinned, retrieved, summary, conversation, tool_result, current_turn). Layers that
    /// share a display label are summed under it.
    #[getter]
    fn start(&self) -> Vec<(String, usize)> {
        self.inner.start_layers.clone()
    }
}

/// Where a fit's removed tokens went, for metrics.
#[pyclass(frozen, module = "ctxfast._core", name = "FitLedger", get_all)]
pub struct FitLedger {
    /// Tokens of dropped segments that were `recoverable`.
    pub(super) evicted_recoverable: usize,
    /// Tokens of dropped segments that were not `recoverable` (dropped digest records count
    /// here).
    pub(super) evicted_dispensable: usize,
    /// Tokens that truncation cut from bodies.
    pub(super) truncated: usize,
    /// Tokens the digests saved: their exchanges' tokens less the records' own.
    pub(super) digested: usize,
    /// Rows (units acted on) per rung name, for the rungs that fired.
    pub(super) rung_firings: HashMap<String, usize>,
}

#[pymethods]
impl FitLedger {
    /// Every token taken out of the request, whichever way: the sum of the four above.
    #[getter]
    fn removed(&self) -> usize {
        self.evicted_recoverable + self.evicted_dispensable + self.truncated + self.digested
    }
    fn __repr__(&self) -> String {
        format!(
            "FitLedger(evicted_recoverable={}, evicted_dispensable={}, truncated={}, digested={})",
            self.evicted_recoverable, self.evicted_dispensable, self.truncated, self.digested
        )
    }
}

/// A removal, kept as plain data until someone asks for `Fit.evicted`: most callers only send
/// `kept`, and building thousands of Python objects per fit would cost more than the ladder.
pub(super) struct Removed {
    pub segment: SegRef,
    pub rung: usize,
    pub tokens: usize,
    pub action: &'static str,
}

/// A truncation, as plain data until `Fit.truncated` is read.
pub(super) struct Shortened {
    pub index: usize,
    /// The copy that is sent, when it is still sent (a truncated body a later rung dropped is
    /// an eviction, and its truncation names the original).
    pub sent: Option<Py<Segment>>,
    pub rung: String,
    pub before: usize,
    pub after: usize,
}

/// The result of `fit`: what to send, what left, and the trace that explains it.
#[pyclass(frozen, module = "ctxfast._core", name = "Fit")]
pub struct Fit {
    pub(super) originals: Originals,
    pub(super) kept: Vec<SegRef>,
    pub(super) removed: Vec<Removed>,
    pub(super) rung_names: Vec<String>,
    pub(super) evicted: PyOnceLock<Vec<Py<Eviction>>>,
    pub(super) shortened: Vec<Shortened>,
    pub(super) truncated: PyOnceLock<Vec<Py<Truncation>>>,
    /// The authoritative token count of what is sent.
    #[pyo3(get)]
    pub(super) total: usize,
    /// `window - reserve`: the most input tokens allowed.
    #[pyo3(get)]
    pub(super) ceiling: usize,
    /// How far over the ceiling the request was before any rung ran; 0 if it fitted.
    #[pyo3(get)]
    pub(super) over_by: usize,
    pub(super) cap_overruns: Vec<(Layer, usize)>,
    pub(super) trace: Py<Trace>,
    /// Names of the rungs that acted, in the order they first did.
    #[pyo3(get)]
    pub(super) rungs_fired: Vec<String>,
    /// How many authoritative counts the fit made, however many rungs fired.
    #[pyo3(get)]
    pub(super) count_calls: usize,
    pub(super) ledger: Py<FitLedger>,
    /// The rendered prompt that is sent, for a fit by a chat template (`chat.fit_messages`).
    pub(super) prompt: Option<String>,
    /// What was sent, as the next turn's `previous=` compares it.
    pub(super) sent: Arc<Sent>,
    pub(super) cache: Py<CacheReport>,
    pub(super) exactness: String,
    pub(super) provider: Option<String>,
}

impl Fit {
    fn segment(&self, py: Python<'_>, r: &SegRef) -> PyResult<Py<Segment>> {
        match r {
            SegRef::Original(i) => self.originals.get(py, *i),
            SegRef::Made(s) => Ok(s.clone_ref(py)),
        }
    }
}

#[pymethods]
impl Fit {
    /// What to send, in input order.
    #[getter]
    fn kept(&self, py: Python<'_>) -> PyResult<Vec<Py<Segment>>> {
        self.kept.iter().map(|r| self.segment(py, r)).collect()
    }
    /// What left, one entry per segment, in removal order (the trace's order).
    #[getter]
    fn evicted(&self, py: Python<'_>) -> PyResult<Vec<Py<Eviction>>> {
        let built = self.evicted.get_or_try_init(py, || {
            self.removed
                .iter()
                .map(|r| {
                    Py::new(
                        py,
                        Eviction {
                            segment: self.segment(py, &r.segment)?,
                            rung: self.rung_names.get(r.rung).cloned().unwrap_or_default(),
                            rung_index: r.rung,
                            tokens: r.tokens,
                            action: r.action,
                        },
                    )
                })
                .collect::<PyResult<Vec<_>>>()
        })?;
        Ok(built.iter().map(|e| e.clone_ref(py)).collect())
    }
    /// Bodies that were shortened and are still sent. A body that is truncated and then dropped
    /// by a later rung is an eviction, not a truncation.
    #[getter]
    fn truncated(&self, py: Python<'_>) -> PyResult<Vec<Py<Truncation>>> {
        let built = self.truncated.get_or_try_init(py, || {
            self.shortened
                .iter()
                .map(|t| {
                    let original = self.originals.get(py, t.index)?;
                    let segment = match &t.sent {
                        Some(s) => s.clone_ref(py),
                        None => original.clone_ref(py),
                    };
                    let (rung, tokens_before, tokens_after) = (t.rung.clone(), t.before, t.after);
                    Py::new(py, Truncation { original, segment, rung, tokens_before, tokens_after })
                })
                .collect::<PyResult<Vec<_>>>()
        })?;
        Ok(built.iter().map(|e| e.clone_ref(py)).collect())
    }
    /// `ceiling - total`: room left for input.
    #[getter]
    fn spare(&self) -> usize {
        self.ceiling.saturating_sub(self.total)
    }
    /// `{layer: tokens over its cap}` for each capped layer that started over its `Budget` cap.
    /// Caps are reported, never enforced, unless a rung says `until = "cap"`.
    #[getter]
    fn cap_overruns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (l, n) in &self.cap_overruns {
            d.set_item(PromptLayer::from(*l), n)?;
        }
        Ok(d)
    }
    /// The eviction trace; `explain()` renders it.
    #[getter]
    fn trace(&self, py: Python<'_>) -> Py<Trace> {
        self.trace.clone_ref(py)
    }
    /// The prompt as the chat template rendered it, whose count is `total`
    /// (`chat.fit_messages`); None for the other fits.
    #[getter]
    fn prompt(&self) -> Option<&str> {
        self.prompt.as_deref()
    }
    /// What the provider's prompt cache is predicted to do with this request, against the
    /// previous one when `previous=` was given.
    #[getter]
    fn cache(&self, py: Python<'_>) -> Py<CacheReport> {
        self.cache.clone_ref(py)
    }
    /// How `total` was counted: `"exact"` (the provider's tokenizer and framing), `"estimate"`
    /// (Anthropic, Gemini, `Tokenizer.approximate`) or `"calibrated"` (an estimate corrected by a
    /// `Calibration` learnt from the provider's reported usage).
    #[getter]
    fn exactness(&self) -> &str {
        &self.exactness
    }
    /// The adapter that made the fit (`"openai"`, `"openai-responses"`, `"anthropic"`,
    /// `"gemini"`, `"chat"`); None for `ctxfast.fit` and `ContextWindow`.
    #[getter]
    fn provider(&self) -> Option<&str> {
        self.provider.as_deref()
    }
    /// Compares this fit with the usage the provider reported for the request it sent.
    ///
    /// - usage: `prompt_tokens`, `input_tokens` and its cache fields, `promptTokenCount`, as a
    ///   dict, an SDK object or the whole response.
    /// - calibration: a `ctxfast.Calibration` to teach; None to only compare.
    ///
    /// Returns a `ctxfast.CalibrationResult`: the difference, and whether the server silently
    /// truncated the request.
    #[pyo3(signature = (usage, calibration=None))]
    fn calibrate<'py>(
        slf: &Bound<'py, Self>,
        usage: &Bound<'py, PyAny>,
        calibration: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let module = slf.py().import("ctxfast.calibration")?;
        module.getattr("calibrate")?.call1((slf, usage, calibration))
    }
    /// Where the removed tokens went.
    #[getter]
    fn ledger(&self, py: Python<'_>) -> Py<FitLedger> {
        self.ledger.clone_ref(py)
    }
    /// The kept texts, in order.
    fn texts(&self, py: Python<'_>) -> Vec<String> {
        let text = |r: &SegRef| match r {
            SegRef::Original(i) => self.originals.text(py, *i),
            SegRef::Made(s) => s.bind(py).get().data.text.clone(),
        };
        self.kept.iter().map(text).collect()
    }
    /// The trace, rendered for a reviewer.
    fn explain(&self, py: Python<'_>) -> String {
        self.trace.bind(py).get().inner.render()
    }
    fn __repr__(&self) -> String {
        format!(
            "Fit(total={}, ceiling={}, kept={}, evicted={}, truncated={}, count_calls={})",
            self.total,
            self.ceiling,
            self.kept.len(),
            self.removed.len(),
            self.shortened.len(),
            self.count_calls
        )
    }
}
