//! The window's ledger as Python sees it: `Why` answers and the `WindowLedger` counters.

use std::collections::HashMap;

use pyo3::prelude::*;

use super::super::layer::PromptLayer;
use crate::window::ledger::Why as CoreWhy;
use crate::window::Window;

/// Why a key is held or absent: status, cycle, rung (and its typed cause), tokens before/after.
#[pyclass(frozen, module = "ctxfast._core", name = "Why", get_all)]
pub struct Why {
    pub(super) key: String,
    /// "held", "evicted_recoverable", "evicted_dispensable", "rewritten" or "truncated".
    status: &'static str,
    cycle: u64,
    /// The rung's name, or "discard" / "rewrite" / "digest"; None while simply held.
    rung: Option<String>,
    /// What `rung` stands for: "rung", "digest" (folded into a digest by a rung), "discard",
    /// "rewrite", "digest_call"; None while simply held.
    cause: Option<&'static str>,
    tokens_before: usize,
    tokens_after: usize,
    provenance: Option<String>,
    layer: PromptLayer,
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

impl From<&CoreWhy> for Why {
    fn from(w: &CoreWhy) -> Self {
        Why {
            key: w.key.clone(),
            status: w.status.name(),
            cycle: w.cycle,
            rung: w.rung.clone(),
            cause: w.cause.map(|c| c.name()),
            tokens_before: w.tokens_before,
            tokens_after: w.tokens_after,
            provenance: w.provenance.clone(),
            layer: w.layer.into(),
            admissions: w.admissions,
        }
    }
}

/// Counters and token totals for metrics; `balanced` is the ledger's invariant.
#[pyclass(frozen, module = "ctxfast._core", name = "WindowLedger", get_all)]
pub struct WindowLedger {
    admitted: u64,
    refused_duplicates: u64,
    fits: u64,
    fits_that_evicted: u64,
    evictions: u64,
    rewrites: u64,
    deferred_rewrites: u64,
    digests: u64,
    truncations: u64,
    discards: u64,
    rung_firings: HashMap<String, u64>,
    tokens_admitted: u64,
    tokens_held: u64,
    tokens_surrogates_added: u64,
    tokens_evicted_recoverable: u64,
    tokens_evicted_dispensable: u64,
    tokens_rewritten_away: u64,
    tokens_truncated_away: u64,
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
