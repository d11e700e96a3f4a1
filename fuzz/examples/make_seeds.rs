//! Writes the hand-made seed corpora: every preset policy in TOML and JSON (plus a custom one
//! using every field), and a few valid saved windows (built through the API with the word
//! counter). Run from fuzz/: `cargo run --example make_seeds` (no fuzzing instrumentation).

use std::fs;
use std::sync::Arc;

use ctxfast::engine::policy_format::{from_toml, to_value};
use ctxfast::engine::{presets, Layer, SegmentData, TokenSource, ToolCall};
use ctxfast::window::Window;
use ctxfast_fuzz::Words;

const CUSTOM: &str = r#"name = "custom"
protected = ["system", "tools", "pinned", "current_turn", "summary"]
[labels]
conversation = "history"
tool_result = "history"
[[rungs]]
name = "stale results"
layers = ["tool_result"]
filter = "stale"
order = "oldest"
[[rungs]]
name = "digest old exchanges"
layers = "tool_result"
order = "oldest"
action = "digest"
floor = { keep_last = 2 }
[[rungs]]
name = "level 1"
layers = ["conversation"]
filter = { level = 1 }
order = "newest"
floor = { keep_first = 1, min_tokens = 100 }
[[rungs]]
name = "chunks"
layers = ["retrieved"]
order = "rank"
action = "truncate"
min_tokens = 64
floor = { keep_top = 3 }
[[rungs]]
name = "largest"
layers = ["retrieved", "conversation"]
filter = "level:0"
order = "largest"
"#;

fn seg(text: String, layer: Layer, key: Option<&str>) -> SegmentData {
    let mut s = SegmentData::new(text, layer);
    s.key = key.map(Into::into);
    s
}

fn admit(w: &mut Window, s: SegmentData) {
    let n = s.tokens.unwrap_or_else(|| Words.count(&s.text).unwrap());
    let _ = w.admit(Arc::new(s), n);
}

fn words(n: usize) -> String {
    vec!["w"; n].join(" ")
}

fn main() {
    let pdir = "corpus/policy_parser";
    fs::create_dir_all(pdir).unwrap();
    let mut policies: Vec<(String, _)> =
        presets::PRESET_NAMES.iter().map(|n| (n.to_string(), presets::by_name(n).unwrap().1)).collect();
    let (_, custom) = from_toml(CUSTOM).unwrap();
    policies.push(("custom".into(), custom));
    for (name, p) in &policies {
        let v = to_value(Some(name), p);
        fs::write(format!("{pdir}/{name}.json"), serde_json::to_string_pretty(&v).unwrap()).unwrap();
        fs::write(format!("{pdir}/{name}.toml"), toml::to_string(&v).unwrap()).unwrap();
    }
    fs::write(format!("{pdir}/custom-handwritten.toml"), CUSTOM).unwrap();

    let sdir = "corpus/state_loader";
    fs::create_dir_all(sdir).unwrap();

    // 1. The default policy: an eviction, a readmission, a discard, a stale mark.
    let mut w = Window::new(60, 4, presets::context_window(), Some("context_window".into()), None).unwrap();
    admit(&mut w, seg(words(5), Layer::System, Some("sys")));
    admit(&mut w, seg(words(20), Layer::Conversation, Some("t1")));
    admit(&mut w, seg(words(20), Layer::Conversation, Some("t2")));
    let mut doc = seg(words(15), Layer::Retrieved, Some("doc"));
    doc.recoverable = true;
    doc.score = 0.25;
    admit(&mut w, doc);
    admit(&mut w, seg(words(4), Layer::CurrentTurn, Some("q1")));
    w.fit(&Words).unwrap();
    admit(&mut w, seg(words(20), Layer::Conversation, Some("t1")));
    admit(&mut w, seg(words(3), Layer::CurrentTurn, Some("q2")));
    w.mark_stale("t1").unwrap();
    w.fit(&Words).unwrap();
    fs::write(format!("{sdir}/context_window.json"), w.to_json().unwrap()).unwrap();

    // 2. The agent policy with tool exchanges digested by the ladder and by the caller, a
    //    rewrite, a deferred rewrite still pending, and a low watermark.
    let mut w = Window::new(120, 0, presets::agent(1), Some("agent".into()), Some(0.75)).unwrap();
    admit(&mut w, seg(words(8), Layer::System, None));
    for (i, g) in ["x1", "x2", "x3"].iter().enumerate() {
        let mut call = seg("reading the file".into(), Layer::Conversation, Some(&format!("{g}.call")));
        call.group = Some((*g).into());
        call.set_tool(Some(ToolCall { step: Some(i as i64 + 1), tool: Some("read_file".into()), arguments: Some(format!("src/{g}.rs")) }));
        let mut result = seg(vec!["line"; 40].join("\n"), Layer::ToolResult, Some(&format!("{g}.result")));
        result.group = Some((*g).into());
        result.recoverable = true;
        admit(&mut w, call);
        admit(&mut w, result);
    }
    admit(&mut w, seg(words(30), Layer::Conversation, Some("long")));
    w.fit(&Words).unwrap();
    let text = Window::surrogate_text("long", "model", "gist of it");
    let n = Words.count(&text).unwrap();
    w.rewrite("long", text, n, Some("model")).unwrap();
    if let Ok((ids, text)) = w.digest_text_for("x3.result") {
        let n = Words.count(&text).unwrap();
        let _ = w.digest("x3.result", &ids, text, n);
    }
    admit(&mut w, seg(words(25), Layer::Conversation, Some("other")));
    admit(&mut w, seg(words(5), Layer::CurrentTurn, Some("ask")));
    let _ = w.rewrite("other", "short".into(), 1, Some("model"));
    fs::write(format!("{sdir}/agent_pending.json"), w.to_json().unwrap()).unwrap();

    // 3. Troubleshooting: truncated retrieved bodies, summaries with levels and covers.
    let mut w = Window::new(600, 10, presets::troubleshooting(), Some("troubleshooting".into()), None).unwrap();
    admit(&mut w, seg(words(10), Layer::System, Some("sys")));
    for i in 0..6 {
        let mut r = seg(words(150), Layer::Retrieved, Some(&format!("chunk{i}")));
        r.score = i as f64 / 10.0;
        admit(&mut w, r);
    }
    let mut s2 = seg(words(12), Layer::Summary, Some("s2"));
    s2.set_level(Some(2));
    s2.set_covers(vec!["s1".into()]);
    let mut s1 = seg(words(12), Layer::Summary, Some("s1"));
    s1.set_level(Some(1));
    admit(&mut w, s1);
    admit(&mut w, s2);
    w.fit(&Words).unwrap();
    fs::write(format!("{sdir}/troubleshooting_truncated.json"), w.to_json().unwrap()).unwrap();

    // 4. A fresh, empty window.
    let w = Window::new(1000, 100, presets::seven_tier(3), None, Some(1.0)).unwrap();
    fs::write(format!("{sdir}/empty_seven_tier.json"), w.to_json().unwrap()).unwrap();
    println!("seeds written");
}
