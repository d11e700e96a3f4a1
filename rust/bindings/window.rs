//! `ctxfast.ContextWindow`: the stateful window, one per conversation.
//!
//! All state lives in the core `Window` behind a mutex. The mutex is always taken with the GIL
//! released, so a thread waiting for the window never holds the GIL that the thread inside it
//! (whose fit runs detached) needs to finish: concurrent calls on one window are serialised,
//! never interleaved, never deadlocked.

use std::collections::HashMap;

use parking_lot::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use super::args;
use super::errors::{error, CoreResultExt, Kind};
use super::fit::{build_fit, policy_arg, resolve_tokenizer, settle_counts, Fit};
use super::segment::{layer_arg, PromptLayer, Segment};
use super::tokenizer::Tokenizer;
use crate::engine::{Counter, FitError};
use crate::error::CtxError;
use crate::window::ledger::Why as CoreWhy;
use crate::window::{Admit, Changes, Entry, Rewrite, Window};

struct State {
    core: Window,
    /// The Python object standing for each held entry, so callers get back what they gave.
    objects: HashMap<u64, Py<Segment>>,
    last_fit: Option<Py<Fit>>,
}

#[pyclass(frozen, module = "ctxfast._core", name = "ContextWindow")]
pub struct ContextWindow {
    tokenizer: Py<Tokenizer>,
    state: Mutex<State>,
}

#[pyclass(frozen, module = "ctxfast._core", name = "Why", get_all)]
pub struct Why {
    key: String,
    /// "held", "evicted_recoverable", "evicted_dispensable", "rewritten" or "truncated".
    status: &'static str,
    cycle: u64,
    /// The rung, or "discard" / "rewrite" / "digest"; None while simply held.
    rung: Option<String>,
    tokens_before: usize,
    tokens_after: usize,
    provenance: Option<String>,
    layer: PromptLayer,
    admissions: u64,
}

#[pymethods]
impl Why {
    fn __repr__(&self, py: Python<'_>) -> String {
        let r = |s: Option<&str>| -> String {
            match s {
                Some(s) => pyo3::types::PyString::new(py, s).repr().map(|r| r.to_string()).unwrap_or_default(),
                None => "None".into(),
            }
        };
        format!(
            "Why(key={}, status={}, cycle={}, rung={}, tokens_before={}, tokens_after={}, provenance={})",
            r(Some(&self.key)),
            r(Some(self.status)),
            self.cycle,
            r(self.rung.as_deref()),
            self.tokens_before,
            self.tokens_after,
            r(self.provenance.as_deref()),
        )
    }
}

impl From<&CoreWhy> for Why {
    fn from(w: &CoreWhy) -> Self {
        Why {
            key: w.key.clone(),
            status: w.status.name(),
            cycle: w.cycle,
            rung: w.rung.clone(),
            tokens_before: w.tokens_before,
            tokens_after: w.tokens_after,
            provenance: w.provenance.clone(),
            layer: w.layer.into(),
            admissions: w.admissions,
        }
    }
}

/// Counters and token totals for metrics; `balanced` is the ledger's invariant.
#[pyclass(frozen, module = "ctxfast._core", name = "WindowLedger", get_all)]
pub struct WindowLedger {
    admitted: u64,
    refused_duplicates: u64,
    fits: u64,
    fits_that_evicted: u64,
    evictions: u64,
    rewrites: u64,
    deferred_rewrites: u64,
    digests: u64,
    truncations: u64,
    discards: u64,
    rung_firings: HashMap<String, u64>,
    tokens_admitted: u64,
    tokens_held: u64,
    tokens_surrogates_added: u64,
    tokens_evicted_recoverable: u64,
    tokens_evicted_dispensable: u64,
    tokens_rewritten_away: u64,
    tokens_truncated_away: u64,
    balanced: bool,
}

#[pymethods]
impl WindowLedger {
    fn __repr__(&self) -> String {
        format!(
            "WindowLedger(fits={}, evictions={}, rewrites={}, truncations={}, refused_duplicates={}, balanced={})",
            self.fits, self.evictions, self.rewrites, self.truncations, self.refused_duplicates, self.balanced
        )
    }
}

fn lock<'a>(py: Python<'_>, m: &'a Mutex<State>) -> MutexGuard<'a, State> {
    // Fast path: an uncontended lock needs no GIL hand-off.
    if let Some(g) = m.try_lock() {
        return g;
    }
    py.detach(|| m.lock())
}

