//! Probes, not tests (`#[ignore]`d): how the warm fit's time grows with the number of segments,
//! and a fingerprint of every preset's outcome on large requests, to check that a change to the
//! ladder's data structures changed no result. Run them optimised:
//!
//! ```text
//! cargo test --profile quick --lib tests_scaling -- --ignored --nocapture
//! ```
//!
//! `SCALING_SIZES=30000,1000000` picks the sizes, `SCALING_RUNS` the fewest runs at each size,
//! `SCALING_ALL=1` prints every run. On a machine shared with a build, compare medians of
//! several whole runs of the probe, interleaved with the build being compared against.
//!
//! The bare test process has almost nothing else on its heap, so glibc gives the fit's large
//! vectors back to the kernel after every run and the next run takes fresh pages (measured:
//! more kernel time than user time at 10^4). A long-lived process, Python's included, keeps
//! them (a Python loop of 10^4-segment fits takes a page fault or two a fit). To measure that
//! case, run with `MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296`.

use std::time::Instant;

use super::presets::*;
use super::testing::Words;
use super::*;

/// A deterministic stream of pseudo-random numbers (an LCG): the same request on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> usize {
        usize::try_from(self.next() % n).unwrap_or(0)
    }
}

/// `n` segments shaped like an agent request: a system prompt and tools, then turns of a
/// conversation, tool exchanges (a call and its result, grouped), retrieved chunks with scores
/// and keys, a few summaries. Counts are known (`tokens`), texts are one word a token only for
/// the small segments a truncation or digest might read.
fn request(n: usize, seed: u64) -> Vec<SegmentData> {
    request_with(n, seed, None)
}

/// `request`, with the exchanges' groups reused every `recur` exchanges when given: a group
/// whose members are far apart.
fn request_with(n: usize, seed: u64, recur: Option<i64>) -> Vec<SegmentData> {
    let mut rng = Lcg(seed);
    let mut segs = vec![SegmentData::new("system", Layer::System), SegmentData::new("tools", Layer::Tools)];
    segs[0].tokens = Some(400);
    segs[1].tokens = Some(900);
    let mut exchange = 0;
    while segs.len() + 1 < n {
        let tokens = 5 + rng.below(60);
        let mut s = match rng.below(10) {
            0..=2 => SegmentData::new("w w w", Layer::Conversation),
            3..=5 => {
                exchange += 1;
                let g = format!("ex{}", recur.map_or(exchange, |r| exchange % r));
                let mut call = SegmentData::new("w w", Layer::Conversation);
                call.group = Some(g.as_str().into());
                call.tokens = Some(2 + rng.below(20));
                call.set_tool(Some(ToolCall { step: Some(exchange), tool: Some("read".into()), arguments: Some("f.py".into()) }));
                call.stale = rng.below(2) == 0;
                segs.push(call);
                let mut result = SegmentData::new("w w w w w w w w", Layer::ToolResult);
                result.group = Some(g.into());
                result.recoverable = true;
                result.stale = rng.below(2) == 0;
                result
            }
            6..=8 => {
                let mut c = SegmentData::new("w w w w", Layer::Retrieved);
                c.key = Some(format!("chunk{}", segs.len()).into());
                // Ties on purpose: the order must fall back to position.
                c.score = f64::from(u32::try_from(rng.below(1000)).unwrap_or(0)) / 1000.0;
                c.recoverable = rng.below(3) == 0;
                c
            }
            _ => {
                let mut s = SegmentData::new("w w w w w", Layer::Summary);
                s.set_level(Some(i64::try_from(rng.below(3)).unwrap_or(0)));
                s.key = Some(format!("sum{}", segs.len()).into());
                s
            }
        };
        s.tokens = Some(tokens);
        segs.push(s);
    }
    let mut turn = SegmentData::new("question", Layer::CurrentTurn);
    turn.tokens = Some(50);
    segs.push(turn);
    segs
}

fn counts(segs: &[SegmentData]) -> Vec<usize> {
    segs.iter().map(|s| s.tokens.unwrap_or(0)).collect()
}

/// Half the material: the ladder must take about half of it.
fn half_budget(counts: &[usize]) -> Budget {
    let total: usize = counts.iter().sum();
    match Budget::new(total, total / 2, [None; 8]) {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    }
}

