//! The count of every two-byte piece, from the vocabulary: one bit a pair (8 KiB), set when the
//! two bytes are one token. A piece of one byte is one token (every byte is a token of a
//! byte-level vocabulary), and a piece of two is one token when the pair is in the vocabulary
//! and two otherwise: BPE merges the pair when it is a token and has nothing else to merge.
//!
//! Why: pieces of one or two bytes (punctuation, a space, `a`, `\n`, two digits) are a third to
//! two fifths of the pieces of chat and code. Looked up in the piece cache, each paid a hash, a
//! bucket and a compare of four ways, and filled slots of the tables a server's later counts
//! read; here they cost one bit in a table that stays in the L1 cache.

/// Bit `a | b << 8` is set when the bytes `a`, `b` are one token.
pub struct Pairs {
    bits: Box<[u64; 1024]>,
}

impl Pairs {
    /// From the vocabulary's tokens of two bytes.
    pub fn from_tokens<'a>(tokens: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut bits = Box::new([0u64; 1024]);
        for t in tokens {
            if let [a, b] = *t {
                let i = index(a, b);
                if let Some(w) = bits.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            }
        }
        Pairs { bits }
    }

    /// The count of a piece of `len` (1 or 2) bytes starting `a`, `b` (`b` unread when `len` is 1).
    #[inline(always)]
    pub fn count(&self, a: u8, b: u8, len: usize) -> usize {
        let i = index(a, b);
        let one = self.bits.get(i / 64).map_or(0, |w| (w >> (i % 64)) & 1) as usize;
        // len 1: 1; len 2: 1 when the pair is a token, else 2.
        len - (one & (len >> 1))
    }
}

/// The bit of the pair `a`, `b`.
#[inline(always)]
fn index(a: u8, b: u8) -> usize {
    usize::from(a) | usize::from(b) << 8
}