fn key_error(py: Python<'_>, e: CtxError) -> PyErr {
    super::errors::from_core(py, e)
}

impl ContextWindow {
    fn counter_id(&self, py: Python<'_>) -> u32 {
        self.tokenizer.bind(py).get().counter_id()
    }

    fn object_for(&self, py: Python<'_>, e: &Entry, meta: Option<Py<PyAny>>) -> PyResult<Py<Segment>> {
        let mut meta = meta;
        if meta.is_none() {
            if let Some((source, by)) = &e.provenance {
                let d = PyDict::new(py);
                d.set_item("lossy", true)?;
                d.set_item("source_key", source.as_deref())?;
                d.set_item("provenance", by)?;
                meta = Some(d.into_any().unbind());
            }
        }
        Py::new(py, Segment::with_count((*e.seg).clone(), meta, self.counter_id(py), e.tokens))
    }

    /// Mirrors core changes on the Python objects; returns the objects that left, with the
    /// reason (rung, "discard", "rewrite") and the action.
    fn mirror(&self, py: Python<'_>, st: &mut State, changes: Changes) -> PyResult<Vec<(Py<Segment>, String, &'static str)>> {
        let mut gone = Vec::new();
        for (e, reason, action) in changes.removed {
            let obj = match st.objects.remove(&e.id) {
                Some(o) => o,
                None => self.object_for(py, &e, None)?,
            };
            gone.push((obj, reason, action));
        }
        for e in changes.upserted {
            let meta = st.objects.get(&e.id).and_then(|o| o.bind(py).get().meta_ref(py));
            let obj = self.object_for(py, &e, meta)?;
            st.objects.insert(e.id, obj);
        }
        Ok(gone)
    }

    fn ledger_of(core: &Window) -> WindowLedger {
        let c = core.counters();
        let t = core.totals();
        let held = core.held_tokens() as u64;
        WindowLedger {
            admitted: c.admitted,
            refused_duplicates: c.refused_duplicates,
            fits: c.fits,
            fits_that_evicted: c.fits_that_evicted,
            evictions: c.evictions,
            rewrites: c.rewrites,
            deferred_rewrites: c.deferred_rewrites,
            digests: c.digests,
            truncations: c.truncations,
            discards: c.discards,
            rung_firings: c.rung_firings.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            tokens_admitted: t.admitted,
            tokens_held: held,
            tokens_surrogates_added: t.surrogates_added,
            tokens_evicted_recoverable: t.evicted_recoverable,
            tokens_evicted_dispensable: t.evicted_dispensable,
            tokens_rewritten_away: t.rewritten_away,
            tokens_truncated_away: t.truncated_away,
            balanced: t.balances(held),
        }
    }

    fn admit_one(&self, py: Python<'_>, st: &mut State, seg: &Bound<'_, Segment>, count: usize) -> PyResult<bool> {
        let data = seg.get().data.clone();
        match st.core.admit(data, count) {
            Admit::Duplicate => Ok(false),
            Admit::Admitted { id, demoted } => {
                st.objects.insert(id, seg.clone().unbind());
                if let Some(e) = demoted {
                    let meta = st.objects.get(&e.id).and_then(|o| o.bind(py).get().meta_ref(py));
                    let obj = self.object_for(py, &e, meta)?;
                    st.objects.insert(e.id, obj);
                }
                Ok(true)
            }
        }
    }

    /// Runs the ladder over what is held with this window's counter.
    fn run_fit(&self, py: Python<'_>, core: &mut Window) -> Result<crate::window::WindowFit, PyErr> {
        let tok = self.tokenizer.bind(py).get();
        let result = match (tok.native_counter(), tok.callable()) {
            (Some(c), _) => {
                let c = c.clone();
                py.detach(|| core.fit(c.as_ref()))
            }
            (None, Some(_)) => {
                let counter = super::fit::callable_counter(py, tok)?;
                let r = core.fit(&counter as &dyn Counter);
                counter.take_failure()?;
                r
            }
            _ => return Err(error(py, Kind::InvalidArgument, "tokenizer has no counter")),
        };
        result.map_err(|e| match e {
            FitError::Unfittable(u) => super::fit::raise_unfittable(py, &u),
            FitError::Other(e) => super::errors::from_core(py, e),
        })
    }

