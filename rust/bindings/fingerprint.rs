//! `_fingerprint`: a 128-bit hash of a JSON-shaped Python value, for the adapters' caches of what
//! they render from the same tool schemas on every request. Dicts hash in their order (the
//! rendering follows it), every value carries its type, so `1`, `1.0`, `True` and `"1"` differ.
//! A value it cannot hash exactly (another type, an int past 64 bits, nesting past `MAX_DEPTH`)
//! gives None: the caller renders without the cache.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use crate::hash::xxh3_128;

use crate::limits::MAX_DEPTH;

fn exact(v: &Bound<'_, PyAny>) -> bool {
    v.is_exact_instance_of::<PyString>()
        || v.is_exact_instance_of::<PyBool>()
        || v.is_exact_instance_of::<PyInt>()
        || v.is_exact_instance_of::<PyFloat>()
        || v.is_exact_instance_of::<PyDict>()
        || v.is_exact_instance_of::<PyList>()
        || v.is_exact_instance_of::<PyTuple>()
}

/// Appends `v`'s canonical bytes to `h` (one buffer, hashed once at the end: cheaper than
/// feeding a streaming hasher a few bytes at a time).
fn feed(h: &mut Vec<u8>, v: &Bound<'_, PyAny>, depth: usize) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    if v.is_none() {
        h.extend_from_slice(b"n");
    } else if !exact(v) {
        return None; // a subclass may read differently from what it hashes as
    } else if let Ok(s) = v.cast::<PyString>() {
        let t = s.to_str().ok()?;
        h.extend_from_slice(b"s");
        h.extend_from_slice(&(t.len() as u64).to_le_bytes());
        h.extend_from_slice(t.as_bytes());
    } else if let Ok(b) = v.cast::<PyBool>() {
        h.extend_from_slice(if b.is_true() { b"T" } else { b"F" });
    } else if let Ok(i) = v.cast::<PyInt>() {
        h.extend_from_slice(b"i");
        h.extend_from_slice(&i.extract::<i64>().ok()?.to_le_bytes());
    } else if let Ok(f) = v.cast::<PyFloat>() {
        h.extend_from_slice(b"f");
        h.extend_from_slice(&f.value().to_bits().to_le_bytes());
    } else if let Ok(d) = v.cast::<PyDict>() {
        h.extend_from_slice(b"{");
        h.extend_from_slice(&(d.len() as u64).to_le_bytes());
        for (k, value) in d.iter() {
            if !k.is_exact_instance_of::<PyString>() {
                return None;
            }
            feed(h, &k, depth + 1)?;
            feed(h, &value, depth + 1)?;
        }
    } else if let Ok(l) = v.cast::<PyList>() {
        h.extend_from_slice(b"[");
        h.extend_from_slice(&(l.len() as u64).to_le_bytes());
        for item in l.iter() {
            feed(h, &item, depth + 1)?;
        }
    } else if let Ok(t) = v.cast::<PyTuple>() {
        h.extend_from_slice(b"(");
        h.extend_from_slice(&(t.len() as u64).to_le_bytes());
        for item in t.iter() {
            feed(h, &item, depth + 1)?;
        }
    } else {
        return None;
    }
    Some(())
}

/// The fingerprint of `value` as an int, or None when it holds something other than JSON-shaped
/// data (private: the adapters' render caches).
#[pyfunction]
pub fn _fingerprint(value: &Bound<'_, PyAny>) -> Option<u128> {
    let mut h = Vec::with_capacity(4096);
    feed(&mut h, value, 0)?;
    Some(xxh3_128(&h))
}
