//! A piece -> count cache that lives across calls: what makes a server's millionth request
//! cheaper than its first. Pieces recur across texts (words, keys, indentation), and a hit costs
//! a hash of a word or three and one compare, where the BPE costs a walk of its automaton.
//!
//! One cache per thread and encoding (`thread_local!`): no lock, no atomics, and a hit is exact.
//! Two tables, so the common case touches little memory:
//! - pieces of up to 8 bytes (most of them: words with their space, punctuation, digits), stored
//!   whole in 16-byte slots;
//! - longer ones in 32-byte slots: up to 24 bytes stored whole, beyond that by length and
//!   xxh3-128 digest, as the per-text count cache keys texts.
//!
//! Both are set-associative in 64-byte buckets (`ways`: four short slots or two long ones a
//! bucket) and start small: a table doubles (keeping what it holds) each time it has taken in
//! new pieces for a quarter (two ways) or half (four ways) of its slots, or its buckets overflow,
//! up to a fixed ceiling (64 Ki short slots, 1 MiB; 128 Ki long ones, 4 MiB). Why: a thread counting one kind of text
//! keeps a few thousand pieces, and a table sized to them stays in the nearer caches (a first
//! load into a 1 MiB table was a third of a count); a thread seeing Japanese or Chinese text,
//! whose long runs are each a piece, gets room for tens of thousands of them (at 16 Ki long
//! slots, many of a CJK text's pieces were evicted before they came back, and each miss is a
//! BPE of ~30 bytes). Bounded whatever the traffic: at the ceiling a new piece replaces the oldest
//! of its bucket.

use std::cell::RefCell;

use crate::hash::xxh3_128;

use super::ways::Ways;
use super::Pattern;

/// Pieces up to this many bytes are stored whole in the long table.
const INLINE: usize = 24;
/// A text of at least this many bytes a bucket in use reads the tables through first.
const BRING_IN_BYTES: usize = 8;

/// The keys. A piece is UTF-8 (the scanners take `&str`), and UTF-8 never holds the byte 0xFF,
/// so a key is the piece's bytes as little-endian words with 0xFF in every byte past its end:
/// two pieces have the same key only when they are the same bytes, whatever their lengths, and
/// no inline key starts with a word of all 0xFF (an empty slot). A piece longer than `INLINE` is
/// keyed by its xxh3-128 digest and `digest_tail(len)`, which no inline key's third word is: that
/// word is either all 0xFF (pieces of up to 16 bytes; a digest's tail has a zero top byte) or
/// has the piece's byte 16, never 0xFF, as its low byte (the tail's low byte is 0xFF).
pub struct Memo {
    /// Four ways of one word: pieces of up to 8 bytes.
    short: Ways<1, 4>,
    /// Two ways of three words: longer pieces.
    long: Ways<3, 2>,
}

/// The third word of a digest's key (lengths past 2^56 bytes, which no text has, share one).
fn digest_tail(len: usize) -> u64 {
    u64::try_from(len).map_or(u64::MAX, |l| l.saturating_mul(256) | 0xFF)
}

/// The first `keep` (1..=8) bytes of `w`, with 0xFF past them.
#[inline(always)]
fn filled(w: u64, keep: usize) -> u64 {
    // One load from a table of nine words, where the mask computed from `keep` was nine
    // instructions on every lookup (a clamp, shifts and a select).
    w | FILL[keep.min(8)]
}

/// `FILL[k]`: 0xFF in every byte past the first `k` (1..=8); 0 as 1.
const FILL: [u64; 9] = {
    let mut fill = [0u64; 9];
    let mut k = 0;
    while k < 8 {
        // k = 0 keeps one byte, as 1 does.
        let keep = if k == 0 { 1 } else { k };
        fill[k] = !(u64::MAX >> (64 - 8 * keep));
        k += 1;
    }
    fill
};

thread_local! {
    static O200K: RefCell<Option<Memo>> = const { RefCell::new(None) };
    static CL100K: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

type Table = std::thread::LocalKey<RefCell<Option<Memo>>>;

fn table(pattern: Pattern) -> &'static Table {
    match pattern {
        Pattern::O200k => &O200K,
        Pattern::Cl100k => &CL100K,
    }
}

/// Runs `f` with this thread's cache for `pattern`, or with None when it is already in use up
/// the stack (counting does not recurse, so in practice never) or the thread is ending.
pub fn with<R>(pattern: Pattern, mut f: impl FnMut(Option<&mut Memo>) -> R) -> R {
    let cell = table(pattern);
    let done = cell.try_with(|c| c.try_borrow_mut().ok().map(|mut slot| f(Some(slot.get_or_insert_with(Memo::new)))));
    match done {
        Ok(Some(r)) => r,
        _ => f(None),
    }
}

