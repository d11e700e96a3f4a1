//! The commonest piece found from letter masks: an ASCII word, with the space or mark that
//! leads it. The text is read 64 bytes at a time into bit masks (bit i: byte i is an upper-case
//! or a lower-case ASCII letter), and each word is two runs of set bits, found with
//! `trailing_zeros`: no loop per byte, no branch whose outcome depends on a word's length, and
//! each byte classified once however short the pieces are.
//!
//! Why: in English, code and chat most pieces are such words (`" the"`, `"Hello"`, `" self"`);
//! the byte loop of `ascii.rs` mispredicted the end of each run, and classifying sixteen bytes
//! afresh for every piece cost more than the piece. Anything else (a word that may go on: a
//! letter, mark or apostrophe after it, past ASCII or past the masks) answers None and goes the
//! byte-by-byte way, which stays the reference these are tested against (`tests.rs`, through
//! `pieces`, which takes this same first step).

use super::ascii::leads;

/// One in every lane of a word of eight bytes.
const LANES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every lane.
const HIGH: u64 = LANES * 0x80;
/// Bytes the masks cover.
const SPAN: usize = 64;
/// A word starting this far into the masks moves them on by as much (reading only the bytes
/// that are new), so a word of up to `SPAN - STEP` bytes is always seen whole and each byte of
/// the text is classified once.
const STEP: usize = 32;

/// The word alternative's letter classes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// o200k_base: `[A-Z]*[a-z]*`, a word splits before an upper-case letter after a lower.
    Split,
    /// cl100k_base: `[A-Za-z]+`; an apostrophe does not lead a word (contractions come first).
    Any,
}

/// The masks of `SPAN` bytes of a text from `base`.
pub struct Letters {
    base: usize,
    /// Bit i: byte `base + i` is in the first run's class (`[A-Z]`; none for `Case::Any`).
    upper: u64,
    /// Bit i: byte `base + i` is in the second run's class (`[a-z]`, or `[A-Za-z]`).
    lower: u64,
    case: Case,
}

impl Letters {
    pub fn new(case: Case) -> Self {
        // No bytes read yet: every offset is before `base`, so the first word reads them.
        Letters { base: usize::MAX, upper: 0, lower: 0, case }
    }

    /// The length of the word piece at `at` of `s`, when the masks settle it.
    #[inline(always)]
    pub fn word(&mut self, s: &[u8], at: usize) -> Option<usize> {
        // A piece starting past ASCII is never such a word: leave the masks alone (CJK text,
        // whose pieces are long runs, would otherwise read them afresh for every piece).
        let b0 = *s.get(at)?;
        if b0 >= 0x80 {
            return None;
        }
        let mut off = at.checked_sub(self.base).unwrap_or(usize::MAX);
        if off >= STEP {
            off = self.advance(s, at, off);
        }
        self.word_at(s, at, b0, off)
    }

    /// Moves the masks on so that `at` (at `off` from their start) is in their first `STEP`
    /// bytes: by `STEP` when that suffices (reading only the new bytes), else to `at` itself.
    #[cold]
    #[inline(never)]
    fn advance(&mut self, s: &[u8], at: usize, off: usize) -> usize {
        if off < 2 * STEP {
            self.base += STEP;
            let (upper, lower) = self.read(s, self.base + STEP, STEP);
            self.upper = (self.upper >> STEP) | (upper << STEP);
            self.lower = (self.lower >> STEP) | (lower << STEP);
            return off - STEP;
        }
        let (upper, lower) = self.read(s, at, SPAN);
        *self = Letters { base: at, upper, lower, case: self.case };
        0
    }

    #[inline(always)]
    fn word_at(&self, s: &[u8], at: usize, b0: u8, off: usize) -> Option<usize> {
        let (upper, lower) = (self.upper >> off, self.lower >> off);
        let letters = upper | lower;
        let lead_ok = leads(b0) && !(self.case == Case::Any && b0 == b'\'');
        // 1 when a lead character comes before the word's letters.
        let start = u32::from(lead_ok) & (letters >> 1) as u32 & !letters as u32 & 1;
        if (letters as u32 | start) & 1 == 0 {
            return None;
        }
        // Past the masks the bits are clear, so the runs stop there at the latest.
        let after_upper = start + (!(upper >> start)).trailing_zeros();
        let end = after_upper + (!lower.checked_shr(after_upper).unwrap_or(0)).trailing_zeros();
        let end = end as usize;
        if off + end >= SPAN {
            return None;
        }
        settled(s, at + end, self.case == Case::Split).then_some(end)
    }

    /// The masks of `s[from..from + len]` (`len` a multiple of 8, at most `SPAN`; past the
    /// text's end, no letters).
    #[inline(always)]
    fn read(&self, s: &[u8], from: usize, len: usize) -> (u64, u64) {
        let bytes = s.get(from..).unwrap_or(&[]);
        let bytes = bytes.get(..len).unwrap_or(bytes);
        match self.case {
            Case::Split => masks(bytes, |w| (in_range(w, b'A', b'Z'), in_range(w, b'a', b'z'))),
            Case::Any => masks(bytes, |w| (0, in_range(w | (LANES * 0x20), b'a', b'z'))),
        }
    }
}

