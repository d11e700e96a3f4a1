//! The piece cache's tables: set-associative, one 64-byte cache line a bucket.
//!
//! A bucket holds `W` slots of `N` key words (the short table: four slots of one word; the long
//! table: two of three), aligned to its line, so a lookup waits on one load from memory.
//! Why aligned: the slots were a flat array, and an allocation that size sits 16 bytes past a
//! page boundary, so every pair of the long table and half of the short table's straddled two
//! lines, and each lookup outside the L2 cache waited on two. Why four short ways: a pair
//! overflows at a quarter full (the birthday bound), so the two-way short table grew to 512 KiB
//! for the few thousand short pieces of an English text; four ways fill to half first. A piece
//! whose bucket is full goes to the neighbouring one if that has room (`home`): two
//! buckets overflow together far more rarely than one, so recurring pieces stop evicting each
//! other. Buckets that hold a piece are marked (`held`) so `read_through` can load just those.

/// One entry: the key (`N` words), then its tag (0: empty; else set by the caller, who compares
/// it with the key, so a hit is exact) in the low half of one word and the count in the high
/// half: a lookup loads the word to compare the tag, so the count comes with it.
#[derive(Clone, Copy)]
pub struct Slot<const N: usize> {
    key: [u64; N],
    tag_count: u64,
}

impl<const N: usize> Slot<N> {
    fn new(key: [u64; N], tag: u32, count: u32) -> Self {
        Slot { key, tag_count: u64::from(tag) | u64::from(count) << 32 }
    }

    fn tag(&self) -> u32 {
        self.tag_count as u32
    }
}

/// A bucket's slots as columns (keys, then tags and counts), so the ways are compared side by
/// side.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket<const N: usize, const W: usize> {
    /// Newest first.
    keys: [[u64; N]; W],
    tag_counts: [u64; W],
}

impl<const N: usize, const W: usize> Bucket<N, W> {
    fn slot(&self, w: usize) -> Option<Slot<N>> {
        Some(Slot { key: *self.keys.get(w)?, tag_count: *self.tag_counts.get(w)? })
    }

    /// Whether it holds a piece (slots fill from the front).
    fn holds_any(&self) -> bool {
        self.tag_counts.first().is_some_and(|&tc| tc as u32 != EMPTY_TAG)
    }

    /// Whether every slot holds a piece (the next one in pushes the oldest out).
    fn is_full(&self) -> bool {
        self.tag_counts.last().is_some_and(|&tc| tc as u32 != EMPTY_TAG)
    }
}

pub const EMPTY_TAG: u32 = 0;

/// `1 << bits` buckets, growing (keeping what they hold) to `1 << max_bits`.
pub struct Ways<const N: usize, const W: usize> {
    buckets: Box<[Bucket<N, W>]>,
    bits: u32,
    max_bits: u32,
    /// Pieces stored since the table last grew.
    fills: usize,
    /// Of those, the ones that pushed a piece out.
    evictions: usize,
    /// One bit a bucket: set when it holds a piece (`read_through` reads only those).
    held: Vec<u64>,
    /// How many bits of `held` are set.
    in_use: usize,
}

impl<const N: usize, const W: usize> Ways<N, W> {
    pub fn new(bits: u32, max_bits: u32) -> Self {
        let buckets = empty(bits);
        let held = held_in(&buckets);
        Ways { buckets, bits, max_bits, fills: 0, evictions: 0, held, in_use: 0 }
    }

    /// The count stored for `key` and `tag`, if any.
    ///
    /// Every way is compared and the matching one's count kept, with no branch on which way it
    /// is: a search that stopped at the match mispredicted about every other piece (the way a
    /// piece sits in changes from piece to piece). A count is never 0 (pieces are not empty), so
    /// 0 means none matched.
    ///
    /// Only the piece's own bucket: one that went to the neighbour (`home`) is found by `count`,
    /// the out-of-line path, so the inlined hit stays one bucket's compare.
    #[inline(always)]
    pub fn get(&self, key: &[u64; N], tag: u32) -> Option<usize> {
        self.get_at(index(key, tag, self.bits), key, tag)
    }

    /// `get` in bucket `at`. (Written as the loop it is: the same compare as a separate
    /// function called with `map_or` compiled to ~10 more instructions a piece, measured.)
    #[inline(always)]
    fn get_at(&self, at: usize, key: &[u64; N], tag: u32) -> Option<usize> {
        let b = self.buckets.get(at)?;
        let mut found = 0u64;
        for (k, &tc) in b.keys.iter().zip(&b.tag_counts) {
            let differ = k.iter().zip(key).fold((tc ^ u64::from(tag)) & u64::from(u32::MAX), |d, (a, b)| d | (a ^ b));
            found |= tc & u64::from(differ == 0).wrapping_neg();
        }
        let count = (found >> 32) as usize;
        (count != 0).then_some(count)
    }

