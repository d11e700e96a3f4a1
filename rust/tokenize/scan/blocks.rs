//! o200k_base's piece starts for up to 64 bytes of ASCII at once, from class bit masks.
//!
//! Why: pieces are found one at a time elsewhere, and each asks "what kind of piece is this?"
//! with branches whose outcome changes from piece to piece (word, symbol, space, digits): on code
//! and JSON that was about two mispredicted branches a piece, the larger part of a cached count.
//! Here the bytes are classified sixteen at a time (`wide`: compare and move-mask), the pattern's
//! rules become whole-word operations on the masks, and the caller walks the starts with
//! `trailing_zeros`: no branch depends on the kind of piece.
//!
//! The block always begins at a piece start. The pattern has no look-behind, so the pieces from
//! there are those of the block's bytes taken as a text of their own; only where the block's
//! knowledge ends (its last bytes, a byte past ASCII, a run that goes on past it) is a start
//! unsettled, and `Starts::settled` says how far they can be trusted. Past it the caller takes
//! the general path, which stays the reference (`tests.rs` compares the two with the regex).
//!
//! The rules, for ASCII (o200k's pattern is in `o200k.rs`; position 0 is a start):
//! - letters: a run of letters starts a piece, and so does an upper-case letter after a lower
//!   (`[A-Z]*[a-z]*`), unless a space or symbol that starts a piece leads it (the optional lead
//!   of the word alternatives); after a word, an apostrophe and `s t m d re ve ll` (any case) are
//!   the word's (one contraction a word);
//! - digits: a run starts a piece, and again every three digits;
//! - symbols: a run starts a piece unless a space leads it (` ?[^\s\p{L}\p{N}]+`); the newlines
//!   right after a run are its tail (`[\r\n/]*`; a `/` after such a newline is left unsettled);
//! - whitespace (the rest): a run starts a piece; so does the character after its last newline
//!   (`\s*[\r\n]+` ends there), and its last character when something follows (`\s+(?!\S)`).

use wide::u8x16;

/// Bytes a block covers.
pub const SPAN: usize = 64;

/// The piece starts of a block.
pub struct Starts {
    /// Bit i: a piece starts at the block's byte i (bit 0 always).
    pub bits: u64,
    /// Starts up to this offset are settled: a piece that ends at or before it is a piece of the
    /// text. 0 when nothing is.
    pub settled: usize,
    /// Where the block's knowledge stopped at a byte past ASCII: blocks are of no use before the
    /// caller has passed it (None: it stopped for another reason).
    pub high_at: Option<usize>,
}

/// One bit a byte of the block.
#[derive(Default)]
struct Classes {
    upper: u64,
    lower: u64,
    digit: u64,
    /// ASCII `\s`: `\t \n \x0B \x0C \r` and space.
    white: u64,
    newline: u64,
    space: u64,
    apostrophe: u64,
    slash: u64,
    high: u64,
}

fn classify(block: &[u8; SPAN]) -> Classes {
    let mut c = Classes::default();
    for (k, chunk) in block.chunks_exact(16).enumerate() {
        let mut lanes = [0u8; 16];
        lanes.copy_from_slice(chunk);
        let v = u8x16::from(lanes);
        let bits = |m: u8x16| u64::from(m.move_mask() as u16) << (16 * k);
        let range = |lo: u8, hi: u8| v.max(u8x16::splat(lo)).min(u8x16::splat(hi)).cmp_eq(v);
        let eq = |b: u8| v.cmp_eq(u8x16::splat(b));
        let space = eq(b' ');
        let newline = eq(b'\n') | eq(b'\r');
        c.upper |= bits(range(b'A', b'Z'));
        c.lower |= bits(range(b'a', b'z'));
        c.digit |= bits(range(b'0', b'9'));
        c.white |= bits(range(b'\t', b'\r') | space);
        c.newline |= bits(newline);
        c.space |= bits(space);
        c.apostrophe |= bits(eq(b'\''));
        c.slash |= bits(eq(b'/'));
        c.high |= bits(v);
    }
    c
}

