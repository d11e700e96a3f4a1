//! `ctxfast.CacheInfo`: the snapshot of a tokenizer's count cache that `Tokenizer.cache_info()`
//! returns.

use pyo3::prelude::*;

use crate::cache::CacheInfo as CoreCacheInfo;

/// A snapshot of a tokenizer's count cache, from `Tokenizer.cache_info()`.
#[pyclass(frozen, module = "ctxfast._core", name = "CacheInfo", get_all, eq)]
#[derive(PartialEq)]
pub struct CacheInfo {
    /// Counts served from the cache.
    hits: u64,
    /// Counts the cache did not hold, which the engine computed.
    misses: u64,
    /// Texts whose count is held now.
    entries: usize,
    /// The most entries the cache keeps; 0 means caching is off.
    capacity: usize,
}

#[pymethods]
impl CacheInfo {
    fn __repr__(&self) -> String {
        format!(
            "CacheInfo(hits={}, misses={}, entries={}, capacity={})",
            self.hits, self.misses, self.entries, self.capacity
        )
    }
}

impl From<CoreCacheInfo> for CacheInfo {
    fn from(c: CoreCacheInfo) -> Self {
        Self { hits: c.hits, misses: c.misses, entries: c.entries, capacity: c.capacity }
    }
}
