//! The trace and `Unfittable` as a reader sees them (issue 10, report #9, #10, #16): input
//! positions, the action beside the unit, a layer column that agrees with the numbers, a fixed
//! layer order, 80 columns, the refusal grouped by layer with its remedy and trace.

use super::presets::*;
use super::testing::Words;
use super::tests::{grouped, ok, seg};
use super::*;
use crate::error::{CtxError, CtxResult};
use crate::fmt::COLUMNS;

/// An adapter-shaped request: records in message order, then the fixed parts.
fn messages() -> (Vec<SegmentData>, InputNames) {
    let mut segs = vec![seg(Layer::System, 60)];
    for n in 0..4 {
        let g = format!("ex{n}");
        let mut call = grouped(Layer::Conversation, 100, &g);
        call.set_tool(Some(ToolCall { step: Some(n), tool: Some("read_file".into()), arguments: Some(format!("src/f{n}.py")) }));
        segs.push(call);
        segs.push(grouped(Layer::ToolResult, 2000, &g));
    }
    segs.push(seg(Layer::CurrentTurn, 500));
    segs.push(seg(Layer::Tools, 150));
    segs.push(seg(Layer::System, 3));
    let mut fixed = vec![None; 10];
    fixed.push(Some("<tool schemas>".to_string()));
    fixed.push(Some("<reply priming>".to_string()));
    (segs, InputNames { input: "messages".into(), fixed })
}

fn run_named(segs: &[SegmentData], ceiling: usize, policy: &Policy, names: Option<&InputNames>) -> CtxResult<FitOutcome> {
    let refs: Vec<&SegmentData> = segs.iter().collect();
    let counts: Vec<usize> = segs.iter().map(|s| s.tokens.unwrap_or(0)).collect();
    fit_named(&refs, &counts, &Budget::new(ceiling, 0, [None; 8]).unwrap(), policy, &Words, None, 0, names)
}

fn all_within_80(text: &str) {
    for line in text.lines() {
        assert!(line.chars().count() <= COLUMNS, "{} columns: {line:?}\n{text}", line.chars().count());
    }
}

#[test]
fn rows_name_input_positions_and_a_dropped_digest_is_its_own_label() {
    let (segs, names) = messages();
    let total: usize = segs.iter().map(|s| s.tokens.unwrap_or(0)).sum();
    let out = ok(run_named(&segs, total - 6000, &agent(2), Some(&names)));
    let labels: Vec<&str> = out.trace.sections.iter().flat_map(|s| s.rows.iter().map(|r| r.label.as_str())).collect();
    assert_eq!(labels[..2], ["messages[1..2]", "messages[3..4]"]);
    assert!(labels.contains(&"digest of messages[1..2]"), "{labels:?}");
    // Without names, today's labels.
    let out = ok(run_named(&segs, total - 6000, &agent(2), None));
    let labels: Vec<&str> = out.trace.sections.iter().flat_map(|s| s.rows.iter().map(|r| r.label.as_str())).collect();
    assert_eq!(labels[..2], ["ex0", "ex1"]);
    assert!(labels.contains(&"digest of ex0"), "{labels:?}");
}

#[test]
fn a_row_is_labelled_by_the_whole_name_however_long() {
    // Units copy names of up to 24 bytes and read longer ones from their first member: both,
    // and the boundary, come out whole (an OpenAI tool-call id is 29 bytes).
    let names = ["call_" .to_string() + &"x".repeat(24), "y".repeat(24), "z".repeat(25), "é".repeat(12) + "!"];
    let mut segs = vec![seg(Layer::System, 10)];
    for n in &names {
        segs.push(grouped(Layer::Conversation, 20, n));
        segs.push(grouped(Layer::ToolResult, 20, n));
    }
    let mut keyed = seg(Layer::Retrieved, 20);
    keyed.key = Some("k".repeat(40).into());
    segs.push(keyed);
    segs.push(seg(Layer::Retrieved, 20));
    segs.push(seg(Layer::CurrentTurn, 10));
    let out = ok(run_named(&segs, 20, &context_window(), None));
    let labels: Vec<&str> = out.trace.sections.iter().flat_map(|s| s.rows.iter().map(|r| r.label.as_str())).collect();
    let mut want: Vec<String> = names.to_vec();
    want.extend(["k".repeat(40), "#10".to_string()]);
    assert_eq!(labels, want);
}

#[test]
fn the_layer_column_agrees_with_the_numbers() {
    // Report #16: a row showed "conversation" while the unit's tool result left with it, so
    // the column and the delta did not reconcile.
    let (segs, names) = messages();
    let total: usize = segs.iter().map(|s| s.tokens.unwrap_or(0)).sum();
    let out = ok(run_named(&segs, total - 4500, &context_window(), Some(&names)));
    let rows = &out.trace.sections[0].rows;
    assert_eq!(&*rows[0].layer, "conversation+tool_result");
    let mut held = 400 + 8000;
    for r in rows {
        held -= r.delta;
        assert_eq!(r.layer_after, held, "{r:?}");
    }
    let text = out.trace.render();
    assert!(text.contains("   messages[1..2]  −2,100\n      conversation+tool_result  6,300   total"), "{text}");
    all_within_80(&text);
}

