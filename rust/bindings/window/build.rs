//! `ContextWindow(...)`: reading the constructor's arguments into a new window.

use pyo3::prelude::*;

use super::super::args;
use super::super::cache_plan::CacheArgs;
use super::super::counting::resolve_tokenizer;
use super::super::policy::policy_arg;
use super::state::{ContextWindow, Guarded, Objects, State};
use crate::window::Window;

#[allow(clippy::too_many_arguments)]
pub(super) fn new_window(
    py: Python<'_>,
    limit_tokens: &Bound<'_, PyAny>,
    tokenizer: Option<&Bound<'_, PyAny>>,
    policy: Option<&Bound<'_, PyAny>>,
    reserve: Option<&Bound<'_, PyAny>>,
    low_watermark: Option<&Bound<'_, PyAny>>,
    why_horizon: Option<&Bound<'_, PyAny>>,
    cache: Option<&Bound<'_, PyAny>>,
) -> PyResult<ContextWindow> {
    let limit = args::count_arg(limit_tokens, "limit_tokens")?;
    let reserve = args::opt_count(reserve, "reserve")?.unwrap_or(0);
    let profile = match cache {
        Some(c) if !c.is_none() => Some(CacheArgs::read(None, Some(c), "none")?.profile),
        _ => None,
    };
    // A cache profile brings its hysteresis unless the caller set one.
    let wm = match low_watermark {
        Some(w) if !w.is_none() => Some(args::positive_float(w, "low_watermark")?),
        _ => profile.as_ref().filter(|p| p.caches()).map(|p| p.low_watermark),
    };
    let tok = resolve_tokenizer(py, tokenizer)?;
    let policy = policy_arg(py, policy, "context_window")?;
    let p = policy.get();
    let mut core = Window::new(limit, reserve, p.inner.clone(), p.name.clone(), wm)?;
    core.set_cache(profile)?;
    let horizon = args::opt_count(why_horizon, "why_horizon")?;
    core.set_why_horizon(horizon.map(|h| u64::try_from(h).unwrap_or(u64::MAX)))?;
    Ok(ContextWindow { tokenizer: tok.unbind(), state: Guarded::new(State { core, objects: Objects::default(), last_fit: None }) })
}