    fn count_text(&self, py: Python<'_>, text: &str) -> PyResult<usize> {
        self.tokenizer.bind(py).get().count_str(py, text, true)
    }

    fn state_parts<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyDict>)> {
        let st = lock(py, &self.state);
        let core_json = st.core.to_json().py(py)?;
        let metas = PyDict::new(py);
        for e in st.core.entries() {
            if let Some(o) = st.objects.get(&e.id) {
                if let Some(m) = o.bind(py).get().meta_ref(py) {
                    metas.set_item(e.id, m)?;
                }
            }
        }
        Ok((PyBytes::new(py, &core_json), metas))
    }

    fn restore(py: Python<'_>, core_json: &[u8], metas: &Bound<'_, PyDict>, tokenizer: Bound<'_, Tokenizer>) -> PyResult<Self> {
        let core = Window::from_json(core_json).map_err(|e| error(py, Kind::InvalidArgument, e.to_string()))?;
        let me = ContextWindow {
            tokenizer: tokenizer.unbind(),
            state: Mutex::new(State { core, objects: HashMap::new(), last_fit: None }),
        };
        let mut objects = HashMap::new();
        {
            let st = lock(py, &me.state);
            for e in st.core.entries() {
                let meta = metas.get_item(e.id)?.map(|m| m.unbind());
                objects.insert(e.id, me.object_for(py, e, meta)?);
            }
        }
        lock(py, &me.state).objects = objects;
        Ok(me)
    }
}

#[pymethods]
impl ContextWindow {
    #[new]
    #[pyo3(signature = (limit_tokens, tokenizer=None, policy=None, reserve=None, *, low_watermark=None))]
    fn new(
        py: Python<'_>,
        limit_tokens: &Bound<'_, PyAny>,
        tokenizer: Option<&Bound<'_, PyAny>>,
        policy: Option<&Bound<'_, PyAny>>,
        reserve: Option<&Bound<'_, PyAny>>,
        low_watermark: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let limit = args::count_arg(limit_tokens, "limit_tokens")?;
        let reserve = args::opt_count(reserve, "reserve")?.unwrap_or(0);
        let wm = match low_watermark {
            Some(w) if !w.is_none() => Some(args::positive_float(w, "low_watermark")?),
            _ => None,
        };
        let tok = resolve_tokenizer(py, tokenizer)?;
        let policy = policy_arg(py, policy)?;
        let p = policy.get();
        let core = Window::new(limit, reserve, p.inner.clone(), p.name.clone(), wm).py(py)?;
        Ok(Self {
            tokenizer: tok.unbind(),
            state: Mutex::new(State { core, objects: HashMap::new(), last_fit: None }),
        })
    }

    /// Holds `segment` unless its key is already held (in any layer): returns False then.
    /// Counting happens here, once.
    fn admit(&self, segment: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = segment.py();
        let seg = segment.cast::<Segment>().map_err(|_| args::wrong_type(segment, "segment", "Segment"))?;
        let counts = settle_counts(py, self.tokenizer.bind(py).get(), std::slice::from_ref(seg))?;
        let mut st = lock(py, &self.state);
        self.admit_one(py, &mut st, seg, counts[0])
    }

    /// A whole turn in one call: admits each segment in order, one bool each.
    fn admit_many(&self, segments: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let py = segments.py();
        let mut segs = Vec::new();
        for (i, item) in segments
            .try_iter()
            .map_err(|_| args::wrong_type(segments, "segments", "a sequence of Segment"))?
            .enumerate()
        {
            let item = item?;
            segs.push(item.cast_into::<Segment>().map_err(|e| args::wrong_type(&e.into_inner(), &format!("segments[{i}]"), "Segment"))?);
        }
        let counts = settle_counts(py, self.tokenizer.bind(py).get(), &segs)?;
        let mut st = lock(py, &self.state);
        segs.iter().zip(counts).map(|(s, n)| self.admit_one(py, &mut st, s, n)).collect()
    }