fn fit_once(refs: &[&SegmentData], counts: &[usize], budget: &Budget, policy: &Policy) -> FitOutcome {
    match fit(refs, counts, budget, policy, &Words, None, 0) {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The least-squares slope of log y against log x.
fn exponent(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
    let k = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / k;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / k;
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    sxy / sxx
}

#[test]
#[ignore = "a probe: run optimised with --ignored --nocapture"]
fn warm_fit_scaling() {
    let policy = context_window();
    // SCALING_SIZES=1000000 profiles one size alone.
    let sizes: Vec<usize> = match std::env::var("SCALING_SIZES") {
        Ok(list) => list.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) => vec![10_000, 30_000, 100_000, 300_000, 1_000_000],
    };
    let runs: usize = std::env::var("SCALING_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(9);
    let (mut points, mut fastest_points) = (Vec::new(), Vec::new());
    println!("{:>9} {:>10} {:>8} {:>12} {:>8} {:>12} {:>6}", "n", "tokens", "kept", "median", "ns/seg", "fastest", "runs");
    for &n in &sizes {
        let segs = request(n, 14);
        let refs: Vec<&SegmentData> = segs.iter().collect();
        let counts = counts(&segs);
        let budget = half_budget(&counts);
        // One warm-up run: the first touches the pages of the result vectors.
        let kept = fit_once(&refs, &counts, &budget, &policy).kept.len();
        // As many runs as make ~1 s at each size (at least `runs`): a short fit is preempted
        // often on a shared machine, and the median of many is what stays put.
        let rounds = runs.max(2_000_000 / n);
        let times: Vec<f64> = (0..rounds)
            .map(|_| {
                let t = Instant::now();
                let out = fit_once(&refs, &counts, &budget, &policy);
                let secs = t.elapsed().as_secs_f64();
                drop(out);
                secs
            })
            .collect();
        if std::env::var("SCALING_ALL").is_ok() {
            let ms: Vec<String> = times.iter().map(|t| format!("{:.1}", t * 1e3)).collect();
            println!("{n}: {}", ms.join(" "));
        }
        let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
        let t = median(times);
        points.push((n as f64, t));
        fastest_points.push((n as f64, fastest));
        let tokens: usize = counts.iter().sum();
        println!(
            "{n:>9} {tokens:>10} {kept:>8} {:>9.3} ms {:>8.1} {:>9.3} ms {rounds:>6}",
            t * 1e3,
            t * 1e9 / n as f64,
            fastest * 1e3,
        );
    }
    println!("exponent (least squares, log t vs log n): median {:.3}, fastest {:.3}", exponent(&points), exponent(&fastest_points));
}

/// Every preset (and the caps a cap rung enforces) on requests of several sizes, each outcome
/// hashed whole (kept, removals, truncations, digests, trace rows, rendered trace): the same
/// hashes before and after a change mean the same fits.
#[test]
#[ignore = "a probe: compare its output before and after a change"]
fn outcome_fingerprints() {
    let mut caps = [None; 8];
    caps[Layer::Retrieved.index()] = Some(5_000);
    let capped_toml = r#"
        [[rungs]]
        name = "retrieved.cap"
        layers = ["retrieved"]
        order = "largest"
        action = "truncate"
        min_tokens = 3
        until = "cap"
        [[rungs]]
        name = "all.rank"
        layers = ["conversation", "tool_result", "retrieved", "summary"]
        order = "rank"
        floor = { keep_last = 5, keep_first = 2 }
        [[rungs]]
        name = "newest"
        layers = ["conversation", "tool_result", "retrieved", "summary"]
        order = "newest"
    "#;
    let capped = match policy_format::from_toml(capped_toml) {
        Ok((_, p)) => p,
        Err(e) => panic!("{e}"),
    };
    let policies: Vec<(&str, Policy)> = vec![
        ("context_window", context_window()),
        ("troubleshooting", troubleshooting()),
        ("seven_tier", seven_tier(DEFAULT_TOP_K)),
        ("ranked", ranked(DEFAULT_KEEP_LAST)),
        ("agent", agent(DEFAULT_KEEP_LAST)),
        ("capped", capped),
    ];
    for (n, recur) in [(200usize, None), (3_000, None), (20_000, None), (500, Some(7)), (5_000, Some(101))] {
        let segs = request_with(n, 7 + n as u64, recur);
        let refs: Vec<&SegmentData> = segs.iter().collect();
        let counts = counts(&segs);
        for (name, policy) in &policies {
            for (ceiling, budget) in [("half", half_budget(&counts)), ("capped", capped_budget(&counts, caps))] {
                let text = match fit(&refs, &counts, &budget, policy, &Words, None, 0) {
                    Ok(o) => format!("{o:?}\n{}", o.trace.render()),
                    Err(e) => format!("error: {e}"),
                };
                let hash = crate::hash::xxh3_64(text.as_bytes());
                println!("{n:>6} {name:<16} {ceiling:<7} {hash:016x} {:>9}", text.len());
            }
        }
    }
}

fn capped_budget(counts: &[usize], caps: [Option<usize>; 8]) -> Budget {
    let total: usize = counts.iter().sum();
    match Budget::new(total, total / 3, caps) {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    }
}
