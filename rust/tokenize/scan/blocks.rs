//! The piece starts of o200k_base and cl100k_base for up to 64 bytes of ASCII at once, from
//! class bit masks.
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
//! The rules, for ASCII (the patterns are in `o200k.rs` and `cl100k.rs`; position 0 is a start):
//! - letters: a run of letters starts a piece, and in o200k so does an upper-case letter after a
//!   lower (`[A-Z]*[a-z]*`), unless a space or symbol that starts a piece leads it (the optional
//!   lead of the word alternatives);
//! - contractions (an apostrophe and `s t m d re ve ll`, any case): in o200k the end of a word
//!   (one a word); in cl100k a piece of their own wherever an apostrophe starts a piece (the
//!   pattern's first alternative);
//! - digits: a run starts a piece, and again every three digits;
//! - symbols: a run starts a piece unless a space leads it (` ?[^\s\p{L}\p{N}]+`); the newlines
//!   right after a run are its tail (o200k's `[\r\n/]*`: a `/` after such a newline is left
//!   unsettled; cl100k's `[\r\n]*`);
//! - whitespace (the rest): a run starts a piece; so does the character after its last newline
//!   (`\s*[\r\n]+` ends there), and its last character when something follows (`\s+(?!\S)`).

use wide::u8x16;

/// Bytes a block covers.
pub const SPAN: usize = 64;

/// The piece starts of a block.
pub struct Starts {
    /// Bit i: a piece starts at the block's byte i (bit 0 always), or the text ends there.
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
    /// `[A-Za-z]`, classified for cl100k only: o200k needs `upper` and `lower` apart and joins
    /// them.
    letter: u64,
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

/// One sixteen-byte chunk of a block as SIMD lanes, and where its bits go in the block's masks.
#[derive(Clone, Copy)]
struct Chunk {
    v: u8x16,
    shift: usize,
}

impl Chunk {
    /// The lanes set in `m`, as bits of the block's mask.
    #[inline(always)]
    fn bits(self, m: u8x16) -> u64 {
        u64::from(m.move_mask() as u16) << self.shift
    }

    /// The lanes whose byte is in `lo..=hi`.
    #[inline(always)]
    fn range(self, lo: u8, hi: u8) -> u8x16 {
        in_range(self.v, lo, hi)
    }

    /// The lanes that hold an ASCII letter: one range, as setting bit 5 folds `A-Z` onto `a-z`
    /// and moves no other byte into it.
    #[inline(always)]
    fn letter(self) -> u8x16 {
        in_range(self.v | u8x16::splat(0x20), b'a', b'z')
    }

    /// The lanes whose byte is `b`.
    #[inline(always)]
    fn eq(self, b: u8) -> u8x16 {
        self.v.cmp_eq(u8x16::splat(b))
    }
}

/// The lanes of `v` whose byte is in `lo..=hi`.
#[inline(always)]
fn in_range(v: u8x16, lo: u8, hi: u8) -> u8x16 {
    v.max(u8x16::splat(lo)).min(u8x16::splat(hi)).cmp_eq(v)
}

/// The block's four chunks.
#[inline(always)]
fn chunks(block: &[u8; SPAN]) -> impl Iterator<Item = Chunk> + '_ {
    block.chunks_exact(16).enumerate().map(|(k, chunk)| {
        let mut lanes = [0u8; 16];
        lanes.copy_from_slice(chunk);
        Chunk { v: u8x16::from(lanes), shift: 16 * k }
    })
}

// Inlined into the rules: out of line, its nine masks went back through memory (1 % of a count).
#[inline(always)]
fn classify<const O200K: bool>(block: &[u8; SPAN]) -> Classes {
    let mut c = Classes::default();
    for ch in chunks(block) {
        let space = ch.eq(b' ');
        if O200K {
            c.upper |= ch.bits(ch.range(b'A', b'Z'));
            c.lower |= ch.bits(ch.range(b'a', b'z'));
        } else {
            c.letter |= ch.bits(ch.letter());
        }
        c.digit |= ch.bits(ch.range(b'0', b'9'));
        c.white |= ch.bits(ch.range(b'\t', b'\r') | space);
        c.newline |= ch.bits(ch.eq(b'\n') | ch.eq(b'\r'));
        c.space |= ch.bits(space);
        c.apostrophe |= ch.bits(ch.eq(b'\''));
        c.slash |= ch.bits(ch.eq(b'/'));
        c.high |= ch.bits(ch.v);
    }
    c
}

