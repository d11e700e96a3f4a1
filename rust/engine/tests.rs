use super::presets::*;
use super::*;
use super::testing::Words;
use crate::error::{CtxError, CtxResult};

pub(super) fn seg(layer: Layer, tokens: usize) -> SegmentData {
    // Real words, so the Words counter and truncation agree with `tokens`.
    let mut s = SegmentData::new(vec!["w"; tokens].join(" "), layer);
    s.tokens = Some(tokens);
    s
}

pub(super) fn grouped(layer: Layer, tokens: usize, group: &str) -> SegmentData {
    let mut s = seg(layer, tokens);
    s.group = Some(group.into());
    s
}

pub(super) fn scored(layer: Layer, tokens: usize, score: f64, key: &str) -> SegmentData {
    let mut s = seg(layer, tokens);
    s.score = score;
    s.key = Some(key.into());
    s
}

pub(super) fn run(segs: &[SegmentData], budget: &Budget, policy: &Policy) -> CtxResult<FitOutcome> {
    let refs: Vec<&SegmentData> = segs.iter().collect();
    let counts: Vec<usize> = segs.iter().map(|s| s.tokens.unwrap_or(0)).collect();
    fit(&refs, &counts, budget, policy, &Words, None, 0)
}

pub(super) fn ok(r: CtxResult<FitOutcome>) -> FitOutcome {
    match r {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    }
}

/// Seed 000: 32,000 window, 4,000 reserve; history 12,300 over ten exchanges.
pub fn seed000_request() -> (Vec<SegmentData>, Budget) {
    let mut segs = vec![seg(Layer::System, 1462), seg(Layer::Tools, 2840)];
    // Eight chunks, 15,900 in all, one an oversized runbook section.
    for (i, (t, s)) in [(5200, 0.91), (1500, 0.88), (1400, 0.85), (1300, 0.8), (1600, 0.74), (1700, 0.7), (1500, 0.66), (1700, 0.6)]
        .into_iter()
        .enumerate()
    {
        segs.push(scored(Layer::Retrieved, t, s, &format!("chunk{}", i + 1)));
    }
    let exchanges = [900, 1180, 940, 1510, 760, 1020, 1400, 1500, 1590, 1500];
    for (i, t) in exchanges.into_iter().enumerate() {
        let g = format!("ex{}", i + 1);
        segs.push(grouped(Layer::Conversation, t / 2, &g));
        segs.push(grouped(Layer::Conversation, t - t / 2, &g));
    }
    let mut caps = [None; 8];
    caps[Layer::Retrieved.index()] = Some(14_000);
    (segs, Budget::new(32_000, 4_000, caps).unwrap())
}

#[test]
fn seed000_trace_number_for_number() {
    let (segs, budget) = seed000_request();
    let out = ok(run(&segs, &budget, &troubleshooting()));
    let rows: Vec<(String, usize, usize, usize, i64)> = out.trace.sections[0]
        .rows
        .iter()
        .map(|r| (r.label.to_string(), r.delta, r.layer_after, r.total_after, r.over_after))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("ex2".into(), 1180, 11120, 31322, 3322),
            ("ex3".into(), 940, 10180, 30382, 2382),
            ("ex4".into(), 1510, 8670, 28872, 872),
            ("ex5".into(), 760, 7910, 28112, 112),
            ("ex6".into(), 1020, 6890, 27092, -908),
        ]
    );
    assert_eq!((out.total, out.ceiling, out.over_by, out.count_calls), (27092, 28000, 4502, 1));
    assert_eq!(out.trace.start_total, 32502);
    assert_eq!(out.cap_overruns, vec![(Layer::Retrieved, 1900)]);
    assert_eq!(out.rungs_fired, vec![0]);
    // The whole trace, as the README shows it: every line within 80 columns.
    assert_eq!(
        out.trace.render(),
        "ceiling 28,000  (window 32,000 − reserve 4,000)
start   system 1,462  tools 2,840  retrieval 15,900  history 12,300
        total 32,502   over by 4,502
cap     retrieval 15,900 over its cap of 14,000 by 1,900

rung 1  history.drop_oldest_exchange  (floor: first 1 + last 3 exchanges)
   ex2  −1,180   history 11,120   total 31,322   over by 3,322
   ex3  −  940   history 10,180   total 30,382   over by 2,382
   ex4  −1,510   history  8,670   total 28,872   over by 872
   ex5  −  760   history  7,910   total 28,112   over by 112
   ex6  −1,020   history  6,890   total 27,092   fits, 908 spare

send    27,092 tokens · 5 units dropped · retrieval untouched ·
        floor not reached · 1 count
"
    );
}