#[test]
fn the_action_reads_beside_the_unit_and_lines_fit_80_columns() {
    // Report #9/#16: rows read "over by 1,318 digested" and the start line broke mid-word.
    let (segs, names) = messages();
    let total: usize = segs.iter().map(|s| s.tokens.unwrap_or(0)).sum();
    let text = ok(run_named(&segs, total - 2000, &agent(2), Some(&names))).trace.render();
    assert!(text.contains("   messages[1..2]  digested −2,"), "{text}");
    assert!(!text.contains("over by 1,318 digested") && !text.lines().any(|l| l.ends_with("digested")), "{text}");
    all_within_80(&text);
    // Every layer on the start line, system first although the request holds it last too,
    // and a start line too wide for 80 columns breaks between layers.
    let mut wide: Vec<SegmentData> = Layer::DISPLAY_ORDER
        .iter()
        .rev()
        .map(|&l| {
            let mut s = SegmentData::new("x", l);
            s.tokens = Some(12_345_678);
            s
        })
        .collect();
    wide[0].tokens = Some(5);
    let refs: Vec<&SegmentData> = wide.iter().collect();
    let counts: Vec<usize> = wide.iter().map(|s| s.tokens.unwrap_or(0)).collect();
    let out = ok(fit(&refs, &counts, &Budget::new(100_000_000, 0, [None; 8]).unwrap(), &context_window(), &Words, None, 0));
    let text = out.trace.render();
    let order: Vec<&str> = out.trace.start_layers.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(order, ["system", "tools", "pinned", "retrieved", "summary", "conversation", "tool_result", "current_turn"]);
    assert!(text.contains("\nstart   system 12,345,678  tools 12,345,678  pinned 12,345,678\n        retrieved 12,345,678"), "{text}");
    all_within_80(&text);
}

#[test]
fn a_long_rung_header_puts_its_floor_on_its_own_line() {
    let (segs, _) = messages();
    let mut policy = troubleshooting();
    policy.rungs[0].name = "history.drop_the_oldest_exchange_but_keep_the_first".into();
    let total: usize = segs.iter().map(|s| s.tokens.unwrap_or(0)).sum();
    // The floors keep all four exchanges: the rung takes nothing, and says why.
    let text = refused(run_named(&segs, total - 2000, &policy, None)).trace;
    assert!(text.contains("rung 1  history.drop_the_oldest_exchange_but_keep_the_first\n        floor: first 1 + last 3 exchanges\n"), "{text}");
    all_within_80(&text);
}

fn refused(r: CtxResult<FitOutcome>) -> crate::error::Unfittable {
    match r {
        Err(CtxError::Unfittable(u)) => *u,
        other => panic!("expected Unfittable, got {other:?}"),
    }
}

#[test]
fn unfittable_groups_the_protected_parts_by_layer_with_positions() {
    // Report #10: 27 separate "current_turn N" items, reply priming as a second "system 3",
    // "does not fit: cannot fit:", no positions and no hint.
    let (mut segs, names) = messages();
    for _ in 0..3 {
        segs.insert(9, seg(Layer::CurrentTurn, 100));
    }
    let mut fixed = vec![None; 13];
    fixed.extend(names.fixed[10..].iter().cloned());
    let names = InputNames { input: "messages".into(), fixed };
    let u = refused(run_named(&segs, 700, &agent(2), Some(&names)));
    assert_eq!(
        u.message(),
        "short by 313 tokens: 1,013 after every rung, against a ceiling of 700
protected, 1,013 tokens:
  system: messages[0], 60 tokens
  current_turn: messages[9..12], 800 tokens
  <tool schemas>: 150 tokens
  <reply priming>: 3 tokens
to fit: raise the window or lower the reserve (the protected parts alone are
  over the ceiling)"
    );
    assert!(!u.message().contains("cannot fit:"));
    all_within_80(&u.message());
    // The structured parts stay one per protected segment.
    assert_eq!(u.components.len(), 7);
    assert_eq!((u.total, u.ceiling, u.shortfall, u.floor_tokens), (1013, 700, 313, 0));
    // The attempt's trace comes with it, and says how it ended.
    assert!(u.trace.starts_with("ceiling 700"), "{}", u.trace);
    assert!(u.trace.contains("\nfailed  1,013 tokens · short by 313 · "), "{}", u.trace);
    all_within_80(&u.trace);
}

#[test]
fn unfittable_names_what_the_floors_kept_and_suggests_lowering_them() {
    let (segs, names) = messages();
    let u = refused(run_named(&segs, 4000, &troubleshooting(), Some(&names)));
    let text = u.message();
    assert!(text.contains("\nkept by floors, 8,400 tokens: messages[1..8]\n"), "{text}");
    assert!(text.ends_with("\nto fit: raise the window, lower the reserve, or use a policy with lower floors"), "{text}");
    assert!(u.trace.contains("floor reached"), "{}", u.trace);
    // Without input names: keys, else positions.
    let u = refused(run_named(&segs, 4000, &troubleshooting(), None));
    assert!(u.message().contains("\n  system: #0, #11, 63 tokens\n"), "{}", u.message());
    assert!(u.message().contains("\nkept by floors, 8,400 tokens: ex0, ex1, ex2, ex3\n"), "{}", u.message());
}
