//! A window's state as JSON (`to_json`), for people to read, and the loader of every JSON
//! format a window has written (the first release's `/1`, `/2` with a digest).
//!
//! The envelope is JSON written by serde in the core's own terms: `{"format", "core", "metas",
//! "tokenizer", "digest"}`. `digest` is an xxh3-128 of the rest, so a state corrupted in a store
//! is refused instead of loading as a different window; the core then validates the state itself.

use pyo3::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use crate::hash::Xxh3;

use super::super::errors::InvalidArgumentError;
use super::persist::{not_saved, Loaded};
use super::state::{lock, ContextWindow};
use crate::window::persist::Extras;
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

/// The whole state as JSON text.
pub(super) fn to_json(py: Python<'_>, w: &ContextWindow) -> PyResult<String> {
    let (core, metas) = {
        let st = lock(py, &w.state)?;
        let core: Value = serde_json::from_slice(&st.core.to_json()?).map_err(|e| InvalidArgumentError::new_err(e.to_string()))?;
        (core, super::persist::metas_json(py, &st, st.core.entries().iter())?)
    };
    let tokenizer = w.tokenizer.bind(py).get().portable_recipe().map(|(kind, payload)| (kind.to_string(), payload));
    let mut doc = Envelope { format: FORMAT.into(), core, metas: metas.unwrap_or_else(|| "{}".into()), tokenizer, digest: None };
    doc.digest = Some(doc.compute_digest()?);
    serde_json::to_string(&doc).map_err(|e| InvalidArgumentError::new_err(e.to_string()))
}

/// A JSON state back: the core window and what travels with it.
pub(super) fn from_json(bytes: &[u8]) -> PyResult<Loaded> {
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
    let core = Window::from_json(&core_json)?;
    Ok(Loaded { core, extras: Extras { metas: Some(doc.metas), tokenizer: doc.tokenizer } })
}
