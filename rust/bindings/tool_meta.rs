//! What a `Segment`'s `meta` says about a tool call, read once at construction: the digest
//! rung writes the call from it without asking Python again.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyMapping, PyString};

use crate::engine::ToolCall;

/// The `encode` of one `json.JSONEncoder(sort_keys=True, default=repr)`, built once per
/// interpreter: a tool call's arguments are written as a digest shows them, exactly as
/// `json.dumps(v, sort_keys=True, default=repr)` writes them. (Importing `json` and compiling
/// `repr` with `eval` on every Segment cost ~30 µs a call, more than the rest of a request's
/// construction; `json.dumps` with options also builds a new encoder per call.)
fn dumps_sorted(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ENCODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    ENCODE
        .get_or_try_init(py, || {
            let kwargs = PyDict::new(py);
            kwargs.set_item("sort_keys", true)?;
            kwargs.set_item("default", py.import("builtins")?.getattr("repr")?)?;
            let encoder = py.import("json")?.getattr("JSONEncoder")?.call((), Some(&kwargs))?;
            Ok(encoder.getattr("encode")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// What a digest says about a tool call, read once from `meta` (a mapping with "tool",
/// "arguments" and "step" keys; other keys are the caller's own).
pub fn tool_call(meta: &Bound<'_, PyAny>) -> PyResult<Option<ToolCall>> {
    let py = meta.py();
    // A dict (the usual meta) is read without raising KeyError for its missing keys.
    let get = |k: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        let found = if let Ok(d) = meta.cast::<PyDict>() {
            d.get_item(k)?
        } else if let Ok(map) = meta.cast::<PyMapping>() {
            map.get_item(k).ok()
        } else {
            None
        };
        Ok(found.filter(|v| !v.is_none()))
    };
    let tool = get("tool")?;
    if tool.is_none() {
        return Ok(None);
    }
    let as_text = |v: Bound<'_, PyAny>| -> PyResult<String> {
        if let Ok(s) = v.cast::<PyString>() {
            return Ok(s.to_str()?.to_string());
        }
        dumps_sorted(py)?.call1((v,))?.extract()
    };
    Ok(Some(ToolCall {
        tool: tool.map(as_text).transpose()?,
        arguments: get("arguments")?.map(as_text).transpose()?,
        step: get("step")?.and_then(|s| s.extract::<i64>().ok()),
    }))
}
