//! Making a `Fit` from the core's outcome. The segments it names are either the caller's own
//! objects (`ctxfast.fit`, `ContextWindow.fit`) or the adapters' records, which came in as
//! columns and become `Segment` objects only when `Fit.kept` / `evicted` / `truncated` is read:
//! an adapter rebuilds its messages from the kept indices, so most fits never make one.

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

use super::cache_plan::CacheReport;
use super::outcome::{Fit, FitLedger, Removed, Shortened, Trace};
use super::segment::Segment;
use crate::engine::cache::{Cut, Report, Sent};
use crate::engine::{self, FitOutcome, Kept, SegmentData, Target};

/// What a record's `meta` says when its `Segment` is made: its position in the adapter's input,
/// or the label of a part that is always sent (tool schemas, reply priming).
pub enum RecordMeta {
    Index(usize),
    Fixed(String),
}

/// The segments a fit was given.
pub enum Originals {
    Objects(Vec<Py<Segment>>),
    /// Records, each with its text in its data or, where `texts[i]` is set (`fit_columns`), in
    /// the caller's str: the fit borrowed it, and its data's text is empty. The text is copied
    /// only when the record becomes a `Segment`. The records are held by value, in one vector:
    /// a request's rows are one allocation, not one each (they were a tenth of a cached
    /// `fit_columns` call, allocated and freed), and a `Segment` made of one copies it.
    Records { data: Vec<SegmentData>, metas: Vec<RecordMeta>, texts: Vec<Option<Py<PyString>>>, built: PyOnceLock<Vec<Py<Segment>>> },
}

/// A segment of the result: one of the originals, or one the fit made (a digest record, a
/// shortened copy).
pub enum SegRef {
    Original(usize),
    Made(Py<Segment>),
}

/// `{"index": i}` (with the digest's tool facts, when the record has them) or `{"fixed": label}`.
fn record_meta<'py>(py: Python<'py>, meta: &RecordMeta, data: &SegmentData) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match meta {
        RecordMeta::Index(i) => {
            d.set_item("index", *i)?;
            if let Some(call) = &data.tool() {
                d.set_item("tool", call.tool.as_deref())?;
                d.set_item("arguments", call.arguments.as_deref())?;
            }
        }
        RecordMeta::Fixed(label) => d.set_item("fixed", label)?,
    }
    Ok(d)
}

impl Originals {
    /// Records whose data hold their texts.
    pub fn records(data: Vec<SegmentData>, metas: Vec<RecordMeta>) -> Self {
        Originals::Records { data, metas, texts: Vec::new(), built: PyOnceLock::new() }
    }

    /// Record `i`'s data, with its text even when that is held apart in `texts`.
    fn whole(py: Python<'_>, data: &[SegmentData], texts: &[Option<Py<PyString>>], i: usize) -> PyResult<Option<Arc<SegmentData>>> {
        let Some(d) = data.get(i) else { return Ok(None) };
        let mut whole = d.clone();
        if let Some(Some(s)) = texts.get(i) {
            whole.text = s.bind(py).to_str()?.to_string();
        }
        Ok(Some(Arc::new(whole)))
    }

    fn len(&self) -> usize {
        match self {
            Originals::Objects(v) => v.len(),
            Originals::Records { data, .. } => data.len(),
        }
    }

    /// Segment `i`'s data; a record's text held apart is not in it (`text` and `get` read that).
    fn data(&self, i: usize) -> Option<&SegmentData> {
        match self {
            Originals::Objects(v) => v.get(i).map(|s| s.get().data.as_ref()),
            Originals::Records { data, .. } => data.get(i),
        }
    }

    /// Every segment's data, in order: what the fit reads.
    pub fn rows(&self) -> Vec<&SegmentData> {
        match self {
            Originals::Objects(v) => v.iter().map(|s| s.get().data.as_ref()).collect(),
            Originals::Records { data, .. } => data.iter().collect(),
        }
    }

    fn meta(&self, py: Python<'_>, i: usize) -> PyResult<Option<Py<PyAny>>> {
        match self {
            Originals::Objects(v) => Ok(v.get(i).and_then(|s| s.bind(py).get().meta_ref(py))),
            Originals::Records { data, metas, .. } => match (metas.get(i), data.get(i)) {
                (Some(m), Some(d)) => Ok(Some(record_meta(py, m, d)?.into_any().unbind())),
                _ => Ok(None),
            },
        }
    }

    /// Segment `i` as a Python object: the caller's own, or a record made into one (all of them,
    /// once, the first time any is asked for).
    pub fn get(&self, py: Python<'_>, i: usize) -> PyResult<Py<Segment>> {
        let missing = || pyo3::exceptions::PyIndexError::new_err(format!("no segment {i} in this fit"));
        match self {
            Originals::Objects(v) => v.get(i).map(|s| s.clone_ref(py)).ok_or_else(missing),
            Originals::Records { data, metas, texts, built } => {
                let all = built.get_or_try_init(py, || {
                    (0..data.len())
                        .zip(metas)
                        .map(|(j, m)| {
                            let d = Originals::whole(py, data, texts, j)?.ok_or_else(missing)?;
                            let meta = record_meta(py, m, &d)?.into_any().unbind();
                            Py::new(py, Segment::from_shared(d, Some(meta)))
                        })
                        .collect::<PyResult<Vec<_>>>()
                })?;
                all.get(i).map(|s| s.clone_ref(py)).ok_or_else(missing)
            }
        }
    }

