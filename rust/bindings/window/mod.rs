//! `ctxfast.ContextWindow`: the stateful window, one per conversation.
//!
//! All state lives in the core `Window` behind a mutex. The mutex is always taken with the GIL
//! released, so a thread waiting for the window never holds the GIL that the thread inside it
//! (whose fit runs detached) needs to finish: concurrent calls on one window are serialised,
//! never interleaved, never deadlocked.
//!
//! Files: this one is the class's methods; `state` holds what is behind the lock; `ledger` has the
//! `Why` and `WindowLedger` views; `persist` turns the state into bytes
//! and back (`persist_json` its JSON form); `build` reads the constructor's arguments.

mod build;
mod ledger;
mod persist;
mod persist_json;
mod state;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use super::args;
use super::cache_plan::{CacheProfile as CachePy, CacheReport};
use super::counting::{resolve_tokenizer, with_source};
use super::errors::UnknownKeyError;
use super::layer::layer_arg;
use super::outcome::Fit;
use super::outcome_build::{build_fit, Originals};
use super::policy::Policy;
use super::segment::{segments_arg, settle_counts, Segment};
use super::tokenizer::Tokenizer;
use crate::window::{Changes, Rewrite, Window};
pub use ledger::{WindowLedger, Why};
pub use state::ContextWindow;
use state::lock;

