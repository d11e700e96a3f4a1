//! What `fit` returns to Python: `Fit` with its `Eviction`s, `Truncation`s, `Trace` and
//! `FitLedger`, built from the core's outcome around the caller's own segment objects.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::layer::PromptLayer;
use super::segment::Segment;
use crate::engine::{self, FitOutcome, Kept, Layer, SegmentData, Target};

/// A segment that left the request in a `fit`, from `Fit.evicted`.
#[pyclass(frozen, module = "ctxfast._core", name = "Eviction", get_all)]
pub struct Eviction {
    /// The segment exactly as it was given: nothing is lost.
    segment: Py<Segment>,
    /// The name of the rung that took it.
    rung: String,
    /// The rung's position in `Policy.rung_names`, from 0.
    rung_index: usize,
    /// Its token count when it left (after any truncation).
    tokens: usize,
    /// `"drop"`, or `"digest"` when it was folded into a digest record that is sent in its
    /// place.
    action: &'static str,
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
    original: Py<Segment>,
    /// The shortened segment, as sent (it is also in `Fit.kept`): the original's fields and
    /// `meta` with the new text.
    segment: Py<Segment>,
    /// The name of the rung that shortened it.
    rung: String,
    /// Its token count before the rung shortened it.
    tokens_before: usize,
    /// Its token count as sent.
    tokens_after: usize,
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
                d.set_item("label", &r.label)?;
                d.set_item("action", r.action)?;
                d.set_item("removed", r.delta)?;
                d.set_item("layer", &r.layer)?;
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
    evicted_recoverable: usize,
    /// Tokens of dropped segments that were not `recoverable` (dropped digest records count
    /// here).
    evicted_dispensable: usize,
    /// Tokens that truncation cut from bodies.
    truncated: usize,
    /// Tokens the digests saved: their exchanges' tokens less the records' own.
    digested: usize,
    /// Rows (units acted on) per rung name, for the rungs that fired.
    rung_firings: HashMap<String, usize>,
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
struct Removed {
    segment: Py<Segment>,
    rung: usize,
    tokens: usize,
    action: &'static str,
}

/// The result of `fit`: what to send, what left, and the trace that explains it.
#[pyclass(frozen, module = "ctxfast._core", name = "Fit")]
pub struct Fit {
    kept: Vec<Py<Segment>>,
    removed: Vec<Removed>,
    rung_names: Vec<String>,
    evicted: pyo3::sync::PyOnceLock<Vec<Py<Eviction>>>,
    truncated: Vec<Py<Truncation>>,
    /// The authoritative token count of what is sent.
    #[pyo3(get)]
    total: usize,
    /// `window - reserve`: the most input tokens allowed.
    #[pyo3(get)]
    ceiling: usize,
    /// How far over the ceiling the request was before any rung ran; 0 if it fitted.
    #[pyo3(get)]
    over_by: usize,
    cap_overruns: Vec<(Layer, usize)>,
    trace: Py<Trace>,
    /// Names of the rungs that acted, in the order they first did.
    #[pyo3(get)]
    rungs_fired: Vec<String>,
    /// How many authoritative counts the fit made, however many rungs fired.
    #[pyo3(get)]
    count_calls: usize,
    ledger: Py<FitLedger>,
}

#[pymethods]
impl Fit {
    /// What to send, in input order.
    #[getter]
    fn kept(&self, py: Python<'_>) -> Vec<Py<Segment>> {
        self.kept.iter().map(|s| s.clone_ref(py)).collect()
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
                            segment: r.segment.clone_ref(py),
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
    fn truncated(&self, py: Python<'_>) -> Vec<Py<Truncation>> {
        self.truncated.iter().map(|s| s.clone_ref(py)).collect()
    }
    /// `ceiling - total`: room left for input.
    #[getter]
    fn spare(&self) -> usize {
        self.ceiling - self.total
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
    /// Where the removed tokens went.
    #[getter]
    fn ledger(&self, py: Python<'_>) -> Py<FitLedger> {
        self.ledger.clone_ref(py)
    }
    /// The kept texts, in order.
    fn texts(&self, py: Python<'_>) -> Vec<String> {
        self.kept.iter().map(|s| s.bind(py).get().data.text.clone()).collect()
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
            self.truncated.len(),
            self.count_calls
        )
    }
}

/// Turns the core's outcome into Python objects, reusing the caller's segment objects.
pub fn build_fit(
    py: Python<'_>,
    segs: &[Bound<'_, Segment>],
    policy: &engine::Policy,
    counter_id: u64,
    out: FitOutcome,
) -> PyResult<Fit> {
    let rung_name = |r: usize| policy.rungs.get(r).map(|x| x.name.clone()).unwrap_or_default();
    let mut shortened: HashMap<usize, Py<Segment>> = HashMap::new();
    let mut digests: Vec<Py<Segment>> = Vec::new();
    for rec in &out.digests {
        let first = segs[rec.members[0]].get();
        let mut data = SegmentData::new(rec.text.clone(), rec.layer);
        data.group = first.data.group.clone();
        let meta = PyDict::new(py);
        let keys: Vec<Option<String>> = rec.members.iter().map(|&m| segs[m].get().data.key.clone()).collect();
        meta.set_item("digest_of", keys)?;
        meta.set_item("rung", rung_name(rec.rung))?;
        digests.push(Py::new(py, Segment::with_count(data, Some(meta.into_any().unbind()), counter_id, rec.tokens))?);
    }
    let mut kept = Vec::with_capacity(out.kept.len());
    for k in &out.kept {
        kept.push(match k {
            Kept::Original(i) => segs[*i].clone().unbind(),
            Kept::Truncated { index, text, tokens } => {
                let orig = segs[*index].get();
                let mut data = (*orig.data).clone();
                data.text = text.clone();
                // A caller-given count covered framing beyond the text; the shortened copy keeps
                // stating its whole cost, so its count and the fit's total agree.
                data.tokens = data.tokens.map(|_| *tokens);
                let s = Py::new(py, Segment::with_count(data, orig.meta_ref(py), counter_id, *tokens))?;
                shortened.insert(*index, s.clone_ref(py));
                s
            }
            Kept::Digest { digest } => digests[*digest].clone_ref(py),
        });
    }
    let removed = out
        .removals
        .iter()
        .map(|r| Removed {
            segment: match r.target {
                Target::Segment(i) => segs[i].clone().unbind(),
                Target::Digest(d) => digests[d].clone_ref(py),
            },
            rung: r.rung,
            tokens: r.tokens,
            action: r.action.name(),
        })
        .collect();
    let truncated = out
        .truncations
        .iter()
        .map(|t| {
            let segment = match shortened.get(&t.index) {
                Some(s) => s.clone_ref(py),
                None => segs[t.index].clone().unbind(),
            };
            Py::new(
                py,
                Truncation {
                    original: segs[t.index].clone().unbind(),
                    segment,
                    rung: rung_name(t.rung),
                    tokens_before: t.before,
                    tokens_after: t.after,
                },
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    let mut firings = HashMap::new();
    for (r, &n) in out.ledger.rung_firings.iter().enumerate() {
        if n > 0 {
            *firings.entry(rung_name(r)).or_insert(0) += n;
        }
    }
    let ledger = FitLedger {
        evicted_recoverable: out.ledger.evicted_recoverable,
        evicted_dispensable: out.ledger.evicted_dispensable,
        truncated: out.ledger.truncated,
        digested: out.ledger.digested,
        rung_firings: firings,
    };
    Ok(Fit {
        kept,
        removed,
        rung_names: policy.rungs.iter().map(|r| r.name.clone()).collect(),
        evicted: pyo3::sync::PyOnceLock::new(),
        truncated,
        total: out.total,
        ceiling: out.ceiling,
        over_by: out.over_by,
        cap_overruns: out.cap_overruns,
        trace: Py::new(py, Trace { inner: out.trace })?,
        rungs_fired: out.rungs_fired.iter().map(|&r| rung_name(r)).collect(),
        count_calls: out.count_calls,
        ledger: Py::new(py, ledger)?,
    })
}
