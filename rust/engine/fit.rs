//! `fit`: the ladder until the projection fits, then one authoritative count of what is sent; if
//! that count is over (a joined payload whose joins merged differently), the ladder resumes from it.
//! Rungs with `until = "cap"` run in their place whether or not the request is over.

use super::budget::Budget;
use super::cache::Pin;
use super::ladder::Ladder;
use super::naming::InputNames;
use super::outcome::{DigestRecord, FitLedger, Kept, Removal, Taken, Target, Truncation};
use super::policy::{Policy, Until};
use super::refusal::unfittable;
use super::segment::{Layer, SegmentData};
use super::source::TokenSource;
use super::trace::{cap_overruns, display_order, Trace};
use crate::error::{CtxError, CtxResult};
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
    /// How many of `removals` and `truncations` (from the start) repeat the previous request's
    /// cut (`FitOptions::pins`) rather than a rung's own choice.
    pub pinned: (usize, usize),
}

/// What a fit needs beyond the request, the budget and the policy. `Default` is a plain fit.
#[derive(Clone, Copy, Default)]
pub struct FitOptions<'a> {
    /// Set when the kept texts are sent joined into one text.
    pub separator: Option<&'a str>,
    /// What a segment the ladder creates (a digest record) costs beyond its text.
    pub framing: usize,
    /// Names units by the caller's input positions in the trace and `Unfittable`.
    pub names: Option<&'a InputNames>,
    /// Removals the previous request made, repeated before any rung runs (`cache::plan`).
    pub pins: &'a [Pin],
    /// The segments' texts, one a segment, when the caller holds them apart from `segs` (whose
    /// own texts are then not read): `fit_columns` borrows them from the caller's str objects
    /// rather than copying every text into the core.
    pub texts: Option<&'a [&'a str]>,
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
    fit_with(segs, counts, budget, policy, counter, &FitOptions { separator, framing, ..Default::default() })
}

/// `fit`, with the trace and `Unfittable` naming units by the caller's input positions
/// (`messages[3..6]`, `digest of messages[3..6]`) when `names` is given.
#[allow(clippy::too_many_arguments)]
pub fn fit_named(
    segs: &[&SegmentData],
    counts: &[usize],
    budget: &Budget,
    policy: &Policy,
    counter: &dyn TokenSource,
    separator: Option<&str>,
    framing: usize,
    names: Option<&InputNames>,
) -> CtxResult<FitOutcome> {
    fit_with(segs, counts, budget, policy, counter, &FitOptions { separator, framing, names, pins: &[], texts: None })
}

