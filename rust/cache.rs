//! The per-unit count cache: a text is tokenized once and its count reused while it stays cached.
//!
//! Keys are 128-bit xxh3 hashes of the text, so an entry costs about 48 bytes however long the
//! text was. The cache is sharded (quick_cache), so threads counting at once rarely meet on a lock,
//! and bounded: it evicts by CLOCK-Pro once `capacity` entries are held.

use quick_cache::sync::Cache;
use crate::hash::xxh3_128;

/// Entries kept when the caller does not say: 65,536 units is ~3 MB of memory and covers the
/// working set of many concurrent conversations.
pub const DEFAULT_CAPACITY: usize = 65_536;

pub struct CountCache {
    inner: Option<Cache<u128, u64>>,
    capacity: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheInfo {
    pub hits: u64,
    pub misses: u64,
    pub entries: usize,
    pub capacity: usize,
}

impl CountCache {
    /// `capacity == 0` disables caching entirely.
    pub fn new(capacity: usize) -> Self {
        let inner = (capacity > 0).then(|| Cache::new(capacity));
        Self { inner, capacity }
    }

    pub fn key(text: &str) -> u128 {
        xxh3_128(text.as_bytes())
    }

    /// The cached count of `text`, or `compute(text)` stored for next time.
    pub fn get_or_count<E>(
        &self,
        text: &str,
        compute: impl FnOnce(&str) -> Result<usize, E>,
    ) -> Result<usize, E> {
        let Some(cache) = &self.inner else {
            return compute(text);
        };
        let key = Self::key(text);
        if let Some(n) = cache.get(&key) {
            return Ok(n as usize);
        }
        let n = compute(text)?;
        cache.insert(key, n as u64);
        Ok(n)
    }

    /// Whether counts are kept at all (`capacity > 0`).
    pub fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    pub fn get(&self, key: u128) -> Option<usize> {
        self.inner.as_ref()?.get(&key).map(|n| n as usize)
    }

    pub fn insert(&self, key: u128, count: usize) {
        if let Some(cache) = &self.inner {
            cache.insert(key, count as u64);
        }
    }

    pub fn clear(&self) {
        if let Some(cache) = &self.inner {
            cache.clear();
        }
    }

    pub fn info(&self) -> CacheInfo {
        match &self.inner {
            Some(c) => CacheInfo {
                hits: c.hits(),
                misses: c.misses(),
                entries: c.len(),
                capacity: self.capacity,
            },
            None => CacheInfo { hits: 0, misses: 0, entries: 0, capacity: 0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lookup_is_a_hit_and_skips_compute() {
        let cache = CountCache::new(16);
        let mut calls = 0;
        let a: Result<usize, ()> = cache.get_or_count("hello", |_| {
            calls += 1;
            Ok(7)
        });
        let b: Result<usize, ()> = cache.get_or_count("hello", |_| {
            calls += 1;
            Ok(99)
        });
        assert_eq!((a, b, calls), (Ok(7), Ok(7), 1));
        let info = cache.info();
        assert_eq!((info.hits, info.misses, info.entries), (1, 1, 1));
    }

    #[test]
    fn bounded_by_capacity() {
        let cache = CountCache::new(100);
        for i in 0..10_000 {
            let _: Result<usize, ()> = cache.get_or_count(&i.to_string(), |_| Ok(1));
        }
        assert!(cache.info().entries <= 100, "{:?}", cache.info());
    }

    #[test]
    fn zero_capacity_never_stores() {
        let cache = CountCache::new(0);
        let _: Result<usize, ()> = cache.get_or_count("x", |_| Ok(1));
        assert_eq!(cache.info().entries, 0);
    }
}