#[pymethods]
impl ContextWindow {
    #[new]
    #[pyo3(signature = (limit_tokens, tokenizer=None, policy=None, reserve=None, *, low_watermark=None, why_horizon=None, cache=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        limit_tokens: &Bound<'_, PyAny>,
        tokenizer: Option<&Bound<'_, PyAny>>,
        policy: Option<&Bound<'_, PyAny>>,
        reserve: Option<&Bound<'_, PyAny>>,
        low_watermark: Option<&Bound<'_, PyAny>>,
        why_horizon: Option<&Bound<'_, PyAny>>,
        cache: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        build::new_window(py, limit_tokens, tokenizer, policy, reserve, low_watermark, why_horizon, cache)
    }

    /// Holds `segment` unless its key is already held, in any layer.
    ///
    /// Returns False, holding nothing, when the key is already held. The segment is counted
    /// here, once; admission never evicts (call fit()).
    fn admit(&self, segment: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = segment.py();
        let seg = segment.cast::<Segment>().map_err(|_| args::wrong_type(segment, "segment", "Segment"))?;
        // A held key is refused before anything is counted: a recurring chunk costs a lookup.
        {
            let mut st = lock(py, &self.state)?;
            if st.core.holds_key(seg.get().data.key.as_deref()) {
                return self.admit_one(py, &mut st, seg, 0);
            }
        }
        let counts = settle_counts(py, self.tokenizer.bind(py).get(), std::slice::from_ref(seg))?;
        let mut st = lock(py, &self.state)?;
        st.core.can_admit(&counts)?;
        self.admit_one(py, &mut st, seg, counts[0])
    }

    /// Admits a whole turn in one call: each segment in order, as `admit` does.
    fn admit_many(&self, segments: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let py = segments.py();
        let segs = segments_arg(segments, "segments")?;
        let tok = self.tokenizer.bind(py).get();
        // A segment whose key is held is not counted (it will be refused). Should such a key be
        // freed before the turn is admitted (another thread's discard), the segment is counted
        // then: each pass counts at least one more, so this ends.
        let mut counts: Vec<Option<usize>> = vec![None; segs.len()];
        let mut todo: Vec<usize> = {
            let st = lock(py, &self.state)?;
            (0..segs.len()).filter(|&i| !st.core.holds_key(segs[i].get().data.key.as_deref())).collect()
        };
        let mut st = loop {
            let batch: Vec<Bound<'_, Segment>> = todo.iter().map(|&i| segs[i].clone()).collect();
            for (&i, n) in todo.iter().zip(settle_counts(py, tok, &batch)?) {
                counts[i] = Some(n);
            }
            let st = lock(py, &self.state)?;
            todo = (0..segs.len()).filter(|&i| counts[i].is_none() && !st.core.holds_key(segs[i].get().data.key.as_deref())).collect();
            if todo.is_empty() {
                break st;
            }
        };
        // Uncounted ones are held: admit_one refuses them whatever the count.
        let counts: Vec<usize> = counts.into_iter().map(|c| c.unwrap_or(0)).collect();
        // All or nothing: a turn that would pass the limits is refused before any of it is held.
        st.core.can_admit(&counts)?;
        segs.iter().zip(counts).map(|(s, n)| self.admit_one(py, &mut st, s, n)).collect()
    }

    /// Evicts by the policy until what is held fits under the ceiling.
    ///
    /// Returns what left, in eviction order; their keys are freed. Raises Unfittable, the
    /// window unchanged, when the protected set plus the floors cannot fit.
    fn fit(&self, py: Python<'_>) -> PyResult<Vec<Py<Segment>>> {
        let mut guard = lock(py, &self.state)?;
        let st = &mut *guard;
        let snapshot = Self::snapshot(py, st)?;
        let tok = self.tokenizer.bind(py).get();
        let core = &mut st.core;
        let wf = with_source(py, tok, snapshot.len(), |src| core.fit(src))?;
        let objects = Originals::Objects(snapshot.iter().map(|s| s.clone().unbind()).collect());
        let mut fit = build_fit(py, objects, st.core.policy(), self.counter_id(py), wf.outcome)?;
        if let Some(report) = wf.cache {
            fit.cache = Py::new(py, CacheReport { inner: report })?;
        }
        st.last_fit = Some(Py::new(py, fit)?);
        let gone = self.mirror(py, st, wf.changes)?;
        // What the ladder took (dropped, or folded into a digest); a rewrite deferred to this
        // fit is a replacement the caller asked for, not an eviction.
        Ok(gone.into_iter().filter(|(_, cause)| cause.by_ladder()).map(|(o, _)| o).collect())
    }

    /// The texts held in `layer`, in admission order.
    fn texts(&self, layer: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let py = layer.py();
        let l = layer_arg(layer, "layer")?;
        let st = lock(py, &self.state)?;
        Ok(st.core.entries().iter().filter(|e| e.seg.layer == l).map(|e| e.seg.text.clone()).collect())
    }

    /// The held segments of `layer`, or of every layer when None, in admission order.
    #[pyo3(signature = (layer=None))]
    fn segments(&self, py: Python<'_>, layer: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Py<Segment>>> {
        let l = match layer {
            Some(l) if !l.is_none() => Some(layer_arg(l, "layer")?),
            _ => None,
        };
        let st = lock(py, &self.state)?;
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
    fn tokens(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(lock(py, &self.state)?.core.held_tokens())
    }

    /// The `Fit` of the latest successful `fit()`; None before the first.
    #[getter]
    fn last_fit(&self, py: Python<'_>) -> PyResult<Option<Py<Fit>>> {
        Ok(lock(py, &self.state)?.last_fit.as_ref().map(|f| f.clone_ref(py)))
    }

    /// Why `key` is held or absent: status, cycle, rung, and tokens before and after.
    fn why(&self, key: &Bound<'_, PyAny>) -> PyResult<Why> {
        let py = key.py();
        let k = args::text(key, "key")?;
        let st = lock(py, &self.state)?;
        Ok(st.core.why(k).map(Why::from)?)
    }

    /// The current answer for every key ever admitted, sorted by key.
    fn ledger_entries(&self, py: Python<'_>) -> PyResult<Vec<Why>> {
        let st = lock(py, &self.state)?;
        // `whys()` gives them in key order already.
        Ok(st.core.whys().map(Why::from).collect())
    }

    /// The window's counters and token totals (a snapshot).
    #[getter]
    fn ledger(&self, py: Python<'_>) -> PyResult<WindowLedger> {
        Ok(WindowLedger::from(&lock(py, &self.state)?.core))
    }

    /// Removes the held segment with `key` now.
    ///
    /// Recorded like an eviction (rung "discard") and the key is freed; returns the segment.
    fn discard(&self, key: &Bound<'_, PyAny>) -> PyResult<Py<Segment>> {
        let py = key.py();
        let k = args::text(key, "key")?;
        let mut st = lock(py, &self.state)?;
        let changes = st.core.discard(k)?;
        let gone = self.mirror(py, &mut st, changes)?;
        gone.into_iter().next().map(|(o, _)| o).ok_or_else(|| UnknownKeyError::new_err(k.to_string()))
    }

    /// Flags the held segment with `key` stale, so stale-first rungs take it early.
    fn mark_stale(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = key.py();
        let k = args::text(key, "key")?;
        let mut st = lock(py, &self.state)?;
        let e = st.core.mark_stale(k)?;
        let changes = Changes { removed: Vec::new(), upserted: vec![e] };
        self.mirror(py, &mut st, changes)?;
        Ok(())
    }

    /// Replaces the held segment with `key` by a tagged lossy surrogate.
    ///
    /// `provenance` is required. Returns False when deferred: this cycle admitted new
    /// non-recoverable content, so the next fit() counts the original and the surrogate replaces
    /// it as that fit() returns.
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
        let mut st = lock(py, &self.state)?;
        match st.core.rewrite(k, tagged, n, prov) {
            Ok(Rewrite::Deferred) => Ok(false),
            Ok(Rewrite::Applied(changes)) => {
                self.mirror(py, &mut st, changes)?;
                Ok(true)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Replaces the tool exchange holding `key` by its short durable record now.
    ///
    /// The exchange must hold a TOOL_RESULT. Returns the record.
    fn digest(&self, key: &Bound<'_, PyAny>) -> PyResult<Py<Segment>> {
        let py = key.py();
        let k = args::text(key, "key")?;
        let (ids, text) = {
            let st = lock(py, &self.state)?;
            st.core.digest_text_for(k)?
        };
        let n = self.count_text(py, &text)?;
        let mut st = lock(py, &self.state)?;
        let changes = st.core.digest(k, &ids, text, n)?;
        let new_id = changes.upserted.first().map(|e| e.id);
        self.mirror(py, &mut st, changes)?;
        new_id
            .and_then(|id| st.objects.get(&id).map(|o| o.clone_ref(py)))
            .ok_or_else(|| UnknownKeyError::new_err(k.to_string()))
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = key.py();
        let k = args::text(key, "key")?;
        Ok(lock(py, &self.state)?.core.holds(k))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(lock(py, &self.state)?.core.entries().len())
    }

    /// The whole context window, in tokens.
    #[getter]
    fn limit_tokens(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(lock(py, &self.state)?.core.limit())
    }
    /// Tokens kept free for the answer.
    #[getter]
    fn reserve(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(lock(py, &self.state)?.core.reserve())
    }
    /// `limit_tokens - reserve`: the most tokens a fit leaves held.
    #[getter]
    fn ceiling(&self, py: Python<'_>) -> PyResult<usize> {
        let st = lock(py, &self.state)?;
        Ok(st.core.limit() - st.core.reserve())
    }
    /// Fits a key's `why` answer is kept after it leaves, or None (kept for good).
    #[getter]
    fn why_horizon(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        Ok(lock(py, &self.state)?.core.why_horizon())
    }
    /// The fraction of the ceiling an evicting fit goes down to, or None.
    #[getter]
    fn low_watermark(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        Ok(lock(py, &self.state)?.core.low_watermark())
    }
    /// The prompt cache the window reports against (`last_fit.cache`), or None.
    #[getter]
    fn cache(&self, py: Python<'_>) -> PyResult<Option<CachePy>> {
        Ok(lock(py, &self.state)?.core.cache().map(|p| CachePy { inner: p.clone() }))
    }
    /// Fits completed so far; a cycle is the admissions since the previous fit.
    #[getter]
    fn cycle(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(lock(py, &self.state)?.core.cycle())
    }
    /// Tokens at the front of what is held that did not change since the previous fit: what a
    /// provider's prompt cache can reuse.
    #[getter]
    fn stable_prefix_tokens(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(lock(py, &self.state)?.core.stable_prefix_tokens())
    }
    /// The tokenizer that counts for this window (a callable given is wrapped in one).
    #[getter]
    fn tokenizer(&self, py: Python<'_>) -> Py<Tokenizer> {
        self.tokenizer.clone_ref(py)
    }
    /// The window's policy (a new, equal Policy object each call).
    #[getter]
    fn policy(&self, py: Python<'_>) -> PyResult<Py<Policy>> {
        let st = lock(py, &self.state)?;
        Py::new(py, Policy { name: st.core.policy_name().map(str::to_string), inner: st.core.policy().clone() })
    }

    /// The whole state as a versioned binary snapshot, to park a session in any store.
    ///
    /// Every held `meta` must be JSON-serialisable here; pickle takes any picklable `meta`.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        persist::to_bytes(py, self)
    }

    /// The whole state as JSON text, for people to read; `from_bytes` reads it too.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        persist_json::to_json(py, self)
    }

    /// A number that grows with every change; pass it to `delta_since` later.
    #[getter]
    fn revision(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(lock(py, &self.state)?.core.revision())
    }

    /// What changed since `revision`, for `apply_delta` or `from_bytes(deltas=...)`.
    ///
    /// `revision` is one this window had since it was made or restored.
    fn delta_since<'py>(&self, revision: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        persist::delta_since(revision.py(), self, revision)
    }

    /// Applies a `delta_since` result in place: all of it, or (refused) none of it.
    fn apply_delta(&self, delta: &Bound<'_, PyAny>) -> PyResult<()> {
        persist::apply_delta(delta.py(), self, delta)
    }

    /// Restores `to_bytes()` (or `to_json()`) output, ledger and all, then `deltas`.
    ///
    /// Windows that counted with an embedded encoding or the estimate bring their tokenizer
    /// along; others need `tokenizer=` again.
    #[staticmethod]
    #[pyo3(signature = (data, tokenizer=None, *, deltas=None))]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>, tokenizer: Option<&Bound<'_, PyAny>>, deltas: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        persist::from_bytes(py, data, tokenizer, deltas)
    }

    /// Pickles the whole state with the tokenizer (a callable must be picklable).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let me = slf.get();
        let (core, metas) = persist::state_parts(py, me)?;
        let restore = slf.get_type().getattr("_restore")?;
        let args = PyTuple::new(py, [core.into_any(), metas.into_any(), me.tokenizer.bind(py).clone().into_any()])?;
        Ok((restore, args))
    }

    /// Internal: the unpickling constructor.
    #[staticmethod]
    fn _restore(core: &Bound<'_, PyBytes>, metas: &Bound<'_, PyDict>, tokenizer: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = core.py();
        let tok = resolve_tokenizer(py, Some(tokenizer))?;
        persist::from_parts(py, core.as_bytes(), metas, tok)
    }

    /// For the test suite: whether every held entry has its segment object (the fit relies on it).
    fn _objects_cover_entries(&self, py: Python<'_>) -> PyResult<bool> {
        let st = lock(py, &self.state)?;
        Ok(st.core.entries().iter().all(|e| st.objects.contains_key(&e.id)))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let st = lock(py, &self.state)?;
        Ok(format!(
            "ContextWindow(limit_tokens={}, reserve={}, held={} segments / {} tokens, policy={})",
            st.core.limit(),
            st.core.reserve(),
            st.core.entries().len(),
            st.core.held_tokens(),
            st.core.policy_name().unwrap_or("custom")
        ))
    }
}
