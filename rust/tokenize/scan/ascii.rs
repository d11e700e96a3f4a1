//! The scanners' fast path: a piece that starts on an ASCII byte, read byte by byte through one
//! class table, with no character decoding and no per-character flags.
//!
//! Why: English, code and JSON are nearly all ASCII, and their pieces are short (JSON's average
//! three bytes), so the general path's per-character decoding and its tries of each alternative
//! in turn were most of a cached count. Here one table read picks the alternative.
//!
//! Each function answers only when the ASCII bytes decide the piece; where a byte past ASCII
//! could change it (a letter or mark continuing a word, a non-ASCII digit or space) it returns
//! None and the caller takes the general path from the same position, which is the reference.

use super::text::{self, contraction};

/// `[A-Z]`
const UP: u8 = 1;
/// `[a-z]`
const LO: u8 = 2;
/// `[0-9]`
const DIG: u8 = 3;
/// ASCII `\s` but the newlines: space, `\t`, `\x0B`, `\x0C`.
const SP: u8 = 4;
/// `\r`, `\n`
const NL: u8 = 5;
/// Every other ASCII byte: punctuation, symbols and the controls that are not `\s`.
const SYM: u8 = 6;
/// A byte past ASCII (a lead or continuation byte): the general path decides.
const HI: u8 = 0;
/// Past the end of the text.
const END: u8 = 7;

const CLASS: [u8; 256] = class_table();

const fn class_table() -> [u8; 256] {
    let mut t = [HI; 256];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = if b.is_ascii_uppercase() {
            UP
        } else if b.is_ascii_lowercase() {
            LO
        } else if b.is_ascii_digit() {
            DIG
        } else if b == b'\r' || b == b'\n' {
            NL
        } else if b == b' ' || b == b'\t' || b == 0x0B || b == 0x0C {
            SP
        } else {
            SYM
        };
        c += 1;
    }
    t
}

#[inline(always)]
fn class(s: &[u8], i: usize) -> u8 {
    match s.get(i) {
        Some(&b) => CLASS[b as usize],
        None => END,
    }
}

/// Whether ASCII byte `b` may lead a word as `[^\r\n\p{L}\p{N}]` (a space or a symbol);
/// false for a byte past ASCII.
#[inline(always)]
pub fn leads(b: u8) -> bool {
    matches!(CLASS[b as usize], SP | SYM)
}

/// The end of the piece of o200k_base starting at `i`, if the ASCII bytes decide it.
#[inline(always)]
pub fn o200k(s: &[u8], i: usize) -> Option<usize> {
    match class(s, i) {
        UP | LO => o200k_word(s, i),
        DIG => digits(s, i),
        NL => spaces(s, i),
        k0 @ (SP | SYM) => match class(s, i + 1) {
            UP | LO => o200k_word(s, i + 1),
            HI => None,
            SYM if k0 == SYM || s.get(i) == Some(&b' ') => symbols(s, if k0 == SYM { i } else { i + 1 }, b'/'),
            _ if k0 == SYM => symbols(s, i, b'/'),
            _ => spaces(s, i),
        },
        _ => None,
    }
}

/// The end of the piece of cl100k_base starting at `i`, if the ASCII bytes decide it.
#[inline(always)]
pub fn cl100k(s: &[u8], i: usize) -> Option<usize> {
    match class(s, i) {
        UP | LO => Some(letters(s, i)),
        DIG => digits(s, i),
        NL => spaces(s, i),
        k0 @ (SP | SYM) => {
            // Alternative 1, the contractions, comes before everything else in cl100k.
            if let Some(end) = contraction(s, i) {
                return Some(end);
            }
            match class(s, i + 1) {
                UP | LO => Some(letters(s, i + 1)),
                HI => None,
                // `\r` stands for "no third character" in symbols(): cl100k's tail is `[\r\n]*`.
                SYM if k0 == SYM || s.get(i) == Some(&b' ') => symbols(s, if k0 == SYM { i } else { i + 1 }, b'\r'),
                _ if k0 == SYM => symbols(s, i, b'\r'),
                _ => spaces(s, i),
            }
        }
        _ => None,
    }
}

/// o200k's word from `from` (an ASCII letter): `[A-Z]*[a-z]*` and the contraction after it. In
/// ASCII the upper and lower classes do not overlap, so the regex's backtracking cannot change
/// the answer once the word ends on an ASCII byte; a byte past ASCII may be a letter or a mark
/// that continues it, and is left to the general path.
#[inline(always)]
fn o200k_word(s: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    while class(s, j) == UP {
        j += 1;
    }
    while class(s, j) == LO {
        j += 1;
    }
    match s.get(j) {
        Some(&b'\'') => Some(contraction(s, j).unwrap_or(j)),
        Some(&b) if b >= 0x80 => None,
        _ => Some(j),
    }
}

/// cl100k's `\p{L}+` from `from` (a letter): ASCII letters, then any letters past ASCII the
/// general way (there is no backtracking in this alternative).
#[inline(always)]
fn letters(s: &[u8], from: usize) -> usize {
    let mut j = from;
    while matches!(class(s, j), UP | LO) {
        j += 1;
    }
    if class(s, j) == HI {
        return text::run(s, j, |ch| ch.flags & super::classes::LETTER != 0);
    }
    j
}

/// `\p{N}{1,3}` from an ASCII digit, unless a byte past ASCII might be the next digit.
#[inline(always)]
fn digits(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < i + 3 && class(s, j) == DIG {
        j += 1;
    }
    (j == i + 3 || class(s, j) != HI).then_some(j)
}

/// `[^\s\p{L}\p{N}]+` from `from` (a symbol), then the tail `[\r\n]*` or `[\r\n/]*` (`extra` is
/// the third byte of the tail's class, `\r` when there is none). The symbol run is greedy and
/// nothing after it backtracks into it, so past ASCII it simply goes on the general way.
#[inline(always)]
fn symbols(s: &[u8], from: usize, extra: u8) -> Option<usize> {
    let mut j = from;
    while class(s, j) == SYM {
        j += 1;
    }
    if class(s, j) == HI {
        j = text::run(s, j, text::symbol);
    }
    while let Some(&b) = s.get(j) {
        if b != b'\r' && b != b'\n' && b != extra {
            break;
        }
        j += 1;
    }
    Some(j)
}

/// `text::spaces` for a run of ASCII whitespace; a byte past ASCII (`\u{a0}`, `\u{3000}`, ...
/// may be whitespace) sends the whole run the general way.
#[inline(always)]
fn spaces(s: &[u8], i: usize) -> Option<usize> {
    let mut end = i;
    let mut last_newline = None;
    loop {
        match class(s, end) {
            SP => end += 1,
            NL => {
                end += 1;
                last_newline = Some(end);
            }
            HI => return None,
            _ => break,
        }
    }
    if let Some(after) = last_newline {
        return Some(after);
    }
    // `\s+(?!\S)`: the run less its last character, unless it ends the text or is one character.
    if end == s.len() || end == i + 1 {
        return Some(end);
    }
    Some(end - 1)
}
