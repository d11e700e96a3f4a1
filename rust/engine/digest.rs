//! The durable record left in place of a tool exchange: no model call, same input → same text.
//!
//! A digest is small by construction, whatever the exchange holds. Its size cap:
//!
//! - the ask and the answer: their first line, at most `ASK_PREVIEW_CHARS` (80) characters;
//! - each call: the tool's name, at most `TOOL_NAME_CHARS` (40), and its arguments on one line,
//!   at most `ARGUMENT_PREVIEW_CHARS` (80), then their full size when cut
//!   (`write_file({"path": "src/client.py", "contents": "# client import lo… (9.6 KB))`);
//! - at most `CALLS_LISTED` (3) calls, then how many more (`+4 more`);
//! - the results: their line and token counts and first line, at most `RESULT_PREVIEW_CHARS`
//!   (120).
//!
//! So a digest's text is at most `MAX_DIGEST_CHARS` (1,000) characters, about 250 tokens: a
//! `write_file` of 9.6 KB no longer copies its contents into its own record.

use super::segment::{Layer, SegmentData};
use crate::fmt::thousands;

const RESULT_PREVIEW_CHARS: usize = 120;
const ASK_PREVIEW_CHARS: usize = 80;
const TOOL_NAME_CHARS: usize = 40;
const ARGUMENT_PREVIEW_CHARS: usize = 80;
const CALLS_LISTED: usize = 3;
/// The most characters a digest's text can hold, whatever the exchange (the sum of the caps
/// above and the record's fixed words, rounded up).
pub const MAX_DIGEST_CHARS: usize = 1_000;

/// `n` bytes as "412 B", "9.6 KB", "1.2 MB" (powers of 1,000).
fn size_text(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    let bytes = bytes as u128;
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let (mut div, mut unit) = (1000u128, 0);
    while unit + 1 < UNITS.len() && bytes >= div * 1000 {
        div *= 1000;
        unit += 1;
    }
    let tenths = (bytes * 10 + div / 2) / div;
    format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit])
}

/// `text` on one line (whitespace runs as one space), at most `max` characters; when cut, an
/// ellipsis and, with `size`, the full size: `… (9.6 KB)`.
fn one_line(text: &str, max: usize, size: bool) -> String {
    // Built word by word, stopping once past `max`: a 9 KB argument costs its first `max`
    // characters, not a flattened copy of the whole text.
    let mut out = String::with_capacity(max.min(text.len()) + 16);
    let mut chars = 0usize;
    let mut cut = false;
    for word in text.split_whitespace() {
        if chars > 0 {
            if chars == max {
                cut = true;
                break;
            }
            out.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars == max {
                cut = true;
                break;
            }
            out.push(c);
            chars += 1;
        }
        if cut {
            break;
        }
    }
    if !cut {
        return out;
    }
    out.push('…');
    if size {
        out.push_str(&format!(" ({})", size_text(text.len())));
    }
    out
}

