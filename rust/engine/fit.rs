//! `fit`: the ladder until the projection fits, then one authoritative count of what is sent; if
//! that count is over (a joined payload whose joins merged differently), the ladder resumes from it.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::budget::Budget;
use super::ladder::Ladder;
use super::outcome::{DigestRecord, FitLedger, Kept, Removal, Taken, Target, Truncation};
use super::policy::Policy;
use super::segment::{Layer, SegmentData};
use super::trace::{cap_overruns, first_appearance, Trace};
use super::source::TokenSource;
use crate::error::{CtxResult, Unfittable};
use crate::limits::{add_total, check_count, checked_total, signed};

/// What `fit` returns.
#[derive(Clone, Debug, PartialEq)]
pub struct FitOutcome {
    pub kept: Vec<Kept>,
    pub removals: Vec<Removal>,
    pub truncations: Vec<Truncation>,
    pub digests: Vec<DigestRecord>,
    pub total: usize,
    pub ceiling: usize,
    pub over_by: usize,
    pub cap_overruns: Vec<(Layer, usize)>,
    pub rungs_fired: Vec<usize>,
    pub count_calls: usize,
    pub trace: Trace,
    pub ledger: FitLedger,
}

/// Fits `segs` (with their exact `counts`) under `budget` by `policy`. `framing` is what a segment
/// the ladder creates (a digest record) costs beyond its text, so adapters' projections stay exact.
pub fn fit(
    segs: &[&SegmentData],
    counts: &[usize],
    budget: &Budget,
    policy: &Policy,
    counter: &dyn TokenSource,
    separator: Option<&str>,
    framing: usize,
) -> CtxResult<FitOutcome> {
    let sep_tokens = match separator {
        Some(s) if !s.is_empty() => check_count(counter.count(s)?, "the separator's count")?,
        _ => 0,
    };
    // The one range check: every later figure is at most this starting total.
    let joins = sep_tokens.saturating_mul(counts.len().saturating_sub(1));
    add_total(checked_total(counts.iter().copied(), "the request")?, joins, "the request with its joins")?;
    let ceiling = budget.ceiling();
    let mut lad = Ladder::new(segs, counts, policy, counter, ceiling, sep_tokens, framing);
    let start_layers = lad.layer_sizes;
    let start_total = lad.total();

    let mut count_calls = 0;
    let mut next_rung = 0;
    // Why this loop ends: every figure is at most the starting total (checked above), so `over()`
    // is exact. Each pass of the inner `while` either runs a rung that removes something (the
    // request shrinks: units are finite, truncation and digests only ever shrink what they touch)
    // or moves `next_rung` on; the outer loop repeats only after a count that is over, with
    // `next_rung` still in range, and then the inner `while` runs again. So the ladder runs at most
    // rungs x (units + 1) passes before it fits or is Unfittable.
    let total = loop {
        while lad.over() > 0 && next_rung < policy.rungs.len() {
            lad.run_rung(next_rung)?;
            if lad.over() > 0 {
                next_rung += 1;
            }
        }
        if lad.over() > 0 {
            return Err(unfittable(&lad).into());
        }
        count_calls += 1;
        let authoritative = match separator {
            None => lad.sum,
            Some(sep) => {
                let (texts, counts) = kept_texts(&lad);
                counter.count_joined(&texts, &counts, sep)?
            }
        };
        let projected = signed(lad.total()) - lad.correction;
        lad.correction = signed(authoritative) - projected;
        if authoritative <= ceiling {
            break authoritative;
        }
        if next_rung >= policy.rungs.len() {
            return Err(unfittable(&lad).into());
        }
    };

    let ledger = ledger(&lad);
    let order = first_appearance(segs);
    let cap_overruns = cap_overruns(&order, budget, &start_layers);
    let trace = Trace::assemble(&mut lad, &order, budget, &start_layers, &cap_overruns, start_total, total, count_calls);
    Ok(FitOutcome {
        kept: kept_list(&lad),
        // A body truncated and then dropped by a later rung is an eviction, not a truncation.
        truncations: lad.truncations.iter().filter(|t| lad.seg_alive[t.index]).cloned().collect(),
        removals: lad.removals,
        digests: lad.digests,
        total,
        ceiling,
        over_by: start_total.saturating_sub(ceiling),
        cap_overruns,
        rungs_fired: lad.rungs_fired,
        count_calls,
        trace,
        ledger,
    })
}

