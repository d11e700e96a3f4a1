//! `ctxfast.fit`: one crossing per request. The segments' counts are settled in one batch (GIL
//! released), the ladder runs in the core, and the result comes back as one `Fit`.

use std::cell::RefCell;
use std::collections::HashMap;

use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::args;
use super::errors::{error, error_with, CoreResultExt, Kind};
use super::policy::Policy;
use super::segment::{Budget, PromptLayer, Segment};
use super::tokenizer::{call_counter, truncate_by_calls, Tokenizer};
use crate::cache::CountCache;
use crate::engine::{self, rank, Counter, FitError, FitOutcome, Kept, Layer, SegmentData, Taken, Target};
use crate::error::{CtxError, CtxResult};
use crate::tokenize::{Encoding, TokenCounter};

/// Wrappers made for plain callables, so the same callable keeps one cache (and the segments'
/// remembered counts stay valid) across calls. Bounded: cleared when it grows past this.
const CALLABLE_WRAPPERS_MAX: usize = 256;

fn wrap_callable<'py>(py: Python<'py>, func: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Tokenizer>> {
    // `tok.count` (a bound method of a ctxfast Tokenizer) is that tokenizer: count natively.
    if let Ok(owner) = func.getattr("__self__") {
        if let Ok(tok) = owner.cast_into::<Tokenizer>() {
            if func.getattr("__name__").is_ok_and(|n| n.eq("count").unwrap_or(false)) {
                return Ok(tok);
            }
        }
    }
    static WRAPPERS: pyo3::sync::PyOnceLock<Py<PyDict>> = pyo3::sync::PyOnceLock::new();
    let cache = WRAPPERS.get_or_init(py, || PyDict::new(py).unbind()).bind(py);
    if func.hash().is_ok() {
        if let Some(tok) = cache.get_item(func)? {
            return Ok(tok.cast_into::<Tokenizer>()?);
        }
    }
    let tok = py.get_type::<Tokenizer>().call_method1("from_callable", (func,))?.cast_into::<Tokenizer>()?;
    if func.hash().is_ok() {
        if cache.len() >= CALLABLE_WRAPPERS_MAX {
            cache.clear();
        }
        cache.set_item(func, &tok)?;
    }
    Ok(tok)
}

/// The tokenizer argument: a Tokenizer, a `str -> int` callable, or None for the embedded one.
pub fn resolve_tokenizer<'py>(py: Python<'py>, tokenizer: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, Tokenizer>> {
    match tokenizer {
        Some(t) if !t.is_none() => {
            if let Ok(tok) = t.cast::<Tokenizer>() {
                return Ok(tok.clone());
            }
            if t.is_callable() {
                return wrap_callable(py, t);
            }
            Err(args::wrong_type(t, "tokenizer", "a ctxfast.Tokenizer or a callable str -> int"))
        }
        _ => Ok(Bound::new(py, Tokenizer::from_counter(TokenCounter::shared(Encoding::O200kBase)))?),
    }
}

/// The ladder's counter for a Python callable: runs under the GIL; a Python exception is kept
/// aside and re-raised once the core returns.
pub struct CallableCounter<'py> {
    py: Python<'py>,
    func: &'py Py<PyAny>,
    cache: &'py CountCache,
    failure: RefCell<Option<PyErr>>,
}

/// The counter for a tokenizer built with `Tokenizer.from_callable`.
pub fn callable_counter<'py>(py: Python<'py>, tok: &'py Tokenizer) -> PyResult<CallableCounter<'py>> {
    let (func, cache) = tok
        .callable()
        .ok_or_else(|| error(py, Kind::InvalidArgument, "not a callable tokenizer"))?;
    Ok(CallableCounter { py, func, cache, failure: RefCell::new(None) })
}

impl CallableCounter<'_> {
    /// Re-raises the Python exception the callable raised inside the core, if any.
    pub fn take_failure(&self) -> PyResult<()> {
        match self.failure.borrow_mut().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn keep<T>(&self, r: PyResult<T>) -> CtxResult<T> {
        r.map_err(|e| {
            *self.failure.borrow_mut() = Some(e);
            CtxError::Encoding("the counting callable failed".into())
        })
    }
}

impl Counter for CallableCounter<'_> {
    fn count(&self, text: &str) -> CtxResult<usize> {
        self.cache.get_or_count(text, |t| self.keep(call_counter(self.py, self.func, t)))
    }
    fn truncate(&self, text: &str, max_tokens: usize) -> CtxResult<String> {
        self.keep(truncate_by_calls(self.py, self.func, text, max_tokens)).map(str::to_string)
    }
    fn count_joined(&self, texts: &[&str], _: &[usize], sep: &str) -> CtxResult<usize> {
        self.keep(call_counter(self.py, self.func, &texts.join(sep)))
    }
}

