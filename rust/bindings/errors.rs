//! The one place where failures become Python exceptions.
//!
//! The exception classes are defined in Python (`ctxfast/_errors.py`) so each can derive from both
//! `CtxfastError` and the builtin that matches its meaning (`ValueError`, `TypeError`, ...), which a
//! Rust-defined class cannot. They are looked up only when an error is raised, never on the hot path.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::CtxError;

/// Names of the exception classes in `ctxfast._errors`.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    InvalidArgument,
    ArgumentType,
    TextEncoding,
    TokenizerLoad,
    TokenizerFileNotFound,
    Unsupported,
    Tokenization,
    Counter,
    FileNotFound,
    Unfittable,
    UnknownKey,
    UntaggedRewrite,
    LedgerInconsistency,
}

impl Kind {
    fn class_name(self) -> &'static str {
        match self {
            Kind::InvalidArgument => "InvalidArgumentError",
            Kind::ArgumentType => "ArgumentTypeError",
            Kind::TextEncoding => "TextEncodingError",
            Kind::TokenizerLoad => "TokenizerLoadError",
            Kind::TokenizerFileNotFound => "TokenizerFileNotFoundError",
            Kind::Unsupported => "UnsupportedOperationError",
            Kind::Tokenization => "TokenizationError",
            Kind::Counter => "CounterError",
            Kind::FileNotFound => "CtxfastFileNotFoundError",
            Kind::Unfittable => "Unfittable",
            Kind::UnknownKey => "UnknownKeyError",
            Kind::UntaggedRewrite => "UntaggedRewriteError",
            Kind::LedgerInconsistency => "BudgetLedgerInconsistency",
        }
    }
}

/// Builds the exception `kind(message)`; extra attributes (`argument`, `value`, ...) go in `attrs`.
#[cold]
#[inline(never)]
pub fn error(py: Python<'_>, kind: Kind, message: impl Into<String>) -> PyErr {
    error_with(py, kind, message.into(), None)
}

#[cold]
#[inline(never)]
pub fn error_with(
    py: Python<'_>,
    kind: Kind,
    message: String,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let class = py.import("ctxfast._errors")?.getattr(kind.class_name())?;
        let exc = class.call1((message.clone(),))?;
        if let Some(attrs) = attrs {
            for (k, v) in attrs.iter() {
                exc.setattr(k.cast_into::<pyo3::types::PyString>()?, v)?;
            }
        }
        Ok(PyErr::from_value(exc))
    })();
    // If the Python side is missing (a broken install), still raise something readable.
    made.unwrap_or_else(|_| PyRuntimeError::new_err(message))
}

/// A file that could not be read: `.filename` and `.errno` set as on an `OSError`.
#[cold]
#[inline(never)]
pub fn file_error(py: Python<'_>, path: &str, err: &std::io::Error, what: &str, missing: Kind, other: Kind) -> PyErr {
    let kind = if err.kind() == std::io::ErrorKind::NotFound { missing } else { other };
    let attrs = PyDict::new(py);
    let _ = attrs.set_item("filename", path);
    let _ = attrs.set_item("errno", err.raw_os_error());
    error_with(py, kind, format!("cannot read {what} file {path:?}: {err}"), Some(&attrs))
}

/// The core's errors, mapped here and nowhere else.
#[cold]
#[inline(never)]
pub fn from_core(py: Python<'_>, err: CtxError) -> PyErr {
    let kind = match &err {
        CtxError::InvalidArgument(_) => Kind::InvalidArgument,
        CtxError::TokenizerLoad(_) => Kind::TokenizerLoad,
        CtxError::Unsupported(_) => Kind::Unsupported,
        CtxError::Encoding(_) => Kind::Tokenization,
        CtxError::UnknownKey(_) => Kind::UnknownKey,
        CtxError::UntaggedRewrite(_) => Kind::UntaggedRewrite,
        CtxError::LedgerInconsistency(_) => Kind::LedgerInconsistency,
        CtxError::State(_) => Kind::InvalidArgument,
    };
    error(py, kind, err.to_string())
}

/// `result.map_err(...)` for core results.
pub trait CoreResultExt<T> {
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> CoreResultExt<T> for Result<T, CtxError> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| from_core(py, e))
    }
}