/// `text.lines().count()`, by counting line feeds (a last line without one counts too).
fn line_count(text: &str) -> usize {
    let feeds = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    feeds + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// "[compacted] step 16: called read_file(src/ledger.py) -> 412 lines, 9,020 tokens: <first line>",
/// with what the user asked before the call and what was answered after it, when the exchange
/// holds them: `asked "…"; called … -> …; answered "…"`. Bounded by `MAX_DIGEST_CHARS`.
pub fn digest_text(members: &[&SegmentData], member_tokens: &[usize], fallback_step: usize) -> String {
    let texts: Vec<&str> = members.iter().map(|m| m.text.as_str()).collect();
    digest_text_of(members, &texts, member_tokens, fallback_step)
}

/// `digest_text` with the members' texts given apart (`texts[i]` is `members[i]`'s), for a fit
/// whose texts are held apart from its segments (`FitOptions::texts`).
pub fn digest_text_of(members: &[&SegmentData], texts: &[&str], member_tokens: &[usize], fallback_step: usize) -> String {
    let text = |i: usize| texts.get(i).copied().unwrap_or("");
    let first_call = members.iter().position(|m| m.tool().is_some());
    let last_result = members.iter().rposition(|m| m.layer == Layer::ToolResult);
    let call = first_call.and_then(|i| members[i].tool());
    let step = call.and_then(|c| c.step).map_or(fallback_step.to_string(), |s| s.to_string());
    let all_calls: Vec<String> = members
        .iter()
        .filter_map(|m| m.tool())
        .map(|c| {
            let name = one_line(c.tool.as_deref().unwrap_or("tool"), TOOL_NAME_CHARS, false);
            format!("{name}({})", one_line(c.arguments.as_deref().unwrap_or(""), ARGUMENT_PREVIEW_CHARS, true))
        })
        .collect();
    let more = all_calls.len().saturating_sub(CALLS_LISTED);
    let mut calls: Vec<String> = all_calls.into_iter().take(CALLS_LISTED).collect();
    if more > 0 {
        calls.push(format!("+{more} more"));
    }
    let calls = if calls.is_empty() { "tool()".to_string() } else { calls.join(", ") };
    let results: Vec<(&str, usize)> = members
        .iter()
        .zip(member_tokens)
        .enumerate()
        .filter(|(_, (m, _))| m.layer == Layer::ToolResult)
        .map(|(i, (_, &t))| (text(i), t))
        .collect();
    let lines: usize = results.iter().map(|(m, _)| line_count(m)).sum();
    let tokens: usize = results.iter().map(|(_, t)| t).sum();
    let first_line = results
        .iter()
        .flat_map(|(m, _)| m.lines())
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    // Plain conversation before the first call is the ask; after the last result, the answer.
    let plain = |i: &usize| {
        members.get(*i).is_some_and(|m| m.layer == Layer::Conversation && m.tool().is_none()) && !text(*i).trim().is_empty()
    };
    let asked = (0..first_call.unwrap_or(0))
        .find(plain)
        .map(|i| format!("asked \"{}\"; ", preview(text(i), ASK_PREVIEW_CHARS)))
        .unwrap_or_default();
    let answered = last_result
        .and_then(|r| (r + 1..members.len()).rev().find(plain))
        .map(|i| format!("; answered \"{}\"", preview(text(i), ASK_PREVIEW_CHARS)))
        .unwrap_or_default();
    format!(
        "[compacted] step {step}: {asked}called {calls} -> {} line{}, {} tokens: {}{answered}",
        thousands(lines),
        if lines == 1 { "" } else { "s" },
        thousands(tokens),
        preview(first_line, RESULT_PREVIEW_CHARS),
    )
}

/// The first line of `text`, at most `max` characters, with an ellipsis when cut.
fn preview(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(max).collect();
    if out.len() < line.len() || text.trim().lines().count() > 1 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::segment::ToolCall;

    #[test]
    fn digest_names_step_tool_arguments_and_result() {
        let mut call = SegmentData::new("calling read_file", Layer::Conversation);
        call.set_tool(Some(ToolCall { step: Some(16), tool: Some("read_file".into()), arguments: Some("src/billing/ledger.py".into()) }));
        let result = SegmentData::new("class LedgerService:\n    pass\n", Layer::ToolResult);
        let text = digest_text(&[&call, &result], &[5, 9020], 3);
        assert_eq!(text, "[compacted] step 16: called read_file(src/billing/ledger.py) -> 2 lines, 9,020 tokens: class LedgerService:");
        let ask = SegmentData::new("Please fix the ledger rounding bug", Layer::Conversation);
        let answer = SegmentData::new("Fixed: rounding now uses banker's rounding.", Layer::Conversation);
        let text = digest_text(&[&ask, &call, &result, &answer], &[7, 5, 9020, 9], 3);
        assert_eq!(
            text,
            "[compacted] step 16: asked \"Please fix the ledger rounding bug\"; called read_file(src/billing/ledger.py) \
             -> 2 lines, 9,020 tokens: class LedgerService:; answered \"Fixed: rounding now uses banker's rounding.\""
        );
    }

    #[test]
    fn seed004_example_comes_out() {
        let mut call = SegmentData::new("", Layer::Conversation);
        call.set_tool(Some(ToolCall { step: Some(16), tool: Some("read_file".into()), arguments: Some("src/billing/ledger.py".into()) }));
        let body = format!("class LedgerService:\n{}", "    line\n".repeat(411));
        let result = SegmentData::new(body, Layer::ToolResult);
        let text = digest_text(&[&call, &result], &[5, 9020], 3);
        assert_eq!(text, "[compacted] step 16: called read_file(src/billing/ledger.py) -> 412 lines, 9,020 tokens: class LedgerService:");
    }

    #[test]
    fn arguments_are_summarised_with_their_size_and_calls_are_capped() {
        // Report #8: a write_file digest copied 9.6 KB of contents and saved 53 tokens.
        let contents = "# client\nimport logging\n".repeat(400);
        let args = format!("{{\"path\": \"src/client.py\", \"contents\": {contents:?}}}");
        assert!(args.len() > 9_000);
        let mut call = SegmentData::new("", Layer::Conversation);
        call.set_tool(Some(ToolCall { step: Some(2), tool: Some("write_file".into()), arguments: Some(args.clone()) }));
        let result = SegmentData::new("ok: wrote 205 lines", Layer::ToolResult);
        let text = digest_text(&[&call, &result], &[3000, 6], 1);
        let shown: String = args.chars().take(ARGUMENT_PREVIEW_CHARS).collect();
        assert!(text.contains(&format!("write_file({shown}… ({}))", size_text(args.len()))), "{text}");
        assert!(text.contains("KB)"), "{text}");
        assert!(text.chars().count() < 250, "{text}");
        // Five calls: three listed, then how many more.
        let calls: Vec<SegmentData> = (0..5)
            .map(|i| {
                let mut c = SegmentData::new("", Layer::Conversation);
                c.set_tool(Some(ToolCall { step: None, tool: Some(format!("t{i}")), arguments: Some("x".into()) }));
                c
            })
            .collect();
        let mut refs: Vec<&SegmentData> = calls.iter().collect();
        refs.push(&result);
        let text = digest_text(&refs, &[1, 1, 1, 1, 1, 6], 7);
        assert!(text.starts_with("[compacted] step 7: called t0(x), t1(x), t2(x), +2 more -> 1 line"), "{text}");
        assert_eq!((size_text(412), size_text(9_600), size_text(1_250_000)), ("412 B".into(), "9.6 KB".into(), "1.3 MB".into()));
    }

    #[test]
    fn one_line_and_line_count_match_their_plain_definitions() {
        let plain = |text: &str, max: usize| {
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if flat.chars().count() <= max { flat } else { format!("{}…", flat.chars().take(max).collect::<String>()) }
        };
        let cases = ["", " ", "a", "ab cd", "  ab\t\ncd  ", "héllo wörld  naïve", "x\r\ny\n", "a\n\n", "\n", "word ".repeat(40).as_str().to_owned().leak()];
        for text in cases {
            for max in [0, 1, 2, 3, 5, 8, 80] {
                assert_eq!(one_line(text, max, false), plain(text, max), "{text:?} {max}");
            }
            assert_eq!(line_count(text), text.lines().count(), "{text:?}");
        }
    }

    #[test]
    fn a_digest_never_passes_its_cap() {
        let huge = "é".repeat(50_000);
        let mut calls = Vec::new();
        for _ in 0..10 {
            let mut c = SegmentData::new(huge.clone(), Layer::Conversation);
            c.set_tool(Some(ToolCall { step: Some(i64::MIN), tool: Some(huge.clone()), arguments: Some(huge.clone()) }));
            calls.push(c);
        }
        let ask = SegmentData::new(huge.clone(), Layer::Conversation);
        let result = SegmentData::new(huge.clone(), Layer::ToolResult);
        let answer = SegmentData::new(huge.clone(), Layer::Conversation);
        let mut refs: Vec<&SegmentData> = vec![&ask];
        refs.extend(calls.iter());
        refs.push(&result);
        refs.push(&answer);
        let tokens = vec![usize::MAX / 64; refs.len()];
        let text = digest_text(&refs, &tokens, usize::MAX);
        assert!(text.chars().count() <= MAX_DIGEST_CHARS, "{} chars", text.chars().count());
    }
}
