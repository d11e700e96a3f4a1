//! `_framing(name)`: a framing table of `payload::framing` as a dict, so the Python adapters take
//! their constants from the one table the fast path uses.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::errors::InvalidArgumentError;
use crate::payload::framing::TABLES;

/// `{"per_message": 3, "per_name": 1, "per_tool_call": 3, "reply_priming": 3}` for `name`
/// (private: the adapters' constants).
#[pyfunction]
pub fn _framing<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
    let Some((_, f)) = TABLES.iter().find(|(n, _)| *n == name) else {
        return Err(InvalidArgumentError::new_err(format!("no framing table {name:?}")));
    };
    let d = PyDict::new(py);
    d.set_item("per_message", f.per_message)?;
    d.set_item("per_name", f.per_name)?;
    d.set_item("per_tool_call", f.per_tool_call)?;
    d.set_item("reply_priming", f.reply_priming)?;
    Ok(d)
}