/// The fit itself, with every option.
pub fn fit_with(
    segs: &[&SegmentData],
    counts: &[usize],
    budget: &Budget,
    policy: &Policy,
    counter: &dyn TokenSource,
    opts: &FitOptions<'_>,
) -> CtxResult<FitOutcome> {
    let FitOptions { separator, framing, names, pins, texts } = *opts;
    if texts.is_some_and(|t| t.len() != segs.len()) {
        return Err(CtxError::invalid("the texts held apart must be one a segment"));
    }
    let sep_tokens = match separator {
        Some(s) if !s.is_empty() => check_count(counter.count(s)?, "the separator's count")?,
        _ => 0,
    };
    // The one range check: every later figure is at most this starting total.
    let joins = sep_tokens.saturating_mul(counts.len().saturating_sub(1));
    add_total(checked_total(counts.iter().copied(), "the request")?, joins, "the request with its joins")?;
    let ceiling = budget.ceiling();
    let mut lad = Ladder::new(segs, counts, policy, counter, ceiling, budget.caps, sep_tokens, framing);
    lad.names = names;
    lad.texts = texts;
    let start_layers = lad.layer_sizes;
    let start_total = lad.total();
    let order = display_order(lad.present);
    let cap_overruns = cap_overruns(&order, budget, &start_layers);
    // The previous request's cut first: what it removed leaves again the same way, so what it
    // sent is still the start of this request (the provider's cached prefix).
    let pinned = lad.apply_pins(pins)?;
    let refuse = |lad: &mut Ladder<'_>| -> CtxError {
        let mut u = unfittable(lad);
        let mut trace = Trace::assemble(lad, &order, budget, &start_layers, &cap_overruns, start_total, u.total, 0);
        trace.failed = true;
        u.trace = trace.render();
        u.into()
    };

    let rungs = policy.rungs.len();
    let is_cap = |r: usize| policy.rungs[r].until == Until::Cap;
    // A cap rung runs once, in its place, whether or not the request is over: it answers to the
    // caps, not to the ceiling.
    let mut cap_ran = vec![false; rungs];
    let mut count_calls = 0;
    let mut next_rung = 0;
    // Why this loop ends: every figure is at most the starting total (checked above), so `over()`
    // is exact. Each pass of the inner `while` either runs a rung that removes something (the
    // request shrinks: units are finite, truncation and digests only ever shrink what they touch),
    // runs a cap rung for the only time, or moves `next_rung` on; the outer loop repeats only
    // after a count that is over, with `next_rung` still in range, and then the inner `while` runs
    // again. So the ladder runs at most rungs x (units + 1) passes before it fits or is Unfittable.
    let total = loop {
        while next_rung < rungs {
            if is_cap(next_rung) {
                if !cap_ran[next_rung] {
                    cap_ran[next_rung] = true;
                    lad.run_rung(next_rung)?;
                }
                next_rung += 1;
                continue;
            }
            if lad.over() <= 0 {
                break;
            }
            lad.run_rung(next_rung)?;
            if lad.over() > 0 {
                next_rung += 1;
            }
        }
        // The request fits before the ladder's end: the cap rungs after this point still run.
        for (r, ran) in cap_ran.iter_mut().enumerate().skip(next_rung) {
            if is_cap(r) && !*ran {
                *ran = true;
                lad.run_rung(r)?;
            }
        }
        if lad.over() > 0 {
            return Err(refuse(&mut lad));
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
        if next_rung >= rungs {
            return Err(refuse(&mut lad));
        }
    };

    let ledger = ledger(&lad);
    let trace = Trace::assemble(&mut lad, &order, budget, &start_layers, &cap_overruns, start_total, total, count_calls);
    Ok(FitOutcome {
        kept: kept_list(&lad),
        // A body truncated and then dropped by a later rung is an eviction, not a truncation.
        truncations: lad.truncations.iter().filter(|t| lad.seg_alive[t.index]).cloned().collect(),
        removals: {
            // Sized for every rung's candidates (`run_rung`): what a caller keeps is what was used.
            let mut removals = lad.removals;
            removals.shrink_to_fit();
            removals
        },
        digests: lad.digests,
        total,
        ceiling,
        over_by: start_total.saturating_sub(ceiling),
        cap_overruns,
        rungs_fired: lad.rungs_fired,
        count_calls,
        trace,
        ledger,
        pinned,
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
            (Taken::Drop, Target::Segment(i)) if lad.seg_recoverable[i] => ledger.evicted_recoverable += r.tokens,
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
    // By position, not in hash tables: where each digest stands (a later record at the same
    // place wins, as it would in a map), and which records are still sent.
    let mut digest_at: Vec<Option<usize>> = Vec::new();
    for (d, rec) in lad.digests.iter().enumerate() {
        if let Some(&first) = rec.members.first() {
            if digest_at.len() <= first {
                digest_at.resize(first + 1, None);
            }
            digest_at[first] = Some(d);
        }
    }
    let mut alive_digests = vec![false; lad.digests.len()];
    for d in (0..lad.units.len()).filter(|&u| lad.units[u].alive).filter_map(|u| lad.unit_digest(u)) {
        if let Some(alive) = alive_digests.get_mut(d) {
            *alive = true;
        }
    }
    let mut out = Vec::with_capacity(lad.pieces);
    for i in 0..lad.segs.len() {
        if let Some(&Some(d)) = digest_at.get(i) {
            if alive_digests.get(d).copied().unwrap_or(false) {
                out.push(Kept::Digest { digest: d });
            }
        }
        if lad.seg_alive[i] {
            out.push(match lad.seg_text(i) {
                Some(text) => Kept::Truncated { index: i, text: text.to_string(), tokens: lad.seg_tokens[i] },
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
            Kept::Original(i) => (lad.text(i), lad.seg_tokens[i]),
            Kept::Truncated { index, .. } => (lad.seg_text(index).unwrap_or(""), lad.seg_tokens[index]),
            Kept::Digest { digest } => (lad.digests[digest].text.as_str(), lad.digests[digest].tokens),
        })
        .unzip()
}
