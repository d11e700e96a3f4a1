//! One fit and its invariants: kept + removed = input, the ceiling, the protected set, no
//! split group, determinism, the ledger; a cache-aware fit against a previous request too.

use super::*;

// ---------------------------------------------------------------------------------------------
// One fit and its invariants.

#[derive(Arbitrary, Debug, Clone)]
pub struct LadderInput {
    pub segs: Vec<SegIn>,
    pub window: Big,
    pub reserve: Big,
    pub caps: [Option<Big>; 8],
    pub policy: PolicyIn,
    pub separator: Option<TextIn>,
    pub framing: u8,
    /// A previous request: its share of the segments (x/255) and a cache profile's index
    /// (`CACHE_PROFILES`); the whole request is then also fitted against it (`cache::plan`).
    pub previous: Option<(u8, u8)>,
}

/// The profiles a cache-aware fit is tried under.
const CACHE_PROFILES: [&str; 5] = ["openai", "anthropic", "llama.cpp", "vllm", "none"];

/// Where an input segment ended up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Kept,
    Dropped(usize),
    Digested(usize),
}

/// Runs `fit` twice and checks every invariant of its answer.
pub fn check_ladder(input: &LadderInput) {
    let built: Vec<(SegmentData, usize)> = input.segs.iter().take(48).map(|s| s.build(false)).collect();
    let segs: Vec<&SegmentData> = built.iter().map(|(s, _)| s).collect();
    let counts: Vec<usize> = built.iter().map(|(_, n)| *n).collect();
    let caps = input.caps.map(|c| c.map(Big::raw));
    let Ok(budget) = Budget::new(input.window.raw(), input.reserve.raw(), caps) else { return };
    let (name, policy) = input.policy.build();
    // The policy is valid-shaped: its dict form reads back as itself.
    let back = policy_format::from_value(&policy_format::to_value(name.as_deref(), &policy));
    assert_eq!(back.as_ref().map(|(_, p)| p), Ok(&policy), "a built policy does not round-trip");
    let sep_text = input.separator.as_ref().map(TextIn::build);
    let sep = sep_text.as_deref();
    let framing = input.framing as usize;

    let first = fit(&segs, &counts, &budget, &policy, &Words, sep, framing);
    let second = fit(&segs, &counts, &budget, &policy, &Words, sep, framing);
    assert_eq!(first, second, "fit is not deterministic");

    let sep_tokens = match sep {
        Some(s) if !s.is_empty() => words(s),
        _ => 0,
    };
    let joins = (sep_tokens as u128) * (counts.len().saturating_sub(1) as u128);
    let request: u128 = counts.iter().map(|&n| n as u128).sum::<u128>() + joins;
    let too_large = request > MAX_TOTAL as u128;

    let out = match first {
        Err(CtxError::InvalidArgument(msg)) => {
            assert!(too_large, "InvalidArgument for a request of {request} tokens: {msg}");
            return;
        }
        Err(CtxError::Unfittable(u)) => {
            assert!(!too_large, "a request over MAX_TOTAL was not refused");
            assert!(u.total > u.ceiling, "Unfittable but total {} <= ceiling {}", u.total, u.ceiling);
            assert_eq!(u.ceiling, budget.ceiling());
            assert_eq!(u.shortfall, u.total - u.ceiling);
            let _ = u.message();
            return;
        }
        Err(other) => panic!("fit failed with an unexpected error: {other:?}"),
        Ok(out) => out,
    };
    assert!(!too_large, "a request over MAX_TOTAL was not refused");
    let req = Request { segs: &segs, counts: &counts, budget: &budget, policy: &policy, sep, sep_tokens, framing };
    check_outcome(&req, &out, false);
    if let Some((share, profile)) = input.previous {
        check_planned(&req, share, profile);
    }
}

/// One fitted request, as the checks read it.
struct Request<'a> {
    segs: &'a [&'a SegmentData],
    counts: &'a [usize],
    budget: &'a Budget,
    policy: &'a Policy,
    sep: Option<&'a str>,
    sep_tokens: usize,
    framing: usize,
}

