//! A rendered prompt's exact count, and how it is shared out among the messages that produced it
//! (`rendered`): the render is split at the vocabulary's control tokens, each piece counted
//! through the count cache (a control token is one token), and each piece charged to the message
//! that begins at or before it (`template::track`).

use crate::engine::TokenSource;
use crate::error::CtxResult;
use crate::limits::{add_total, check_count};
use crate::tokenize::specials::Splitter;

/// A render's exact count and how it is shared out.
pub struct Priced {
    pub total: usize,
    pub head: usize,
    pub shares: Vec<usize>,
}

pub fn price(src: &dyn TokenSource, splitter: &Splitter, text: &str, starts: &[usize]) -> CtxResult<Priced> {
    let mut p = Priced { total: 0, head: 0, shares: vec![0; starts.len()] };
    let mut started = 0; // how many messages begin at or before the current piece
    for piece in splitter.marked(text) {
        let a = piece.start;
        // A control token is one token, as the server reads its own render, whatever the
        // tokenizer's setting for special-token strings in plain text.
        let n = match piece.token {
            Some(_) => 1,
            None => check_count(src.count(text.get(a..piece.end).unwrap_or(""))?, "a piece of the rendered prompt")?,
        };
        p.total = add_total(p.total, n, "the rendered prompt")?;
        while started < starts.len() && starts[started] <= a {
            started += 1;
        }
        let slot = match started.checked_sub(1) {
            Some(m) => p.shares.get_mut(m),
            None => Some(&mut p.head),
        };
        if let Some(slot) = slot {
            *slot = slot.saturating_add(n);
        }
    }
    Ok(p)
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