#[test]
fn seed000_floors_then_second_rung() {
    // The same request on a 17,500 ceiling: history stops at its floor, chunks go lowest first
    // down to four, then the lowest-scored bodies are truncated to reclaim exactly the rest.
    let (segs, _) = seed000_request();
    let budget = Budget::new(17_500, 0, [None; 8]).unwrap();
    let out = ok(run(&segs, &budget, &troubleshooting()));
    let first: Vec<&str> = out.trace.sections[0].rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(first, vec!["ex2", "ex3", "ex4", "ex5", "ex6", "ex7"]);
    assert!(out.trace.sections[0].floor_reached);
    let second: Vec<&str> = out.trace.sections[1].rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(second, vec!["chunk8", "chunk7", "chunk6", "chunk5"]);
    assert!(out.trace.sections[1].floor_reached);
    let third: Vec<(&str, usize)> = out.trace.sections[2].rows.iter().map(|r| (r.label.as_str(), r.delta)).collect();
    assert_eq!(third, vec![("chunk4", 1172), ("chunk3", 520)]);
    assert_eq!(out.total, 17_500);
    // History keeps ex1 and the last three; retrieval keeps at least four chunks.
    let kept_groups: Vec<&str> = out
        .kept
        .iter()
        .filter_map(|k| match k {
            Kept::Original(i) => segs[*i].group.as_deref(),
            _ => None,
        })
        .collect();
    for g in ["ex1", "ex8", "ex9", "ex10"] {
        assert!(kept_groups.contains(&g), "{g} missing");
    }
}

#[test]
fn protected_set_that_cannot_fit_is_unfittable_and_named() {
    let segs = vec![seg(Layer::System, 900), seg(Layer::CurrentTurn, 300), seg(Layer::Conversation, 50)];
    let budget = Budget::new(1000, 0, [None; 8]).unwrap();
    match run(&segs, &budget, &context_window()) {
        Err(CtxError::Unfittable(u)) => {
            assert_eq!(u.shortfall, 200);
            assert_eq!(u.components, vec![("system".to_string(), 900), ("current_turn".to_string(), 300)]);
            assert!(u.message().contains("short by 200"), "{}", u.message());
        }
        _ => panic!("expected Unfittable"),
    }
}

#[test]
fn groups_leave_whole() {
    let segs = vec![
        seg(Layer::System, 10),
        grouped(Layer::Conversation, 40, "call"),
        grouped(Layer::ToolResult, 400, "call"),
        seg(Layer::Conversation, 30),
    ];
    let budget = Budget::new(100, 0, [None; 8]).unwrap();
    let out = ok(run(&segs, &budget, &context_window()));
    let gone: Vec<usize> = out
        .removals
        .iter()
        .map(|r| match r.target {
            Target::Segment(i) => i,
            Target::Digest(_) => usize::MAX,
        })
        .collect();
    assert_eq!(gone, vec![1, 2]);
    assert_eq!(out.total, 40);
}

#[test]
fn seven_tier_goes_in_tier_order() {
    let mut stale = grouped(Layer::ToolResult, 100, "t1");
    stale.stale = true;
    let mut l1 = scored(Layer::Summary, 100, 0.0, "s1");
    l1.set_level(Some(1));
    let mut l2 = scored(Layer::Summary, 50, 0.0, "s2");
    l2.set_level(Some(2));
    l2.set_covers(vec!["s1".into()]);
    let mut rolling = seg(Layer::Summary, 100);
    rolling.set_level(Some(0));
    let segs = vec![
        seg(Layer::System, 10),
        seg(Layer::Conversation, 100), // recent turn
        stale,
        scored(Layer::Retrieved, 100, 0.9, "r1"),
        scored(Layer::Retrieved, 100, 0.8, "r2"),
        scored(Layer::Retrieved, 100, 0.7, "r3"),
        scored(Layer::Retrieved, 100, 0.1, "r4"),
        l1,
        l2,
        rolling,
        seg(Layer::CurrentTurn, 10),
    ];
    let budget = Budget::new(370, 0, [None; 8]).unwrap();
    let out = ok(run(&segs, &budget, &seven_tier(3)));
    let order: Vec<&str> = out.trace.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        order,
        vec!["stale_tool_results", "retrieved_below_top_k", "covered_level1_summaries", "rolling_summary", "recent_turns"]
    );
    let labels: Vec<&str> = out.trace.sections.iter().flat_map(|s| s.rows.iter().map(|r| r.label.as_str())).collect();
    assert_eq!(labels, vec!["t1", "r4", "s1", "#9", "#1"]);
}

