use super::*;
use crate::engine::testing::Words;
use crate::engine::presets;
use crate::engine::TokenSource;
use ledger::Cause;

fn seg(text: &str, layer: Layer, key: Option<&str>, score: f64) -> Arc<SegmentData> {
    let mut s = SegmentData::new(text, layer);
    s.key = key.map(Into::into);
    s.score = score;
    Arc::new(s)
}

fn words(n: usize) -> String {
    vec!["w"; n].join(" ")
}

fn admit(w: &mut Window, text: &str, layer: Layer, key: Option<&str>, score: f64) -> bool {
    let n = Words.count(text).unwrap();
    matches!(w.admit(seg(text, layer, key, score), n), Ok(Admit::Admitted { .. }))
}

fn window(limit: usize) -> Window {
    Window::new(limit, 0, presets::context_window(), Some("context_window".into()), None).unwrap()
}

fn balanced(w: &Window) -> bool {
    w.totals().balances(w.held_tokens() as u64)
}

#[test]
fn keys_are_refused_across_layers_and_none_is_never_deduplicated() {
    let mut w = window(100);
    assert!(admit(&mut w, "page twelve", Layer::Pinned, Some("p12"), 0.0));
    assert!(!admit(&mut w, "page twelve", Layer::Retrieved, Some("p12"), 0.9));
    assert!(admit(&mut w, "same words", Layer::Conversation, None, 0.0));
    assert!(admit(&mut w, "same words", Layer::Conversation, None, 0.0));
    assert_eq!(w.counters().refused_duplicates, 1);
    assert_eq!(w.held_tokens(), 6);
}

#[test]
fn fit_evicts_conversation_oldest_then_retrieved_lowest_and_frees_keys() {
    let mut w = window(20);
    admit(&mut w, &words(5), Layer::System, None, 0.0);
    admit(&mut w, &words(10), Layer::Conversation, Some("t1"), 0.0);
    admit(&mut w, &words(10), Layer::Conversation, Some("t2"), 0.0);
    admit(&mut w, &words(10), Layer::Retrieved, Some("high"), 0.9);
    admit(&mut w, &words(10), Layer::Retrieved, Some("low"), 0.1);
    let out = w.fit(&Words).ok().unwrap();
    let gone: Vec<&str> = out.changes.removed.iter().map(|r| r.entry.seg.key.as_deref().unwrap_or("")).collect();
    assert_eq!(gone, vec!["t1", "t2", "low"]);
    assert_eq!(w.held_tokens(), 15);
    assert_eq!(w.why("low").unwrap().status, Status::EvictedDispensable);
    assert_eq!(w.why("high").unwrap().status, Status::Held);
    // Eviction freed the key: the chunk can come back.
    assert!(admit(&mut w, &words(3), Layer::Retrieved, Some("low"), 0.1));
    assert_eq!(w.why("low").unwrap().admissions, 2);
    assert!(balanced(&w));
}

#[test]
fn a_prefix_that_cannot_fit_alone_is_an_error_and_changes_nothing() {
    let mut w = window(10);
    admit(&mut w, &words(12), Layer::System, None, 0.0);
    admit(&mut w, &words(3), Layer::Conversation, Some("t"), 0.0);
    assert!(matches!(w.fit(&Words), Err(CtxError::Unfittable(_))));
    assert_eq!(w.held_tokens(), 15);
    assert!(w.holds("t"));
}

#[test]
fn a_new_current_turn_demotes_the_previous_one() {
    let mut w = window(100);
    admit(&mut w, "first question", Layer::CurrentTurn, Some("q1"), 0.0);
    let n = 2;
    match w.admit(seg("second question", Layer::CurrentTurn, Some("q2"), 0.0), n) {
        Ok(Admit::Admitted { demoted: Some(e), .. }) => assert_eq!(e.seg.layer, Layer::Conversation),
        _ => panic!("expected a demotion"),
    }
    let current: Vec<_> = w.entries().iter().filter(|e| e.seg.layer == Layer::CurrentTurn).collect();
    assert_eq!(current.len(), 1);
}