/// The two masks of `bytes` (at most `SPAN`), eight at a time, by `classify`'s lanes.
#[inline(always)]
fn masks(bytes: &[u8], classify: impl Fn(u64) -> (u64, u64)) -> (u64, u64) {
    let chunks = bytes.chunks_exact(8);
    let tail = chunks.remainder();
    let (mut upper, mut lower) = (0u64, 0u64);
    let mut add = |k: usize, w: u64| {
        let (up, low) = classify(w);
        // k < SPAN / 8, so the shift is below 64.
        upper |= gather(up) << (8 * k);
        lower |= gather(low) << (8 * k);
    };
    let mut k = 0;
    for chunk in chunks.take(SPAN / 8) {
        add(k, chunk.first_chunk::<8>().map_or(0, |b| u64::from_le_bytes(*b)));
        k += 1;
    }
    if !tail.is_empty() && k < SPAN / 8 {
        add(k, word(tail));
    }
    (upper, lower)
}

/// Whether a word that stops before byte `i` of `s` cannot go on: the text ends, or the next
/// character is ASCII (not an apostrophe where o200k may add a contraction: `quote_matters`),
/// or is one of U+2000..=U+203F (`E2 80 xx`: spaces, dashes, quotes such as `’`, none a
/// letter, mark or number), the one non-ASCII neighbour English text has often.
#[inline(always)]
fn settled(s: &[u8], i: usize, quote_matters: bool) -> bool {
    match s.get(i) {
        None => true,
        Some(&next) if next < 0x80 => !(quote_matters && next == b'\''),
        Some(&next) => {
            next == 0xE2 && s.get(i + 1) == Some(&0x80) && s.get(i + 2).is_some_and(|&c| c & 0xC0 == 0x80)
        }
    }
}

/// Fewer than eight bytes as a little-endian word, zero past the end.
#[cold]
fn word(b: &[u8]) -> u64 {
    b.iter().take(8).rev().fold(0u64, |w, &c| (w << 8) | u64::from(c))
}

/// The lanes of `w` that hold an ASCII byte in `lo..=hi` (1 <= lo <= hi < 0x80), as their high
/// bit. Each lane's sum stays below 0x100, so no carry crosses into the next lane.
#[inline(always)]
fn in_range(w: u64, lo: u8, hi: u8) -> u64 {
    let x = w & !HIGH;
    let at_least_lo = x.wrapping_add(LANES * u64::from(0x80 - lo));
    let above_hi = x.wrapping_add(LANES * u64::from(0x7F - hi));
    at_least_lo & !above_hi & !w & HIGH
}

/// The lanes' high bits, one bit a lane (lane i -> bit i): the multiply moves each lane's bit
/// to its place in the top byte, where no two partial products meet.
#[inline(always)]
fn gather(lanes: u64) -> u64 {
    const SPREAD: u64 = 0x0102_0408_1020_4080;
    ((lanes >> 7) & LANES).wrapping_mul(SPREAD) >> 56
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_in_range_are_exactly_the_bytes_in_range() {
        for byte in 0..=255u8 {
            for bytes in [[b'#', byte, b'#', 0xFF, byte, 0, 0x80, byte], [0x7F, byte, b'a', b'z', b'A', b'Z', byte, 1]] {
                for (lo, hi) in [(b'a', b'z'), (b'A', b'Z'), (1, 0x7F), (b'0', b'9')] {
                    let lanes = gather(in_range(u64::from_le_bytes(bytes), lo, hi));
                    for (i, b) in bytes.iter().enumerate() {
                        assert_eq!(lanes >> i & 1 == 1, (lo..=hi).contains(b), "{b:#x} in {lo}..={hi}");
                    }
                }
            }
        }
    }

    #[test]
    fn words_the_masks_settle_and_the_rest_left_alone() {
        let o = |s: &[u8]| Letters::new(Case::Split).word(s, 0);
        let c = |s: &[u8]| Letters::new(Case::Any).word(s, 0);
        assert_eq!(o(b" hello, world"), Some(6));
        assert_eq!(o(b" something else."), Some(10));
        assert_eq!(o(b"HTMLfileHTMLfile"), Some(8), "o200k splits before an upper after a lower");
        assert_eq!(c(b"HTMLfileHTMLfile"), Some(16), "the text's end settles it");
        assert_eq!(o(&[b'a'; 70]), None, "runs past the masks");
        assert_eq!(o(b"don't go"), None, "a contraction may follow");
        assert_eq!(c(b"don't go"), Some(3));
        assert_eq!(c(b"'tis not so."), None, "cl100k's contraction comes first");
        assert_eq!(o(b"caf\xc3\xa9 ok"), None, "a letter past ASCII may continue it");
        assert_eq!(o(b"don\xe2\x80\x99t go"), Some(3), "a curly quote ends it");
        assert_eq!(c(b" said\xe2\x80\x94and"), Some(5), "so does a dash");
        assert_eq!(o(b"said\xe2\x80"), None, "unless the text cuts the quote short");
        assert_eq!(o(b"\nhello"), None, "a newline does not lead a word");
        assert_eq!(o(b"1abc"), None, "nor does a digit");
        assert_eq!(o(b"  hello"), None, "two spaces: the first is its own piece");
        assert_eq!(o(b"$x = 1;"), Some(2));
        // Words read from masks filled at another offset, and across a refill.
        let text = b"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron";
        let mut letters = Letters::new(Case::Split);
        let (mut at, mut words) = (0, Vec::new());
        while at < text.len() {
            let len = letters.word(text, at).unwrap_or(1);
            words.push(&text[at..at + len]);
            at += len;
        }
        assert_eq!(words.len(), 15);
        assert_eq!(words[14], b" omicron");
    }
}
