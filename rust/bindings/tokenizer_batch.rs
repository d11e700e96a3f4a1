//! Batches of texts through a native engine: one crossing, the GIL released by the rule in
//! `gil`, and a Ctrl-C check between pieces of about `INTERRUPT_CHUNK_BYTES`.

use std::borrow::Cow;

use pyo3::prelude::*;

use super::args;
use super::gil::{self, Work};
use crate::error::CtxResult;
use crate::tokenize::INTERRUPT_CHUNK_BYTES;

/// `f` over consecutive slices of `texts` of about `INTERRUPT_CHUNK_BYTES` (a longer text is a
/// slice of its own), results in order; signals are checked between slices.
pub fn in_batches<T, F>(py: Python<'_>, texts: &[&str], f: F) -> PyResult<Vec<T>>
where
    T: Send,
    F: Fn(&[&str]) -> CtxResult<Vec<T>> + Sync,
{
    let mut out = Vec::with_capacity(texts.len());
    let mut start = 0;
    while start < texts.len() {
        let (mut end, mut bytes) = (start, 0usize);
        while end < texts.len() && (end == start || bytes.saturating_add(texts[end].len()) <= INTERRUPT_CHUNK_BYTES) {
            bytes = bytes.saturating_add(texts[end].len());
            end += 1;
        }
        let batch = &texts[start..end];
        out.extend(gil::run(py, Work::Bytes(bytes), || f(batch))?);
        if end < texts.len() {
            py.check_signals()?;
        }
        start = end;
    }
    Ok(out)
}

/// The items of the sequence argument `arg` as text, surrogate pairs joined (`args::text_joined`);
/// the Python strings are kept alive in `items` by the caller.
pub fn joined_items<'a>(items: &'a [Bound<'_, pyo3::types::PyString>], arg: &str) -> PyResult<Vec<Cow<'a, str>>> {
    items.iter().enumerate().map(|(i, s)| args::text_item_joined(s.as_any(), arg, i)).collect()
}
