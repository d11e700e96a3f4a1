//! The ladder's issue-10 behaviour: the agent preset's floors on consecutive rungs, cap rungs,
//! when "floor reached" is said, seven_tier's live tool output, truncation that never empties.

use super::policy_format::from_toml;
use super::presets::*;
use super::tests::{grouped, ok, run, scored, seg};
use super::*;
use super::testing::Words;
use crate::error::CtxError;

/// A tool exchange of `call` + `result` words, with the call's tool meta.
fn exchange(n: usize, call: usize, result: usize) -> Vec<SegmentData> {
    let g = format!("ex{n}");
    let mut c = grouped(Layer::Conversation, call, &g);
    c.set_tool(Some(ToolCall { step: Some(n as i64), tool: Some("read_file".into()), arguments: Some(format!("src/f{n}.py")) }));
    vec![c, grouped(Layer::ToolResult, result, &g)]
}

fn removed(out: &FitOutcome, segs: &[SegmentData], how: Taken) -> Vec<String> {
    let mut groups: Vec<String> = Vec::new();
    for r in out.removals.iter().filter(|r| r.action == how) {
        let name = match r.target {
            Target::Segment(i) => segs[i].group.as_deref().unwrap_or_default().to_string(),
            Target::Digest(d) => format!("digest of {}", segs[out.digests[d].members[0]].group.as_deref().unwrap_or_default()),
        };
        if !groups.contains(&name) {
            groups.push(name);
        }
    }
    groups
}

#[test]
fn agent_digests_the_recent_exchange_before_dropping_it() {
    // Report #8: 90 tokens over after digesting the old exchanges became 5,785 dropped, because
    // the drop rung had no floor while the digest rung kept the last two. Now the drop rung keeps
    // the same last two, and the next rung digests them first.
    let mut segs = vec![seg(Layer::System, 10)];
    for n in 1..=4 {
        segs.extend(exchange(n, 20, 500));
    }
    segs.push(seg(Layer::CurrentTurn, 10));
    let start: usize = segs.iter().map(|s| s.tokens.unwrap_or(0)).sum();
    // After rung 1 digests ex1 and ex2, the request is still over by a little more than those
    // two digests hold: ex3 must go too, as a digest, and ex4 stays.
    let policy = agent(2);
    let probe = ok(run(&segs, &Budget::new(start, 0, [None; 8]).unwrap(), &policy));
    assert!(probe.removals.is_empty());
    let digest_size = {
        let refs: Vec<&SegmentData> = segs[1..3].iter().collect();
        Words.count(&digest::digest_text(&refs, &[20, 500], 1)).unwrap()
    };
    let after_rung1 = start - 2 * (520 - digest_size);
    let ceiling = after_rung1 - (2 * digest_size + 10);
    let out = ok(run(&segs, &Budget::new(ceiling, 0, [None; 8]).unwrap(), &policy));
    assert_eq!(removed(&out, &segs, Taken::Digest), vec!["ex1", "ex2", "ex3"]);
    assert_eq!(removed(&out, &segs, Taken::Drop), vec!["digest of ex1", "digest of ex2"]);
    let names: Vec<&str> = out.trace.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["tool_exchanges.digest_oldest", "exchanges.drop_oldest", "recent_tool_exchanges.digest"]);
    // ex4 is sent verbatim; what left is about what was needed, not a whole exchange more.
    assert!(out.kept.iter().any(|k| matches!(k, Kept::Original(i) if segs[*i].group.as_deref() == Some("ex4"))));
    assert!(out.total + 520 > ceiling, "removed a whole exchange more than needed");
    // The floors read the same on both rungs.
    assert_eq!(policy.rungs[0].floor, policy.rungs[1].floor);
    assert_eq!(policy.rungs[0].layers, policy.rungs[1].layers);
}