/// Where the removed tokens went; a digest's own size is not "removed".
fn ledger(lad: &Ladder<'_>) -> FitLedger {
    let mut ledger = FitLedger { rung_firings: vec![0; lad.policy.rungs.len()], ..Default::default() };
    for s in &lad.sections {
        ledger.rung_firings[s.rung] += s.rows.len();
    }
    for r in &lad.removals {
        match (r.action, r.target) {
            (Taken::Digest, _) => ledger.digested += r.tokens,
            (Taken::Drop, Target::Segment(i)) if lad.segs[i].recoverable => ledger.evicted_recoverable += r.tokens,
            (Taken::Drop, _) => ledger.evicted_dispensable += r.tokens,
        }
    }
    for d in &lad.digests {
        ledger.digested = ledger.digested.saturating_sub(d.tokens);
    }
    ledger.truncated = lad.truncations.iter().map(|t| t.before - t.after).sum();
    ledger
}

/// Kept items in input order; a digest stands where its exchange began.
pub(super) fn kept_list(lad: &Ladder<'_>) -> Vec<Kept> {
    let digest_at: HashMap<usize, usize> = lad.digests.iter().enumerate().map(|(d, rec)| (rec.members[0], d)).collect();
    let alive_digests: HashSet<usize> = lad.units.iter().filter(|u| u.alive).filter_map(|u| u.digest).collect();
    let mut out = Vec::new();
    for i in 0..lad.segs.len() {
        if let Some(&d) = digest_at.get(&i) {
            if alive_digests.contains(&d) {
                out.push(Kept::Digest { digest: d });
            }
        }
        if lad.seg_alive[i] {
            out.push(match &lad.seg_text[i] {
                Some(text) => Kept::Truncated { index: i, text: text.clone(), tokens: lad.seg_tokens[i] },
                None => Kept::Original(i),
            });
        }
    }
    out
}

fn kept_texts<'l>(lad: &'l Ladder<'_>) -> (Vec<&'l str>, Vec<usize>) {
    kept_list(lad)
        .into_iter()
        .map(|k| match k {
            Kept::Original(i) => (lad.segs[i].text.as_str(), lad.seg_tokens[i]),
            Kept::Truncated { index, .. } => (lad.seg_text[index].as_deref().unwrap_or(""), lad.seg_tokens[index]),
            Kept::Digest { digest } => (lad.digests[digest].text.as_str(), lad.digests[digest].tokens),
        })
        .unzip()
}

/// What the policy could not touch, for the error that replaces a damaged request.
fn unfittable(lad: &Ladder<'_>) -> Unfittable {
    let mut components = Vec::new();
    for u in lad.units.iter().filter(|u| u.alive && u.protected) {
        for &m in u.members.iter().filter(|&&m| lad.seg_alive[m]) {
            let s = lad.segs[m];
            let label = match &s.key {
                Some(k) => format!("{} {k:?}", lad.policy.label(s.layer)),
                None => lad.policy.label(s.layer).to_string(),
            };
            components.push((label, lad.seg_tokens[m]));
        }
    }
    if components.is_empty() && lad.live_units == 1 {
        // Nothing is protected and one unit is left: a request is never sent empty.
        if let Some(u) = lad.units.iter().position(|u| u.alive) {
            let s = lad.segs[lad.units[u].position];
            let name = s.group.clone().or_else(|| s.key.clone()).map(|n| format!(" {n:?}")).unwrap_or_default();
            components.push((format!("last unit, {}{name} (a request is never empty)", lad.policy.label(s.layer)), lad.unit_tokens(u)));
        }
    }
    let protected_tokens: usize = components.iter().map(|(_, n)| n).sum();
    let total = lad.total();
    Unfittable {
        floor_tokens: total.saturating_sub(protected_tokens),
        components,
        ceiling: lad.ceiling,
        total,
        shortfall: total.saturating_sub(lad.ceiling),
    }
}

