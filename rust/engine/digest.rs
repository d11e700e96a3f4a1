//! The durable record left in place of a tool exchange: no model call, same input → same text.

use super::segment::{Layer, SegmentData};

const RESULT_PREVIEW_CHARS: usize = 120;

/// "[compacted] step 16: called read_file(src/ledger.py) -> 412 lines, 9,020 tokens: <first line>"
pub fn digest_text(members: &[&SegmentData], member_tokens: &[usize], fallback_step: usize) -> String {
    let call = members.iter().find_map(|m| m.tool.as_ref());
    let step = call.and_then(|c| c.step).map_or(fallback_step.to_string(), |s| s.to_string());
    let tool = call.and_then(|c| c.tool.clone()).unwrap_or_else(|| "tool".to_string());
    let args = call.and_then(|c| c.arguments.clone()).unwrap_or_default();
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
    let mut preview: String = first_line.chars().take(RESULT_PREVIEW_CHARS).collect();
    if preview.len() < first_line.len() {
        preview.push('…');
    }
    format!(
        "[compacted] step {step}: called {tool}({args}) -> {lines} line{}, {} tokens: {preview}",
        if lines == 1 { "" } else { "s" },
        thousands(tokens)
    )
}

pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
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
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }
}