/// Counts every segment not yet counted by this tokenizer, in one batch.
pub fn settle_counts(py: Python<'_>, tok: &Tokenizer, segs: &[Bound<'_, Segment>]) -> PyResult<Vec<usize>> {
    let id = tok.counter_id();
    let mut counts: Vec<usize> = vec![0; segs.len()];
    let mut missing: Vec<usize> = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        match s.get().known_count(id) {
            Some(n) => counts[i] = n,
            None => missing.push(i),
        }
    }
    if !missing.is_empty() {
        let texts: Vec<&str> = missing.iter().map(|&i| segs[i].get().data.text.as_str()).collect();
        let got = tok.count_strs(py, &texts, true)?;
        for (&i, n) in missing.iter().zip(got) {
            counts[i] = n;
            segs[i].get().remember(id, n);
        }
    }
    Ok(counts)
}

#[pyclass(frozen, module = "ctxfast._core", name = "Eviction", get_all)]
pub struct Eviction {
    /// The segment as it was given: nothing is lost.
    segment: Py<Segment>,
    rung: String,
    rung_index: usize,
    tokens: usize,
    /// "drop", or "digest" when a record stands in its place.
    action: &'static str,
}

#[pymethods]
impl Eviction {
    fn __repr__(&self, py: Python<'_>) -> String {
        let seg = self.segment.bind(py).repr().map(|r| r.to_string()).unwrap_or_default();
        format!("Eviction({seg}, rung={:?}, tokens={}, action={:?})", self.rung, self.tokens, self.action)
    }
}

#[pyclass(frozen, module = "ctxfast._core", name = "Truncation", get_all)]
pub struct Truncation {
    original: Py<Segment>,
    /// The shortened segment, as sent (also in `Fit.kept`).
    segment: Py<Segment>,
    rung: String,
    tokens_before: usize,
    tokens_after: usize,
}

#[pymethods]
impl Truncation {
    fn __repr__(&self) -> String {
        format!("Truncation(rung={:?}, tokens {} -> {})", self.rung, self.tokens_before, self.tokens_after)
    }
}

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
    /// One dict per removal, in removal order.
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
                d.set_item("layer", &self.inner.labels[r.layer.index()])?;
                d.set_item("layer_after", r.layer_after)?;
                d.set_item("total_after", r.total_after)?;
                d.set_item("over_after", r.over_after)?;
                out.append(d)?;
            }
        }
        Ok(out)
    }
    /// Per-layer sizes at the start, in order of first appearance: [(label, tokens)].
    #[getter]
    fn start(&self) -> Vec<(String, usize)> {
        self.inner.start_layers.clone()
    }
}

/// Where the removed tokens went, for metrics.
#[pyclass(frozen, module = "ctxfast._core", name = "FitLedger", get_all)]
pub struct FitLedger {
    evicted_recoverable: usize,
    evicted_dispensable: usize,
    truncated: usize,
    digested: usize,
    rung_firings: HashMap<String, usize>,
}