/// Drops this thread's cache for `pattern` (the next use allocates a new, empty one).
pub fn forget(pattern: Pattern) {
    let cell = table(pattern);
    let _ = cell.try_with(|c| c.try_borrow_mut().map(|mut slot| *slot = None));
}

impl Memo {
    fn new() -> Self {
        // Buckets of 64 bytes: 64 KiB to 1 MiB short, 32 KiB to 4 MiB long.
        Memo { short: Ways::new(10, 14), long: Ways::new(9, 16) }
    }

    /// The count of `piece`, from the cache or from `count` (then remembered).
    #[cfg(test)]
    pub fn count(&mut self, piece: &[u8], count: impl FnOnce(&[u8]) -> usize) -> usize {
        self.count_in(piece, 0, piece.len(), count)
    }

    /// The cached count of the piece of `len` (1..=8) bytes at `s[start..]`, when the text has
    /// eight bytes from `start` (else None, as for a miss): the hit path of a count, one load of
    /// the text and one bucket, small enough to inline into the scanning loop. Everything else
    /// (misses, longer pieces, the last bytes of a text) goes through `count_in`.
    #[inline(always)]
    pub fn short_hit(&self, s: &[u8], start: usize, len: usize) -> Option<usize> {
        let w = s.get(start..start.saturating_add(8))?;
        self.short.get(&[filled(load(w), len)])
    }

    /// The cached count of the piece of `len` (1..=15) bytes that starts `b` (the text's next
    /// sixteen bytes): the key `count_in` gives it, read from `b` as two words.
    #[inline(always)]
    pub fn key_hit(&self, b: &[u8; 16], len: usize) -> Option<usize> {
        let (lo, hi) = b.split_at(8);
        let (lo, hi) = (load(lo), load(hi));
        if len <= 8 {
            self.short.get(&[filled(lo, len)])
        } else {
            self.long.get(&[lo, filled(hi, len - 8), u64::MAX])
        }
    }

    /// Before the count of a text of `len` bytes: when the text has more bytes than the tables
    /// have buckets in use, loads each of those buckets once. Why: between two counts a server
    /// does other work that pushes the tables out of the CPU's caches, and then each distinct
    /// piece of the text waits on memory for its bucket, one at a time (a cached piece is too
    /// many instructions for the next one's miss to overlap); the same lines loaded in a loop
    /// of independent loads overlap one another. Measured in `memo_profile` with 16 MB written
    /// between passes, and without (the tables still cached): see the README's Benchmarks.
    #[inline]
    pub fn bring_in(&self, len: usize) {
        if len >= self.short.in_use().saturating_add(self.long.in_use()).saturating_mul(BRING_IN_BYTES) {
            std::hint::black_box(self.short.read_through() ^ self.long.read_through());
        }
    }

    /// The tables' sizes in slots (short, long), for the profile.
    #[cfg(test)]
    pub fn slots(&self) -> (usize, usize) {
        (self.short.len(), self.long.len())
    }

    /// The count of the piece `s[start..end]`. Taking the whole text lets a key be read as whole
    /// words where the text goes on past the piece, masked to its length. Out of line: the
    /// common hit is `short_hit`.
    #[inline(never)]
    pub fn count_in(&mut self, s: &[u8], start: usize, end: usize, count: impl FnOnce(&[u8]) -> usize) -> usize {
        let Some(piece) = s.get(start..end) else { return 0 };
        if piece.len() <= 8 {
            return self.short.count([word_in(s, start, piece, 0)], piece, count);
        }
        if piece.len() <= INLINE {
            let key = [word_in(s, start, piece, 0), word_in(s, start, piece, 1), word_in(s, start, piece, 2)];
            return self.long.count(key, piece, count);
        }
        let h = xxh3_128(piece);
        self.long.count([h as u64, (h >> 64) as u64, digest_tail(piece.len())], piece, count)
    }
}

/// `word(piece, k)` for `piece` = `s[start..]`'s first bytes, as one load of `s`: of the eight
/// bytes from the word's start where the text has them (the usual case), else of the text's
/// last eight, shifted down (a piece at the end of a text of 8 bytes or more).
#[inline(always)]
fn word_in(s: &[u8], start: usize, piece: &[u8], k: usize) -> u64 {
    let lo = k * 8;
    let keep = piece.len().saturating_sub(lo).min(8);
    if keep == 0 {
        return u64::MAX;
    }
    let from = start.saturating_add(lo);
    if let Some(w) = s.get(from..from.saturating_add(8)) {
        return filled(load(w), keep);
    }
    let tail = s.len().saturating_sub(8);
    match s.get(tail..) {
        // The word's bytes are the last `s.len() - from` (< 8) of these.
        Some(w) if w.len() == 8 && from >= tail => filled(load(w) >> (8 * (from - tail) as u32), keep),
        _ => word(piece, k),
    }
}

