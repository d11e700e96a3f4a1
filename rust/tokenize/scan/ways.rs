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
//!
//! A key is the whole of what makes a piece distinct: the caller fills the bytes past a piece with
//! 0xFF, which UTF-8 never holds, so pieces of different lengths have different keys and a
//! lookup is one compare a word (`Memo` says how keys are made). Why not a length tag beside the
//! key, as before: its compare doubled the work of a way, and the fold of both compares compiled
//! differently with fat LTO (xor and or chains, ~9 instructions a way, 15-19 % slower counts of
//! code and chat than the same source without LTO, `memo_profile`).

/// The first word of an empty slot's key: all bytes 0xFF, which no inline key's first word is
/// (its first byte is the piece's own). A digest's may be; `count` does not store such a key.
const EMPTY: u64 = u64::MAX;

/// A bucket's slots as columns (keys, then counts), so the ways are compared side by side.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket<const N: usize, const W: usize> {
    /// Newest first.
    keys: [[u64; N]; W],
    counts: [u32; W],
}

impl<const N: usize, const W: usize> Bucket<N, W> {
    /// Whether it holds a piece (slots fill from the front).
    fn holds_any(&self) -> bool {
        self.keys.first().is_some_and(|k| k[0] != EMPTY)
    }

    /// Whether every slot holds a piece (the next one in pushes the oldest out).
    fn is_full(&self) -> bool {
        self.keys.last().is_some_and(|k| k[0] != EMPTY)
    }

    /// The pieces it holds, oldest first.
    fn held(&self) -> impl Iterator<Item = ([u64; N], u32)> + '_ {
        self.keys.iter().zip(self.counts).rev().filter(|(k, _)| k[0] != EMPTY).map(|(k, c)| (*k, c))
    }
}