#[test]
fn ranked_takes_recoverable_stale_first_and_pins_last_two_exchanges() {
    // Seed 004's transcript at step 31: file contents are recoverable, stale and biggest.
    let mut files = scored(Layer::ToolResult, 6000, 0.0, "file_contents");
    files.recoverable = true;
    files.stale = true;
    let mut search = scored(Layer::ToolResult, 900, 0.3, "search");
    search.recoverable = true;
    let segs = vec![
        seg(Layer::System, 400),
        scored(Layer::Pinned, 200, 0.0, "operator_constraints"),
        grouped(Layer::Conversation, 50, "reads"),
        files,
        grouped(Layer::Conversation, 300, "x1"),
        search,
        grouped(Layer::Conversation, 500, "x2"),
        grouped(Layer::Conversation, 500, "x3"),
        seg(Layer::CurrentTurn, 100),
    ];
    let budget = Budget::new(4000, 0, [None; 8]).unwrap();
    let out = ok(run(&segs, &budget, &ranked(2)));
    let labels: Vec<&str> = out.trace.sections[0].rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, vec!["file_contents"]);
    let tighter = Budget::new(1800, 0, [None; 8]).unwrap();
    let out = ok(run(&segs, &tighter, &ranked(2)));
    let labels: Vec<&str> = out.trace.sections[0].rows.iter().map(|r| r.label.as_str()).collect();
    // Then the recoverable search result, then the larger of two equal-relevance turns (x1);
    // x2 and x3 are the pinned last two exchanges.
    assert_eq!(labels, vec!["file_contents", "search", "x1"]);
}

#[test]
fn truncate_reclaims_exactly_the_remainder() {
    let body = (0..500).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
    let mut chunk = SegmentData::new(body, Layer::Retrieved);
    chunk.score = 0.2;
    let segs = [SegmentData::new("sys tem", Layer::System), chunk];
    let refs: Vec<&SegmentData> = segs.iter().collect();
    let counts = vec![2, 500];
    let budget = Budget::new(302, 0, [None; 8]).unwrap();
    let mut policy = troubleshooting();
    policy.rungs[1].floor.keep_top = 0;
    policy.rungs.remove(1);
    let out = match fit(&refs, &counts, &budget, &policy, &Words, None, 0) {
        Ok(o) => o,
        Err(_) => panic!("should fit"),
    };
    assert_eq!(out.total, 302);
    assert_eq!(out.truncations.len(), 1);
    assert_eq!((out.truncations[0].before, out.truncations[0].after), (500, 300));
    assert!(matches!(&out.kept[1], Kept::Truncated { tokens: 300, .. }));
}

#[test]
fn digest_replaces_a_tool_exchange_with_a_record() {
    let mut call = SegmentData::new("call read_file", Layer::Conversation);
    call.group = Some("step16".into());
    call.set_tool(Some(ToolCall { step: Some(16), tool: Some("read_file".into()), arguments: Some("a.py".into()) }));
    let mut result = SegmentData::new("word ".repeat(900), Layer::ToolResult);
    result.group = Some("step16".into());
    let segs = [SegmentData::new("sys", Layer::System), call, result];
    let refs: Vec<&SegmentData> = segs.iter().collect();
    let counts: Vec<usize> = segs.iter().map(|s| Words.count(&s.text).unwrap()).collect();
    let policy = Policy {
        rungs: vec![Rung {
            name: "digest_tool_exchanges".into(),
            layers: LayerSet::of(&[Layer::ToolResult]),
            filter: None,
            order: Order::Oldest,
            action: Action::Digest,
            floor: Floor::default(),
            until: Until::Fits,
        }],
        protected: Layer::PROTECTED,
        labels: Policy::default_labels(),
    };
    let out = match fit(&refs, &counts, &Budget::new(100, 0, [None; 8]).unwrap(), &policy, &Words, None, 0) {
        Ok(o) => o,
        Err(_) => panic!("should fit"),
    };
    assert_eq!(out.digests.len(), 1);
    assert!(out.digests[0].text.starts_with("[compacted] step 16: called read_file(a.py) ->"));
    assert_eq!(out.kept.len(), 2);
    assert!(out.total < 100);
}

#[test]
fn joined_payload_counts_separators_once_authoritatively() {
    let segs = [
        SegmentData::new("alpha beta", Layer::System),
        SegmentData::new("gamma", Layer::Conversation),
        SegmentData::new("delta epsilon", Layer::Conversation),
    ];
    let refs: Vec<&SegmentData> = segs.iter().collect();
    let counts = vec![2, 1, 2];
    let out = match fit(&refs, &counts, &Budget::new(100, 0, [None; 8]).unwrap(), &context_window(), &Words, Some(" | "), 0) {
        Ok(o) => o,
        Err(_) => panic!("should fit"),
    };
    // "alpha beta | gamma | delta epsilon" = 7 words
    assert_eq!((out.total, out.count_calls), (7, 1));
}
