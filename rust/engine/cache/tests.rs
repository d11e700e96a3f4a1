use super::plan::target;
use super::*;
use crate::engine::testing::Words;
use crate::engine::{presets, Budget, FitOptions, FitOutcome, Layer, Policy, SegmentData};
use crate::error::CtxResult;

/// A segment of `tokens` words whose first word makes it unique.
fn seg(layer: Layer, tokens: usize, name: &str, group: Option<&str>) -> SegmentData {
    let mut words = vec![name.to_string()];
    words.extend(std::iter::repeat_n("w".to_string(), tokens.saturating_sub(1)));
    let mut s = SegmentData::new(words.join(" "), layer);
    s.tokens = Some(tokens);
    s.group = group.map(Into::into);
    s
}

/// A session: a system prompt, then one exchange per turn (user + assistant), the last user
/// message the current turn.
fn session(turns: usize, size: usize) -> Vec<SegmentData> {
    let mut segs = vec![seg(Layer::System, 20, "sys", None)];
    for t in 0..turns {
        let g = format!("ex{t}");
        let last = t + 1 == turns;
        segs.push(seg(if last { Layer::CurrentTurn } else { Layer::Conversation }, size / 2, &format!("u{t}"), Some(&g)));
        if !last {
            segs.push(seg(Layer::Conversation, size - size / 2, &format!("a{t}"), Some(&g)));
        }
    }
    segs
}

struct Turn {
    out: FitOutcome,
    sent: Sent,
    cut: Cut,
}

fn turn(segs: &[SegmentData], budget: &Budget, policy: &Policy, previous: Option<&Sent>, profile: &CacheProfile) -> CtxResult<Turn> {
    let refs: Vec<&SegmentData> = segs.iter().collect();
    let counts: Vec<usize> = segs.iter().map(|s| s.tokens.unwrap_or(0)).collect();
    let fps: Vec<u64> = segs.iter().zip(&counts).map(|(s, &n)| fingerprint(s, n)).collect();
    let rungs: Vec<String> = policy.rungs.iter().map(|r| r.name.clone()).collect();
    let planned = super::plan::fit_planned(&refs, &counts, &fps, budget, policy, &Words, &FitOptions::default(), previous, profile)?;
    let sent = Sent::of(&fps, &counts, &[], &planned.outcome, rungs);
    Ok(Turn { out: planned.outcome, sent, cut: planned.cut })
}

fn local() -> CacheProfile {
    CacheProfile::named("llama.cpp").unwrap_or_else(|e| panic!("{e}"))
}

/// Plays `turns` turns, each with the previous turn's `Sent` (when `cache`), and returns how many
/// turns kept the whole previous request as their prefix and the uncached tokens in all.
fn play(turns: usize, cache: bool) -> (usize, usize) {
    let budget = Budget::new(400, 0, [None; 8]).unwrap_or_else(|e| panic!("{e}"));
    let policy = presets::context_window();
    let profile = if cache { local() } else { CacheProfile::named("none").unwrap_or_else(|e| panic!("{e}")) };
    let (mut previous, mut kept_prefix, mut uncached) = (None::<Sent>, 0, 0);
    for t in 1..=turns {
        let segs = session(t, 30);
        let Turn { out, sent, .. } = turn(&segs, &budget, &policy, previous.as_ref(), &profile).unwrap_or_else(|e| panic!("turn {t}: {e}"));
        assert!(out.total <= 400, "turn {t} sent {}", out.total);
        if let Some(p) = &previous {
            let shared = sent.unchanged_prefix(p);
            if shared == p.items.iter().map(|i| i.1).sum::<usize>() {
                kept_prefix += 1;
            }
            uncached += out.total - shared;
        } else {
            uncached += out.total;
        }
        previous = Some(sent);
    }
    (kept_prefix, uncached)
}

#[test]
fn keeping_the_cut_keeps_the_prefix_on_most_turns_and_halves_what_is_prefilled() {
    let (kept_with, uncached_with) = play(60, true);
    let (kept_without, uncached_without) = play(60, false);
    // 59 turns have a previous request; pressure starts near turn 13.
    assert!(kept_with >= 53, "cache-aware: {kept_with} of 59 turns kept the prefix");
    assert!(kept_without <= 15, "evict-exactly: {kept_without} of 59");
    assert!(uncached_with * 2 <= uncached_without, "{uncached_with} vs {uncached_without}");
}