/// Bits below `n` (n <= 64).
#[inline(always)]
fn below(n: usize) -> u64 {
    if n >= SPAN {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Bits 1..=`settled`: the ends a walk of the starts may take.
#[inline(always)]
pub fn upto(settled: usize) -> u64 {
    below(settled.saturating_add(1))
}

/// The bits of the runs of `m` that hold a bit of `seeds`, each seed the lowest bit of its run.
#[inline(always)]
fn runs_from(m: u64, seeds: u64) -> u64 {
    (m.wrapping_add(seeds) ^ m) & m
}

/// The piece starts of o200k_base in `s` from `at` (a piece start), for the block's ASCII bytes.
pub fn o200k(s: &[u8], at: usize) -> Starts {
    let rest = s.get(at..).unwrap_or(&[]);
    let n = rest.len().min(SPAN);
    let ends_text = rest.len() <= SPAN;
    let mut block = [0u8; SPAN];
    block[..n].copy_from_slice(&rest[..n]);
    let c = classify(&block);
    let valid = below(n);
    let high = c.high & valid;
    let letter = c.upper | c.lower;
    let symbol = valid & !high & !(letter | c.digit | c.white);
    let prev = |m: u64| m << 1;
    let next = |m: u64| m >> 1;

    // How far the block knows the text: to its end, or to the first byte past ASCII.
    let mut known = n.min(high.trailing_zeros() as usize);
    let high_at = (known < n).then_some(known);
    // A symbol run's newline tail, and a `/` after it (the tail takes it: left unsettled).
    let tail = runs_from(c.newline, c.newline & prev(symbol));
    let tail_slash = c.slash & prev(tail) & below(known);
    if tail_slash != 0 {
        known = known.min(tail_slash.trailing_zeros() as usize);
    }
    // Contractions after a word: the apostrophe and its letters belong to the word.
    let (mut inside, mut after) = (0u64, 0u64);
    let mut quotes = c.apostrophe & prev(letter) & below(known);
    while quotes != 0 {
        let q = quotes.trailing_zeros() as usize;
        quotes &= quotes - 1;
        if inside >> (q - 1) & 1 == 1 {
            // The letter before is a contraction's own: a word takes one, so this quote starts
            // a piece of its own (it may lead the next word).
            continue;
        }
        match contraction(&block[..known], q, ends_text && known == n) {
            Some(len) if len > 0 => {
                inside |= below(q + len) & !below(q);
                after |= 1u64.checked_shl((q + len) as u32).unwrap_or(0);
            }
            Some(_) => {}
            None => {
                known = q;
                break;
            }
        }
    }

    // Whitespace that is not a tail: runs, the character after each run's last newline, and a
    // run's last character when something follows it.
    let white = c.white & !tail;
    let spaces = white & !c.newline;
    let run_start = white & !prev(white);
    let (rw, rs, rn) = (white.reverse_bits(), spaces.reverse_bits(), (white & c.newline).reverse_bits());
    let last_newline = (rs.wrapping_add(rs & !(rw << 1)) & rn).reverse_bits();
    let after_newline = prev(last_newline) & spaces;
    let mut white_end = spaces & !next(white);
    if ends_text && known == n {
        white_end &= !(1u64.checked_shl(n.saturating_sub(1) as u32).unwrap_or(0));
    }
    // Symbols: a run starts a piece unless a space leads it.
    let symbol_start = symbol & !prev(symbol) & !prev(c.space);
    // Letters: a run starts a piece unless a lead that starts a piece comes before it; an upper
    // after a lower starts one.
    let word = letter & !prev(letter);
    let lead = (symbol_start | spaces) & next(word);
    let words = (word & !prev(lead)) | (c.upper & prev(c.lower));
    // Digits: a run, and every third digit of it.
    let mut digits = c.digit & !prev(c.digit);
    let mut third = digits;
    let thirds_ok = c.digit & prev(c.digit) & prev(prev(c.digit));
    while third != 0 {
        third = (third << 3) & thirds_ok;
        digits |= third;
    }
    let bits = ((words | digits | symbol_start | run_start | after_newline | white_end) & !inside) | after | 1;

    let settled = if ends_text && known == n {
        n
    } else {
        // A start needs the byte after it (`\s+(?!\S)`), and a run that reaches the edge may
        // hold another newline past it: stop before such a run.
        let mut settled = known.saturating_sub(2);
        let edge = known.checked_sub(1).map_or(0, |k| (white | tail) >> k & 1);
        if edge == 1 {
            let starts = (run_start | (tail & !prev(tail))) & below(known);
            settled = settled.min(63 - starts.leading_zeros() as usize);
        }
        settled
    };
    Starts { bits: bits & below(n), settled, high_at }
}

/// The length of the contraction at `q` (an apostrophe after a letter) in `b`: 0 when none,
/// None when the bytes that would decide it are not there and `b` does not end the text.
fn contraction(b: &[u8], q: usize, ends_text: bool) -> Option<usize> {
    let at = |i: usize| b.get(q + i).map(|c| c.to_ascii_lowercase());
    match at(1) {
        Some(b's' | b't' | b'm' | b'd') => Some(2),
        Some(c @ (b'r' | b'v' | b'l')) => match at(2) {
            Some(d) => Some(if (c, d) == (b'r', b'e') || (c, d) == (b'v', b'e') || (c, d) == (b'l', b'l') { 3 } else { 0 }),
            None if ends_text => Some(0),
            None => None,
        },
        Some(_) => Some(0),
        None if ends_text => Some(0),
        None => None,
    }
}
