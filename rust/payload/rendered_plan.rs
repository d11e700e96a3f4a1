//! The message list a fit sends to a chat template: the kept messages (a shortened one with its
//! new content) and the digests, each a user message of its own or, for a template that refuses
//! that, merged into the user message beside it.
//!
//! Why merge: some templates require roles to alternate (Mistral's raise "conversation roles
//! must alternate user/assistant"), and a digest stands where an exchange was, between a user
//! message and the next. So a digest joins the next user message (its text first, a blank line,
//! then the message's content), else the user message before it (after its content), and stands
//! alone as a user message only when neither is a user message with a text content (it sits
//! between an assistant message and a tool round, say). Several digests in a row join the same
//! message, in order. A merged message is a copy; the caller's own dict is never changed.

use minijinja::Value;

use crate::engine::{FitOutcome, Kept};

/// One message of the request as sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Sent {
    /// Message `index` of the input; `content` replaces its content (a cut, or digests merged).
    Message { index: usize, content: Option<String> },
    /// Digest `digest` of the outcome, as a user message of its own.
    Digest { digest: usize },
}

/// Between a digest's text and the content it joins.
const JOIN: &str = "\n\n";

fn is_user_text(messages: &[serde_json::Value], index: usize) -> bool {
    messages.get(index).is_some_and(|m| {
        m.get("role").and_then(|r| r.as_str()) == Some("user") && m.get("content").is_some_and(|c| c.is_string())
    })
}

fn content_of(messages: &[serde_json::Value], index: usize, current: &Option<String>) -> String {
    match current {
        Some(text) => text.clone(),
        None => messages.get(index).and_then(|m| m.get("content")).and_then(|c| c.as_str()).unwrap_or("").to_string(),
    }
}

/// The request `out` keeps, messages `0..n` being the input's (later indices are parts the
/// template prints itself).
pub fn plan(out: &FitOutcome, messages: &[serde_json::Value], n: usize, merge: bool) -> Vec<Sent> {
    let mut sent: Vec<Sent> = Vec::with_capacity(out.kept.len());
    let mut pending: Vec<usize> = Vec::new();
    let digest_text = |d: usize| out.digests.get(d).map(|r| r.text.as_str()).unwrap_or("");
    // Digests waiting for a home join the last message sent if it is a user text, else stand alone.
    let flush = |sent: &mut Vec<Sent>, pending: &mut Vec<usize>| {
        if pending.is_empty() {
            return;
        }
        if let Some(Sent::Message { index, content }) = sent.last_mut() {
            if is_user_text(messages, *index) {
                let mut text = content_of(messages, *index, content);
                for &d in pending.iter() {
                    text.push_str(JOIN);
                    text.push_str(digest_text(d));
                }
                *content = Some(text);
                pending.clear();
                return;
            }
        }
        sent.extend(pending.drain(..).map(|digest| Sent::Digest { digest }));
    };
    for k in &out.kept {
        let (index, cut) = match k {
            Kept::Digest { digest } => {
                pending.push(*digest);
                continue;
            }
            Kept::Original(i) => (*i, None),
            Kept::Truncated { index, text, .. } => (*index, Some(text.clone())),
        };
        if index >= n {
            continue;
        }
        if !merge {
            sent.extend(pending.drain(..).map(|digest| Sent::Digest { digest }));
        }
        if !pending.is_empty() && is_user_text(messages, index) {
            let mut text = String::new();
            for &d in &pending {
                text.push_str(digest_text(d));
                text.push_str(JOIN);
            }
            text.push_str(&content_of(messages, index, &cut));
            pending.clear();
            sent.push(Sent::Message { index, content: Some(text) });
            continue;
        }
        flush(&mut sent, &mut pending);
        sent.push(Sent::Message { index, content: cut });
    }
    if !merge {
        sent.extend(pending.drain(..).map(|digest| Sent::Digest { digest }));
    }
    flush(&mut sent, &mut pending);
    sent
}