    /// Evicts until what is held fits; returns what left, in eviction order.
    fn fit(&self, py: Python<'_>) -> PyResult<Vec<Py<Segment>>> {
        let mut guard = lock(py, &self.state);
        let st = &mut *guard;
        let snapshot: Vec<Bound<'_, Segment>> = st
            .core
            .entries()
            .iter()
            .filter_map(|e| st.objects.get(&e.id).map(|o| o.bind(py).clone()))
            .collect();
        let wf = self.run_fit(py, &mut st.core)?;
        let fit = build_fit(py, &snapshot, st.core.policy(), self.counter_id(py), wf.outcome)?;
        st.last_fit = Some(Py::new(py, fit)?);
        let gone = self.mirror(py, st, wf.changes)?;
        // What the ladder took (dropped, or folded into a digest); a rewrite deferred to this
        // fit is a replacement the caller asked for, not an eviction.
        Ok(gone.into_iter().filter(|(_, reason, _)| reason != "rewrite").map(|(o, _, _)| o).collect())
    }

    /// Texts held in `layer`, in admission order.
    fn texts(&self, layer: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let py = layer.py();
        let l = layer_arg(layer, "layer")?;
        let st = lock(py, &self.state);
        Ok(st.core.entries().iter().filter(|e| e.seg.layer == l).map(|e| e.seg.text.clone()).collect())
    }

    /// Held segments (of one layer, or all), in admission order.
    #[pyo3(signature = (layer=None))]
    fn segments(&self, py: Python<'_>, layer: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Py<Segment>>> {
        let l = match layer {
            Some(l) if !l.is_none() => Some(layer_arg(l, "layer")?),
            _ => None,
        };
        let st = lock(py, &self.state);
        Ok(st
            .core
            .entries()
            .iter()
            .filter(|e| l.is_none_or(|l| e.seg.layer == l))
            .filter_map(|e| st.objects.get(&e.id).map(|o| o.clone_ref(py)))
            .collect())
    }

    /// Tokens held now.
    #[getter]
    fn tokens(&self, py: Python<'_>) -> usize {
        lock(py, &self.state).core.held_tokens()
    }

    #[getter]
    fn last_fit(&self, py: Python<'_>) -> Option<Py<Fit>> {
        lock(py, &self.state).last_fit.as_ref().map(|f| f.clone_ref(py))
    }

    /// Why `key` is held or absent: status, cycle, rung, tokens before/after.
    fn why(&self, key: &Bound<'_, PyAny>) -> PyResult<Why> {
        let py = key.py();
        let k = args::text(key, "key")?;
        let st = lock(py, &self.state);
        st.core.why(k).map(Why::from).map_err(|e| key_error(py, e))
    }

