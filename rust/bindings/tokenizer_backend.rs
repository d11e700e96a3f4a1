//! What a `Tokenizer` counts with (a native engine or the user's callable) and the crate-facing
//! side of it: the counting the other binding modules call, without a Python method each.

use std::sync::Arc;

use pyo3::prelude::*;

use super::callable::call_counter;
use super::errors::UnsupportedOperationError;
use super::gil::{self, Interrupt, Work};
use super::tokenizer::Tokenizer;
use super::tokenizer_batch::in_batches;
use crate::cache::CountCache;
use crate::tokenize::{Engine, TokenCounter, INTERRUPT_CHUNK_BYTES};

/// What counts: a native engine (with its cache), or the user's callable (with one of its own).
pub(super) enum Backend {
    Native(Arc<TokenCounter>),
    /// A user's `str -> int` callable, trusted as exact; it runs under the GIL.
    Callable { func: Py<PyAny>, cache: CountCache, id: u64 },
}

impl Tokenizer {
    pub fn from_counter(counter: Arc<TokenCounter>) -> Self {
        Self { backend: Backend::Native(counter) }
    }

    pub(super) fn native(counter: TokenCounter) -> Self {
        Self { backend: Backend::Native(Arc::new(counter)) }
    }

    /// The engine, for other binding modules (fit, windows) that count natively.
    pub fn native_counter(&self) -> Option<&Arc<TokenCounter>> {
        match &self.backend {
            Backend::Native(c) => Some(c),
            Backend::Callable { .. } => None,
        }
    }

    /// Identifies the counter a segment's remembered count came from.
    pub fn counter_id(&self) -> u64 {
        match &self.backend {
            Backend::Native(c) => c.id(),
            Backend::Callable { id, .. } => *id,
        }
    }

    /// The user's callable and its cache, for the ladder's Python-side counter.
    pub fn callable(&self) -> Option<(&Py<PyAny>, &CountCache)> {
        match &self.backend {
            Backend::Callable { func, cache, .. } => Some((func, cache)),
            Backend::Native(_) => None,
        }
    }

    pub(super) fn unsupported(what: &str) -> PyErr {
        UnsupportedOperationError::new_err(format!("{what} needs a vocabulary; a Tokenizer.from_callable counter only counts"))
    }

    /// How another process rebuilds this tokenizer without being handed it: an embedded encoding
    /// by name, or the estimate by its ratio. None for tokenizer.json files and callables.
    pub fn portable_recipe(&self) -> Option<(&'static str, serde_json::Value)> {
        let Backend::Native(c) = &self.backend else { return None };
        match c.engine() {
            Engine::Tiktoken(e) => Some(("encoding", serde_json::Value::from(e.name()))),
            Engine::Approximate { chars_per_token } => Some(("approximate", serde_json::Value::from(*chars_per_token))),
            Engine::HuggingFace(_) => None,
        }
    }

    /// Count through the user's callable, through the cache.
    fn call_count(py: Python<'_>, func: &Py<PyAny>, cache: &CountCache, text: &str) -> PyResult<usize> {
        cache.get_or_count(text, |t| call_counter(py, func, t))
    }

    pub fn count_str(&self, py: Python<'_>, text: &str, use_cache: bool) -> PyResult<usize> {
        match &self.backend {
            Backend::Native(c) if text.len() >= INTERRUPT_CHUNK_BYTES => {
                let interrupt = Interrupt::default();
                let result = py.detach(|| c.count_interruptible(text, use_cache, &|| interrupt.check()));
                interrupt.settle(result)
            }
            Backend::Native(c) => Ok(gil::run(py, Work::Bytes(text.len()), || c.count_with(text, use_cache))?),
            Backend::Callable { func, cache, .. } => {
                if use_cache {
                    Self::call_count(py, func, cache, text)
                } else {
                    call_counter(py, func, text)
                }
            }
        }
    }

    pub fn count_strs(&self, py: Python<'_>, texts: &[&str], use_cache: bool) -> PyResult<Vec<usize>> {
        match &self.backend {
            Backend::Native(c) => in_batches(py, texts, |batch| c.count_many(batch, use_cache)),
            Backend::Callable { .. } => texts.iter().map(|t| self.count_str(py, t, use_cache)).collect(),
        }
    }
}
