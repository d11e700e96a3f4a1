//! `ctxfast.evict_indices`: the rank order over the caller's own columns, as numpy arrays.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;

use super::args;
use super::errors::InvalidArgumentError;
use super::gil::{self, Work};
use crate::engine::rank;
use crate::limits::MAX_COUNT;

/// The rank order alone, for callers with their own structures.
#[pyfunction]
pub fn evict_indices<'py>(
    py: Python<'py>,
    tokens: &Bound<'py, PyAny>,
    recoverable: &Bound<'py, PyAny>,
    stale: &Bound<'py, PyAny>,
    relevance: &Bound<'py, PyAny>,
    protected: &Bound<'py, PyAny>,
    deficit: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let np = py.import("numpy")?;
    // Contiguous copies where needed (a strided view has no slice), one dimension only.
    let as_array = |obj: &Bound<'py, PyAny>, name: &str, dtype: &str| -> PyResult<Bound<'py, PyAny>> {
        let arr = np
            .call_method1("ascontiguousarray", (obj, dtype))
            .map_err(|_| args::wrong_type(obj, name, &format!("a 1-d array of {dtype}")))?;
        if arr.getattr("ndim")?.extract::<usize>()? != 1 {
            return Err(InvalidArgumentError::new_err(format!("argument '{name}' must be 1-dimensional")));
        }
        Ok(arr)
    };
    // Token counts must be whole numbers in range before any cast: a float array would be
    // truncated and a uint64 past 2**63 would wrap negative.
    let raw = np.call_method1("asarray", (tokens,)).map_err(|_| args::wrong_type(tokens, "tokens", "a 1-d array of int"))?;
    let kind: String = raw.getattr("dtype")?.getattr("kind")?.extract()?;
    if kind != "i" && kind != "u" {
        return Err(args::wrong_type(tokens, "tokens", "a 1-d array of int"));
    }
    if raw.getattr("size")?.extract::<usize>()? > 0 {
        let at = |f: &str| -> PyResult<(usize, Bound<'py, PyAny>)> {
            let i: usize = raw.call_method0(f)?.extract()?;
            Ok((i, raw.get_item(i)?))
        };
        let (i, low) = at("argmin")?;
        if low.lt(0)? {
            return Err(InvalidArgumentError::new_err(format!("tokens[{i}] must be >= 0, got {low}")));
        }
        let (i, high) = at("argmax")?;
        if high.gt(MAX_COUNT)? {
            return Err(InvalidArgumentError::new_err(format!("tokens[{i}] is {high}, above the largest count ctxfast accepts")));
        }
    }
    let t = as_array(&raw, "tokens", "int64")?;
    let t = t.cast::<PyArray1<i64>>()?.readonly();
    let rec = as_array(recoverable, "recoverable", "bool")?;
    let rec = rec.cast::<PyArray1<bool>>()?.readonly();
    let st = as_array(stale, "stale", "bool")?;
    let st = st.cast::<PyArray1<bool>>()?.readonly();
    let rel = as_array(relevance, "relevance", "float64")?;
    let rel = rel.cast::<PyArray1<f64>>()?.readonly();
    let pr = as_array(protected, "protected", "bool")?;
    let pr = pr.cast::<PyArray1<bool>>()?.readonly();
    let deficit = args::count_arg(deficit, "deficit")?;
    let (t, rec, st, rel, pr) = (t.as_slice()?, rec.as_slice()?, st.as_slice()?, rel.as_slice()?, pr.as_slice()?);
    let n = t.len();
    for (name, len) in [("recoverable", rec.len()), ("stale", st.len()), ("relevance", rel.len()), ("protected", pr.len())] {
        if len != n {
            return Err(InvalidArgumentError::new_err(format!("argument '{name}' has {len} entries, 'tokens' has {n}")));
        }
    }
    if let Some((i, v)) = t.iter().enumerate().find(|(_, v)| **v < 0) {
        return Err(InvalidArgumentError::new_err(format!("tokens[{i}] must be >= 0, got {v}")));
    }
    if let Some((i, v)) = rel.iter().enumerate().find(|(_, v)| !(0.0..=1.0).contains(*v)) {
        return Err(InvalidArgumentError::new_err(format!("relevance[{i}] must be in [0, 1], got {v}")));
    }
    // Every value was checked >= 0 above, so the conversion cannot fail.
    let tokens: Vec<usize> = t.iter().map(|&v| usize::try_from(v).unwrap_or(0)).collect();
    let (rec, st, rel, pr) = (rec.to_vec(), st.to_vec(), rel.to_vec(), pr.to_vec());
    let order = gil::run(py, Work::Items(n), || rank::evict_for_deficit(&tokens, &rec, &st, &rel, &pr, deficit));
    Ok(PyArray1::from_vec(py, order.into_iter().map(|i| i64::try_from(i).unwrap_or(i64::MAX)).collect()))
}
