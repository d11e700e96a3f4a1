//! A piece -> count cache that lives across calls: what makes a server's millionth request
//! cheaper than its first. Pieces recur across texts (words, keys, indentation), and a hit costs
//! a hash of at most three words and one compare, where the BPE costs a walk of its automaton.
//!
//! One table per thread and encoding (`thread_local!`): no lock, no atomics, and a hit is exact:
//! a piece of up to 24 bytes is stored whole and compared byte for byte; a longer one is stored
//! by its length and xxh3-128 digest, as the per-text count cache keys texts. Two-way and
//! fixed in size (`SLOTS` entries of 32 bytes in pairs, 2 MiB a table), so it is bounded whatever the
//! traffic: a new piece replaces whatever held its slot.

use std::cell::RefCell;

use xxhash_rust::xxh3::xxh3_128;

use super::Pattern;

const BITS: u32 = 16;
const SLOTS: usize = 1 << BITS;
/// Pieces up to this many bytes are stored whole.
const INLINE: usize = 24;
/// Marks a slot keyed by digest.
const LONG: u32 = 1 << 31;

#[derive(Clone, Copy, Default)]
struct Slot {
    key: [u64; 3],
    /// 0: empty; 1..=24: an inline piece of `tag` bytes; `LONG | len`: a digest-keyed piece.
    tag: u32,
    count: u32,
}

pub struct Memo {
    slots: Box<[Slot]>,
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

/// Runs `f` with this thread's table for `pattern`, or with None when the table is already in
/// use up the stack (counting does not recurse, so in practice never) or the thread is ending.
pub fn with<R>(pattern: Pattern, mut f: impl FnMut(Option<&mut Memo>) -> R) -> R {
    let cell = table(pattern);
    let done = cell.try_with(|c| c.try_borrow_mut().ok().map(|mut slot| f(Some(slot.get_or_insert_with(Memo::new)))));
    match done {
        Ok(Some(r)) => r,
        _ => f(None),
    }
}

/// Drops this thread's table for `pattern` (the next use allocates a new, empty one).
pub fn forget(pattern: Pattern) {
    let cell = table(pattern);
    let _ = cell.try_with(|c| c.try_borrow_mut().map(|mut slot| *slot = None));
}

impl Memo {
    fn new() -> Self {
        Memo { slots: vec![Slot::default(); SLOTS].into_boxed_slice() }
    }

    /// The count of `piece`, from the table or from `count` (then remembered).
    ///
    /// Two-way: a key may sit in either slot of its pair, and a new one goes in the second after
    /// the first moves there, so of two pieces that keep meeting neither evicts the other.
    #[inline]
    pub fn count(&mut self, piece: &[u8], count: impl FnOnce(&[u8]) -> usize) -> usize {
        let (key, tag) = key_of(piece);
        let at = index(&key, tag) & !1;
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

#[inline(always)]
fn key_of(piece: &[u8]) -> ([u64; 3], u32) {
    if piece.len() <= INLINE {
        // Whole words where the piece has them, the tail zero-padded; the length is in the tag,
        // so "ab" and "ab\0" differ.
        let word = |k: usize| {
            let lo = k * 8;
            match piece.get(lo..lo + 8) {
                Some(w) => u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]),
                None => piece.get(lo..).unwrap_or(&[]).iter().rev().fold(0u64, |w, &b| (w << 8) | u64::from(b)),
            }
        };
        ([word(0), word(1), word(2)], piece.len() as u32 + 1)
    } else {
        let h = xxh3_128(piece);
        ([h as u64, (h >> 64) as u64, piece.len() as u64], LONG | (piece.len() as u32 & !LONG))
    }
}

/// The slot of a key. Multiplicative mixing wraps by design (a hash, not a count).
#[inline(always)]
fn index(key: &[u64; 3], tag: u32) -> usize {
    let h = key[0].wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ key[1].wrapping_mul(0xC2B2_AE3D_27D4_EB4F).rotate_left(23)
        ^ key[2].wrapping_mul(0x1656_67B1_9E37_79F9).rotate_left(41)
        ^ u64::from(tag);
    let h = (h ^ (h >> 31)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    (h >> (64 - BITS)) as usize
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
