//! The window's Python-side state: the core `Window` and the segment object standing for each
//! held entry, behind one mutex that is always taken with the GIL released.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::super::errors::InvalidArgumentError;
use super::super::outcome::Fit;
use super::super::segment::Segment;
use super::super::tokenizer::Tokenizer;
use crate::window::ledger::Cause;
use crate::window::{Admit, Changes, Entry, Window};

/// The segment object standing for each held entry, by entry id.
pub(super) type Objects = rustc_hash::FxHashMap<u64, Py<Segment>>;

pub(super) struct State {
    pub(super) core: Window,
    /// The Python object standing for each held entry, so callers get back what they gave.
    pub(super) objects: Objects,
    pub(super) last_fit: Option<Py<Fit>>,
}

/// A token window across turns, one per conversation.
///
/// ContextWindow(limit_tokens, tokenizer=None, policy=None, reserve=None, *,
/// low_watermark=None, why_horizon=None, cache=None)
///
/// - tokenizer: a Tokenizer, a `str -> int` callable, or None for the embedded o200k_base.
/// - policy: a Policy or a preset name; `Policy.context_window()` by default.
/// - reserve: tokens kept free for the answer (0 by default).
/// - low_watermark: a fraction in (0, 1]: an evicting fit goes down to that share of the
///   ceiling, so the next turns append without moving the cut.
/// - why_horizon: forget why(key) answers for keys that left more than N fits ago.
/// - cache: a CacheProfile or its name ("openai", "anthropic", "llama.cpp"...): `last_fit.cache`
///   reports against it, and its low watermark is the default one.
///
/// Use: admit(segment) / admit_many(segments), then fit() each turn; texts(layer) to assemble.
#[pyclass(frozen, module = "ctxfast._core", name = "ContextWindow")]
pub struct ContextWindow {
    pub(super) tokenizer: Py<Tokenizer>,
    pub(super) state: Guarded,
}

/// The state behind its lock, with the thread that holds it: a user's counter running inside
/// `fit()` that calls back into the same window would otherwise wait for itself forever.
pub(super) struct Guarded {
    state: Mutex<State>,
    owner: AtomicU64,
}

impl Guarded {
    pub(super) fn new(state: State) -> Self {
        Self { state: Mutex::new(state), owner: AtomicU64::new(0) }
    }
}

/// A held lock; the owner mark is cleared when it is dropped.
pub(super) struct Locked<'a> {
    guard: MutexGuard<'a, State>,
    owner: &'a AtomicU64,
}

impl std::ops::Deref for Locked<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.guard
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.guard
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.owner.store(0, Ordering::Release);
    }
}

/// This thread's id for the owner mark (never 0).
fn this_thread() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local!(static ME: u64 = NEXT.fetch_add(1, Ordering::Relaxed));
    ME.with(|me| *me)
}

/// Takes the window's lock: at once when it is free, else waiting with the GIL released (so the
/// holder, whose fit may run detached, can finish). A thread that already holds it (a counter
/// re-entering its own window) gets an error instead of a deadlock.
pub(super) fn lock<'a>(py: Python<'_>, g: &'a Guarded) -> PyResult<Locked<'a>> {
    let guard = match g.state.try_lock() {
        Some(guard) => guard,
        None => {
            if g.owner.load(Ordering::Acquire) == this_thread() {
                return Err(InvalidArgumentError::new_err(
                    "the window was called from inside its own fit() (by its counting callable); \
                     a counter must not use the window it counts for",
                ));
            }
            py.detach(|| g.state.lock())
        }
    };
    g.owner.store(this_thread(), Ordering::Release);
    Ok(Locked { guard, owner: &g.owner })
}

impl ContextWindow {
    pub(super) fn counter_id(&self, py: Python<'_>) -> u64 {
        self.tokenizer.bind(py).get().counter_id()
    }

    pub(super) fn object_for(&self, py: Python<'_>, e: &Entry, meta: Option<Py<PyAny>>) -> PyResult<Py<Segment>> {
        let mut meta = meta;
        if meta.is_none() {
            if let Some((source, by)) = e.provenance.as_deref() {
                let d = PyDict::new(py);
                d.set_item("lossy", true)?;
                d.set_item("source_key", source.as_deref())?;
                d.set_item("provenance", by)?;
                meta = Some(d.into_any().unbind());
            }
        }
        // Shared, not copied: a held text lives once, in the entry.
        let seg = Segment::from_shared(e.seg.clone(), meta);
        seg.remember(self.counter_id(py), e.tokens);
        Py::new(py, seg)
    }

    /// Mirrors core changes on the Python objects; returns the objects that left, with why.
    pub(super) fn mirror(&self, py: Python<'_>, st: &mut State, changes: Changes) -> PyResult<Vec<(Py<Segment>, Cause)>> {
        let mut gone = Vec::new();
        let mut left = std::collections::HashSet::with_capacity(changes.removed.len());
        for r in changes.removed {
            left.insert(r.entry.id);
            let obj = match st.objects.remove(&r.entry.id) {
                Some(o) => o,
                None => self.object_for(py, &r.entry, None)?,
            };
            gone.push((obj, r.cause));
        }
        // An entry made and removed in the same change (a digest a later rung dropped) is not
        // held: giving it an object would keep that object alive for the window's lifetime.
        for e in changes.upserted.into_iter().filter(|e| !left.contains(&e.id)) {
            let meta = st.objects.get(&e.id).and_then(|o| o.bind(py).get().meta_ref(py));
            let obj = self.object_for(py, &e, meta)?;
            st.objects.insert(e.id, obj);
        }
        Ok(gone)
    }

    /// Admits one segment whose count the caller passed through `Window::can_admit`.
    pub(super) fn admit_one(&self, py: Python<'_>, st: &mut State, seg: &Bound<'_, Segment>, count: usize) -> PyResult<bool> {
        let data = seg.get().data.clone();
        match st.core.admit_checked(data, count)? {
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

    pub(super) fn count_text(&self, py: Python<'_>, text: &str) -> PyResult<usize> {
        self.tokenizer.bind(py).get().count_str(py, text, true)
    }

    /// The held entries' objects, in entry order. Every entry has one: a missing object would
    /// shift every later index of the fit outcome, so it is an error, never skipped.
    pub(super) fn snapshot<'py>(py: Python<'py>, st: &State) -> PyResult<Vec<Bound<'py, Segment>>> {
        st.core
            .entries()
            .iter()
            .map(|e| {
                st.objects.get(&e.id).map(|o| o.bind(py).clone()).ok_or_else(|| {
                    InvalidArgumentError::new_err(format!("internal: held entry {} has no segment object", e.id))
                })
            })
            .collect()
    }
}
