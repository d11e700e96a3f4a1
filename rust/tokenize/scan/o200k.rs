//! o200k_base's pre-tokenizer, by hand. The pattern, tried in order at each position (the first
//! alternative that matches wins, as in tiktoken's backtracking regex), with
//! U = `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`, W = `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`, C = the contractions:
//!
//! 1. `[^\r\n\p{L}\p{N}]?U*W+C?`
//! 2. `[^\r\n\p{L}\p{N}]?U+W*C?`
//! 3. `\p{N}{1,3}`
//! 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
//! 5. `\s*[\r\n]+`, 6. `\s+(?!\S)`, 7. `\s+`  (`text::spaces`)
//!
//! Marks (`\p{M}`) are in U and W and also in the optional lead class, which is why the lead is
//! tried with and without, as the regex backtracks.

use super::ascii;
use super::classes::{LOWER, NEWLINE, NUMBER, UPPER};
use super::text::{at, contraction, digits, lead, run, spaces, symbol, Ch};

#[inline(always)]
fn upper(ch: Ch) -> bool {
    ch.flags & UPPER != 0
}

#[inline(always)]
fn lower(ch: Ch) -> bool {
    ch.flags & LOWER != 0
}

/// `U*W+` from `i`, as the regex backtracks it: the end of the match, or None.
#[inline]
fn upper_then_lower(s: &[u8], i: usize) -> Option<usize> {
    // Greedy U*: the whole run; then W+ where it stopped.
    let k = run(s, i, upper);
    if at(s, k).is_some_and(lower) {
        return Some(run(s, k, lower));
    }
    // Give back U characters one at a time until one is also in W (Lm, Lo, M): W+ then runs
    // from it over the W characters that follow, which stop before `k` at the latest.
    let mut back = k;
    while back > i {
        let mut start = back - 1;
        while start > i && s[start] & 0xC0 == 0x80 {
            start -= 1;
        }
        if at(s, start).is_some_and(lower) {
            return Some(run(s, start, lower));
        }
        back = start;
    }
    None
}

/// `U+W*` from `i`: the end of the match, or None.
#[inline]
fn upper_run(s: &[u8], i: usize) -> Option<usize> {
    let k = run(s, i, upper);
    (k > i).then(|| run(s, k, lower))
}

/// The end of the piece that starts at `i` (< `s.len()`).
#[inline]
pub fn piece_end(s: &[u8], i: usize) -> usize {
    if let Some(end) = ascii::o200k(s, i) {
        return end;
    }
    let Some(c0) = at(s, i) else { return i };
    let with_contraction = |end: usize| contraction(s, end).unwrap_or(end);
    let after_lead = lead(c0).then_some(i + c0.len);
    for word in [after_lead, Some(i)].into_iter().flatten() {
        if let Some(end) = upper_then_lower(s, word) {
            return with_contraction(end);
        }
    }
    for word in [after_lead, Some(i)].into_iter().flatten() {
        if let Some(end) = upper_run(s, word) {
            return with_contraction(end);
        }
    }
    if c0.flags & NUMBER != 0 {
        return digits(s, i, c0);
    }
    let c1 = at(s, i + c0.len);
    let symbols_from = if symbol(c0) {
        Some(i)
    } else if c0.c == ' ' as u32 && c1.is_some_and(symbol) {
        Some(i + 1)
    } else {
        None
    };
    if let Some(from) = symbols_from {
        let end = run(s, from, symbol);
        return run(s, end, |ch| ch.flags & NEWLINE != 0 || ch.c == '/' as u32);
    }
    spaces(s, i)
}