fn retrieval_request() -> Vec<SegmentData> {
    let mut segs = vec![seg(Layer::System, 10)];
    for (i, (t, s)) in [(100, 0.9), (100, 0.2), (100, 0.5), (100, 0.7)].into_iter().enumerate() {
        segs.push(scored(Layer::Retrieved, t, s, &format!("c{i}")));
    }
    segs.push(seg(Layer::CurrentTurn, 10));
    segs
}

fn capped(cap: usize) -> Budget {
    let mut caps = [None; 8];
    caps[Layer::Retrieved.index()] = Some(cap);
    Budget::new(10_000, 0, caps).unwrap()
}

#[test]
fn caps_are_reported_unless_a_rung_enforces_them() {
    let segs = retrieval_request();
    let out = ok(run(&segs, &capped(250), &troubleshooting()));
    assert!(out.removals.is_empty(), "the request fits: a reported cap removes nothing");
    assert_eq!(out.cap_overruns, vec![(Layer::Retrieved, 150)]);
    let toml = r#"
        [[rungs]]
        name = "retrieved.to_cap"
        layers = ["retrieved"]
        order = "lowest_score"
        until = "cap"
        [[rungs]]
        name = "conversation"
        layers = ["conversation"]
        order = "oldest"
    "#;
    let (_, policy) = from_toml(toml).unwrap();
    assert_eq!(policy.rungs[0].until, Until::Cap);
    assert_eq!(policy.rungs[1].until, Until::Fits);
    let out = ok(run(&segs, &capped(250), &policy));
    // Lowest score first until retrieval is within 250, although the request fits.
    let gone: Vec<&str> = out.trace.sections[0].rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(gone, vec!["c1", "c2"]);
    assert_eq!(out.total, 220);
    let text = out.trace.render();
    assert!(text.contains("rung 1  retrieved.to_cap  (enforces cap: retrieved 250)"), "{text}");
    // Without a cap on its layer, a cap rung does nothing.
    let out = ok(run(&segs, &Budget::new(10_000, 0, [None; 8]).unwrap(), &policy));
    assert!(out.removals.is_empty());
    // A truncating cap rung trims to the cap exactly, and runs after the request already fit.
    let (_, trunc) = from_toml(&toml.replace("order = \"lowest_score\"\n", "order = \"lowest_score\"\n action = \"truncate\"\n min_tokens = 1\n")).unwrap();
    let mut trunc = trunc;
    trunc.rungs.swap(0, 1);
    let out = ok(run(&segs, &capped(250), &trunc));
    assert_eq!(out.total, 270);
    assert_eq!(out.truncations.iter().map(|t| t.before - t.after).sum::<usize>(), 150);
}

#[test]
fn floor_reached_only_when_a_floor_stopped_a_rung() {
    // Report #16: a rung with nothing to take printed "floor reached".
    let segs = retrieval_request();
    let out = ok(run(&segs, &Budget::new(150, 0, [None; 8]).unwrap(), &context_window()));
    let names: Vec<&str> = out.trace.sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["retrieved.lowest_score_first"], "the conversation rung had nothing to take");
    let text = out.trace.render();
    assert!(!text.contains("floor reached"), "{text}");
    assert!(text.contains("floor not reached"), "{text}");

    // A floor stops rung 1 and rung 2 makes it fit: the rung says so, the summary does not.
    let (mut segs, _) = super::tests::seed000_request();
    segs.truncate(10); // system, tools, chunks: no history
    for (i, t) in [400, 400, 400, 400, 400].into_iter().enumerate() {
        segs.push(grouped(Layer::Conversation, t, &format!("ex{}", i + 1)));
    }
    let total: usize = segs.iter().map(|s| s.tokens.unwrap_or(0)).sum();
    let out = ok(run(&segs, &Budget::new(total - 2000, 0, [None; 8]).unwrap(), &troubleshooting()));
    assert!(out.trace.sections[0].floor_reached && !out.trace.sections[1].floor_reached);
    let text = out.trace.render();
    assert_eq!(text.matches("floor reached").count(), 1, "{text}");
    assert!(!text.contains("floor not reached"), "{text}");
    let send = &text[text.find("send").unwrap_or(0)..];
    assert!(!send.contains("floor"), "{send}");

    // A rung that took all it could without a floor in the way: nothing left to take.
    let segs = vec![seg(Layer::System, 10), seg(Layer::Conversation, 50), seg(Layer::Retrieved, 50), seg(Layer::CurrentTurn, 10)];
    let out = ok(run(&segs, &Budget::new(30, 0, [None; 8]).unwrap(), &context_window()));
    assert!(out.trace.sections[0].exhausted && !out.trace.sections[0].floor_reached);
    assert!(out.trace.render().contains("#1  −50"), "{}", out.trace.render());
    assert!(out.trace.render().contains("        nothing left to take\n"));
}