#[pymethods]
impl FitLedger {
    /// Every token taken out of the request, whichever way.
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

#[pyclass(frozen, module = "ctxfast._core", name = "Fit")]
pub struct Fit {
    kept: Vec<Py<Segment>>,
    removed: Vec<Removed>,
    rung_names: Vec<String>,
    evicted: pyo3::sync::PyOnceLock<Vec<Py<Eviction>>>,
    truncated: Vec<Py<Truncation>>,
    #[pyo3(get)]
    total: usize,
    #[pyo3(get)]
    ceiling: usize,
    #[pyo3(get)]
    over_by: usize,
    cap_overruns: Vec<(Layer, usize)>,
    trace: Py<Trace>,
    #[pyo3(get)]
    rungs_fired: Vec<String>,
    #[pyo3(get)]
    count_calls: usize,
    ledger: Py<FitLedger>,
}

#[pymethods]
impl Fit {
    /// What is sent, in input order (truncated segments shortened, digests in place).
    #[getter]
    fn kept(&self, py: Python<'_>) -> Vec<Py<Segment>> {
        self.kept.iter().map(|s| s.clone_ref(py)).collect()
    }
    /// What left, in removal order (the trace's order).
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
    #[getter]
    fn truncated(&self, py: Python<'_>) -> Vec<Py<Truncation>> {
        self.truncated.iter().map(|s| s.clone_ref(py)).collect()
    }
    /// ceiling - total: room left for input.
    #[getter]
    fn spare(&self) -> usize {
        self.ceiling - self.total
    }
    #[getter]
    fn cap_overruns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (l, n) in &self.cap_overruns {
            d.set_item(PromptLayer::from(*l), n)?;
        }
        Ok(d)
    }
    #[getter]
    fn trace(&self, py: Python<'_>) -> Py<Trace> {
        self.trace.clone_ref(py)
    }
    #[getter]
    fn ledger(&self, py: Python<'_>) -> Py<FitLedger> {
        self.ledger.clone_ref(py)
    }
    /// The kept texts, in order.
    fn texts(&self, py: Python<'_>) -> Vec<String> {
        self.kept.iter().map(|s| s.bind(py).get().data.text.clone()).collect()
    }
    /// The trace, rendered.
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

fn segments_arg<'py>(segments: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, Segment>>> {
    let py = segments.py();
    let iter = segments
        .try_iter()
        .map_err(|_| args::wrong_type(segments, "segments", "a sequence of Segment"))?;
    let mut out = Vec::new();
    for (i, item) in iter.enumerate() {
        let item = item?;
        let seg = item
            .cast_into::<Segment>()
            .map_err(|e| args::wrong_type(&e.into_inner(), &format!("segments[{i}]"), "Segment"))?;
        out.push(seg);
    }
    if out.is_empty() {
        return Err(error(py, Kind::InvalidArgument, "argument 'segments' is empty: there is no request to fit"));
    }
    Ok(out)
}

pub fn policy_arg<'py>(py: Python<'py>, policy: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, Policy>> {
    match policy {
        Some(p) if !p.is_none() => {
            if let Ok(pol) = p.cast::<Policy>() {
                return Ok(pol.clone());
            }
            if let Ok(name) = p.extract::<String>() {
                return Bound::new(py, Policy::by_name(py, &name)?);
            }
            Err(args::wrong_type(p, "policy", "a ctxfast.Policy or a preset name"))
        }
        _ => Bound::new(py, Policy::by_name(py, "context_window")?),
    }
}

#[cold]
pub fn raise_unfittable(py: Python<'_>, u: &engine::Unfittable) -> PyErr {
    let attrs = PyDict::new(py);
    let built = (|| -> PyResult<()> {
        attrs.set_item("components", u.components.clone())?;
        attrs.set_item("ceiling", u.ceiling)?;
        attrs.set_item("total", u.total)?;
        attrs.set_item("shortfall", u.shortfall)?;
        attrs.set_item("floor_tokens", u.floor_tokens)?;
        Ok(())
    })();
    match built {
        Ok(()) => error_with(py, Kind::Unfittable, u.message(), Some(&attrs)),
        Err(e) => e,
    }
}

/// Runs the ladder with whichever counter the tokenizer has.
#[allow(clippy::too_many_arguments)]
pub fn run_ladder(
    py: Python<'_>,
    tok: &Tokenizer,
    data: &[&SegmentData],
    counts: &[usize],
    budget: &engine::Budget,
    policy: &engine::Policy,
    separator: Option<&str>,
    framing: usize,
) -> PyResult<FitOutcome> {
    let result = match (tok.native_counter(), tok.callable()) {
        (Some(c), _) => py.detach(|| engine::fit(data, counts, budget, policy, c.as_ref(), separator, framing)),
        (None, Some(_)) => {
            let counter = callable_counter(py, tok)?;
            let r = engine::fit(data, counts, budget, policy, &counter, separator, framing);
            counter.take_failure()?;
            r
        }
        (None, None) => return Err(error(py, Kind::InvalidArgument, "tokenizer has no counter")),
    };
    match result {
        Ok(o) => Ok(o),
        Err(FitError::Unfittable(u)) => Err(raise_unfittable(py, &u)),
        Err(FitError::Other(e)) => Err(e).py(py),
    }
}

