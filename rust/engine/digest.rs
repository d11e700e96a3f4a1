//! The durable record left in place of a tool exchange: no model call, same input → same text.

use super::segment::{Layer, SegmentData};
use crate::fmt::thousands;

const RESULT_PREVIEW_CHARS: usize = 120;

/// "[compacted] step 16: called read_file(src/ledger.py) -> 412 lines, 9,020 tokens: <first line>",
/// with what the user asked before the call and what was answered after it, when the exchange
/// holds them: `asked "…"; called … -> …; answered "…"`.
pub fn digest_text(members: &[&SegmentData], member_tokens: &[usize], fallback_step: usize) -> String {
    let first_call = members.iter().position(|m| m.tool.is_some());
    let last_result = members.iter().rposition(|m| m.layer == Layer::ToolResult);
    let call = first_call.and_then(|i| members[i].tool.as_ref());
    let step = call.and_then(|c| c.step).map_or(fallback_step.to_string(), |s| s.to_string());
    let calls: Vec<String> = members
        .iter()
        .filter_map(|m| m.tool.as_ref())
        .map(|c| format!("{}({})", c.tool.as_deref().unwrap_or("tool"), c.arguments.as_deref().unwrap_or("")))
        .collect();
    let calls = if calls.is_empty() { "tool()".to_string() } else { calls.join(", ") };
    let results: Vec<(&SegmentData, usize)> = members
        .iter()
        .zip(member_tokens)
        .filter(|(m, _)| m.layer == Layer::ToolResult)
        .map(|(m, &t)| (*m, t))
        .collect();
    let lines: usize = results.iter().map(|(m, _)| m.text.lines().count()).sum();
    let tokens: usize = results.iter().map(|(_, t)| t).sum();
    let first_line = results
        .iter()
        .flat_map(|(m, _)| m.text.lines())
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    // Plain conversation before the first call is the ask; after the last result, the answer.
    let plain = |m: &&&SegmentData| m.layer == Layer::Conversation && m.tool.is_none() && !m.text.trim().is_empty();
    let asked = members
        .iter()
        .take(first_call.unwrap_or(0))
        .find(plain)
        .map(|m| format!("asked \"{}\"; ", preview(&m.text, ASK_PREVIEW_CHARS)))
        .unwrap_or_default();
    let answered = last_result
        .and_then(|r| members.iter().skip(r + 1).rev().find(plain))
        .map(|m| format!("; answered \"{}\"", preview(&m.text, ASK_PREVIEW_CHARS)))
        .unwrap_or_default();
    format!(
        "[compacted] step {step}: {asked}called {calls} -> {lines} line{}, {} tokens: {}{answered}",
        if lines == 1 { "" } else { "s" },
        thousands(tokens),
        preview(first_line, RESULT_PREVIEW_CHARS),
    )
}

const ASK_PREVIEW_CHARS: usize = 80;

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
        call.tool = Some(ToolCall { step: Some(16), tool: Some("read_file".into()), arguments: Some("src/billing/ledger.py".into()) });
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
}
