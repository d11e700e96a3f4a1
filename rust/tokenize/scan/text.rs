//! Reading a `str` one character at a time, as flags and byte lengths: the scanners' cursor.

use super::classes::{self, ASCII, LETTER, NEWLINE, NUMBER, SPACE};

/// A character at a byte offset: its flags, its code point and its length in bytes.
#[derive(Clone, Copy)]
pub struct Ch {
    pub flags: u8,
    pub c: u32,
    pub len: usize,
}

/// The character starting at byte `i` of `s` (valid UTF-8, `i` on a boundary), or None at the end.
#[inline(always)]
pub fn at(s: &[u8], i: usize) -> Option<Ch> {
    let b0 = *s.get(i)?;
    if b0 < 0x80 {
        return Some(Ch { flags: ASCII[b0 as usize], c: b0 as u32, len: 1 });
    }
    let cont = |k: usize| (s.get(i + k).copied().unwrap_or(0x80) & 0x3F) as u32;
    let (c, len) = if b0 < 0xE0 {
        (((b0 as u32 & 0x1F) << 6) | cont(1), 2)
    } else if b0 < 0xF0 {
        (((b0 as u32 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (((b0 as u32 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3), 4)
    };
    Some(Ch { flags: classes::of(c), c, len })
}

/// The end of the run of characters from `i` whose flags meet `pred`.
#[inline(always)]
pub fn run(s: &[u8], mut i: usize, pred: impl Fn(Ch) -> bool) -> usize {
    while let Some(ch) = at(s, i) {
        if !pred(ch) {
            break;
        }
        i += ch.len;
    }
    i
}

/// The contraction at `i` (`'s 't 're 've 'm 'll 'd`, any case as Unicode simple case folding
/// gives it, so `'ſ` is `'s`): its end, or None.
#[inline(always)]
pub fn contraction(s: &[u8], i: usize) -> Option<usize> {
    if s.get(i) != Some(&b'\'') {
        return None;
    }
    contraction_after_quote(s, i)
}

/// `contraction` once the quote is known to be there (kept out of line: it is rare).
#[inline(never)]
fn contraction_after_quote(s: &[u8], i: usize) -> Option<usize> {
    let a = at(s, i + 1)?;
    let lower = |ch: Ch| match ch.c {
        0x41..=0x5A => ch.c + 0x20,
        0x17F => 's' as u32, // LATIN SMALL LETTER LONG S folds to s
        c => c,
    };
    let first = lower(a);
    let one = |c: char| first == c as u32;
    if one('s') || one('t') || one('m') || one('d') {
        return Some(i + 1 + a.len);
    }
    let b = at(s, i + 1 + a.len)?;
    let second = lower(b);
    let pair = |x: char, y: char| first == x as u32 && second == y as u32;
    if pair('r', 'e') || pair('v', 'e') || pair('l', 'l') {
        return Some(i + 1 + a.len + b.len);
    }
    None
}

/// The whitespace alternatives both patterns end with, at `i` where a `\s` character starts:
/// `\s*[\r\n]+` (up to the last newline of the run), then `\s+(?!\S)` (the run, less its last
/// character unless the run ends the text), then `\s+` (the one character).
#[inline]
pub fn spaces(s: &[u8], i: usize) -> usize {
    let mut end = i;
    let mut last_newline = None;
    let mut last_start = i;
    while let Some(ch) = at(s, end) {
        if ch.flags & classes::SPACE == 0 {
            break;
        }
        if ch.flags & classes::NEWLINE != 0 {
            last_newline = Some(end + 1);
        }
        last_start = end;
        end += ch.len;
    }
    if let Some(after) = last_newline {
        return after;
    }
    if end == s.len() || last_start == i {
        return end;
    }
    last_start
}

/// `[^\r\n\p{L}\p{N}]`: the optional character before a word, in both patterns.
#[inline(always)]
pub fn lead(ch: Ch) -> bool {
    ch.flags & (LETTER | NUMBER | NEWLINE) == 0
}

/// `[^\s\p{L}\p{N}]`: punctuation and symbols, in both patterns.
#[inline(always)]
pub fn symbol(ch: Ch) -> bool {
    ch.flags & (LETTER | NUMBER | SPACE) == 0
}

/// `\p{N}{1,3}` from `i`, whose character `c0` is a number: the end of the match.
#[inline(always)]
pub fn digits(s: &[u8], i: usize, c0: Ch) -> usize {
    let mut end = i + c0.len;
    for _ in 0..2 {
        match at(s, end) {
            Some(ch) if ch.flags & NUMBER != 0 => end += ch.len,
            _ => break,
        }
    }
    end
}
