//! A rendered prompt's exact count, and how it is shared out among the messages that produced it
//! (`rendered`): the render is split at the vocabulary's control tokens, each piece counted
//! through the count cache (a control token is one token), and each piece charged to the message
//! that begins at or before it (`template::track`).

use crate::engine::TokenSource;
use crate::error::CtxResult;
use crate::limits::{add_total, check_count};
use crate::tokenize::specials::Splitter;

/// A render's exact count and how it is shared out.
#[derive(Clone)]
pub struct Priced {
    pub total: usize,
    pub head: usize,
    pub shares: Vec<usize>,
}

/// The render's exact count (the sum of its pieces between control tokens) and each message's
/// share of it. A message that begins inside a piece (a template with no control token between
/// messages) is charged its part of that piece: the parts are counted on their own, and what their
/// counts differ from the piece's (a token that spans the cut) goes to the last part, so the
/// shares still add up to the exact count.
pub fn price(src: &dyn TokenSource, splitter: &Splitter, text: &str, starts: &[usize]) -> CtxResult<Priced> {
    let mut p = Priced { total: 0, head: 0, shares: vec![0; starts.len()] };
    let mut started = 0; // how many messages begin at or before the current position
    for piece in splitter.marked(text) {
        let (a, end) = (piece.start, piece.end);
        // A control token is one token, as the server reads its own render, whatever the
        // tokenizer's setting for special-token strings in plain text.
        let n = match piece.token {
            Some(_) => 1,
            None => check_count(src.count(text.get(a..end).unwrap_or(""))?, "a piece of the rendered prompt")?,
        };
        p.total = add_total(p.total, n, "the rendered prompt")?;
        while started < starts.len() && starts[started] <= a {
            started += 1;
        }
        // Where messages begin inside this piece: the piece is charged in parts.
        let mut cuts = Vec::new();
        let mut next = started;
        while next < starts.len() && starts[next] < end {
            if starts[next] > a && text.is_char_boundary(starts[next]) && cuts.last() != Some(&starts[next]) {
                cuts.push(starts[next]);
            }
            next += 1;
        }
        if cuts.is_empty() || piece.token.is_some() {
            charge(&mut p, started, n);
            continue;
        }
        let mut from = a;
        let mut charged = 0usize;
        let bounds: Vec<usize> = cuts.iter().copied().chain(std::iter::once(end)).collect();
        for (k, &to) in bounds.iter().enumerate() {
            while started < starts.len() && starts[started] <= from {
                started += 1;
            }
            let part = if k + 1 == bounds.len() {
                n.saturating_sub(charged) // the rest: the parts add up to the piece's count
            } else {
                src.count(text.get(from..to).unwrap_or(""))?.min(n.saturating_sub(charged))
            };
            charged = charged.saturating_add(part);
            charge(&mut p, started, part);
            from = to;
        }
    }
    Ok(p)
}

/// Adds `n` to the share of the last message begun (`started` of them), or to the head.
fn charge(p: &mut Priced, started: usize, n: usize) {
    let slot = match started.checked_sub(1) {
        Some(m) => p.shares.get_mut(m),
        None => Some(&mut p.head),
    };
    if let Some(slot) = slot {
        *slot = slot.saturating_add(n);
    }
}

/// When the template did not read the messages where it printed them, shares them out by their
/// text instead. A template that copies the messages into a list of its own before printing it
/// (mistral-common's templates merge consecutive messages first) reads every message up front, so
/// most messages would be charged nothing, and the ladder would see nothing worth removing. Then
/// each message is charged its content's count and an equal part of the framing that is left, and
/// the check after the fit does the rest. A share of 0 for a message with text is the sign:
/// trusted while at most a tenth of the messages (and at most one) show it.
pub fn settle(p: Priced, contents: &[Option<&str>], src: &dyn TokenSource) -> CtxResult<Priced> {
    let unread = p.shares.iter().zip(contents).filter(|(&s, c)| s == 0 && c.is_some_and(|t| !t.trim().is_empty())).count();
    if unread <= 1 || unread * 10 <= p.shares.len() {
        return Ok(p);
    }
    let counts = contents.iter().map(|c| c.map_or(Ok(0), |t| src.count(t))).collect::<CtxResult<Vec<usize>>>()?;
    let messages = p.total.saturating_sub(p.head);
    let text: usize = counts.iter().fold(0usize, |a, &c| a.saturating_add(c));
    let (counts, head) = if text > messages {
        // Texts the template does not print in full: scale down to what the messages cost.
        let scaled: Vec<usize> = counts.iter().map(|&c| c.saturating_mul(messages) / text.max(1)).collect();
        (scaled, p.head)
    } else {
        (counts, p.head)
    };
    let n = counts.len().max(1);
    let left = messages.saturating_sub(counts.iter().fold(0usize, |a, &c| a.saturating_add(c)));
    let (each, extra) = (left / n, left % n);
    let shares: Vec<usize> = counts.iter().enumerate().map(|(i, &c)| c + each + usize::from(i < extra)).collect();
    let total = shares.iter().fold(head, |a, &s| a.saturating_add(s));
    Ok(Priced { total, head, shares })
}

