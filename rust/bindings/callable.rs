//! A user's `str -> int` callable as a counter: called under the GIL, its answers checked, its
//! failures kept as Python exceptions (Ctrl-C and SystemExit pass through untouched).

use std::cell::RefCell;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

use super::errors::CounterError;
use crate::cache::CountCache;
use crate::engine::TokenSource;
use crate::error::{CtxError, CtxResult};
use crate::fmt::thousands;
use crate::limits::MAX_COUNT;

/// One call of the user's counter, checked: an int >= 0, or a `CounterError` naming what came back.
pub fn call_counter(py: Python<'_>, func: &Py<PyAny>, text: &str) -> PyResult<usize> {
    let out = func.call1(py, (text,)).map_err(|e| {
        if !e.is_instance_of::<pyo3::exceptions::PyException>(py) {
            return e;
        }
        let name = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_default();
        let err = CounterError::new_err(format!("the counting callable raised {name}"));
        err.set_cause(py, Some(e));
        err
    })?;
    let out = out.bind(py);
    let shown = || super::args::preview(out);
    if out.is_instance_of::<PyBool>() || !out.is_instance_of::<PyInt>() {
        return Err(CounterError::new_err(format!("the counting callable must return an int >= 0, it returned {}", shown())));
    }
    match out.extract::<u64>().ok().and_then(|n| usize::try_from(n).ok()) {
        Some(n) if n <= MAX_COUNT => Ok(n),
        Some(_) => Err(CounterError::new_err(format!(
            "the counting callable returned {}, above the largest count ctxfast accepts ({})",
            shown(),
            thousands(MAX_COUNT)
        ))),
        None => Err(CounterError::new_err(format!("the counting callable must return an int >= 0, it returned {}", shown()))),
    }
}

/// Binary search over character prefixes with the user's counter (assumed monotone in length).
pub fn truncate_by_calls<'a>(py: Python<'_>, func: &Py<PyAny>, text: &'a str, max: usize) -> PyResult<&'a str> {
    if call_counter(py, func, text)? <= max {
        return Ok(text);
    }
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let (mut lo, mut hi) = (0usize, bounds.len()); // prefix of `lo` chars fits, `hi` does not
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let end = bounds.get(mid).copied().unwrap_or(text.len());
        if call_counter(py, func, &text[..end])? <= max {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let end = bounds.get(lo).copied().unwrap_or(text.len());
    Ok(&text[..end])
}

/// The ladder's token source for a callable: runs attached; a Python exception raised inside the
/// core is kept aside and re-raised, as itself, once the core returns.
pub struct CallableCounter<'py> {
    py: Python<'py>,
    func: &'py Py<PyAny>,
    cache: &'py CountCache,
    failure: RefCell<Option<PyErr>>,
}

impl<'py> CallableCounter<'py> {
    pub fn new(py: Python<'py>, func: &'py Py<PyAny>, cache: &'py CountCache) -> Self {
        Self { py, func, cache, failure: RefCell::new(None) }
    }

    /// The core's result, with the callable's own exception in place of the core's placeholder.
    pub fn settle<T>(&self, result: CtxResult<T>) -> PyResult<T> {
        match self.failure.borrow_mut().take() {
            Some(e) => Err(e),
            None => result.map_err(PyErr::from),
        }
    }

    fn keep<T>(&self, r: PyResult<T>) -> CtxResult<T> {
        r.map_err(|e| {
            *self.failure.borrow_mut() = Some(e);
            CtxError::Counter("the counting callable failed".into())
        })
    }
}

impl TokenSource for CallableCounter<'_> {
    fn count(&self, text: &str) -> CtxResult<usize> {
        self.cache.get_or_count(text, |t| self.keep(call_counter(self.py, self.func, t)))
    }
    fn truncate(&self, text: &str, max_tokens: usize) -> CtxResult<String> {
        self.keep(truncate_by_calls(self.py, self.func, text, max_tokens)).map(str::to_string)
    }
    fn count_joined(&self, texts: &[&str], _: &[usize], sep: &str) -> CtxResult<usize> {
        self.keep(call_counter(self.py, self.func, &texts.join(sep)))
    }
    fn interrupted(&self) -> CtxResult<()> {
        self.keep(self.py.check_signals())
    }
}