/// What a template prints of `message` besides its framing, as text: its content (`content`
/// when given, else its own str content) and each tool call's name and arguments. A share
/// estimate when the template's reads cannot say where the message is (`rendered::settle`).
pub fn printed(message: &serde_json::Value, content: Option<&str>) -> Option<String> {
    let mut text = content.or_else(|| message.get("content").and_then(|c| c.as_str())).unwrap_or("").to_string();
    for call in message.get("tool_calls").and_then(|c| c.as_array()).into_iter().flatten() {
        if let Some(f) = call.get("function") {
            text.push(' ');
            text.push_str(f.get("name").and_then(|n| n.as_str()).unwrap_or(""));
            text.push(' ');
            text.push_str(&f.get("arguments").map(|a| a.to_string()).unwrap_or_default());
        }
    }
    (!text.is_empty()).then_some(text)
}

/// `printed` for each message sent.
pub fn contents(sent: &[Sent], out: &FitOutcome, messages: &[serde_json::Value]) -> Vec<Option<String>> {
    sent.iter()
        .map(|s| match s {
            Sent::Message { index, content } => messages.get(*index).and_then(|m| printed(m, content.as_deref())),
            Sent::Digest { digest } => out.digests.get(*digest).map(|d| d.text.clone()),
        })
        .collect()
}

fn with_content(message: &serde_json::Value, text: &str) -> Value {
    let mut m = message.clone();
    if let Some(obj) = m.as_object_mut() {
        obj.insert("content".into(), serde_json::Value::String(text.to_string()));
    }
    Value::from_serialize(&m)
}

/// The plan as the template reads it (`values` are the input messages, already converted).
pub fn values(sent: &[Sent], out: &FitOutcome, messages: &[serde_json::Value], values: &[Value]) -> Vec<Value> {
    sent.iter()
        .filter_map(|s| match s {
            Sent::Message { index, content: None } => values.get(*index).cloned(),
            Sent::Message { index, content: Some(text) } => messages.get(*index).map(|m| with_content(m, text)),
            Sent::Digest { digest } => out.digests.get(*digest).map(|d| {
                Value::from_serialize(serde_json::json!({"role": "user", "content": d.text}))
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{DigestRecord, FitLedger, Layer};

    fn outcome(kept: Vec<Kept>, digests: usize) -> FitOutcome {
        let record = |d: usize| DigestRecord { members: vec![], text: format!("D{d}"), tokens: 1, layer: Layer::Conversation, rung: 0 };
        FitOutcome {
            kept,
            removals: vec![],
            truncations: vec![],
            digests: (0..digests).map(record).collect(),
            total: 0,
            ceiling: 0,
            over_by: 0,
            cap_overruns: vec![],
            rungs_fired: vec![],
            count_calls: 1,
            trace: Default::default(),
            ledger: FitLedger::default(),
            pinned: (0, 0),
        }
    }

    #[test]
    fn digests_join_the_next_user_message_else_the_previous_else_stand_alone() {
        let messages: Vec<serde_json::Value> = serde_json::from_str(
            r#"[{"role":"system","content":"S"},{"role":"user","content":"U1"},{"role":"assistant","content":"A"},
               {"role":"user","content":"U2"},{"role":"assistant","content":null,"tool_calls":[]},{"role":"tool","content":"R"}]"#,
        )
        .unwrap_or_default();
        let out = outcome(
            vec![Kept::Original(0), Kept::Digest { digest: 0 }, Kept::Digest { digest: 1 }, Kept::Original(3),
                 Kept::Digest { digest: 2 }, Kept::Original(4), Kept::Original(5), Kept::Digest { digest: 3 }],
            4,
        );
        let alone = plan(&out, &messages, 6, false);
        assert_eq!(alone.iter().filter(|s| matches!(s, Sent::Digest { .. })).count(), 4);
        assert_eq!(plan(&out, &messages, 6, true), vec![
            Sent::Message { index: 0, content: None },
            // D0 and D1 join U2 ahead of its text; D2 follows U2, before an assistant: it joins after.
            Sent::Message { index: 3, content: Some("D0\n\nD1\n\nU2\n\nD2".into()) },
            Sent::Message { index: 4, content: None },
            Sent::Message { index: 5, content: None },
            // After a tool result there is no user text to join.
            Sent::Digest { digest: 3 },
        ]);
    }
}
