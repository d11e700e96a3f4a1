//! xxh3, the crate's one hash family: count-cache keys, prompt-cache fingerprints, the piece
//! memo's long keys, saved-state digests. Every caller goes through here.
//!
//! Two implementations of the same functions (their outputs are identical, checked below):
//! `xxhash-rust` for inputs up to 240 bytes, where its short paths are 5-20 % quicker, and
//! `twox-hash` for longer ones, because it picks AVX2 at run time while `xxhash-rust` uses only
//! what the wheel was compiled for (SSE2): 1.8x quicker on a 1.5 KB text and on a request's
//! 58 KB, which a cached request hashes whole to find its counts.

/// Inputs longer than this take the run-time-dispatched implementation (xxh3's own boundary
/// between its mid-size and long algorithms).
const SHORT: usize = 240;

pub fn xxh3_128(bytes: &[u8]) -> u128 {
    if bytes.len() <= SHORT {
        xxhash_rust::xxh3::xxh3_128(bytes)
    } else {
        twox_hash::XxHash3_128::oneshot(bytes)
    }
}

pub fn xxh3_64(bytes: &[u8]) -> u64 {
    xxh3_64_with_seed(bytes, 0)
}

pub fn xxh3_64_with_seed(bytes: &[u8], seed: u64) -> u64 {
    if bytes.len() <= SHORT {
        xxhash_rust::xxh3::xxh3_64_with_seed(bytes, seed)
    } else {
        twox_hash::XxHash3_64::oneshot_with_seed(seed, bytes)
    }
}

/// The streaming xxh3-128: the same digest as `xxh3_128` of everything written.
#[derive(Default)]
pub struct Xxh3(twox_hash::XxHash3_128);

impl Xxh3 {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    pub fn digest128(&self) -> u128 {
        self.0.finish_128()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes from a fixed linear congruential sequence: every length below has its own content.
    fn bytes(n: usize) -> Vec<u8> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..n).map(|_| { x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407); (x >> 56) as u8 }).collect()
    }

    #[test]
    fn both_implementations_agree_on_each_side_of_every_boundary() {
        let data = bytes(70_000);
        for len in [0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 239, 240, 241, 1024, 1025, 1500, 4096, 58_000, 70_000] {
            let s = &data[..len];
            assert_eq!(xxhash_rust::xxh3::xxh3_128(s), twox_hash::XxHash3_128::oneshot(s), "128-bit, {len} bytes");
            assert_eq!(xxh3_128(s), xxhash_rust::xxh3::xxh3_128(s), "dispatch, {len} bytes");
            for seed in [0, 77, u64::MAX] {
                assert_eq!(xxh3_64_with_seed(s, seed), xxhash_rust::xxh3::xxh3_64_with_seed(s, seed), "64-bit, {len} bytes, seed {seed}");
                assert_eq!(twox_hash::XxHash3_64::oneshot_with_seed(seed, s), xxhash_rust::xxh3::xxh3_64_with_seed(s, seed));
            }
            let mut streamed = Xxh3::new();
            for chunk in s.chunks(37) {
                streamed.update(chunk);
            }
            assert_eq!(streamed.digest128(), xxh3_128(s), "streamed, {len} bytes");
        }
    }

    /// A value pinned from the reference implementation, so a dependency update that changed
    /// the function (and with it every saved state's digest) fails here first.
    #[test]
    fn the_empty_input_hashes_to_xxh3s_published_value() {
        assert_eq!(xxh3_64(b""), 0x2d06_8005_38d3_94c2);
        assert_eq!(xxh3_128(b""), 0x99aa_06d3_0147_98d8_6001_c324_468d_497f);
    }
}
