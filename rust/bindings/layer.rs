//! `PromptLayer`: the Python face of the core's `Layer`, and the layer argument (a PromptLayer or
//! its name).

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::args;
use super::errors::InvalidArgumentError;
use crate::engine::Layer;

/// Which part of a request a segment belongs to.
///
/// SYSTEM, TOOLS, PINNED, CURRENT_TURN (protected), CONVERSATION (the default layer of a
/// Segment), TOOL_RESULT, RETRIEVED, SUMMARY.
#[pyclass(frozen, eq, eq_int, hash, module = "ctxfast._core", name = "PromptLayer")]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum PromptLayer {
    SYSTEM,
    TOOLS,
    PINNED,
    CURRENT_TURN,
    CONVERSATION,
    TOOL_RESULT,
    RETRIEVED,
    SUMMARY,
}

impl From<PromptLayer> for Layer {
    fn from(l: PromptLayer) -> Layer {
        match l {
            PromptLayer::SYSTEM => Layer::System,
            PromptLayer::TOOLS => Layer::Tools,
            PromptLayer::PINNED => Layer::Pinned,
            PromptLayer::CURRENT_TURN => Layer::CurrentTurn,
            PromptLayer::CONVERSATION => Layer::Conversation,
            PromptLayer::TOOL_RESULT => Layer::ToolResult,
            PromptLayer::RETRIEVED => Layer::Retrieved,
            PromptLayer::SUMMARY => Layer::Summary,
        }
    }
}

impl From<Layer> for PromptLayer {
    fn from(l: Layer) -> PromptLayer {
        match l {
            Layer::System => PromptLayer::SYSTEM,
            Layer::Tools => PromptLayer::TOOLS,
            Layer::Pinned => PromptLayer::PINNED,
            Layer::CurrentTurn => PromptLayer::CURRENT_TURN,
            Layer::Conversation => PromptLayer::CONVERSATION,
            Layer::ToolResult => PromptLayer::TOOL_RESULT,
            Layer::Retrieved => PromptLayer::RETRIEVED,
            Layer::Summary => PromptLayer::SUMMARY,
        }
    }
}

#[pymethods]
impl PromptLayer {
    /// A layer from its name, case-insensitive (`"retrieved"`, `"RETRIEVED"`).
    #[staticmethod]
    fn from_name(name: &Bound<'_, PyAny>) -> PyResult<Self> {
        layer_arg(name, "name").map(Into::into)
    }

    /// The lowercase name used in policies and traces, e.g. `"current_turn"`.
    #[getter]
    pub fn label(&self) -> &'static str {
        Layer::from(*self).name()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (&'static str,))> {
        Ok((slf.as_any().get_type().getattr("from_name")?, (slf.get().label(),)))
    }

    /// Whether this layer is one of the four that no rung may draw from.
    #[getter]
    fn protected(&self) -> bool {
        Layer::PROTECTED.contains((*self).into())
    }
}

/// A PromptLayer or its name.
pub fn layer_arg(obj: &Bound<'_, PyAny>, arg: &str) -> PyResult<Layer> {
    // A name first: the cheaper check (no class object to fetch), and the form columns and
    // adapters pass.
    if let Ok(s) = obj.cast::<PyString>() {
        let name = s.to_str()?;
        return Layer::from_name(name).map_err(|e| InvalidArgumentError::new_err(format!("argument '{arg}': {e}")));
    }
    if let Ok(l) = obj.cast::<PromptLayer>() {
        return Ok((*l.get()).into());
    }
    Err(args::wrong_type(obj, arg, "a PromptLayer or a layer name"))
}
