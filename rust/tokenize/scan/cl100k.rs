//! cl100k_base's pre-tokenizer, by hand. The pattern, tried in order at each position (the first
//! alternative that matches wins, as in tiktoken's backtracking regex):
//!
//! 1. `(?i:'s|'t|'re|'ve|'m|'ll|'d)`
//! 2. `[^\r\n\p{L}\p{N}]?\p{L}+`
//! 3. `\p{N}{1,3}`
//! 4. ` ?[^\s\p{L}\p{N}]+[\r\n]*`
//! 5. `\s*[\r\n]+`, 6. `\s+(?!\S)`, 7. `\s+`  (`text::spaces`)

use super::ascii;
use super::classes::{LETTER, NEWLINE, NUMBER};
use super::text::{at, contraction, digits, lead, run, spaces, symbol, Ch};

/// The end of the piece that starts at `i` (< `s.len()`).
#[inline]
pub fn piece_end(s: &[u8], i: usize) -> usize {
    if let Some(end) = ascii::cl100k(s, i) {
        return end;
    }
    let Some(c0) = at(s, i) else { return i };
    if let Some(end) = contraction(s, i) {
        return end;
    }
    let letter = |ch: Ch| ch.flags & LETTER != 0;
    // `\p{L}+`: ASCII letters byte by byte, then whatever letters follow, the general way.
    let letters = |mut j: usize| {
        while s.get(j).is_some_and(u8::is_ascii_alphabetic) {
            j += 1;
        }
        run(s, j, letter)
    };
    if letter(c0) {
        return letters(i + c0.len);
    }
    let c1 = at(s, i + c0.len);
    if lead(c0) && c1.is_some_and(letter) {
        return letters(i + c0.len);
    }
    if c0.flags & NUMBER != 0 {
        return digits(s, i, c0);
    }
    let symbols_from = if symbol(c0) {
        Some(i)
    } else if c0.c == ' ' as u32 && c1.is_some_and(symbol) {
        Some(i + 1)
    } else {
        None
    };
    if let Some(from) = symbols_from {
        let end = run(s, from, symbol);
        return run(s, end, |ch| ch.flags & NEWLINE != 0);
    }
    spaces(s, i)
}