#[test]
fn seven_tier_takes_turns_before_live_tool_output() {
    // Report item 7: an unconsumed tool result outside any exchange went on "recent turns", and
    // being older it went before the turns.
    let mut fresh = scored(Layer::ToolResult, 100, 0.0, "tool_fresh");
    fresh.stale = false;
    let segs = vec![
        seg(Layer::System, 10),
        fresh,
        grouped(Layer::Conversation, 100, "turn1"),
        grouped(Layer::Conversation, 100, "turn2"),
        seg(Layer::CurrentTurn, 10),
    ];
    let policy = seven_tier(3);
    let out = ok(run(&segs, &Budget::new(220, 0, [None; 8]).unwrap(), &policy));
    let gone: Vec<&str> = out.trace.sections.iter().flat_map(|s| s.rows.iter().map(|r| r.label.as_str())).collect();
    assert_eq!(gone, vec!["turn1"]);
    let out = ok(run(&segs, &Budget::new(20, 0, [None; 8]).unwrap(), &policy));
    let gone: Vec<(&str, &str)> =
        out.trace.sections.iter().flat_map(|s| s.rows.iter().map(|r| (s.name.as_str(), r.label.as_str()))).collect();
    assert_eq!(gone, vec![("recent_turns", "turn1"), ("recent_turns", "turn2"), ("unconsumed_tool_results", "tool_fresh")]);
    // A consumed one is still tier 1.
    let mut segs = segs;
    segs[1].stale = true;
    let out = ok(run(&segs, &Budget::new(220, 0, [None; 8]).unwrap(), &policy));
    assert_eq!(out.trace.sections[0].name, "stale_tool_results");
}

#[test]
fn truncation_never_empties_a_text() {
    // Contract 6: a truncate rung with no minimum keeps at least one token of a non-empty body.
    let body = (0..100).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
    let segs = [SegmentData::new("sys", Layer::System), SegmentData::new(body, Layer::Retrieved)];
    let refs: Vec<&SegmentData> = segs.iter().collect();
    let (_, policy) =
        from_toml("[[rungs]]\nname = \"cut\"\nlayers = [\"retrieved\"]\norder = \"largest\"\naction = \"truncate\"\nmin_tokens = 0\n").unwrap();
    let out = ok(fit(&refs, &[1, 100], &Budget::new(2, 0, [None; 8]).unwrap(), &policy, &Words, None, 0));
    assert!(matches!(&out.kept[1], Kept::Truncated { text, tokens: 1, .. } if text == "w0"), "{:?}", out.kept);
    // Below one token the rung stops there, and the fit is Unfittable, never an empty body.
    match fit(&refs, &[1, 100], &Budget::new(1, 0, [None; 8]).unwrap(), &policy, &Words, None, 0) {
        Err(CtxError::Unfittable(u)) => {
            assert_eq!((u.total, u.shortfall), (2, 1));
            assert!(u.trace.contains("cut") && u.trace.contains("failed"), "{}", u.trace);
        }
        other => panic!("expected Unfittable, got {other:?}"),
    }
}