#[test]
fn a_kept_cut_repeats_the_same_removals_and_says_so_in_the_trace() {
    let budget = Budget::new(400, 0, [None; 8]).unwrap_or_else(|e| panic!("{e}"));
    let policy = presets::context_window();
    let first = turn(&session(20, 30), &budget, &policy, None, &local()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.cut, Cut::Fresh);
    let second = turn(&session(21, 30), &budget, &policy, Some(&first.sent), &local()).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(second.cut, Cut::Moved { target: Some(t) } if t < 400), "{:?}", second.cut);
    let third = turn(&session(22, 30), &budget, &policy, Some(&second.sent), &local()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(third.cut, Cut::Kept);
    assert_eq!(third.out.pinned.0, third.out.removals.len());
    assert_eq!(third.out.removals.len(), second.out.removals.len());
    let shared = third.sent.unchanged_prefix(&second.sent);
    assert_eq!(shared, second.sent.items.iter().map(|i| i.1).sum::<usize>());
    assert!(third.out.trace.render().contains("the previous request's cut"), "{}", third.out.trace.render());
}

#[test]
fn another_policy_does_not_repeat_the_cut() {
    let budget = Budget::new(400, 0, [None; 8]).unwrap_or_else(|e| panic!("{e}"));
    let a = turn(&session(20, 30), &budget, &presets::context_window(), None, &local()).unwrap_or_else(|e| panic!("{e}"));
    let b = turn(&session(21, 30), &budget, &presets::ranked(2), Some(&a.sent), &local()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(b.out.pinned, (0, 0));
}

#[test]
fn no_previous_or_no_cache_is_a_plain_fit() {
    let budget = Budget::new(400, 0, [None; 8]).unwrap_or_else(|e| panic!("{e}"));
    let policy = presets::context_window();
    let segs = session(20, 30);
    let plain = crate::engine::tests::run(&segs, &budget, &policy).unwrap_or_else(|e| panic!("{e}"));
    let a = turn(&segs, &budget, &policy, None, &local()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.out, plain);
    let none = CacheProfile::named("none").unwrap_or_else(|e| panic!("{e}"));
    let b = turn(&segs, &budget, &policy, Some(&a.sent), &none).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((b.out, b.cut), (plain, Cut::Fresh));
}

#[test]
fn the_target_leaves_room_for_the_next_turns() {
    let p = local();
    assert_eq!(target(1000, 0, &p), 700); // the watermark
    assert_eq!(target(1000, 50, &p), 600); // eight turns of 50
    assert_eq!(target(1000, 400, &p), 500); // never below half
    assert_eq!(target(0, 10, &p), 0);
}

#[test]
fn predictions_follow_each_cache() {
    let openai = CacheProfile::named("openai").unwrap_or_else(|e| panic!("{e}"));
    let p = openai.predict(5000, Some(3000), &[], &[]);
    assert_eq!((p.read, p.write, p.uncached), (2944, 0, 2056)); // 1,024 + 15 x 128
    assert_eq!(openai.predict(5000, Some(1000), &[], &[]).read, 0); // under the minimum
    assert_eq!(openai.predict(5000, None, &[], &[]).read, 0);
    let claude = CacheProfile::named("anthropic").unwrap_or_else(|e| panic!("{e}"));
    let c = claude.predict(5000, Some(4000), &[2000, 3500], &[3500, 4800]);
    assert_eq!((c.read, c.write, c.uncached), (3500, 1300, 200));
    assert!((c.cost - (200.0 + 350.0 + 1625.0)).abs() < 1e-9);
    assert_eq!(claude.predict(5000, Some(4000), &[], &[]).write, 0); // no breakpoint, no cache
    let vllm = CacheProfile::named("vllm").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(vllm.predict(100, Some(37), &[], &[]).read, 32);
    assert!(CacheProfile::named("opnai").is_err_and(|e| e.to_string().contains("openai")));
}

#[test]
fn a_digest_dropped_later_is_remembered_as_dropped() {
    let mut o = crate::engine::tests::run(&session(3, 4), &Budget::new(1000, 0, [None; 8]).unwrap_or_else(|e| panic!("{e}")), &presets::context_window())
        .unwrap_or_else(|e| panic!("{e}"));
    use crate::engine::{DigestRecord, Removal, Taken, Target};
    o.digests = vec![DigestRecord { members: vec![1, 2], text: "d".into(), tokens: 1, layer: Layer::Conversation, rung: 0 }];
    o.removals = vec![
        Removal { target: Target::Segment(1), rung: 0, tokens: 2, action: Taken::Digest },
        Removal { target: Target::Segment(2), rung: 0, tokens: 2, action: Taken::Digest },
        Removal { target: Target::Digest(0), rung: 1, tokens: 1, action: Taken::Drop },
    ];
    let fps = [10, 11, 12, 13, 14];
    let sent = Sent::of(&fps, &[1; 5], &[], &o, vec![]);
    assert_eq!(sent.left.get(&11), Some(&vec![(Pinned::Drop, 1)]));
    let (pins, added) = sent.pins_for(&[10, 11, 12, 99], &[1, 1, 1, 7]);
    assert_eq!(pins.len(), 2);
    assert_eq!(added, 7);
}