/// The cache-aware fit of the whole request against a previous request that sent a prefix of it:
/// whenever the plain fit succeeds, so does the planned one (its last resort is the plain fit),
/// with every invariant of a fit and the same answer twice.
fn check_planned(req: &Request<'_>, share: u8, profile: u8) {
    let &Request { segs, counts, budget, policy, sep, framing, .. } = req;
    let Ok(profile) = CacheProfile::named(CACHE_PROFILES[profile as usize % CACHE_PROFILES.len()]) else {
        panic!("a named profile does not load")
    };
    let fps: Vec<u64> = segs.iter().zip(counts).map(|(s, &n)| fingerprint(s, n)).collect();
    let rungs: Vec<String> = policy.rungs.iter().map(|r| r.name.clone()).collect();
    let opts = FitOptions { separator: sep, framing, names: None, pins: &[], texts: None };
    let cut = (segs.len() * share as usize / 255).max(1).min(segs.len());
    let Ok(before) = fit_planned(&segs[..cut], &counts[..cut], &fps[..cut], budget, policy, &Words, &opts, None, &profile)
    else {
        return;
    };
    assert_eq!(before.cut, Cut::Fresh, "a fit without a previous request was planned");
    let mut first = before.outcome;
    let (sent, _) = settle(&mut first, before.cut, &fps[..cut], &counts[..cut], &[], rungs.clone(), None, &profile, None, Vec::new(), true);
    let run = || fit_planned(segs, counts, &fps, budget, policy, &Words, &opts, Some(&sent), &profile);
    let (a, b) = (run(), run());
    assert_eq!(a.as_ref().map(|p| (&p.outcome, p.cut)), b.as_ref().map(|p| (&p.outcome, p.cut)), "planned fit is not deterministic");
    let planned = match a {
        Ok(p) => p,
        Err(e) => panic!("the plain fit succeeded but the planned one failed: {e:?}"),
    };
    if !profile.caches() {
        assert_eq!(planned.cut, Cut::Fresh);
    }
    if let Cut::Moved { target: Some(aim) } = planned.cut {
        assert!(aim < budget.ceiling(), "a move aimed at {aim}, not below the ceiling");
    }
    let mut out = planned.outcome;
    let (_, report) = settle(&mut out, planned.cut, &fps, counts, &[], rungs, Some(&sent), &profile, None, Vec::new(), true);
    let p = report.prediction;
    assert_eq!(p.read + p.write + p.uncached, out.total, "the prediction does not add up: {p:?}");
    assert!(p.read <= p.unchanged_prefix && p.unchanged_prefix <= out.total, "{p:?} of {}", out.total);
    check_outcome(req, &out, true);
}

