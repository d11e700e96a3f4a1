//! `Budget`: the whole window, what is reserved for the answer, and per-layer caps.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyMapping, PyTuple};

use super::args;
use super::errors::InvalidArgumentError;
use super::layer::{layer_arg, PromptLayer};
use crate::engine::{Budget as CoreBudget, Layer};

/// A token budget: the whole window, what is reserved for the answer, optional caps.
///
/// Budget(window, reserve=0, caps=None): the request may carry `window - reserve` input
/// tokens. `caps` maps a PromptLayer or layer name to a size. Caps are reported, never enforced,
/// unless a rung says `until = "cap"`: a layer that starts over its cap is listed in
/// `Fit.cap_overruns` and on a `cap` line of the trace.
#[pyclass(frozen, module = "ctxfast._core", name = "Budget")]
pub struct Budget {
    pub inner: CoreBudget,
}

fn budget_count(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<usize> {
    if let Ok(f) = obj.extract::<f64>() {
        if obj.is_instance_of::<PyFloat>() {
            return Err(InvalidArgumentError::new_err(format!("argument '{arg}' must be a whole number of tokens, got {f}")));
        }
    }
    args::count_arg(obj, arg)
}

#[pymethods]
impl Budget {
    #[new]
    #[pyo3(signature = (window, reserve=None, caps=None))]
    fn new(
        window: &Bound<'_, PyAny>,
        reserve: Option<&Bound<'_, PyAny>>,
        caps: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // A window must hold something: a negative one is refused with the same bound as 0.
        if window.is_instance_of::<PyInt>() && !window.is_instance_of::<PyBool>() && window.lt(1)? {
            return Err(InvalidArgumentError::new_err(format!(
                "argument 'window' must be > 0 tokens, got {}",
                args::preview(window)
            )));
        }
        let w = budget_count(window, "window")?;
        let r = match reserve {
            Some(r) if !r.is_none() => budget_count(r, "reserve")?,
            _ => 0,
        };
        let mut cap_arr = [None; 8];
        if let Some(c) = caps.filter(|c| !c.is_none()) {
            let map = c.cast::<PyMapping>().map_err(|_| args::wrong_type(c, "caps", "a mapping of PromptLayer to int"))?;
            for item in map.items()?.iter() {
                let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
                let layer = layer_arg(&k, "caps key")?;
                cap_arr[layer.index()] = Some(budget_count(&v, &format!("caps[{}]", layer.name()))?);
            }
        }
        let inner = CoreBudget::new(w, r, cap_arr)?;
        Ok(Self { inner })
    }

    /// The whole context window, in tokens.
    #[getter]
    fn window(&self) -> usize {
        self.inner.window
    }
    /// Tokens kept free for the answer.
    #[getter]
    fn reserve(&self) -> usize {
        self.inner.reserve
    }
    /// `window - reserve`: the most input tokens a request may carry.
    #[getter]
    fn ceiling(&self) -> usize {
        self.inner.ceiling()
    }
    /// The per-layer caps that were given (a new dict each call).
    #[getter]
    fn caps<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for l in Layer::ALL {
            if let Some(c) = self.inner.caps[l.index()] {
                d.set_item(PromptLayer::from(l), c)?;
            }
        }
        Ok(d)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Budget>().is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __repr__(&self) -> String {
        let caps: Vec<String> = Layer::ALL
            .iter()
            .filter_map(|l| self.inner.caps[l.index()].map(|c| format!("PromptLayer.{:?}: {c}", PromptLayer::from(*l))))
            .collect();
        let caps = if caps.is_empty() { String::new() } else { format!(", caps={{{}}}", caps.join(", ")) };
        format!("Budget(window={}, reserve={}{caps})", self.inner.window, self.inner.reserve)
    }

    /// Pickles as `Budget(window, reserve, caps)`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let me = slf.get();
        let state = (me.inner.window, me.inner.reserve, me.caps(py)?).into_pyobject(py)?;
        Ok((slf.get_type().into_any(), state))
    }
}
