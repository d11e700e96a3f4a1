//! When a native call releases the GIL: the one rule, from measured costs.
//!
//! Handing the GIL over and taking it back costs about 1 µs. A short count takes 1.2 µs, so
//! releasing it there would nearly double the call; a 4 KB count (~80 µs cold, benches/report.py)
//! or a fit over a few hundred segments is worth letting other threads run during. Below the
//! thresholds the work runs attached; at or above them it runs detached.

use parking_lot::Mutex;
use pyo3::marker::Ungil;
use pyo3::prelude::*;

use crate::engine::TokenSource;
use crate::error::{CtxError, CtxResult};

/// Text work, in UTF-8 bytes, from which the GIL is released.
pub const DETACH_MIN_BYTES: usize = 4096;
/// Item work (segments for a fit, entries for a ranking), from which the GIL is released: the
/// warm ladder spends ~0.2 µs a segment, so 256 segments is ~50 µs.
pub const DETACH_MIN_ITEMS: usize = 256;

/// How much work a call is about to do.
#[derive(Clone, Copy)]
pub enum Work {
    Bytes(usize),
    Items(usize),
}

impl Work {
    fn worth_releasing(self) -> bool {
        match self {
            Work::Bytes(n) => n >= DETACH_MIN_BYTES,
            Work::Items(n) => n >= DETACH_MIN_ITEMS,
        }
    }
}

/// Runs `f`, with the GIL released when `work` is large enough to be worth the hand-off.
pub fn run<T: Ungil, F: Ungil + FnOnce() -> T>(py: Python<'_>, work: Work, f: F) -> T {
    if work.worth_releasing() {
        py.detach(f)
    } else {
        f()
    }
}

/// Ctrl-C for detached work: `check` re-takes the GIL for a moment to run Python's signal
/// handlers; a handler's exception (KeyboardInterrupt) is kept and stops the core with
/// `CtxError::Interrupted`, and `settle` raises it as itself.
#[derive(Default)]
pub struct Interrupt {
    caught: Mutex<Option<PyErr>>,
}

impl Interrupt {
    pub fn check(&self) -> CtxResult<()> {
        Python::attach(|py| py.check_signals()).map_err(|e| {
            *self.caught.lock() = Some(e);
            CtxError::Interrupted
        })
    }

    /// The core's result, or the signal's own exception if one stopped it.
    pub fn settle<T>(&self, result: CtxResult<T>) -> PyResult<T> {
        match self.caught.lock().take() {
            Some(e) => Err(e),
            None => Ok(result?),
        }
    }
}

/// A native token source that also notices Ctrl-C while the ladder runs detached.
pub struct Interruptible<'a> {
    pub source: &'a (dyn TokenSource + Sync),
    pub interrupt: &'a Interrupt,
}

impl TokenSource for Interruptible<'_> {
    fn count(&self, text: &str) -> CtxResult<usize> {
        self.source.count(text)
    }
    fn truncate(&self, text: &str, max_tokens: usize) -> CtxResult<String> {
        self.source.truncate(text, max_tokens)
    }
    fn count_joined(&self, texts: &[&str], counts: &[usize], sep: &str) -> CtxResult<usize> {
        self.source.count_joined(texts, counts, sep)
    }
    fn interrupted(&self) -> CtxResult<()> {
        self.interrupt.check()
    }
}
