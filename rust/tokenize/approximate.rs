//! The character estimate: fine for a log line, wrong for a boundary check.

use crate::error::{CtxError, CtxResult};

pub const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;

/// The smallest ratio accepted: with it, no text that fits in memory can count past
/// `limits::MAX_COUNT` (that would take 2.8 × 10¹¹ characters).
pub const MIN_CHARS_PER_TOKEN: f64 = 1e-3;

pub fn validate(chars_per_token: f64) -> CtxResult<()> {
    if chars_per_token.is_finite() && chars_per_token >= MIN_CHARS_PER_TOKEN {
        Ok(())
    } else {
        Err(CtxError::invalid(format!(
            "chars_per_token must be a finite number >= {MIN_CHARS_PER_TOKEN}, got {chars_per_token}"
        )))
    }
}

/// ceil(characters / chars_per_token): a non-empty text is at least one token.
pub fn count(text: &str, chars_per_token: f64) -> usize {
    let chars = text.chars().count();
    (chars as f64 / chars_per_token).ceil() as usize
}

/// The module-level estimate at four characters a token.
pub fn approximate_tokens(text: &str) -> usize {
    count(text, DEFAULT_CHARS_PER_TOKEN)
}

pub fn truncate(text: &str, max_tokens: usize, chars_per_token: f64) -> &str {
    let mut max_chars = (max_tokens as f64 * chars_per_token).floor() as usize;
    // Floating point can put floor(n * cpt) characters one token over n (30 * 0.7 = 21, but
    // 21 / 0.7 > 30): step back until the count agrees.
    while max_chars > 0 && (max_chars as f64 / chars_per_token).ceil() as usize > max_tokens {
        max_chars -= 1;
    }
    match text.char_indices().nth(max_chars) {
        Some((byte, _)) => &text[..byte],
        None => text,
    }
}

pub fn no_ids(what: &str) -> CtxError {
    CtxError::Unsupported(format!(
        "{what} needs a real vocabulary; the approximate tokenizer only estimates counts"
    ))
}
