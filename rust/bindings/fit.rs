//! `ctxfast.fit`: one crossing per request. The segments' counts are settled in one batch, the
//! ladder runs in the core, and the result comes back as one `Fit`.

use pyo3::prelude::*;
use pyo3::types::{PyMapping, PyString};

use super::args;
use super::cache_plan::{attach, CacheArgs};
use super::budget::Budget;
use super::counting::{resolve_tokenizer, with_source};
use super::errors::InvalidArgumentError;
use super::outcome::Fit;
use super::outcome_build::{build_fit, Originals};
use super::policy::{policy_arg, Policy};
use super::tokenizer::Tokenizer;
use super::segment::{segments_arg, settle_counts};
use super::segment::Segment;
use crate::engine::cache::{fingerprint, fingerprint_keyed, fit_planned, settle};
use crate::engine::{FitOptions, InputNames};

/// The names the trace and `Unfittable` use for the caller's input: segment `i` is
/// `input_name[i]`, except a segment whose `meta` is a mapping with a str under "fixed" (tool
/// schemas, reply priming), which goes by that label. Only read when the caller names its input,
/// so a plain fit never touches `meta`.
fn input_names(py: Python<'_>, segs: &[Bound<'_, Segment>], input: &str) -> PyResult<InputNames> {
    let mut fixed = Vec::with_capacity(segs.len());
    for s in segs {
        let label = match s.get().meta_ref(py) {
            Some(meta) => {
                let meta = meta.bind(py);
                match meta.cast::<PyMapping>() {
                    Ok(map) if map.contains("fixed").unwrap_or(false) => {
                        let v = map.get_item("fixed")?;
                        v.cast::<PyString>().ok().map(|l| l.to_string_lossy().into_owned())
                    }
                    _ => None,
                }
            }
            None => None,
        };
        fixed.push(label);
    }
    Ok(InputNames { input: input.to_string(), fixed })
}

/// Fits `segments` under `budget` by `policy`, or raises `Unfittable`.
///
/// - segments: the request, in order (input order is the age order).
/// - budget: a Budget (window, reserve, caps).
/// - policy: a Policy or a preset name; `Policy.context_window()` by default.
/// - tokenizer: a Tokenizer, a `str -> int` callable, or None for the embedded o200k_base.
/// - separator: set it when the kept texts are sent joined into one text.
/// - framing: what each digest record costs beyond its text (the adapters set it).
/// - input_name: name units by input position in the trace and `Unfittable` (`messages[3..6]`).
/// - previous: the previous turn's Fit: its cut is kept while it fits, so the provider's cached
///   prefix survives; when it must move it moves far (hysteresis). See `Fit.cache`.
/// - cache: a CacheProfile or its name ("openai", "anthropic", "llama.cpp", "vllm", "none", the
///   default here).
///
/// Returns a Fit: kept (what to send), evicted, truncated, total, trace (explain()).
#[pyfunction]
#[pyo3(signature = (segments, budget, policy=None, tokenizer=None, separator=None, *, framing=None, input_name=None, previous=None, cache=None))]
#[allow(clippy::too_many_arguments)]
pub fn fit(
    py: Python<'_>,
    segments: &Bound<'_, PyAny>,
    budget: &Bound<'_, PyAny>,
    policy: Option<&Bound<'_, PyAny>>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    separator: Option<&Bound<'_, PyAny>>,
    framing: Option<&Bound<'_, PyAny>>,
    input_name: Option<&Bound<'_, PyAny>>,
    previous: Option<&Bound<'_, PyAny>>,
    cache: Option<&Bound<'_, PyAny>>,
) -> PyResult<Fit> {
    let cached = CacheArgs::read(previous, cache, "none")?;
    let framing = args::opt_tokens(framing, "framing")?.unwrap_or(0);
    let input_name = match input_name {
        Some(n) if !n.is_none() => Some(args::text(n, "input_name")?.to_string()),
        _ => None,
    };
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
    let names = input_name.map(|n| input_names(py, &segs, &n)).transpose()?;
    let counts = settle_counts(py, tok, &segs)?;
    let opts = FitOptions { separator: sep, framing, names: names.as_ref(), pins: &[], texts: None };
    let objects = Originals::Objects(segs.iter().map(|s| s.clone().unbind()).collect());
    fit_counted(py, objects, &counts, None, budget.get(), policy.get(), tok, &opts, &cached)
}

/// The fit of `originals`, whose counts are settled: planned for the prompt cache, run, settled,
/// and returned as a `Fit` over them (`fit` and `fit_columns` share it). `text_keys`,
/// when the caller hashed the texts already (`CountCache::key`, to look their counts up), are
/// reused for the fingerprints instead of hashing every text again.
#[allow(clippy::too_many_arguments)]
pub(super) fn fit_counted(
    py: Python<'_>,
    originals: Originals,
    counts: &[usize],
    text_keys: Option<&[u128]>,
    budget: &Budget,
    policy: &Policy,
    tok: &Tokenizer,
    opts: &FitOptions<'_>,
    cached: &CacheArgs,
) -> PyResult<Fit> {
    let (budget, policy) = (&budget.inner, &policy.inner);
    let data = originals.rows();
    let fps: Vec<u64> = match text_keys {
        Some(keys) if keys.len() == data.len() => data.iter().zip(counts).zip(keys).map(|((d, &n), &k)| fingerprint_keyed(k, d, n)).collect(),
        _ => data.iter().zip(counts).map(|(d, &n)| fingerprint(d, n)).collect(),
    };
    let previous = cached.previous.as_deref();
    let planned = with_source(py, tok, data.len(), |src| {
        fit_planned(&data, counts, &fps, budget, policy, src, opts, previous, &cached.profile)
    })?;
    let mut out = planned.outcome;
    let rungs = policy.rungs.iter().map(|r| r.name.clone()).collect();
    let (sent, report) = settle(&mut out, planned.cut, &fps, counts, &[], rungs, previous, &cached.profile, None, Vec::new(), cached.asked);
    let mut fit = build_fit(py, originals, policy, tok.counter_id(), out)?;
    attach(py, &mut fit, sent, report)?;
    if !tok.is_exact() {
        fit.exactness = "estimate".into();
    }
    Ok(fit)
}