/// The bytes of the characters U+200B..=U+2027 and U+2030..=U+203F (`E2 80 8B..A7`, `E2 80
/// B0..BF`): curly quotes, dashes, ellipses, zero-width and bidi controls. None is a letter, mark,
/// number or whitespace, so in both patterns each is one symbol character, as ASCII punctuation
/// is. (U+2000..U+200A, U+2028, U+2029 and U+202F are whitespace: left past the block's edge.)
#[cold]
fn punctuation(block: &[u8; SPAN]) -> u64 {
    let (mut lead, mut second, mut third) = (0u64, 0u64, 0u64);
    for ch in chunks(block) {
        lead |= ch.bits(ch.eq(0xE2));
        second |= ch.bits(ch.eq(0x80));
        third |= ch.bits(ch.range(0x8B, 0xA7) | ch.range(0xB0, 0xBF));
    }
    let first = lead & (second >> 1) & (third >> 2);
    first | first << 1 | first << 2
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

/// The bits of `m` from which the run of `m` upwards reaches a bit of `seeds` (a subset of `m`):
/// runs filled downwards from their seeds, in doubling steps (no carry runs that way).
#[inline(always)]
fn down_through(seeds: u64, m: u64) -> u64 {
    let (mut filled, mut all) = (seeds, m);
    for step in [1, 2, 4, 8, 16, 32] {
        // `all`: the bits from which the next `step` bits up are all in `m`.
        filled |= (filled >> step) & all;
        all &= all >> step;
    }
    filled
}

/// The piece starts of o200k_base in `s` from `at` (a piece start), for the block's ASCII bytes.
pub fn o200k(s: &[u8], at: usize) -> Starts {
    starts::<true>(s, at)
}

/// The piece starts of cl100k_base in `s` from `at` (a piece start), for the block's ASCII bytes.
pub fn cl100k(s: &[u8], at: usize) -> Starts {
    starts::<false>(s, at)
}

#[inline(always)]
fn starts<const O200K: bool>(s: &[u8], at: usize) -> Starts {
    let rest = s.get(at..).unwrap_or(&[]);
    let n = rest.len().min(SPAN);
    let ends_text = rest.len() <= SPAN;
    // The text's own bytes where it has 64 more; a zero-padded copy of its last ones.
    let padded: [u8; SPAN];
    let block = match rest.first_chunk::<SPAN>() {
        Some(b) => b,
        None => {
            let mut copy = [0u8; SPAN];
            copy[..n].copy_from_slice(&rest[..n]);
            padded = copy;
            &padded
        }
    };
    let c = classify::<O200K>(block);
    let valid = below(n);
    let letter = if O200K { c.upper | c.lower } else { c.letter };
    // English punctuation past ASCII (curly quotes, dashes) counts as symbols; any other byte
    // past ASCII ends what the block knows.
    let punctuation = if c.high & valid != 0 { punctuation(block) } else { 0 };
    let high = c.high & valid & !punctuation;
    let symbol = valid & !high & !(letter | c.digit | c.white);
    let prev = |m: u64| m << 1;
    let next = |m: u64| m >> 1;

    // How far the block knows the text: to its end, or to the first byte past ASCII.
    let mut known = n.min(high.trailing_zeros() as usize);
    let high_at = (known < n).then_some(known);
    // A symbol run's newline tail, and in o200k a `/` after it (the tail takes it: unsettled).
    let tail = runs_from(c.newline, c.newline & prev(symbol));
    let tail_slash = if O200K { c.slash & prev(tail) & below(known) } else { 0 };
    if tail_slash != 0 {
        known = known.min(tail_slash.trailing_zeros() as usize);
    }
    // Contractions: in o200k an apostrophe after a word's letter and its letters are the word's
    // end; in cl100k an apostrophe that starts a piece (no symbol or space before it) and its
    // letters are a piece. `inside` holds the bytes that start nothing, `after` what follows.
    let (mut inside, mut after) = (0u64, 0u64);
    let mut quotes = if O200K {
        c.apostrophe & prev(letter)
    } else {
        c.apostrophe & !prev(symbol) & !prev(c.space)
    } & below(known);
    while quotes != 0 {
        let q = quotes.trailing_zeros() as usize;
        quotes &= quotes - 1;
        if O200K && q > 0 && inside >> (q - 1) & 1 == 1 {
            // The letter before is a contraction's own: a word takes one, so this quote starts
            // a piece of its own (it may lead the next word).
            continue;
        }
        match contraction(&block[..known], q, ends_text && known == n) {
            Some(len) if len > 0 => {
                let first = if O200K { q } else { q + 1 };
                inside |= below(q + len) & !below(first);
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
    // After a run's last newline: a space after a newline whose spaces reach the run's end (a
    // byte that is not whitespace, or the block's), found by spreading that end down the spaces.
    let after_newline = down_through(spaces & !next(white), spaces) & prev(white & c.newline);
    let mut white_end = spaces & !next(white);
    if ends_text && known == n {
        white_end &= !(1u64.checked_shl(n.saturating_sub(1) as u32).unwrap_or(0));
    }
    // Symbols: a run starts a piece unless a space leads it.
    let symbol_start = symbol & !prev(symbol) & !prev(c.space);
    // Letters: a run starts a piece unless a lead that starts a piece comes before it; an upper
    // after a lower starts one.
    let word = letter & !prev(letter);
    // A lead is one character: an ASCII byte, or three bytes of punctuation.
    let lead = (symbol_start | spaces) & next(word);
    let lead3 = symbol_start & punctuation & (word >> 3);
    let split = if O200K { c.upper & prev(c.lower) } else { 0 };
    let words = (word & !prev(lead) & !(lead3 << 3)) | split;
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
    // Where the block ends the text, the text's end closes its last piece: the walk takes that
    // piece too, rather than classifying a block for it alone (a third of a short count's blocks).
    let text_end = if ends_text && settled == n { 1u64.checked_shl(n as u32).unwrap_or(0) } else { 0 };
    Starts { bits: (bits & below(n)) | text_end, settled, high_at }
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
