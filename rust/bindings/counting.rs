//! Which tokenizer counts a request, and the one dispatch that runs core work with it: detached
//! for the native engines (by the rule in `gil`), attached for a user's callable.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::args;
use super::callable::CallableCounter;
use super::gil::{self, Interrupt, Interruptible, Work};
use super::tokenizer::Tokenizer;
use crate::engine::TokenSource;
use crate::error::CtxResult;
use crate::tokenize::{Encoding, TokenCounter};

/// Wrappers made for plain callables, so the same callable keeps one cache (and the segments'
/// remembered counts stay valid) across calls. Bounded: cleared when it grows past this.
const CALLABLE_WRAPPERS_MAX: usize = 256;

fn wrap_callable<'py>(py: Python<'py>, func: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Tokenizer>> {
    // `tok.count` (a bound method of a ctxfast Tokenizer) is that tokenizer: count natively.
    if let Ok(owner) = func.getattr("__self__") {
        if let Ok(tok) = owner.cast_into::<Tokenizer>() {
            if func.getattr("__name__").is_ok_and(|n| n.eq("count").unwrap_or(false)) {
                return Ok(tok);
            }
        }
    }
    static WRAPPERS: pyo3::sync::PyOnceLock<Py<PyDict>> = pyo3::sync::PyOnceLock::new();
    let cache = WRAPPERS.get_or_init(py, || PyDict::new(py).unbind()).bind(py);
    let hashable = func.hash().is_ok();
    if hashable {
        if let Some(tok) = cache.get_item(func)? {
            return Ok(tok.cast_into::<Tokenizer>()?);
        }
    }
    let tok = py.get_type::<Tokenizer>().call_method1("from_callable", (func,))?.cast_into::<Tokenizer>()?;
    if hashable {
        if cache.len() >= CALLABLE_WRAPPERS_MAX {
            cache.clear();
        }
        cache.set_item(func, &tok)?;
    }
    Ok(tok)
}

/// The tokenizer argument: a Tokenizer, a `str -> int` callable, or None for the embedded one.
pub fn resolve_tokenizer<'py>(py: Python<'py>, tokenizer: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, Tokenizer>> {
    match tokenizer {
        Some(t) if !t.is_none() => {
            if let Ok(tok) = t.cast::<Tokenizer>() {
                return Ok(tok.clone());
            }
            if t.is_callable() {
                return wrap_callable(py, t);
            }
            Err(args::wrong_type(t, "tokenizer", "a ctxfast.Tokenizer or a callable str -> int"))
        }
        _ => Bound::new(py, Tokenizer::from_counter(TokenCounter::shared(Encoding::O200kBase))),
    }
}

/// Private, for the adapters: the `tokenizer` argument resolved exactly as `fit` resolves
/// it (None: the embedded o200k_base; a plain callable: one wrapper, and one count cache,
/// per callable).
#[pyfunction]
#[pyo3(signature = (tokenizer=None))]
pub fn _resolve_tokenizer<'py>(py: Python<'py>, tokenizer: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, Tokenizer>> {
    resolve_tokenizer(py, tokenizer)
}

/// Runs core work `f` with `tok` as its token source: detached when `items` is large enough (the
/// native engines are thread-safe), attached with a callable, whose own exception comes back
/// as itself.
pub fn with_source<T, F>(py: Python<'_>, tok: &Tokenizer, items: usize, f: F) -> PyResult<T>
where
    T: Send,
    F: Send + FnOnce(&dyn TokenSource) -> CtxResult<T>,
{
    match (tok.native_counter(), tok.callable()) {
        (Some(c), _) => {
            let interrupt = Interrupt::default();
            let source = Interruptible { source: c.as_ref(), interrupt: &interrupt };
            let result = gil::run(py, Work::Items(items), || f(&source));
            interrupt.settle(result)
        }
        (None, Some((func, cache))) => {
            let counter = CallableCounter::new(py, func, cache);
            let result = f(&counter);
            counter.settle(result)
        }
        (None, None) => Err(super::errors::InvalidArgumentError::new_err("tokenizer has no counter")),
    }
}