#[test]
fn rewrites_are_tagged_checked_and_deferred_in_a_busy_cycle() {
    let mut w = window(100);
    admit(&mut w, &words(20), Layer::Conversation, Some("long"), 0.0);
    w.fit(&Words).ok().unwrap();
    assert!(matches!(w.rewrite("long", "x".into(), 1, None), Err(CtxError::UntaggedRewrite(_))));
    assert!(matches!(w.rewrite("long", words(25), 25, Some("model")), Err(CtxError::LedgerInconsistency(_))));
    assert!(matches!(w.rewrite("nope", "x".into(), 1, Some("model")), Err(CtxError::UnknownKey(_))));
    // Quiet cycle: applied at once.
    let text = Window::surrogate_text("long", "model", "gist");
    let n = Words.count(&text).unwrap();
    assert!(matches!(w.rewrite("long", text, n, Some("model")), Ok(Rewrite::Applied(_))));
    assert_eq!(w.why("long").unwrap().status, Status::Rewritten);
    assert_eq!(w.why("long").unwrap().provenance.as_deref(), Some("model"));
    assert!(balanced(&w));

    // New non-recoverable content this cycle: deferred until the fit returns.
    admit(&mut w, &words(20), Layer::Conversation, Some("other"), 0.0);
    admit(&mut w, &words(5), Layer::Conversation, Some("fresh"), 0.0);
    assert!(matches!(w.rewrite("other", "short".into(), 1, Some("model")), Ok(Rewrite::Deferred)));
    assert_eq!(w.why("other").unwrap().status, Status::Held);
    let before = w.held_tokens();
    w.fit(&Words).ok().unwrap();
    assert_eq!(w.why("other").unwrap().status, Status::Rewritten);
    assert_eq!(w.held_tokens(), before - 19);
    assert!(balanced(&w));
}

#[test]
fn discard_and_mark_stale() {
    let mut w = Window::new(100, 0, presets::seven_tier(3), None, None).unwrap();
    admit(&mut w, &words(10), Layer::ToolResult, Some("r1"), 0.0);
    let mut rec = SegmentData::new(words(10), Layer::Retrieved);
    rec.key = Some("doc".into());
    rec.recoverable = true;
    w.admit(Arc::new(rec), 10).unwrap();
    w.discard("doc").unwrap();
    assert_eq!(w.why("doc").unwrap().status, Status::EvictedRecoverable);
    assert_eq!(w.why("doc").unwrap().rung.as_deref(), Some("discard"));
    assert!(w.mark_stale("r1").unwrap().seg.stale);
    assert!(matches!(w.discard("doc"), Err(CtxError::UnknownKey(_))));
    assert!(balanced(&w));
}

#[test]
fn low_watermark_keeps_the_prefix_stable_across_turns() {
    let run = |watermark: Option<f64>| -> usize {
        let mut w = Window::new(200, 0, presets::context_window(), None, watermark).unwrap();
        admit(&mut w, &words(20), Layer::System, None, 0.0);
        let mut stable_turns = 0;
        for t in 0..30 {
            admit(&mut w, &words(15), Layer::Conversation, Some(&format!("t{t}")), 0.0);
            let prefix_before: usize = w.held_tokens() - 15;
            let out = w.fit(&Words).ok().unwrap();
            if t > 0 && out.stable_prefix_tokens >= prefix_before.min(w.held_tokens()) {
                stable_turns += 1;
            }
        }
        stable_turns
    };
    let without = run(None);
    let with = run(Some(0.6));
    assert!(with > without, "with watermark {with} stable turns, without {without}");
}

#[test]
fn state_round_trips_through_json() {
    let mut w = window(30);
    admit(&mut w, &words(5), Layer::System, None, 0.0);
    admit(&mut w, &words(20), Layer::Conversation, Some("t1"), 0.0);
    admit(&mut w, &words(20), Layer::Conversation, Some("t2"), 0.0);
    w.fit(&Words).ok().unwrap();
    let bytes = w.to_json().unwrap();
    let back = Window::from_json(&bytes).unwrap();
    assert_eq!(back.entries(), w.entries());
    assert_eq!(back.why("t1").unwrap(), w.why("t1").unwrap());
    assert_eq!(back.counters(), w.counters());
    assert_eq!(back.policy(), w.policy());
    assert!(Window::from_json(b"{}").is_err());
}

#[test]
fn a_digest_dropped_in_the_same_fit_leaves_exactly_itself() {
    // Two identical tool exchanges give identical digests; the tight limit makes the agent
    // policy digest both and then drop the oldest record.
    let mut w = Window::new(20, 0, presets::agent(0), None, None).unwrap();
    admit(&mut w, &words(5), Layer::System, None, 0.0);
    for g in ["x1", "x2"] {
        let mut call = SegmentData::new("call", Layer::Conversation);
        call.group = Some(g.into());
        call.set_tool(Some(crate::engine::ToolCall { step: Some(1), tool: Some("read".into()), arguments: Some("a".into()) }));
        let mut result = SegmentData::new(vec!["w"; 60].join("\n"), Layer::ToolResult);
        result.group = Some(g.into());
        result.key = Some(format!("{g}.result").into());
        w.admit(Arc::new(call), 1).unwrap();
        w.admit(Arc::new(result), 60).unwrap();
    }
    let out = w.fit(&Words).ok().unwrap();
    let kinds: Vec<(Cause, bool)> = out.changes.removed.iter().map(|r| (r.cause, r.entry.provenance.is_some())).collect();
    assert!(kinds.iter().any(|&(c, surrogate)| matches!(c, Cause::Rung(_)) && surrogate), "{kinds:?}");
    let surrogates = w.entries().iter().filter(|e| e.provenance.is_some()).count();
    assert_eq!(surrogates, 1, "one digest kept, the other dropped");
    assert!(w.held_tokens() <= 20);
    assert!(balanced(&w));
}