/// `1 << bits` buckets, growing (keeping what they hold) to `1 << max_bits`.
pub struct Ways<const N: usize, const W: usize> {
    buckets: Box<[Bucket<N, W>]>,
    /// `64 -` the table's bits (`1 << bits` buckets): a key's bucket is its hash shifted down
    /// this far. Kept rather than the bits, so a lookup does not derive it.
    shift: u32,
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
        Ways { buckets, shift: 64 - bits, max_bits, fills: 0, evictions: 0, held, in_use: 0 }
    }

    /// The count stored for `key`, if any.
    ///
    /// Every way is compared, each compare a bit of a mask, and the count read from the way the
    /// mask's lowest bit names: the only branch is hit or miss. A search that stopped at the
    /// match mispredicted about every other piece (the way a piece sits in changes from piece to
    /// piece), and a select of each way's count compiled to branches in some builds.
    ///
    /// Only the piece's own bucket: one that went to the neighbour (`home`) is found by `count`,
    /// the out-of-line path, so the inlined hit stays one bucket's compare.
    #[inline(always)]
    pub fn get(&self, key: &[u64; N]) -> Option<usize> {
        self.get_at(index(key, self.shift), key)
    }

    /// `get` in bucket `at`. (Written as the loop it is: the same compare as a separate
    /// function called with `map_or` compiled to ~10 more instructions a piece, measured.)
    #[inline(always)]
    fn get_at(&self, at: usize, key: &[u64; N]) -> Option<usize> {
        let b = self.buckets.get(at)?;
        let mut matched = 0u32;
        for (w, k) in b.keys.iter().enumerate() {
            let same = k.iter().zip(key).fold(true, |same, (a, b)| same & (a == b));
            matched |= u32::from(same) << w;
        }
        if matched == 0 {
            return None;
        }
        b.counts.get(matched.trailing_zeros() as usize).map(|&c| c as usize)
    }

    /// The count of `key`, from the table (its bucket or the neighbour's) or from `count` (then
    /// stored in front of the bucket `home` picks, pushing out the oldest of a full one). A key
    /// of all 0xFF bytes (an empty slot's; no piece has it) is counted and not stored.
    #[inline(always)]
    pub fn count(&mut self, key: [u64; N], piece: &[u8], count: impl FnOnce(&[u8]) -> usize) -> usize {
        let own = index(&key, self.shift);
        if let Some(n) = self.get_at(own, &key).or_else(|| self.get_at(own ^ 1, &key)) {
            return n;
        }
        let n = count(piece);
        let Ok(stored) = u32::try_from(n) else { return n };
        if key[0] == EMPTY {
            return n;
        }
        let at = home(&self.buckets, own);
        let Some(b) = self.buckets.get_mut(at) else { return n };
        let evicted = push(b, key, stored);
        self.in_use += usize::from(mark(&mut self.held, at));
        self.evictions += usize::from(evicted);
        self.fills += 1;
        // Grow when the new pieces since the last growth would fill an eighth of the slots per
        // way (a quarter for two ways, half for four), or sooner when buckets overflow (pieces
        // that keep meeting in one bucket would otherwise push each other out on every text):
        // past evictions of 1/256 of the slots. Why so few: a piece pushed out is counted again
        // on its next text, and after a server's other work that is a BPE whose own tables have
        // left the CPU's caches too. With 64 MB written between counts (`memo_profile`), growing
        // at 1/256 rather than 1/64 counted code 6-12 % faster, chat 1-6 %, the rest even; in
        // cache, even. Growing later instead (denser tables) lost 8-15 %.
        let slots = self.buckets.len() * W;
        if (self.fills > slots / 8 * W || self.evictions > slots / 256) && self.bits() < self.max_bits {
            self.grow();
        }
        n
    }

    /// Doubles the table, rehashing what it holds (oldest first, so each keeps its order).
    #[cold]
    fn grow(&mut self) {
        let bits = self.bits() + 1;
        let mut buckets = empty::<N, W>(bits);
        for b in self.buckets.iter() {
            for (key, count) in b.held() {
                let at = home(&buckets, index(&key, 64 - bits));
                if let Some(to) = buckets.get_mut(at) {
                    push(to, key, count);
                }
            }
        }
        self.held = held_in(&buckets);
        self.in_use = self.held.iter().map(|w| w.count_ones() as usize).sum();
        self.buckets = buckets;
        self.shift = 64 - bits;
        self.fills = 0;
        self.evictions = 0;
    }

    /// The table has `1 << bits` buckets.
    fn bits(&self) -> u32 {
        64 - self.shift
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
                x ^= self.buckets.get(at).map_or(0, |b| b.keys.first().map_or(0, |k| k[0]));
            }
        }
        x
    }

    /// The bucket `key` hashes to.
    #[cfg(test)]
    pub fn bucket_of(&self, key: &[u64; N]) -> usize {
        index(key, self.shift)
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

/// Puts `key` and its count in front of bucket `b`; whether a stored piece fell off the end.
#[inline]
fn push<const N: usize, const W: usize>(b: &mut Bucket<N, W>, key: [u64; N], count: u32) -> bool {
    let evicted = b.is_full();
    b.keys.rotate_right(1);
    b.counts.rotate_right(1);
    if let (Some(k), Some(c)) = (b.keys.first_mut(), b.counts.first_mut()) {
        (*k, *c) = (key, count);
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
    vec![Bucket { keys: [[EMPTY; N]; W], counts: [0; W] }; 1 << bits].into_boxed_slice()
}

/// The bucket of a key: the top bits of each word times an odd constant (Fibonacci hashing; for
/// the short table's one word, one multiply), so every byte of the key moves them. Multiplicative
/// mixing wraps by design (a hash, not a count).
#[inline(always)]
fn index<const N: usize>(key: &[u64; N], shift: u32) -> usize {
    const MIX: [u64; 3] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9];
    // Not rotated: a product's top bits depend on every bit of its word, a rotated one's not.
    let h = key.iter().zip(MIX.iter()).fold(0u64, |h, (&w, &m)| h ^ w.wrapping_mul(m));
    (h >> shift) as usize
}