/// Turns the core's outcome into Python objects, reusing the caller's segment objects.
pub fn build_fit(
    py: Python<'_>,
    segs: &[Bound<'_, Segment>],
    policy: &engine::Policy,
    counter_id: u32,
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
                data.tokens = None;
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
            action: match r.action {
                Taken::Drop => "drop",
                Taken::Digest => "digest",
            },
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

/// Fits `segments` under `budget` by `policy`; see SPEC section 5. `framing` is what each
/// segment the ladder creates (a digest record) costs beyond its text, e.g. a chat message's
/// framing, so the projection stays exact for adapters.
#[pyfunction]
#[pyo3(signature = (segments, budget, policy=None, tokenizer=None, separator=None, *, framing=None))]
pub fn fit(
    py: Python<'_>,
    segments: &Bound<'_, PyAny>,
    budget: &Bound<'_, PyAny>,
    policy: Option<&Bound<'_, PyAny>>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    separator: Option<&Bound<'_, PyAny>>,
    framing: Option<&Bound<'_, PyAny>>,
) -> PyResult<Fit> {
    let framing = args::opt_count(framing, "framing")?.unwrap_or(0);
    let segs = segments_arg(segments)?;
    let budget = budget.cast::<Budget>().map_err(|_| args::wrong_type(budget, "budget", "a ctxfast.Budget"))?;
    let policy = policy_arg(py, policy)?;
    let tok = resolve_tokenizer(py, tokenizer)?;
    let sep = match separator {
        Some(s) if !s.is_none() => Some(args::text(s, "separator")?),
        _ => None,
    };
    let tok_ref = tok.get();
    let counts = settle_counts(py, tok_ref, &segs)?;
    let data: Vec<&SegmentData> = segs.iter().map(|s| s.get().data.as_ref()).collect();
    let policy_ref = &policy.get().inner;
    let out = run_ladder(py, tok_ref, &data, &counts, &budget.get().inner, policy_ref, sep, framing)?;
    build_fit(py, &segs, policy_ref, tok_ref.counter_id(), out)
}

/// For callers with their own structures: the indices to evict, in rank order (recoverable
/// first, stale first, lowest relevance first, largest first), to free at least `deficit` tokens.
#[pyfunction]
pub fn evict_indices<'py>(
    py: Python<'py>,
    tokens: &Bound<'py, PyAny>,
    recoverable: &Bound<'py, PyAny>,
    stale: &Bound<'py, PyAny>,
    relevance: &Bound<'py, PyAny>,
    protected: &Bound<'py, PyAny>,
    deficit: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let np = py.import("numpy")?;
    let as_array = |obj: &Bound<'py, PyAny>, name: &str, dtype: &str| -> PyResult<Bound<'py, PyAny>> {
        let arr = np
            .call_method1("asarray", (obj, dtype))
            .map_err(|_| args::wrong_type(obj, name, &format!("a 1-d array of {dtype}")))?;
        if arr.getattr("ndim")?.extract::<usize>()? != 1 {
            return Err(error(py, Kind::InvalidArgument, format!("argument '{name}' must be 1-dimensional")));
        }
        Ok(arr)
    };
    let t = as_array(tokens, "tokens", "int64")?;
    let t = t.cast::<PyArray1<i64>>()?.readonly();
    let rec = as_array(recoverable, "recoverable", "bool")?;
    let rec = rec.cast::<PyArray1<bool>>()?.readonly();
    let st = as_array(stale, "stale", "bool")?;
    let st = st.cast::<PyArray1<bool>>()?.readonly();
    let rel = as_array(relevance, "relevance", "float64")?;
    let rel = rel.cast::<PyArray1<f64>>()?.readonly();
    let pr = as_array(protected, "protected", "bool")?;
    let pr = pr.cast::<PyArray1<bool>>()?.readonly();
    let deficit = args::count_arg(deficit, "deficit")?;
    let (t, rec, st, rel, pr) = (t.as_slice()?, rec.as_slice()?, st.as_slice()?, rel.as_slice()?, pr.as_slice()?);
    let n = t.len();
    for (name, len) in [("recoverable", rec.len()), ("stale", st.len()), ("relevance", rel.len()), ("protected", pr.len())] {
        if len != n {
            return Err(error(py, Kind::InvalidArgument, format!("argument '{name}' has {len} entries, 'tokens' has {n}")));
        }
    }
    if let Some((i, v)) = t.iter().enumerate().find(|(_, v)| **v < 0) {
        return Err(error(py, Kind::InvalidArgument, format!("tokens[{i}] must be >= 0, got {v}")));
    }
    if let Some((i, v)) = rel.iter().enumerate().find(|(_, v)| !(0.0..=1.0).contains(*v)) {
        return Err(error(py, Kind::InvalidArgument, format!("relevance[{i}] must be in [0, 1], got {v}")));
    }
    let tokens: Vec<usize> = t.iter().map(|&v| v as usize).collect();
    let (rec, st, rel, pr) = (rec.to_vec(), st.to_vec(), rel.to_vec(), pr.to_vec());
    let order = py.detach(|| rank::evict_for_deficit(&tokens, &rec, &st, &rel, &pr, deficit));
    Ok(PyArray1::from_vec(py, order.into_iter().map(|i| i as i64).collect()))
}
