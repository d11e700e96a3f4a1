//! The commonest piece decided from one 16-byte load: an ASCII word, with the space or mark that
//! leads it, ending inside the load on a byte that settles it. The letter runs are found with
//! bit tricks on the loaded bytes (one lane a byte), so the piece costs a few dozen instructions
//! with no loop whose exit the branch predictor has to guess, and the same load is the piece's
//! cache key.
//!
//! Why: in English, code and chat most pieces are such words (`" the"`, `"Hello"`,
//! `" something"`), and the byte loop of `ascii.rs` mispredicted its exit once per letter run,
//! which was most of the time of a cached piece. Anything else (a run that reaches the last
//! byte, a letter, mark or apostrophe that may continue the word, the text's last fifteen bytes)
//! answers None and goes the byte-by-byte way, which stays the reference these are tested
//! against (`tests.rs`).

use super::ascii::leads;

/// One in every lane.
const LANES: u128 = u128::MAX / 0xFF;
/// The high bit of every lane.
const HIGH: u128 = LANES * 0x80;

/// The lanes of `w` that hold an ASCII byte in `lo..=hi` (1 <= lo <= hi < 0x80), as their high
/// bit. Each lane's sum stays below 0x100, so no carry crosses into the next lane.
#[inline(always)]
fn in_range(w: u128, lo: u8, hi: u8) -> u128 {
    let x = w & !HIGH;
    let at_least_lo = x.wrapping_add(LANES * u128::from(0x80 - lo));
    let above_hi = x.wrapping_add(LANES * u128::from(0x7F - hi));
    at_least_lo & !above_hi & !w & HIGH
}

/// How many lanes, from the first, are set in `mask` (0..=16).
#[inline(always)]
fn run(mask: u128) -> usize {
    ((!mask & HIGH).trailing_zeros() / 8) as usize
}

/// Lane `i` of `w` (0 past the sixteenth).
#[inline(always)]
fn lane(w: u128, i: usize) -> u8 {
    w.checked_shr(8 * i as u32).unwrap_or(0) as u8
}

/// Whether the piece starts with one leading character before the word: lane 1 is a letter and
/// lane 0 may lead it.
#[inline(always)]
fn led(w: u128, letters: u128, lead_ok: impl Fn(u8) -> bool) -> bool {
    letters & 0x8000 != 0 && lead_ok(w as u8)
}

/// o200k_base: the length (1..=15) of the piece `[^\r\n\p{L}\p{N}]?[A-Z]*[a-z]*` at the start of
/// `w`, when it has a letter and what follows it is known not to continue it. Within ASCII the
/// upper and lower runs do not overlap, so once the character after them is settled nothing can
/// change the piece.
#[inline(always)]
pub fn o200k(w: u128) -> Option<usize> {
    let upper = in_range(w, b'A', b'Z');
    let lower = in_range(w, b'a', b'z');
    let letters = upper | lower;
    let start = if letters & 0x80 != 0 {
        0
    } else if led(w, letters, leads) {
        1
    } else {
        return None;
    };
    let after_upper = start + run(upper >> (8 * start));
    if after_upper >= 16 {
        return None;
    }
    let end = after_upper + run(lower >> (8 * after_upper));
    settled(w, end, true)
}

/// cl100k_base: the length (1..=15) of the piece `[^\r\n\p{L}\p{N}]?[A-Za-z]+` at the start of
/// `w`, when what follows is known not to continue it. A piece starting with an apostrophe is
/// left to the byte path: cl100k tries the contractions before anything else.
#[inline(always)]
pub fn cl100k(w: u128) -> Option<usize> {
    let letters = in_range(w | (LANES * 0x20), b'a', b'z');
    let start = if letters & 0x80 != 0 {
        0
    } else if led(w, letters, |b| b != b'\'' && leads(b)) {
        1
    } else {
        return None;
    };
    let end = start + run(letters >> (8 * start));
    settled(w, end, false)
}

/// `Some(end)` when the word ending at lane `end` of `w` cannot go on: the next character is in
/// `w` and is ASCII (not an apostrophe, where o200k may add a contraction: `quote_matters`), or
/// is one of U+2000..=U+203F (`E2 80 xx`: spaces, dashes, quotes such as `’`, none a letter, mark
/// or number), the one non-ASCII neighbour English text has often.
#[inline(always)]
fn settled(w: u128, end: usize, quote_matters: bool) -> Option<usize> {
    if end >= 16 {
        return None;
    }
    let next = lane(w, end);
    if next < 0x80 {
        return (!(quote_matters && next == b'\'')).then_some(end);
    }
    let punctuation = next == 0xE2 && end + 2 < 16 && lane(w, end + 1) == 0x80 && lane(w, end + 2) & 0xC0 == 0x80;
    punctuation.then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &[u8]) -> u128 {
        let mut b = [0u8; 16];
        let n = s.len().min(16);
        b[..n].copy_from_slice(&s[..n]);
        u128::from_le_bytes(b)
    }

    #[test]
    fn lanes_in_range_are_exactly_the_bytes_in_range() {
        for byte in 0..=255u8 {
            let word = w(&[b'#', byte, b'#', 0xFF, byte, 0, 0x80, byte, 0x7F, byte, b'a', b'z', b'A', b'Z', byte, 1]);
            for (lo, hi) in [(b'a', b'z'), (b'A', b'Z'), (1, 0x7F), (b'0', b'9')] {
                let lanes = in_range(word, lo, hi);
                for i in 0..16 {
                    let b = lane(word, i);
                    assert_eq!(lanes >> (8 * i + 7) & 1 == 1, (lo..=hi).contains(&b), "{b:#x} in {lo}..={hi}");
                }
            }
        }
    }

    #[test]
    fn words_that_end_inside_the_load_and_the_rest_left_alone() {
        let o = |s: &[u8]| o200k(w(s));
        let c = |s: &[u8]| cl100k(w(s));
        assert_eq!(o(b" hello, world!!!"), Some(6));
        assert_eq!(o(b" something else."), Some(10));
        assert_eq!(o(b"HTMLFILEHTMLFILE"), None, "runs to the end of the load");
        assert_eq!(o(b"HTMLfileHTMLfile"), Some(8), "o200k splits before an upper after a lower");
        assert_eq!(o(b"HTMLFILEHTMLFIL "), Some(15));
        assert_eq!(o(b"helloWorld......"), Some(5), "o200k splits before an upper after a lower");
        assert_eq!(c(b"helloWorldxxxxxx"), None);
        assert_eq!(c(b"helloWorld......"), Some(10));
        assert_eq!(o(b"don't go anywher"), None, "a contraction may follow");
        assert_eq!(c(b"don't go anywher"), Some(3));
        assert_eq!(c(b"'tis not so.    "), None, "cl100k's contraction comes first");
        assert_eq!(o(b"caf\xc3\xa9 ok......."), None, "a letter past ASCII may continue it");
        assert_eq!(o(b"don\xe2\x80\x99t go......"), Some(3), "a curly quote ends it");
        assert_eq!(c(b" said\xe2\x80\x94and...."), Some(5), "so does a dash");
        assert_eq!(o(b"said\xe2\x80"), None, "unless the quote is cut off by the load");
        assert_eq!(o(b"\nhello  ........"), None, "a newline does not lead a word");
        assert_eq!(o(b"1abc    ........"), None, "nor does a digit");
        assert_eq!(o(b"  hello ........"), None, "two spaces: the first is its own piece");
        assert_eq!(o(b"$x = 1; ........"), Some(2));
    }
}
