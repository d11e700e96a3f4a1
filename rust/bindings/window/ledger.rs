//! The window's ledger as Python sees it: `Why` answers and the `WindowLedger` counters.

use std::collections::HashMap;

use pyo3::prelude::*;

use super::super::layer::PromptLayer;
use crate::window::ledger::Why as CoreWhy;
use crate::window::Window;

/// Why a key is held or absent, from `ContextWindow.why` and `ledger_entries`.
#[pyclass(frozen, module = "ctxfast._core", name = "Why", get_all)]
pub struct Why {
    /// The key asked about.
    pub(super) key: String,
    /// What happened to the key's segment, in one word.
    ///
    /// One of "held", "truncated", "evicted_recoverable", "evicted_dispensable", "rewritten".
    status: &'static str,
    /// The window's cycle (fits completed so far) when this status was recorded.
    cycle: u64,
    /// What acted: a rung's name, or `"discard"`, `"rewrite"` or `"digest"` when the method of
    /// that name did. None while simply held. A rung may carry any name, so use `cause` to tell
    /// a rung from the caller's own levers.
    rung: Option<String>,
    /// What `rung` stands for, typed: `"rung"` (dropped or truncated by the policy's rung),
    /// `"digest"` (folded into a digest record by a rung), `"discard"`, `"rewrite"` or
    /// `"digest_call"` (the window methods of those names). None while simply held.
    cause: Option<&'static str>,
    /// Its tokens before the change `status` reports (while held: as admitted).
    tokens_before: usize,
    /// Its tokens now: the same while held, 0 once evicted, the shortened size when truncated,
    /// the surrogate's size when rewritten.
    tokens_after: usize,
    /// Who made the surrogate (`rewrite`'s `provenance`, or `"digest"`); else None.
    provenance: Option<String>,
    /// The layer the segment was last held in.
    layer: PromptLayer,
    /// How many times the key was admitted (it can come back after it left).
    admissions: u64,
}

#[pymethods]
impl Why {
    fn __repr__(&self, py: Python<'_>) -> String {
        let r = |s: Option<&str>| -> String {
            match s {
                Some(s) => pyo3::types::PyString::new(py, s).repr().map(|r| r.to_string()).unwrap_or_default(),
                None => "None".into(),
            }
        };
        format!(
            "Why(key={}, status={}, cycle={}, rung={}, tokens_before={}, tokens_after={}, provenance={})",
            r(Some(&self.key)),
            r(Some(self.status)),
            self.cycle,
            r(self.rung.as_deref()),
            self.tokens_before,
            self.tokens_after,
            r(self.provenance.as_deref()),
        )
    }
}

impl From<CoreWhy> for Why {
    fn from(w: CoreWhy) -> Self {
        Why {
            key: w.key,
            status: w.status.name(),
            cycle: w.cycle,
            rung: w.rung,
            cause: w.cause.map(|c| c.name()),
            tokens_before: w.tokens_before,
            tokens_after: w.tokens_after,
            provenance: w.provenance,
            layer: w.layer.into(),
            admissions: w.admissions,
        }
    }
}

/// A `ContextWindow`'s counters and token totals, for metrics.
#[pyclass(frozen, module = "ctxfast._core", name = "WindowLedger", get_all)]
pub struct WindowLedger {
    /// Segments admitted (refused duplicates not included).
    admitted: u64,
    /// Admissions refused because the key was already held.
    refused_duplicates: u64,
    /// Completed `fit()` calls.
    fits: u64,
    /// Fits that removed or truncated something.
    fits_that_evicted: u64,
    /// Segments a rung dropped.
    evictions: u64,
    /// Rewrites applied, deferred ones included once they land.
    rewrites: u64,
    /// Rewrites deferred to the next `fit()`.
    deferred_rewrites: u64,
    /// Digest records made, by a digest rung or `digest()`.
    digests: u64,
    /// Bodies a truncate rung shortened.
    truncations: u64,
    /// Segments removed by `discard()`.
    discards: u64,
    /// Units acted on per rung name, over every fit: which rung fires tells which slice is
    /// undersized.
    rung_firings: HashMap<String, u64>,
    /// Tokens of every segment admitted.
    tokens_admitted: u64,
    /// Tokens held now.
    tokens_held: u64,
    /// Tokens of the surrogates and digest records put in.
    tokens_surrogates_added: u64,
    /// Tokens of recoverable segments that left (rungs and discards).
    tokens_evicted_recoverable: u64,
    /// Tokens of other segments that left (rungs and discards).
    tokens_evicted_dispensable: u64,
    /// Tokens of originals replaced by surrogates or digest records.
    tokens_rewritten_away: u64,
    /// Tokens that truncation cut from held bodies.
    tokens_truncated_away: u64,
    /// Whether the token totals balance; always True unless something is wrong.
    balanced: bool,
}

#[pymethods]
impl WindowLedger {
    fn __repr__(&self) -> String {
        format!(
            "WindowLedger(fits={}, evictions={}, rewrites={}, truncations={}, refused_duplicates={}, balanced={})",
            self.fits,
            self.evictions,
            self.rewrites,
            self.truncations,
            self.refused_duplicates,
            // A Python repr: `True`, not Rust's `true`.
            if self.balanced { "True" } else { "False" }
        )
    }
}

impl From<&Window> for WindowLedger {
    fn from(core: &Window) -> WindowLedger {
        let c = core.counters();
        let t = core.totals();
        let held = core.held_tokens() as u64;
        WindowLedger {
            admitted: c.admitted,
            refused_duplicates: c.refused_duplicates,
            fits: c.fits,
            fits_that_evicted: c.fits_that_evicted,
            evictions: c.evictions,
            rewrites: c.rewrites,
            deferred_rewrites: c.deferred_rewrites,
            digests: c.digests,
            truncations: c.truncations,
            discards: c.discards,
            rung_firings: c.rung_firings.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            tokens_admitted: t.admitted,
            tokens_held: held,
            tokens_surrogates_added: t.surrogates_added,
            tokens_evicted_recoverable: t.evicted_recoverable,
            tokens_evicted_dispensable: t.evicted_dispensable,
            tokens_rewritten_away: t.rewritten_away,
            tokens_truncated_away: t.truncated_away,
            balanced: t.balances(held),
        }
    }
}
