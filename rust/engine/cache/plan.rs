//! Choosing the cut for the cache. Among the cuts the policy allows, the cheapest request is the
//! one that re-sends what the previous request sent: its prefix is read from the cache. So:
//!
//! 1. Without a previous request, or for a cache that holds nothing: the plain fit (evict exactly
//!    to fit). Nothing is known to keep.
//! 2. Repeat the previous cut (`pins`) and let the ladder check the ceiling. When no rung had to
//!    take anything more, that is the answer: the cut is kept and the turn's new material is
//!    appended after a prefix the cache holds.
//! 3. Otherwise the cut must move, and any move rewrites everything after it; so move it once,
//!    far: evict down to `target` (below the ceiling by the larger of the profile's low
//!    watermark and `lookahead_turns` turns like this one), so the next turns append again. When
//!    the floors cannot reach that target, evict exactly to fit.

use super::profile::CacheProfile;
use super::sent::Sent;
use super::Pin;
use crate::engine::budget::Budget;
use crate::engine::fit::{fit_with, FitOptions, FitOutcome};
use crate::engine::policy::Policy;
use crate::engine::segment::SegmentData;
use crate::engine::source::TokenSource;
use crate::error::{CtxError, CtxResult};

/// What became of the previous request's cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// No previous request was given (or the profile caches nothing): a plain fit.
    Fresh,
    /// The previous cut still fits: what it sent is the start of this request.
    Kept,
    /// The cut moved; `target` is what eviction aimed for (None: exactly the ceiling, because
    /// the floors could not reach lower).
    Moved { target: Option<usize> },
}

impl Cut {
    pub fn name(self) -> &'static str {
        match self {
            Cut::Fresh => "fresh",
            Cut::Kept => "kept",
            Cut::Moved { .. } => "moved",
        }
    }
}

pub struct Planned<T = FitOutcome> {
    pub outcome: T,
    pub cut: Cut,
}

/// The eviction target when the cut must move: `ceiling` less room for the next turns (the
/// larger of the low watermark's share and `lookahead_turns` times what this turn added), never
/// below the lower of half the ceiling and the watermark's share.
pub fn target(ceiling: usize, added: usize, profile: &CacheProfile) -> usize {
    let share = |f: f64| ((ceiling as f64) * f).floor() as usize;
    let room = share(1.0 - profile.low_watermark).max(added.saturating_mul(profile.lookahead_turns));
    let lowest = share(profile.low_watermark.min(0.5)).max(1);
    ceiling.saturating_sub(room).max(lowest).min(ceiling)
}

/// Chooses the cut (see the module's doc). `run(target, pins)` is the fit: under the budget's
/// ceiling (`None`) or aiming for `target`, with the previous cut repeated first; `outcome_of`
/// finds the ladder's outcome in what it returns. `fps` and `counts` describe this request's
/// segments, `rungs` names the policy's rungs.
#[allow(clippy::too_many_arguments)]
pub fn plan<T, F, G>(
    ceiling: usize,
    previous: Option<&Sent>,
    fps: &[u64],
    counts: &[usize],
    rungs: &[String],
    profile: &CacheProfile,
    mut run: F,
    outcome_of: G,
) -> CtxResult<Planned<T>>
where
    F: FnMut(Option<usize>, &[Pin]) -> CtxResult<T>,
    G: Fn(&T) -> &FitOutcome,
{
    let Some(prev) = previous.filter(|_| profile.caches()) else {
        return Ok(Planned { outcome: run(None, &[])?, cut: Cut::Fresh });
    };
    // A cut is the policy's: under another policy it is not repeated.
    let (pins, added) = prev.pins_for(fps, counts);
    let pins = if prev.rungs.as_slice() == rungs { pins } else { Vec::new() };
    match run(None, &pins) {
        Ok(t) => {
            let o = outcome_of(&t);
            if o.pinned == (o.removals.len(), o.truncations.len()) {
                return Ok(Planned { outcome: t, cut: Cut::Kept });
            }
        }
        Err(CtxError::Unfittable(_)) => {}
        Err(e) => return Err(e),
    }
    let aim = target(ceiling, added, profile);
    if aim < ceiling {
        match run(Some(aim), &[]) {
            Ok(t) => return Ok(Planned { outcome: t, cut: Cut::Moved { target: Some(aim) } }),
            Err(CtxError::Unfittable(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Planned { outcome: run(None, &[])?, cut: Cut::Moved { target: None } })
}

/// `plan` over `fit_aiming`: the whole cache-aware fit of plain segments.
#[allow(clippy::too_many_arguments)]
pub fn fit_planned(
    segs: &[&SegmentData],
    counts: &[usize],
    fps: &[u64],
    budget: &Budget,
    policy: &Policy,
    counter: &dyn TokenSource,
    opts: &FitOptions<'_>,
    previous: Option<&Sent>,
    profile: &CacheProfile,
) -> CtxResult<Planned> {
    let rungs: Vec<String> = policy.rungs.iter().map(|r| r.name.clone()).collect();
    plan(
        budget.ceiling(),
        previous,
        fps,
        counts,
        &rungs,
        profile,
        |aim, pins| fit_aiming(segs, counts, budget, policy, counter, &FitOptions { pins, ..*opts }, aim),
        |o| o,
    )
}

/// `fit_with` aiming for `target` (below the budget's ceiling) instead of the ceiling, reported
/// against the real budget: the rows are "over" the target, the trace names it. The low
/// watermark's mechanism, shared by `ContextWindow` and the cache plan.
#[allow(clippy::too_many_arguments)]
pub fn fit_aiming(
    segs: &[&SegmentData],
    counts: &[usize],
    budget: &Budget,
    policy: &Policy,
    counter: &dyn TokenSource,
    opts: &FitOptions<'_>,
    target: Option<usize>,
) -> CtxResult<FitOutcome> {
    let ceiling = budget.ceiling();
    let Some(low) = target.filter(|&t| t < ceiling) else {
        return fit_with(segs, counts, budget, policy, counter, opts);
    };
    let low_budget = Budget::new(low.saturating_add(budget.reserve), budget.reserve, budget.caps)?;
    let mut o = fit_with(segs, counts, &low_budget, policy, counter, opts)?;
    o.ceiling = ceiling;
    o.over_by = o.trace.start_total.saturating_sub(ceiling);
    o.trace.window = budget.window;
    o.trace.ceiling = ceiling;
    o.trace.target = Some(low);
    Ok(o)
}