/// The sixteen bytes of `s` from `at`, when the text has them.
#[inline(always)]
pub fn load16(s: &[u8], at: usize) -> Option<&[u8; 16]> {
    s.get(at..)?.first_chunk::<16>()
}

/// Up to sixteen bytes of `s` from `at`, zero past the text's end (`key_hit` keeps only the
/// piece's own bytes and fills the rest, so the key is the same as from `load16`).
#[inline]
pub fn padded16(s: &[u8], at: usize) -> [u8; 16] {
    let mut b = [0u8; 16];
    let rest = s.get(at..).unwrap_or(&[]);
    let n = rest.len().min(16);
    b[..n].copy_from_slice(&rest[..n]);
    b
}

#[inline(always)]
fn load(w: &[u8]) -> u64 {
    match w.first_chunk::<8>() {
        Some(b) => u64::from_le_bytes(*b),
        None => 0,
    }
}

/// Bytes `8k..8k+8` of `piece` as a little-endian word, 0xFF past its end (so "ab" and "ab\0"
/// differ).
#[inline(always)]
fn word(piece: &[u8], k: usize) -> u64 {
    let lo = k * 8;
    match piece.get(lo..lo + 8) {
        Some(w) => u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]),
        None => piece.get(lo..).unwrap_or(&[]).iter().rev().fold(u64::MAX, |w, &b| (w << 8) | u64::from(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_exact_and_misses_count() {
        let mut memo = Memo::new();
        let mut calls = 0;
        let mut count = |p: &[u8]| {
            calls += 1;
            p.len()
        };
        let long = "x".repeat(100);
        for piece in ["a", "ab", "hello", " world", &long, "a", "hello", &long] {
            assert_eq!(memo.count(piece.as_bytes(), &mut count), piece.len());
        }
        assert_eq!(calls, 5);
        // Pieces that differ only past the first word, or in length with trailing zero bytes.
        assert_eq!(memo.count(b"abcdefgh1", |_| 1), 1);
        assert_eq!(memo.count(b"abcdefgh2", |_| 2), 2);
        assert_eq!(memo.count(b"ab\0", |_| 3), 3);
        assert_eq!(memo.count(b"ab", |_| 99), 2);
    }

    #[test]
    fn the_inlined_hit_finds_what_count_in_stored() {
        // Every length the count loop looks up inline (1..=15), short table and long, read from
        // the text and from a padded copy: the key is the one `count_in` stored under.
        let text = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP";
        for len in 1..16 {
            let mut memo = Memo::new();
            assert_eq!(memo.count_in(text, 3, 3 + len, |_| 40 + len), 40 + len);
            let b = load16(text, 3).copied().unwrap_or_default();
            assert_eq!(memo.key_hit(&b, len), Some(40 + len), "len {len}");
            assert_eq!(memo.key_hit(&padded16(&text[..3 + len], 3), len), Some(40 + len), "len {len}, padded");
            if len <= 8 {
                assert_eq!(memo.short_hit(text, 3, len), Some(40 + len), "len {len}, short");
            }
        }
    }

    #[test]
    fn a_key_read_from_the_text_is_the_key_of_the_piece_alone() {
        // The same piece, once at the end of a text (read byte by byte) and once with text after
        // it (read as whole words, masked): the second is a hit on the first.
        let mut memo = Memo::new();
        for piece in ["a", "abcdefg", "abcdefgh", "abcdefghi", "x".repeat(23).as_str(), "y".repeat(24).as_str(), "z".repeat(40).as_str()] {
            assert_eq!(memo.count(piece.as_bytes(), |p| p.len()), piece.len());
            let text = format!("{piece}{}", "\u{0}".repeat(30) + "tail");
            assert_eq!(memo.count_in(text.as_bytes(), 0, piece.len(), |_| 999), piece.len(), "{piece:?}");
            let text = format!("__{piece}__________________________");
            assert_eq!(memo.count_in(text.as_bytes(), 2, 2 + piece.len(), |_| 999), piece.len(), "{piece:?}");
        }
    }

    #[test]
    fn the_tables_grow_to_their_ceiling_and_keep_what_they_hold() {
        let mut memo = Memo::new();
        let (short0, long0) = (memo.short.len(), memo.long.len());
        let pieces: Vec<String> = (0..300_000u32).map(|i| format!("{i:x}")).collect();
        for p in &pieces {
            assert_eq!(memo.count(p.as_bytes(), |p| p.len() + 1), p.len() + 1);
        }
        assert!(memo.short.len() > short0 && memo.short.len() == 1 << 16, "{}", memo.short.len());
        assert_eq!(memo.long.len(), long0, "no long piece yet");
        // What was stored just before the last growth is still there (a hit, not a recount).
        let recent = &pieces[pieces.len() - 100..];
        let misses = recent.iter().filter(|p| memo.count(p.as_bytes(), |_| 0) == 0).count();
        assert!(misses < 10, "{misses} of 100 recent pieces lost");
        let longs: Vec<String> = (0..200_000u32).map(|i| format!("{i:040}")).collect();
        for p in &longs {
            assert_eq!(memo.count(p.as_bytes(), |p| p.len()), 40);
        }
        assert_eq!(memo.long.len(), 1 << 17);
        // Every answer stays exact at the ceiling, hit or miss.
        for p in pieces.iter().step_by(97) {
            assert_eq!(memo.count(p.as_bytes(), |p| p.len() + 1), p.len() + 1);
        }
    }

    #[test]
    fn the_buckets_in_use_are_known_through_growth() {
        // `bring_in` reads the buckets the bitmap marks: it must mark exactly those that hold a
        // piece, as pieces arrive, as buckets overflow and after each doubling.
        let mut memo = Memo::new();
        let (short0, long0) = memo.slots();
        assert!(memo.short.held_is_exact() && memo.short.in_use() == 0);
        for i in 0..40_000u32 {
            memo.count(format!("{i:x}").as_bytes(), |p| p.len());
            memo.count(format!("{i:020}").as_bytes(), |p| p.len());
            if i % 4999 == 0 {
                assert!(memo.short.held_is_exact() && memo.long.held_is_exact(), "after {i}");
            }
        }
        assert!(memo.slots().0 > short0 && memo.slots().1 > long0, "both tables grew");
        assert!(memo.short.held_is_exact() && memo.long.held_is_exact());
        assert!(memo.short.in_use() > 1000 && memo.long.in_use() > 1000);
        // Reading them through answers nothing differently.
        memo.bring_in(usize::MAX);
        assert_eq!(memo.count(b"1f", |_| 0), 2);
    }

    #[test]
    fn a_key_that_reads_as_an_empty_slot_is_counted_and_not_stored() {
        // An empty slot's first word is all 0xFF; no piece's key starts so (its first byte is
        // the piece's own), but a digest's low word could: such a key must not be stored, or
        // the bucket would read as empty and the piece be lost to the next push.
        let mut ways: Ways<3, 2> = Ways::new(9, 9);
        let mut bpe = 0;
        for _ in 0..3 {
            let n = ways.count([u64::MAX, 1, 2], b"piece", |_| {
                bpe += 1;
                5
            });
            assert_eq!(n, 5);
        }
        assert_eq!(bpe, 3, "counted every time");
        assert!(ways.held_is_exact() && ways.in_use() == 0);
        // Pieces of different lengths never share a key: their bytes past the shorter one's end
        // differ from the 0xFF that fills its key.
        let mut memo = Memo::new();
        let pieces = [(&b"ab"[..], 1), (b"ab\0", 2), (b"ab\0\0\0\0\0\0", 3), (b"ab\0\0\0\0\0\0\0", 4)];
        for (piece, n) in pieces {
            assert_eq!(memo.count(piece, |_| n), n);
        }
        for (piece, n) in pieces {
            assert_eq!(memo.count(piece, |_| 99), n, "{piece:?}");
        }
    }

    #[test]
    fn three_pieces_of_one_long_bucket_stop_pushing_each_other_out() {
        // Two ways a bucket: a third recurring piece used to evict one of the other two on
        // every pass, each time a BPE again. It now goes to the neighbouring bucket.
        let mut ways: Ways<3, 2> = Ways::new(9, 9);
        let key = |i: u64| [i, !i, 7];
        let first = ways.bucket_of(&key(0));
        let same: Vec<u64> = (0..).filter(|&i| ways.bucket_of(&key(i)) == first).take(3).collect();
        let mut bpe = 0;
        for _ in 0..5 {
            for &i in &same {
                let n = ways.count(key(i), b"piece", |_| {
                    bpe += 1;
                    i as usize + 1
                });
                assert_eq!(n, i as usize + 1);
            }
        }
        assert_eq!(bpe, 3, "each piece counted once, then found");
    }

    #[test]
    fn the_table_is_per_pattern_and_reentry_counts_without_it() {
        let n = with(Pattern::O200k, |m| {
            assert!(m.is_some());
            with(Pattern::O200k, |inner| {
                assert!(inner.is_none());
                7
            })
        });
        assert_eq!(n, 7);
        assert!(with(Pattern::Cl100k, |m| m.is_some()));
    }
}
