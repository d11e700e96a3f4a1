//! The character classes the o200k and cl100k patterns test, one byte of flags per code point.
//!
//! The non-ASCII table is built once, on first use, from `regex-syntax`'s Unicode tables: the
//! same tables the regex pre-tokenizer (bpe-openai on regex-automata) matches with, so the
//! scanner and the regex agree on every code point by construction. ASCII is a constant.

use std::sync::LazyLock;

/// `\p{L}`
pub const LETTER: u8 = 1;
/// `\p{N}`
pub const NUMBER: u8 = 1 << 1;
/// `\s` (Unicode White_Space)
pub const SPACE: u8 = 1 << 2;
/// o200k's upper class: `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
pub const UPPER: u8 = 1 << 3;
/// o200k's lower class: `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`
pub const LOWER: u8 = 1 << 4;
/// `\r` or `\n`
pub const NEWLINE: u8 = 1 << 5;

/// Flags of the ASCII characters, written out so the common case never touches the table.
pub const ASCII: [u8; 128] = ascii_table();

const fn ascii_table() -> [u8; 128] {
    let mut t = [0u8; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = if b.is_ascii_uppercase() {
            LETTER | UPPER
        } else if b.is_ascii_lowercase() {
            LETTER | LOWER
        } else if b.is_ascii_digit() {
            NUMBER
        } else if b == b'\r' || b == b'\n' {
            SPACE | NEWLINE
        } else if b == b' ' || b == b'\t' || b == 0x0B || b == 0x0C {
            SPACE
        } else {
            0
        };
        c += 1;
    }
    // \x1C-\x1F are not White_Space; \x85 and \xA0 are above ASCII.
    t
}

/// Every code point's flags; surrogates (never in a `str`) read 0.
static TABLE: LazyLock<Box<[u8]>> = LazyLock::new(build);

fn build() -> Box<[u8]> {
    let mut t = vec![0u8; 0x11_0000].into_boxed_slice();
    let classes: [(&str, u8); 6] = [
        (r"\p{L}", LETTER),
        (r"\p{N}", NUMBER),
        (r"\s", SPACE),
        (r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", UPPER),
        (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", LOWER),
        (r"[\r\n]", NEWLINE),
    ];
    for (pattern, flag) in classes {
        for (lo, hi) in ranges(pattern) {
            for slot in &mut t[lo as usize..=hi as usize] {
                *slot |= flag;
            }
        }
    }
    t
}

/// The code point ranges of a class pattern. The patterns are constants of this file, so a
/// parse failure is a bug caught by the tests; it yields no ranges rather than a panic.
fn ranges(pattern: &str) -> Vec<(u32, u32)> {
    use regex_syntax::hir::{Class, HirKind};
    let Ok(hir) = regex_syntax::parse(pattern) else { return Vec::new() };
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => class.ranges().iter().map(|r| (r.start() as u32, r.end() as u32)).collect(),
        _ => Vec::new(),
    }
}

/// The flags of code point `c` (above ASCII).
#[inline]
pub fn of(c: u32) -> u8 {
    TABLE.get(c as usize).copied().unwrap_or(0)
}

#[cfg(test)]
pub fn table_is_built() -> bool {
    TABLE.iter().any(|&f| f & LETTER != 0) && ranges(r"\p{L}").len() > 100
}