    /// The count of `key`, from the table (its bucket or the neighbour's) or from `count` (then
    /// stored in front of the bucket `home` picks, pushing out the oldest of a full one).
    #[inline(always)]
    pub fn count(&mut self, key: [u64; N], tag: u32, piece: &[u8], count: impl FnOnce(&[u8]) -> usize) -> usize {
        let own = index(&key, tag, self.bits);
        if let Some(n) = self.get_at(own, &key, tag).or_else(|| self.get_at(own ^ 1, &key, tag)) {
            return n;
        }
        let n = count(piece);
        let Ok(stored) = u32::try_from(n) else { return n };
        let at = home(&self.buckets, own);
        let Some(b) = self.buckets.get_mut(at) else { return n };
        let evicted = push(b, Slot::new(key, tag, stored));
        self.in_use += usize::from(mark(&mut self.held, at));
        self.evictions += usize::from(evicted);
        self.fills += 1;
        // Grow when the new pieces since the last growth would fill an eighth of the slots per
        // way (a quarter for two ways, half for four), or sooner when buckets overflow (pieces
        // that keep meeting in one bucket would otherwise push each other out on every text).
        let slots = self.buckets.len() * W;
        if (self.fills > slots / 8 * W || self.evictions > slots / 64) && self.bits < self.max_bits {
            self.grow();
        }
        n
    }

    /// Doubles the table, rehashing what it holds (oldest first, so each keeps its order).
    #[cold]
    fn grow(&mut self) {
        let bits = self.bits + 1;
        let mut buckets = empty::<N, W>(bits);
        for b in self.buckets.iter() {
            for slot in (0..W).rev().filter_map(|w| b.slot(w)).filter(|s| s.tag() != EMPTY_TAG) {
                let at = home(&buckets, index(&slot.key, slot.tag(), bits));
                if let Some(to) = buckets.get_mut(at) {
                    push(to, slot);
                }
            }
        }
        self.held = held_in(&buckets);
        self.in_use = self.held.iter().map(|w| w.count_ones() as usize).sum();
        self.buckets = buckets;
        self.bits = bits;
        self.fills = 0;
        self.evictions = 0;
    }

    /// How many buckets hold a piece.
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// Reads one word of every bucket that holds a piece, first to last, each load independent
    /// of the others: what the table holds comes into the CPU's caches with many loads in flight
    /// at once, where the count's lookups would wait on them one at a time.
    pub fn read_through(&self) -> u64 {
        let mut x = 0;
        for (i, &word) in self.held.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let at = i * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                x ^= self.buckets.get(at).map_or(0, |b| b.tag_counts.first().copied().unwrap_or(0));
            }
        }
        x
    }

    /// The bucket `key` and `tag` hash to.
    #[cfg(test)]
    pub fn bucket_of(&self, key: &[u64; N], tag: u32) -> usize {
        index(key, tag, self.bits)
    }

    /// Whether `held` and `in_use` say what the buckets hold.
    #[cfg(test)]
    pub fn held_is_exact(&self) -> bool {
        let holding = self.buckets.iter().filter(|b| b.holds_any()).count();
        held_in(&self.buckets) == self.held && self.in_use == holding
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.buckets.len() * W
    }
}

/// Where a new piece whose bucket is `at` goes: there, or in the neighbouring bucket (the other
/// half of the same 128-byte pair) when `at` is full and the neighbour is not. Why: with two long
/// ways a bucket, three recurring pieces that meet in one pushed each other out on every text,
/// each a BPE again (at the sizes a long text's pieces grow the table to, about a hundred of them
/// a pass on English), and the overflows grew the table, a rehash of megabytes, in the middle of a
/// count; two neighbours together overflow far more rarely.
fn home<const N: usize, const W: usize>(buckets: &[Bucket<N, W>], at: usize) -> usize {
    if buckets.get(at).is_some_and(Bucket::is_full) && buckets.get(at ^ 1).is_some_and(|b| !b.is_full()) {
        at ^ 1
    } else {
        at
    }
}

/// Puts `slot` in front of bucket `b`; whether a stored piece fell off the end.
#[inline]
fn push<const N: usize, const W: usize>(b: &mut Bucket<N, W>, slot: Slot<N>) -> bool {
    let evicted = b.is_full();
    b.keys.rotate_right(1);
    b.tag_counts.rotate_right(1);
    if let (Some(key), Some(tc)) = (b.keys.first_mut(), b.tag_counts.first_mut()) {
        (*key, *tc) = (slot.key, slot.tag_count);
    }
    evicted
}

/// The `held` bits of `buckets`.
fn held_in<const N: usize, const W: usize>(buckets: &[Bucket<N, W>]) -> Vec<u64> {
    let mut held = vec![0u64; buckets.len().div_ceil(64)];
    for (at, _) in buckets.iter().enumerate().filter(|(_, b)| b.holds_any()) {
        mark(&mut held, at);
    }
    held
}

/// Sets bucket `at`'s bit in `held`; whether it was clear.
fn mark(held: &mut [u64], at: usize) -> bool {
    let Some(w) = held.get_mut(at / 64) else { return false };
    let bit = 1 << (at % 64);
    let new = *w & bit == 0;
    *w |= bit;
    new
}

fn empty<const N: usize, const W: usize>(bits: u32) -> Box<[Bucket<N, W>]> {
    let slot = Slot::new([0; N], EMPTY_TAG, 0);
    vec![Bucket { keys: [slot.key; W], tag_counts: [slot.tag_count; W] }; 1 << bits].into_boxed_slice()
}

/// The bucket of a key. Multiplicative mixing wraps by design (a hash, not a count).
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
