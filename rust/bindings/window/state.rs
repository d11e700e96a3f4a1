//! The window's Python-side state: the core `Window` and the segment object standing for each
//! held entry, behind one mutex that is always taken with the GIL released.

use std::collections::HashMap;

use parking_lot::{Mutex, MutexGuard};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::super::errors::InvalidArgumentError;
use super::super::outcome::Fit;
use super::super::segment::Segment;
use super::super::tokenizer::Tokenizer;
use crate::window::ledger::Cause;
use crate::window::{Admit, Changes, Entry, Window};

pub(super) struct State {
    pub(super) core: Window,
    /// The Python object standing for each held entry, so callers get back what they gave.
    pub(super) objects: HashMap<u64, Py<Segment>>,
    pub(super) last_fit: Option<Py<Fit>>,
}

/// A conversation's window across turns: keyed admission, eviction by policy, a ledger that
/// answers for every key, tagged rewrites, an optional low watermark, and persistence.
#[pyclass(frozen, module = "ctxfast._core", name = "ContextWindow")]
pub struct ContextWindow {
    pub(super) tokenizer: Py<Tokenizer>,
    pub(super) state: Mutex<State>,
}

pub(super) fn lock<'a>(py: Python<'_>, m: &'a Mutex<State>) -> MutexGuard<'a, State> {
    // Fast path: an uncontended lock needs no GIL hand-off.
    if let Some(g) = m.try_lock() {
        return g;
    }
    py.detach(|| m.lock())
}

impl ContextWindow {
    pub(super) fn counter_id(&self, py: Python<'_>) -> u64 {
        self.tokenizer.bind(py).get().counter_id()
    }

    pub(super) fn object_for(&self, py: Python<'_>, e: &Entry, meta: Option<Py<PyAny>>) -> PyResult<Py<Segment>> {
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

    /// Mirrors core changes on the Python objects; returns the objects that left, with why.
    pub(super) fn mirror(&self, py: Python<'_>, st: &mut State, changes: Changes) -> PyResult<Vec<(Py<Segment>, Cause)>> {
        let mut gone = Vec::new();
        for r in changes.removed {
            let obj = match st.objects.remove(&r.entry.id) {
                Some(o) => o,
                None => self.object_for(py, &r.entry, None)?,
            };
            gone.push((obj, r.cause));
        }
        for e in changes.upserted {
            let meta = st.objects.get(&e.id).and_then(|o| o.bind(py).get().meta_ref(py));
            let obj = self.object_for(py, &e, meta)?;
            st.objects.insert(e.id, obj);
        }
        Ok(gone)
    }

    pub(super) fn admit_one(&self, py: Python<'_>, st: &mut State, seg: &Bound<'_, Segment>, count: usize) -> PyResult<bool> {
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