#[test]
fn a_saved_next_id_of_zero_is_refused_because_the_window_would_issue_id_zero() {
    // The fuzzer's state_mutator found it: an empty state with next_id 0 loaded, its first
    // admission took id 0, and the window's own saved state then failed to load.
    let w = window(100);
    let mut v: serde_json::Value = serde_json::from_slice(&w.to_json().unwrap()).unwrap();
    v["next_id"] = serde_json::json!(0);
    let bytes = serde_json::to_vec(&v).unwrap();
    let err = Window::from_json(&bytes).expect_err("next_id 0 must be refused");
    assert!(format!("{err:?}").contains("next_id"), "{err:?}");
    v["next_id"] = serde_json::json!(1);
    assert!(Window::from_json(&serde_json::to_vec(&v).unwrap()).is_ok());
}

#[test]
fn a_revision_that_could_not_grow_is_refused_and_none_passes_the_limit() {
    // The fuzzer's state_mutator found it: an empty state with revision u64::MAX loaded, an
    // admission could not move the revision on (it saturated), so the delta since the last
    // snapshot left the new entry out and snapshot + delta did not load.
    let w = window(100);
    let err = reload(&w, |v| v["revision"] = serde_json::json!(u64::MAX)).expect_err("revision u64::MAX must be refused");
    assert!(format!("{err:?}").contains("revision"), "{err:?}");
    // One below the limit: the next change is recorded, and a delta carries it.
    let limit = super::journal::REVISION_LIMIT;
    let mut w = reload(&w, |v| v["revision"] = serde_json::json!(limit - 1)).expect("a revision under the limit loads");
    let (mark, snap) = (w.revision(), w.to_snapshot(&Default::default()).unwrap());
    w.admit(Arc::new(SegmentData::new("one two", Layer::Conversation)), 2).unwrap();
    assert_eq!(w.revision(), limit);
    let delta = w.delta_since(mark, None).unwrap();
    let (back, _) = Window::from_snapshot(&snap).unwrap().0.with_delta(&delta).unwrap();
    assert_eq!(back.entries().len(), 1);
    // At the limit every change is refused and changes nothing; the state still loads.
    let before = w.to_json().unwrap();
    assert!(w.admit(Arc::new(SegmentData::new("three", Layer::Conversation)), 1).is_err());
    assert!(w.set_why_horizon(Some(3)).is_err());
    assert!(w.fit(&Words).is_err());
    assert_eq!(w.to_json().unwrap(), before);
    assert!(Window::from_json(&before).is_ok());
}

fn reload(w: &Window, edit: impl Fn(&mut serde_json::Value)) -> CtxResult<Window> {
    let mut v: serde_json::Value = serde_json::from_slice(&w.to_json().unwrap()).unwrap();
    edit(&mut v);
    Window::from_json(&serde_json::to_vec(&v).unwrap())
}

#[test]
fn statistics_at_any_value_load_and_the_window_still_loads_its_own_state_after_counting_on() {
    // The fuzzer's state_mutator found it: a counter loaded just under the old 2^62 check, one
    // fit pushed it over, and the window refused its own saved state.
    let mut w = window(10);
    admit(&mut w, &words(8), Layer::Conversation, Some("a"), 0.0);
    let mut w = reload(&w, |v| {
        v["counters"]["fits"] = serde_json::json!(u64::MAX - 1);
        v["cycle"] = serde_json::json!(u64::MAX);
    })
    .unwrap();
    admit(&mut w, &words(8), Layer::Conversation, Some("b"), 0.0);
    w.fit(&Words).ok().unwrap();
    assert_eq!(w.counters().fits, u64::MAX);
    assert!(reload(&w, |_| {}).is_ok(), "a window's own state must load");
}

#[test]
fn work_that_would_pass_the_id_or_lifetime_limit_is_refused_before_anything_changes() {
    let mut w = window(100);
    admit(&mut w, &words(3), Layer::Conversation, Some("a"), 0.0);
    let mut w = reload(&w, |v| v["next_id"] = serde_json::json!(ID_LIMIT)).unwrap();
    let before = w.to_json().unwrap();
    assert!(w.admit(seg("x", Layer::Conversation, None, 0.0), 1).is_err());
    assert!(w.rewrite("a", "y".into(), 1, Some("test")).is_err());
    assert!(w.fit(&Words).is_err());
    assert_eq!(w.to_json().unwrap(), before);
    assert!(reload(&w, |v| v["next_id"] = serde_json::json!(ID_LIMIT + 1)).is_err());
}