    pub fn text(&self, py: Python<'_>, i: usize) -> String {
        if let Originals::Records { texts, .. } = self {
            if let Some(Some(s)) = texts.get(i) {
                return s.bind(py).to_str().map(str::to_string).unwrap_or_default();
            }
        }
        self.data(i).map(|d| d.text.clone()).unwrap_or_default()
    }
}

/// Turns the core's outcome into a `Fit` over `originals` (the segments `out` indexes).
pub fn build_fit(
    py: Python<'_>,
    originals: Originals,
    policy: &engine::Policy,
    counter_id: u64,
    out: FitOutcome,
) -> PyResult<Fit> {
    let rung_name = |r: usize| policy.rungs.get(r).map(|x| x.name.clone()).unwrap_or_default();
    let n = originals.len();
    let missing = |i: usize| pyo3::exceptions::PyIndexError::new_err(format!("the fit named segment {i} of {n}"));
    let mut copies: HashMap<usize, Py<Segment>> = HashMap::new();
    let mut digests: Vec<Py<Segment>> = Vec::new();
    for rec in &out.digests {
        let first = rec.members.first().and_then(|&m| originals.data(m));
        let mut data = SegmentData::new(rec.text.clone(), rec.layer);
        // Members that stated their whole cost (framing included) make a digest that states its
        // own, as a shortened copy does, so the kept segments' tokens add up to the total.
        data.tokens = first.as_ref().and_then(|f| f.tokens).map(|_| rec.tokens);
        data.group = first.and_then(|f| f.group.clone());
        let meta = PyDict::new(py);
        let keys: Vec<Option<String>> =
            rec.members.iter().map(|&m| originals.data(m).and_then(|d| d.key.as_deref().map(str::to_string))).collect();
        meta.set_item("digest_of", keys)?;
        meta.set_item("rung", rung_name(rec.rung))?;
        digests.push(Py::new(py, Segment::with_count(data, Some(meta.into_any().unbind()), counter_id, rec.tokens))?);
    }
    let digest = |d: usize| digests.get(d).map(|s| s.clone_ref(py)).ok_or_else(|| missing(d));
    let mut kept = Vec::with_capacity(out.kept.len());
    for k in &out.kept {
        kept.push(match k {
            Kept::Original(i) => SegRef::Original(*i),
            Kept::Truncated { index, text, tokens } => {
                // The data of a record whose text is held apart has an empty text: replaced here.
                let orig = originals.data(*index).ok_or_else(|| missing(*index))?;
                let mut data = orig.clone();
                data.text = text.clone();
                // A caller-given count covered framing beyond the text; the shortened copy keeps
                // stating its whole cost, so its count and the fit's total agree.
                data.tokens = data.tokens.map(|_| *tokens);
                let meta = originals.meta(py, *index)?;
                let s = Py::new(py, Segment::with_count(data, meta, counter_id, *tokens))?;
                copies.insert(*index, s.clone_ref(py));
                SegRef::Made(s)
            }
            Kept::Digest { digest: d } => SegRef::Made(digest(*d)?),
        });
    }
    let removed = out
        .removals
        .iter()
        .map(|r| {
            let segment = match r.target {
                Target::Segment(i) => SegRef::Original(i),
                Target::Digest(d) => SegRef::Made(digest(d)?),
            };
            Ok(Removed { segment, rung: r.rung, tokens: r.tokens, action: r.action.name() })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let shortened = out
        .truncations
        .iter()
        .map(|t| Shortened {
            index: t.index,
            sent: copies.get(&t.index).map(|s| s.clone_ref(py)),
            rung: rung_name(t.rung),
            before: t.before,
            after: t.after,
        })
        .collect();
    let mut firings = HashMap::new();
    for (r, &k) in out.ledger.rung_firings.iter().enumerate() {
        if k > 0 {
            *firings.entry(rung_name(r)).or_insert(0) += k;
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
        originals,
        kept,
        removed,
        rung_names: policy.rungs.iter().map(|r| r.name.clone()).collect(),
        evicted: PyOnceLock::new(),
        shortened,
        truncated: PyOnceLock::new(),
        total: out.total,
        ceiling: out.ceiling,
        over_by: out.over_by,
        cap_overruns: out.cap_overruns,
        trace: Py::new(py, Trace { inner: out.trace })?,
        rungs_fired: out.rungs_fired.iter().map(|&r| rung_name(r)).collect(),
        count_calls: out.count_calls,
        ledger: Py::new(py, ledger)?,
        prompt: None,
        cache: Py::new(py, CacheReport { inner: unplanned(out.total) })?,
        sent: Arc::new(Sent::default()),
        exactness: "exact".to_string(),
        provider: None,
    })
}

/// The report of a fit that planned nothing for a cache: all of it is prefilled.
fn unplanned(total: usize) -> Report {
    let prediction = engine::cache::CachePrediction { uncached: total, cost: total as f64, ..Default::default() };
    Report { profile: "none".into(), previous: false, prediction, cut: Cut::Fresh, total }
}
