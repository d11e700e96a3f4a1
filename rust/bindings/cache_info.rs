//! `ctxfast.CacheInfo`: a snapshot of a tokenizer's count cache.

use pyo3::prelude::*;

use crate::cache::CacheInfo as CoreCacheInfo;

/// Hits, misses, entries and capacity of a tokenizer's count cache.
#[pyclass(frozen, module = "ctxfast._core", name = "CacheInfo", get_all, eq)]
#[derive(PartialEq)]
pub struct CacheInfo {
    hits: u64,
    misses: u64,
    entries: usize,
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
