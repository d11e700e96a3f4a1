//! Reproducers of findings that need no fuzzing input, through the public API. From fuzz/:
//! `cargo run --example repro -- NAME` (NAME: deferred-rewrite-over-ceiling,
//! admit-above-max-count, ledger-digest-saturates). Each prints what it shows; one that panics
//! shows the bug.

use std::sync::Arc;

use ctxfast::engine::{fit, presets, Budget, Kept, Layer, SegmentData};
use ctxfast::window::{Admit, Rewrite, Window};
use ctxfast_fuzz::Words;

fn seg(words: usize, layer: Layer, key: &str, recoverable: bool) -> Arc<SegmentData> {
    let mut s = SegmentData::new(vec!["w"; words].join(" "), layer);
    s.key = Some(key.into());
    s.recoverable = recoverable;
    Arc::new(s)
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        // A rewrite may grow a recoverable segment; deferred in a busy cycle, it lands after the
        // fit counted the original, and the window ends the "successful" fit over its ceiling.
        Some("deferred-rewrite-over-ceiling") => {
            let mut w = Window::new(100, 0, presets::context_window(), None, None).unwrap();
            w.admit(seg(40, Layer::Retrieved, "doc", true), 40).unwrap();
            w.admit(seg(50, Layer::Conversation, "turn", false), 50).unwrap(); // fresh, unrecoverable
            let r = w.rewrite("doc", vec!["s"; 60].join(" "), 60, Some("model")).unwrap();
            assert!(matches!(r, Rewrite::Deferred));
            let f = w.fit(&Words).unwrap();
            println!("fit total {} (ceiling 100); held after the fit: {}", f.outcome.total, w.held_tokens());
            assert!(w.held_tokens() <= 100, "held {} > ceiling 100 after a successful fit", w.held_tokens());
        }
        // Window::admit takes any count: nothing checks MAX_COUNT before the ledger adds it.
        Some("admit-above-max-count") => {
            let mut w = Window::new(100, 0, presets::context_window(), None, None).unwrap();
            for k in ["a", "b"] {
                let r = w.admit(seg(1, Layer::Conversation, k, false), usize::MAX);
                println!("admit {k} with usize::MAX tokens: {}", matches!(r, Ok(Admit::Admitted { .. })));
            }
            println!("held {} totals {:?}", w.held_tokens(), w.totals());
        }
        // A digest record larger than its members (worth it for the separator join it saves),
        // then dropped by the next rung: the ledger counts the record as evicted and loses the
        // growth (`digested` saturates at 0), so it reports more tokens removed than left.
        Some("ledger-digest-saturates") => {
            let mut system = SegmentData::new(vec!["w"; 200].join(" "), Layer::System);
            system.key = Some("sys".into());
            let mut result = SegmentData::new("w", Layer::ToolResult);
            result.group = Some("g".into());
            let mut summary = SegmentData::new("w", Layer::Summary);
            summary.group = Some("g".into());
            let segs = [&system, &result, &summary];
            let counts = [200, 1, 1];
            let sep = vec!["s"; 30].join(" ");
            let budget = Budget::new(215, 0, [None; 8]).unwrap();
            let out = fit(&segs, &counts, &budget, &presets::agent(2), &Words, Some(&sep), 0).unwrap();
            let kept: usize = out
                .kept
                .iter()
                .map(|k| match k {
                    Kept::Original(i) => counts[*i],
                    Kept::Truncated { tokens, .. } => *tokens,
                    Kept::Digest { digest } => out.digests[*digest].tokens,
                })
                .sum();
            let l = &out.ledger;
            let ledger = l.evicted_recoverable + l.evicted_dispensable + l.truncated + l.digested;
            println!("digests {:?}", out.digests.iter().map(|d| (d.tokens, &d.members)).collect::<Vec<_>>());
            println!("removals {:?}", out.removals);
            println!("ledger {l:?}: says {ledger} tokens removed; input {} - kept {kept} = {}", 202, 202 - kept);
            assert_eq!(ledger, 202 - kept, "the fit's ledger does not add up");
        }
        _ => eprintln!("usage: repro deferred-rewrite-over-ceiling | admit-above-max-count | ledger-digest-saturates"),
    }
}
