//! A long run of one character (a megabyte of spaces, tabs, `a`) in a fraction of the time the
//! automaton takes on it, with the same answer.
//!
//! On such a run the `bpe` crate's encoder backtracks through every long token of that
//! character at each step (tekken's 1 MiB of spaces: ~140 ms). But the crate's own theory
//! (its README, Corollary III) says two valid encodings that share a token join into a valid
//! encoding, and the valid encoding of a text is unique. So when `T T` is the encoding of two
//! copies of a token `T` of the run, `T` repeated is valid, and when the encoding of the run's
//! last few thousand bytes begins with `T`, the whole run is `T` repeated followed by that
//! encoding. Both facts are checked with the crate itself on a few kilobytes; when either fails,
//! the run is encoded whole, as before.

use bpe::byte_pair_encoding::BytePairEncoding;

/// Runs shorter than this are encoded whole: the check costs more than it saves.
pub const MIN_RUN: usize = 64 * 1024;
/// The tail the crate encodes itself: long enough that its first token is the run's own.
const TAIL: usize = 4096;

/// Whether `piece` is one character repeated.
fn is_run(piece: &str) -> bool {
    let Some(c) = piece.chars().next() else { return false };
    let unit = c.len_utf8();
    piece.len() % unit == 0 && piece.as_bytes().chunks(unit).all(|u| u == &piece.as_bytes()[..unit])
}

/// (the repeated token, how many times, the encoding of the rest), or None to encode whole.
pub fn split(bpe: &BytePairEncoding, piece: &str) -> Option<(u32, usize, Vec<u32>)> {
    if piece.len() < MIN_RUN || !is_run(piece) {
        return None;
    }
    let bytes = piece.as_bytes();
    let t = *bpe.encode_via_backtracking(bytes.get(..TAIL)?).first()?;
    let len = bpe.token_len(t);
    if len == 0 || bpe.encode_via_backtracking(bytes.get(..2 * len)?) != [t, t] {
        return None;
    }
    // A tail of TAIL to TAIL + len bytes, so the rest is whole copies of T.
    let tail_len = TAIL + (bytes.len() - TAIL) % len;
    let tail = bpe.encode_via_backtracking(bytes.get(..tail_len)?);
    (tail.first() == Some(&t)).then(|| (t, (bytes.len() - tail_len) / len, tail))
}