/// `planned`: a cache-aware fit, which may repeat a previous cut or aim below the ceiling, so it
/// may remove from a request that fits.
fn check_outcome(req: &Request<'_>, out: &FitOutcome, planned: bool) {
    let &Request { segs, counts, budget, policy, sep, sep_tokens, framing } = req;
    let n = segs.len();
    let ceiling = budget.ceiling();
    assert_eq!(out.ceiling, ceiling);
    assert!(out.total <= ceiling, "total {} over the ceiling {}", out.total, ceiling);

    // Every input segment exactly once: kept, dropped, or folded into a digest.
    let mut fate: Vec<Option<Fate>> = vec![None; n];
    let mut digest_seen = vec![0usize; out.digests.len()];
    let mut last_pos: Option<usize> = None;
    for k in &out.kept {
        let pos = match k {
            Kept::Original(i) | Kept::Truncated { index: i, .. } => {
                assert!(fate[*i].is_none(), "segment {i} accounted twice");
                fate[*i] = Some(Fate::Kept);
                *i
            }
            Kept::Digest { digest } => {
                digest_seen[*digest] += 1;
                out.digests[*digest].members[0]
            }
        };
        assert!(last_pos.is_none_or(|p| p < pos), "kept items out of input order: {:?}", out.kept);
        last_pos = Some(pos);
    }
    for r in &out.removals {
        assert!(r.rung < policy.rungs.len(), "removal by rung {} of {}", r.rung, policy.rungs.len());
        match r.target {
            Target::Segment(i) => {
                assert!(fate[i].is_none(), "segment {i} accounted twice");
                fate[i] = Some(match r.action {
                    Taken::Drop => Fate::Dropped(r.rung),
                    Taken::Digest => {
                        let d = out.digests.iter().position(|d| d.members.contains(&i));
                        Fate::Digested(d.expect("a digested segment is in a digest record"))
                    }
                });
            }
            Target::Digest(d) => {
                assert_eq!(r.action, Taken::Drop, "a digest record can only be dropped");
                assert_eq!(r.tokens, out.digests[d].tokens);
                digest_seen[d] += 1;
            }
        }
    }
    for (i, f) in fate.iter().enumerate() {
        assert!(f.is_some(), "segment {i} is neither kept nor removed");
    }
    for (d, seen) in digest_seen.iter().enumerate() {
        assert_eq!(*seen, 1, "digest {d} is kept or dropped {seen} times");
    }
    let mut in_digest = vec![0usize; n];
    for (d, rec) in out.digests.iter().enumerate() {
        assert!(!rec.members.is_empty());
        assert!(rec.rung < policy.rungs.len());
        for &m in &rec.members {
            in_digest[m] += 1;
            assert_eq!(fate[m], Some(Fate::Digested(d)), "digest member {m} not removed as digested");
        }
        assert_eq!(rec.tokens, words(&rec.text) + framing, "a digest's count is not its text's plus framing");
    }
    for i in 0..n {
        assert!(in_digest[i] <= 1, "segment {i} in {} digests", in_digest[i]);
        if matches!(fate[i], Some(Fate::Digested(_))) {
            assert_eq!(in_digest[i], 1);
        }
    }

    // Units: a group leaves whole (same fate for every member); a unit with a protected member
    // is kept untouched.
    let mut units: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, s) in segs.iter().enumerate() {
        let name = s.group.clone().map(|g| format!("g:{g}")).unwrap_or_else(|| format!("#{i}"));
        units.entry(name).or_default().push(i);
    }
    for members in units.values() {
        let first = fate[members[0]];
        for &m in members {
            assert_eq!(fate[m], first, "group split: members {members:?} have fates {:?}", members.iter().map(|&x| fate[x]).collect::<Vec<_>>());
        }
        if let Some(Fate::Digested(d)) = first {
            assert_eq!(&out.digests[d].members, members, "a digest does not cover its whole group");
        }
        if members.iter().any(|&m| policy.protected.contains(segs[m].layer)) {
            for &m in members {
                assert!(out.kept.contains(&Kept::Original(m)), "protected unit member {m} not kept verbatim");
            }
        }
    }

    // Truncations: kept as truncated, from the original count, to fewer tokens.
    for t in &out.truncations {
        assert!(t.after < t.before);
        assert_eq!(t.before, counts[t.index], "truncation 'before' is not the input count");
        let kept = out.kept.iter().find_map(|k| match k {
            Kept::Truncated { index, text, tokens } if *index == t.index => Some((text, *tokens)),
            _ => None,
        });
        let (text, tokens) = kept.expect("a truncation is kept as Truncated");
        assert_eq!(tokens, t.after);
        let overhead = segs[t.index].tokens.map_or(0, |g| g.saturating_sub(words(&segs[t.index].text)));
        assert_eq!(tokens, words(text) + overhead, "a truncated body's count is not its text's");
    }
    for k in &out.kept {
        if let Kept::Truncated { index, .. } = k {
            assert!(out.truncations.iter().any(|t| t.index == *index), "Truncated {index} without a truncation");
        }
    }

    // The authoritative total.
    let kept_tokens = |k: &Kept| match k {
        Kept::Original(i) => counts[*i],
        Kept::Truncated { tokens, .. } => *tokens,
        Kept::Digest { digest } => out.digests[*digest].tokens,
    };
    let kept_sum: u128 = out.kept.iter().map(|k| kept_tokens(k) as u128).sum();
    match sep {
        None => assert_eq!(out.total as u128, kept_sum, "total is not the kept tokens' sum"),
        Some(s) => {
            let texts: Vec<&str> = out
                .kept
                .iter()
                .map(|k| match k {
                    Kept::Original(i) => segs[*i].text.as_str(),
                    Kept::Truncated { text, .. } => text.as_str(),
                    Kept::Digest { digest } => out.digests[*digest].text.as_str(),
                })
                .collect();
            assert_eq!(out.total, words(&texts.join(s)), "total is not the joined payload's count");
        }
    }
    let start_total: u128 = counts.iter().map(|&c| c as u128).sum::<u128>() + (sep_tokens as u128) * (n.saturating_sub(1) as u128);
    assert_eq!(out.trace.start_total as u128, start_total);
    assert_eq!(out.trace.final_total, out.total);
    assert_eq!(out.over_by, out.trace.start_total.saturating_sub(ceiling));
    // Only a cap rung (`until = "cap"`) takes from a request that fits.
    let enforces_caps = policy.rungs.iter().any(|r| r.until == Until::Cap);
    if sep.is_none() && start_total <= ceiling as u128 && !enforces_caps && !planned {
        assert!(out.removals.is_empty() && out.truncations.is_empty(), "removed from a request that fit");
    }

    // The ledger: where the removed tokens went adds up to what left.
    let l = &out.ledger;
    let mut rec = 0u128;
    let mut disp = 0u128;
    let mut dig = 0i128;
    for r in &out.removals {
        match (r.action, r.target) {
            (Taken::Drop, Target::Segment(i)) if segs[i].recoverable => rec += r.tokens as u128,
            (Taken::Drop, _) => disp += r.tokens as u128,
            (Taken::Digest, _) => dig += r.tokens as i128,
        }
    }
    for d in &out.digests {
        dig -= d.tokens as i128;
    }
    assert_eq!(l.evicted_recoverable as u128, rec);
    assert_eq!(l.evicted_dispensable as u128, disp);
    let input_sum: u128 = counts.iter().map(|&c| c as u128).sum();
    let removed = input_sum as i128 - kept_sum as i128;
    // A digest record may be larger than what it replaced when the separator joins it saves make
    // up the difference; `digested` is unsigned and then reads 0 (regressions/ladder/
    // ledger-digest-larger-than-members). CTXFAST_FUZZ_OPEN_BUGS=1 asserts the exact sum anyway.
    let digested = if dig < 0 && !open_bugs() {
        assert_eq!(l.digested, 0, "digests net {dig} but ledger.digested is {}", l.digested);
        dig
    } else {
        l.digested as i128
    };
    assert_eq!(
        (l.evicted_recoverable + l.evicted_dispensable + l.truncated) as i128 + digested,
        removed,
        "ledger {l:?} does not add up to the {removed} tokens that left (digests net {dig})"
    );
    assert_eq!(l.rung_firings.len(), policy.rungs.len());
    let rows: usize = out.trace.sections.iter().map(|s| s.rows.len()).sum();
    assert_eq!(l.rung_firings.iter().sum::<usize>(), rows);

    let _ = out.trace.render();
    let _ = policy_format::describe(None, policy);
}
