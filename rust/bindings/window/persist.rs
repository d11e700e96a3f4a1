//! A window's state as bytes (`to_bytes` / `from_bytes`) and as a pickle (`__reduce__`).
//!
//! The envelope is JSON written by serde in the core's own terms: `{"format", "core", "metas",
//! "tokenizer", "digest"}`. Only `metas` (the caller's `meta` objects) goes through Python's
//! `json`, once each way; the tokenizer travels as a recipe when it can be rebuilt from one.
//!
//! `digest` is an xxh3-128 of the rest, so a state corrupted in a store (a flipped bit, a cut
//! write) is refused instead of loading as a different window; the core then validates the state
//! itself. States from the first release (format `/1`, no digest) are validated and accepted.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use xxhash_rust::xxh3::Xxh3;

use super::super::args;
use super::super::counting::resolve_tokenizer;
use super::super::errors::InvalidArgumentError;
use super::super::tokenizer::Tokenizer;
use super::state::{lock, ContextWindow, Guarded, State};
use crate::window::Window;

const FORMAT: &str = "ctxfast.ContextWindow/2";
/// The first release's format: no digest.
const FORMAT_V1: &str = "ctxfast.ContextWindow/1";

#[derive(Serialize, Deserialize)]
struct Envelope {
    format: String,
    core: Value,
    /// JSON text of `{entry id: meta}`.
    metas: String,
    /// `["encoding", name]` or `["approximate", chars_per_token]`; absent for tokenizers that
    /// cannot be rebuilt from a recipe (tokenizer.json, callables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokenizer: Option<(String, Value)>,
    /// Hex xxh3-128 of core, metas and tokenizer (format /2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    digest: Option<String>,
}

impl Envelope {
    /// The integrity digest over everything but itself, from the canonical JSON of each part.
    fn compute_digest(&self) -> PyResult<String> {
        let mut h = Xxh3::new();
        for part in [serde_json::to_vec(&self.core), serde_json::to_vec(&self.metas), serde_json::to_vec(&self.tokenizer)] {
            h.update(&part.map_err(|e| InvalidArgumentError::new_err(e.to_string()))?);
            h.update(b"\0");
        }
        Ok(format!("{:032x}", h.digest128()))
    }
}

fn not_saved(what: &str) -> PyErr {
    InvalidArgumentError::new_err(format!("argument 'data' is not a saved ContextWindow: {what}"))
}

/// The core state as JSON bytes and the held segments' `meta` objects by entry id.
pub(super) fn state_parts<'py>(py: Python<'py>, w: &ContextWindow) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyDict>)> {
    let st = lock(py, &w.state)?;
    let core_json = st.core.to_json()?;
    let metas = PyDict::new(py);
    for e in st.core.entries() {
        if let Some(m) = st.objects.get(&e.id).and_then(|o| o.bind(py).get().meta_ref(py)) {
            metas.set_item(e.id, m)?;
        }
    }
    Ok((PyBytes::new(py, &core_json), metas))
}

/// A window from its core state, with a segment object per held entry.
pub(super) fn restore(py: Python<'_>, core_json: &[u8], metas: &Bound<'_, PyDict>, tokenizer: Bound<'_, Tokenizer>) -> PyResult<ContextWindow> {
    let core = Window::from_json(core_json)?;
    let me = ContextWindow { tokenizer: tokenizer.unbind(), state: Guarded::new(State { core, objects: HashMap::new(), last_fit: None }) };
    let mut objects = HashMap::new();
    {
        let st = lock(py, &me.state)?;
        for e in st.core.entries() {
            let meta = metas.get_item(e.id)?.map(|m| m.unbind());
            objects.insert(e.id, me.object_for(py, e, meta)?);
        }
    }
    lock(py, &me.state)?.objects = objects;
    Ok(me)
}

pub(super) fn to_bytes<'py>(py: Python<'py>, w: &ContextWindow) -> PyResult<Bound<'py, PyBytes>> {
    let (core, metas) = state_parts(py, w)?;
    let core: Value = serde_json::from_slice(core.as_bytes()).map_err(|e| InvalidArgumentError::new_err(e.to_string()))?;
    let metas: String = py.import("json")?.call_method1("dumps", (metas,)).and_then(|s| s.extract()).map_err(|e| {
        let err = InvalidArgumentError::new_err("a held segment's meta is not JSON-serialisable; use pickle to persist this window");
        err.set_cause(py, Some(e));
        err
    })?;
    let tokenizer = w.tokenizer.bind(py).get().portable_recipe().map(|(kind, payload)| (kind.to_string(), payload));
    let mut doc = Envelope { format: FORMAT.into(), core, metas, tokenizer, digest: None };
    doc.digest = Some(doc.compute_digest()?);
    let bytes = serde_json::to_vec(&doc).map_err(|e| InvalidArgumentError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &bytes))
}

pub(super) fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>, tokenizer: Option<&Bound<'_, PyAny>>) -> PyResult<ContextWindow> {
    let bytes = data.cast::<PyBytes>().map_err(|_| args::wrong_type(data, "data", "bytes"))?.as_bytes();
    let doc: Envelope = serde_json::from_slice(bytes).map_err(|e| not_saved(&e.to_string()))?;
    match doc.format.as_str() {
        FORMAT => {
            if doc.digest.as_deref() != Some(doc.compute_digest()?.as_str()) {
                return Err(not_saved("its integrity check failed (the bytes were changed or cut after it was saved)"));
            }
        }
        FORMAT_V1 => {}
        _ => return Err(not_saved("unknown format")),
    }
    let core_json = serde_json::to_vec(&doc.core).map_err(|e| not_saved(&e.to_string()))?;
    let metas_raw = py.import("json")?.call_method1("loads", (doc.metas,)).map_err(|_| not_saved("'metas' is not JSON text"))?;
    let metas = PyDict::new(py);
    for (k, v) in metas_raw.cast_into::<PyDict>().map_err(|_| not_saved("'metas' is not an object"))?.iter() {
        let id = k.extract::<String>().ok().and_then(|k| k.parse::<u64>().ok()).ok_or_else(|| not_saved("a meta id is not a number"))?;
        metas.set_item(id, v)?;
    }
    let tok = match (tokenizer.filter(|t| !t.is_none()), doc.tokenizer) {
        (Some(t), _) => resolve_tokenizer(py, Some(t))?,
        (None, Some((kind, payload))) => rebuild_tokenizer(py, &kind, payload)?,
        (None, None) => {
            return Err(InvalidArgumentError::new_err(
                "this window counted with a tokenizer.json or a callable: pass tokenizer= to from_bytes",
            ))
        }
    };
    restore(py, &core_json, &metas, tok)
}

fn rebuild_tokenizer<'py>(py: Python<'py>, kind: &str, payload: Value) -> PyResult<Bound<'py, Tokenizer>> {
    let cls = py.get_type::<Tokenizer>();
    let made = match (kind, payload) {
        ("encoding", Value::String(name)) => cls.call_method1("from_encoding", (name,)),
        ("approximate", Value::Number(n)) => cls.call_method1("approximate", (n.as_f64().unwrap_or(0.0),)),
        _ => return Err(not_saved("'tokenizer' is not an [\"encoding\", name] or [\"approximate\", ratio] pair")),
    };
    let made = made.map_err(|e| {
        let err = not_saved("its 'tokenizer' cannot be rebuilt");
        err.set_cause(py, Some(e));
        err
    })?;
    Ok(made.cast_into::<Tokenizer>()?)
}
