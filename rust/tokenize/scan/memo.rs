//! A piece -> count cache that lives across calls: what makes a server's millionth request
//! cheaper than its first. Pieces recur across texts (words, keys, indentation), and a hit costs
//! a hash of a word or three and one compare, where the BPE costs a walk of its automaton.
//!
//! One cache per thread and encoding (`thread_local!`): no lock, no atomics, and a hit is exact.
//! Two tables, so the common case touches little memory (its first load was a third of a count's
//! time when every piece had a 32-byte slot):
//! - pieces of up to 8 bytes (most of them: words with their space, punctuation, digits), stored
//!   whole in 16-byte slots, 64 Ki of them (1 MiB);
//! - longer ones in 32-byte slots, 16 Ki of them (512 KiB): up to 24 bytes stored whole, beyond
//!   that by length and xxh3-128 digest, as the per-text count cache keys texts.
//!
//! Both are two-way and fixed in size, so the cache is bounded whatever the traffic: a new piece
//! replaces the older of its pair.

use std::cell::RefCell;

use xxhash_rust::xxh3::xxh3_128;

use super::Pattern;

/// Pieces up to this many bytes are stored whole in the long table.
const INLINE: usize = 24;
/// Marks a slot keyed by digest.
const LONG: u32 = 1 << 31;

/// One entry: the key (`N` words), its tag (0: empty; `len + 1` for a piece stored whole;
/// `LONG | len` for a digest) and the count.
#[derive(Clone, Copy)]
struct Slot<const N: usize> {
    key: [u64; N],
    tag: u32,
    count: u32,
}

/// A two-way set-associative table of `1 << bits` slots.
struct Ways<const N: usize> {
    slots: Box<[Slot<N>]>,
    bits: u32,
}

impl<const N: usize> Ways<N> {
    fn new(bits: u32) -> Self {
        Ways { slots: vec![Slot { key: [0; N], tag: 0, count: 0 }; 1 << bits].into_boxed_slice(), bits }
    }

    /// A key may sit in either slot of its pair; a new one goes first and the first moves
    /// second, so of two pieces that keep meeting neither evicts the other.
    #[inline(always)]
    fn count(&mut self, key: [u64; N], tag: u32, piece: &[u8], count: impl FnOnce(&[u8]) -> usize) -> usize {
        let at = index(&key, tag, self.bits) & !1;
        let Some(pair) = self.slots.get_mut(at..at + 2) else { return count(piece) };
        for slot in pair.iter() {
            if slot.tag == tag && slot.key == key {
                return slot.count as usize;
            }
        }
        let n = count(piece);
        if let Ok(stored) = u32::try_from(n) {
            pair[1] = pair[0];
            pair[0] = Slot { key, tag, count: stored };
        }
        n
    }
}

pub struct Memo {
    short: Ways<1>,
    long: Ways<3>,
}

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
        Memo { short: Ways::new(16), long: Ways::new(14) }
    }

    /// The count of `piece`, from the cache or from `count` (then remembered).
    #[inline]
    pub fn count(&mut self, piece: &[u8], count: impl FnOnce(&[u8]) -> usize) -> usize {
        if piece.len() <= 8 {
            return self.short.count([word(piece, 0)], piece.len() as u32 + 1, piece, count);
        }
        if piece.len() <= INLINE {
            let key = [word(piece, 0), word(piece, 1), word(piece, 2)];
            return self.long.count(key, piece.len() as u32 + 1, piece, count);
        }
        let h = xxh3_128(piece);
        let key = [h as u64, (h >> 64) as u64, piece.len() as u64];
        self.long.count(key, LONG | (piece.len() as u32 & !LONG), piece, count)
    }
}

/// Bytes `8k..8k+8` of `piece` as a little-endian word, zero-padded past its end (the length is
/// in the tag, so "ab" and "ab\0" differ).
#[inline(always)]
fn word(piece: &[u8], k: usize) -> u64 {
    let lo = k * 8;
    match piece.get(lo..lo + 8) {
        Some(w) => u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]),
        None => piece.get(lo..).unwrap_or(&[]).iter().rev().fold(0u64, |w, &b| (w << 8) | u64::from(b)),
    }
}

/// The slot of a key. Multiplicative mixing wraps by design (a hash, not a count).
#[inline(always)]
fn index<const N: usize>(key: &[u64; N], tag: u32, bits: u32) -> usize {
    const MIX: [u64; 3] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9];
    let mut h = u64::from(tag);
    for (k, (&w, &m)) in key.iter().zip(MIX.iter()).enumerate() {
        h ^= w.wrapping_mul(m).rotate_left(23 * k as u32);
    }
    let h = (h ^ (h >> 31)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    (h >> (64 - bits)) as usize
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