    /// Every key ever admitted, with its current answer.
    fn ledger_entries(&self, py: Python<'_>) -> Vec<Why> {
        let st = lock(py, &self.state);
        let mut all: Vec<Why> = st.core.whys().map(Why::from).collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    #[getter]
    fn ledger(&self, py: Python<'_>) -> WindowLedger {
        Self::ledger_of(&lock(py, &self.state).core)
    }

    /// Removes a held segment now (recorded like an eviction, key freed); returns it.
    fn discard(&self, key: &Bound<'_, PyAny>) -> PyResult<Py<Segment>> {
        let py = key.py();
        let k = args::text(key, "key")?;
        let mut st = lock(py, &self.state);
        let changes = st.core.discard(k).map_err(|e| key_error(py, e))?;
        let gone = self.mirror(py, &mut st, changes)?;
        gone.into_iter().next().map(|(o, _, _)| o).ok_or_else(|| error(py, Kind::UnknownKey, k.to_string()))
    }

    /// Flags a held segment stale so stale-first policies take it early.
    fn mark_stale(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = key.py();
        let k = args::text(key, "key")?;
        let mut st = lock(py, &self.state);
        let e = st.core.mark_stale(k).map_err(|e| key_error(py, e))?;
        let changes = Changes { removed: Vec::new(), upserted: vec![e] };
        self.mirror(py, &mut st, changes)?;
        Ok(())
    }

    /// Replaces a held segment by a tagged lossy surrogate. Returns False when deferred: this
    /// cycle admitted new non-recoverable content, so the next fit() counts the original and
    /// the surrogate replaces it as that fit() returns.
    #[pyo3(signature = (key, surrogate_text, *, provenance=None))]
    fn rewrite(&self, key: &Bound<'_, PyAny>, surrogate_text: &Bound<'_, PyAny>, provenance: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let py = key.py();
        let k = args::text(key, "key")?;
        let text = args::text(surrogate_text, "surrogate_text")?;
        let prov = match provenance {
            Some(p) if !p.is_none() => Some(args::text(p, "provenance")?),
            _ => None,
        };
        let tagged = Window::surrogate_text(k, prov.unwrap_or(""), text);
        let n = self.count_text(py, &tagged)?;
        let mut st = lock(py, &self.state);
        match st.core.rewrite(k, tagged, n, prov) {
            Ok(Rewrite::Deferred) => Ok(false),
            Ok(Rewrite::Applied(changes)) => {
                self.mirror(py, &mut st, changes)?;
                Ok(true)
            }
            Err(e) => Err(key_error(py, e)),
        }
    }

    /// Replaces the tool exchange holding `key` by its short durable record; returns the record.
    fn digest(&self, key: &Bound<'_, PyAny>) -> PyResult<Py<Segment>> {
        let py = key.py();
        let k = args::text(key, "key")?;
        let (ids, text) = {
            let st = lock(py, &self.state);
            st.core.digest_text_for(k).map_err(|e| key_error(py, e))?
        };
        let n = self.count_text(py, &text)?;
        let mut st = lock(py, &self.state);
        let changes = st.core.digest(k, &ids, text, n).map_err(|e| key_error(py, e))?;
        let new_id = changes.upserted.first().map(|e| e.id);
        self.mirror(py, &mut st, changes)?;
        new_id
            .and_then(|id| st.objects.get(&id).map(|o| o.clone_ref(py)))
            .ok_or_else(|| error(py, Kind::UnknownKey, k.to_string()))
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = key.py();
        let k = args::text(key, "key")?;
        Ok(lock(py, &self.state).core.holds(k))
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        lock(py, &self.state).core.entries().len()
    }

    #[getter]
    fn limit_tokens(&self, py: Python<'_>) -> usize {
        lock(py, &self.state).core.limit()
    }
    #[getter]
    fn reserve(&self, py: Python<'_>) -> usize {
        lock(py, &self.state).core.reserve()
    }
    #[getter]
    fn ceiling(&self, py: Python<'_>) -> usize {
        let st = lock(py, &self.state);
        st.core.limit() - st.core.reserve()
    }
    #[getter]
    fn low_watermark(&self, py: Python<'_>) -> Option<f64> {
        lock(py, &self.state).core.low_watermark()
    }
    /// Fits so far; a cycle is the admissions since the previous fit.
    #[getter]
    fn cycle(&self, py: Python<'_>) -> u64 {
        lock(py, &self.state).core.cycle()
    }
    /// Tokens at the front of what is held that did not change since the previous fit: what a
    /// provider's prompt cache can reuse.
    #[getter]
    fn stable_prefix_tokens(&self, py: Python<'_>) -> usize {
        lock(py, &self.state).core.stable_prefix_tokens()
    }
    #[getter]
    fn tokenizer(&self, py: Python<'_>) -> Py<Tokenizer> {
        self.tokenizer.clone_ref(py)
    }
    #[getter]
    fn policy(&self, py: Python<'_>) -> PyResult<Py<super::policy::Policy>> {
        let st = lock(py, &self.state);
        Py::new(py, super::policy::Policy { name: st.core.policy_name().map(str::to_string), inner: st.core.policy().clone() })
    }

    /// The whole state (held segments, ledger, counters, policy) as bytes, to park a session in
    /// any store. `meta` objects must be JSON-serialisable here (pickle takes any picklable meta).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let (core, metas) = self.state_parts(py)?;
        let json = py.import("json")?;
        let doc = PyDict::new(py);
        doc.set_item("format", "ctxfast.ContextWindow/1")?;
        doc.set_item("core", json.call_method1("loads", (core,))?)?;
        let metas_s: Bound<'_, PyAny> = json.call_method1("dumps", (metas,)).map_err(|e| {
            let err = error(py, Kind::InvalidArgument, "a held segment's meta is not JSON-serialisable; use pickle to persist this window");
            err.set_cause(py, Some(e));
            err
        })?;
        doc.set_item("metas", metas_s)?;
        let tok = self.tokenizer.bind(py);
        let state = tok.call_method0("__reduce__")?.get_item(1)?.get_item(0)?;
        let kind: String = state.get_item(0)?.extract()?;
        if kind == "encoding" || kind == "approximate" {
            doc.set_item("tokenizer", (kind, state.get_item(1)?))?;
        }
        let text: String = json.call_method1("dumps", (doc,))?.extract()?;
        Ok(PyBytes::new(py, text.as_bytes()))
    }

    /// Restores `to_bytes()` output. Windows that counted with an embedded encoding or the
    /// estimate bring their tokenizer along; others need `tokenizer=` again.
    #[staticmethod]
    #[pyo3(signature = (data, tokenizer=None))]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>, tokenizer: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let bytes: Vec<u8> = data.extract().map_err(|_| args::wrong_type(data, "data", "bytes"))?;
        let bad = |m: &str| error(py, Kind::InvalidArgument, format!("argument 'data' is not a saved ContextWindow: {m}"));
        let doc = py
            .import("json")?
            .call_method1("loads", (PyBytes::new(py, &bytes),))
            .map_err(|_| bad("not JSON"))?;
        let doc = doc.cast_into::<PyDict>().map_err(|_| bad("not a JSON object"))?;
        if doc.get_item("format")?.map(|f| f.to_string()) != Some("ctxfast.ContextWindow/1".into()) {
            return Err(bad("unknown format"));
        }
        let core = doc.get_item("core")?.ok_or_else(|| bad("no core state"))?;
        let core_bytes: Vec<u8> = py.import("json")?.call_method1("dumps", (core,))?.extract::<String>()?.into_bytes();
        let metas_s = doc.get_item("metas")?.ok_or_else(|| bad("no metas"))?;
        let metas_raw = py
            .import("json")?
            .call_method1("loads", (metas_s,))
            .map_err(|_| bad("'metas' is not JSON text"))?;
        let metas = PyDict::new(py);
        for (k, v) in metas_raw.cast_into::<PyDict>().map_err(|_| bad("'metas' is not an object"))?.iter() {
            let id = k.extract::<String>().ok().and_then(|k| k.parse::<u64>().ok()).ok_or_else(|| bad("a meta id is not a number"))?;
            metas.set_item(id, v)?;
        }
        let tok = match tokenizer {
            Some(t) if !t.is_none() => resolve_tokenizer(py, Some(t))?,
            _ => match doc.get_item("tokenizer")? {
                Some(t) => {
                    // JSON gives back a list: [kind, payload].
                    let recipe: Option<(String, Bound<'_, PyAny>)> = t
                        .extract::<Vec<Bound<'_, PyAny>>>()
                        .ok()
                        .filter(|v| v.len() == 2)
                        .and_then(|v| Some((v[0].extract::<String>().ok()?, v[1].clone())));
                    let cls = py.get_type::<Tokenizer>();
                    let made = match recipe {
                        Some((kind, payload)) if kind == "encoding" => cls.call_method1("from_encoding", (payload,)),
                        Some((kind, payload)) if kind == "approximate" => cls.call_method1("approximate", (payload,)),
                        _ => return Err(bad("'tokenizer' is not an [\"encoding\", name] or [\"approximate\", ratio] pair")),
                    };
                    made.map_err(|e| {
                        let err = bad("its 'tokenizer' cannot be rebuilt");
                        err.set_cause(py, Some(e));
                        err
                    })?
                    .cast_into::<Tokenizer>()?
                }
                None => {
                    return Err(error(
                        py,
                        Kind::InvalidArgument,
                        "this window counted with a tokenizer.json or a callable: pass tokenizer= to from_bytes",
                    ))
                }
            },
        };
        Self::restore(py, &core_bytes, &metas, tok)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let me = slf.get();
        let (core, metas) = me.state_parts(py)?;
        let restore = slf.get_type().getattr("_restore")?;
        let args = PyTuple::new(py, [core.into_any(), metas.into_any(), me.tokenizer.bind(py).clone().into_any()])?;
        Ok((restore, args))
    }

    #[staticmethod]
    fn _restore(core: &Bound<'_, PyBytes>, metas: &Bound<'_, PyDict>, tokenizer: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = core.py();
        let tok = resolve_tokenizer(py, Some(tokenizer))?;
        Self::restore(py, core.as_bytes(), metas, tok)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let st = lock(py, &self.state);
        format!(
            "ContextWindow(limit_tokens={}, reserve={}, held={} segments / {} tokens, policy={})",
            st.core.limit(),
            st.core.reserve(),
            st.core.entries().len(),
            st.core.held_tokens(),
            st.core.policy_name().unwrap_or("custom")
        )
    }
}
