//! `ctxfast.fit`: one crossing per request. The segments' counts are settled in one batch, the
//! ladder runs in the core, and the result comes back as one `Fit`.

use pyo3::prelude::*;

use super::args;
use super::budget::Budget;
use super::counting::{resolve_tokenizer, with_source};
use super::errors::InvalidArgumentError;
use super::outcome::{build_fit, Fit};
use super::policy::policy_arg;
use super::segment::{segments_arg, settle_counts};
use crate::engine::{self, SegmentData};

/// Fits `segments` under `budget` by `policy`, or raises `Unfittable`.
///
/// - segments: the request, in order (input order is the age order).
/// - budget: a Budget (window, reserve, caps).
/// - policy: a Policy or a preset name; `Policy.context_window()` by default.
/// - tokenizer: a Tokenizer, a `str -> int` callable, or None for the embedded o200k_base.
/// - separator: set it when the kept texts are sent joined into one text.
/// - framing: what each digest record costs beyond its text (the adapters set it).
///
/// Returns a Fit: kept (what to send), evicted, truncated, total, trace (explain()).
#[pyfunction]
#[pyo3(signature = (segments, budget, policy=None, tokenizer=None, separator=None, *, framing=None))]
pub fn fit(
    py: Python<'_>,
    segments: &Bound<'_, PyAny>,
    budget: &Bound<'_, PyAny>,
    policy: Option<&Bound<'_, PyAny>>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    separator: Option<&Bound<'_, PyAny>>,
    framing: Option<&Bound<'_, PyAny>>,
) -> PyResult<Fit> {
    let framing = args::opt_tokens(framing, "framing")?.unwrap_or(0);
    let segs = segments_arg(segments, "segments")?;
    if segs.is_empty() {
        return Err(InvalidArgumentError::new_err("argument 'segments' is empty: there is no request to fit"));
    }
    let budget = budget.cast::<Budget>().map_err(|_| args::wrong_type(budget, "budget", "a ctxfast.Budget"))?;
    let policy = policy_arg(py, policy, "context_window")?;
    let tok = resolve_tokenizer(py, tokenizer)?;
    let sep = match separator {
        Some(s) if !s.is_none() => Some(args::text(s, "separator")?),
        _ => None,
    };
    let tok = tok.get();
    let counts = settle_counts(py, tok, &segs)?;
    let data: Vec<&SegmentData> = segs.iter().map(|s| s.get().data.as_ref()).collect();
    let (budget, policy) = (&budget.get().inner, &policy.get().inner);
    let out = with_source(py, tok, data.len(), |src| engine::fit(&data, &counts, budget, policy, src, sep, framing))?;
    build_fit(py, &segs, policy, tok.counter_id(), out)
}
