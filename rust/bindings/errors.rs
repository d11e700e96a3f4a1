//! The one place where failures become Python exceptions.
//!
//! The classes are defined in Python (`ctxfast/_errors.py`), so each can derive from both
//! `CtxfastError` and the builtin that matches its meaning (`ValueError`, `TypeError`, ...), which a
//! Rust-defined class cannot. Each is named once here with `import_exception!`: pyo3 imports it on
//! the first raise and keeps it, and `new_err` is lazy, so raising needs no `py` and `?` works in
//! every binding. A new exception is one class in `_errors.py` and one line here (plus a variant
//! and an arm below when the core raises it).
//!
//! `import_exception!` panics if the class is missing from `ctxfast._errors`, which only a broken
//! install can cause (the package imports that module before the extension is used);
//! `tests/test_errors.py` checks that every name listed here exists.

use pyo3::PyErr;

use crate::error::CtxError;

pyo3::import_exception!(ctxfast._errors, InvalidArgumentError);
pyo3::import_exception!(ctxfast._errors, ArgumentTypeError);
pyo3::import_exception!(ctxfast._errors, TextEncodingError);
pyo3::import_exception!(ctxfast._errors, TokenizerLoadError);
pyo3::import_exception!(ctxfast._errors, TokenizerFileNotFoundError);
pyo3::import_exception!(ctxfast._errors, UnsupportedOperationError);
pyo3::import_exception!(ctxfast._errors, TokenizationError);
pyo3::import_exception!(ctxfast._errors, CounterError);
pyo3::import_exception!(ctxfast._errors, CtxfastFileNotFoundError);
pyo3::import_exception!(ctxfast._errors, Unfittable);
pyo3::import_exception!(ctxfast._errors, UnknownKeyError);
pyo3::import_exception!(ctxfast._errors, UntaggedRewriteError);
pyo3::import_exception!(ctxfast._errors, BudgetLedgerInconsistency);
pyo3::import_exception!(ctxfast._errors, TemplateError);

/// The core's errors, mapped here and nowhere else.
impl From<CtxError> for PyErr {
    #[cold]
    fn from(err: CtxError) -> PyErr {
        match err {
            CtxError::InvalidArgument(m) | CtxError::State(m) => InvalidArgumentError::new_err(m),
            CtxError::TokenizerLoad(m) => TokenizerLoadError::new_err(m),
            CtxError::Unsupported(m) => UnsupportedOperationError::new_err(m),
            CtxError::Encoding(m) => TokenizationError::new_err(m),
            CtxError::Counter(m) => CounterError::new_err(m),
            CtxError::UnknownKey(m) => UnknownKeyError::new_err(m),
            CtxError::UntaggedRewrite(m) => UntaggedRewriteError::new_err(m),
            CtxError::LedgerInconsistency(m) => BudgetLedgerInconsistency::new_err(m),
            CtxError::Template(m) => TemplateError::new_err(m),
            CtxError::Unfittable(u) => unfittable(&u),
            // Normally the signal's own exception is raised in its place (`gil::Interrupt`).
            CtxError::Interrupted => pyo3::exceptions::PyKeyboardInterrupt::new_err("interrupted"),
        }
    }
}

/// `Unfittable(message, components, floor_tokens, total, ceiling, shortfall, trace)`: the
/// attributes travel as constructor arguments, so the error stays lazy.
#[cold]
fn unfittable(u: &crate::error::Unfittable) -> PyErr {
    Unfittable::new_err((u.message(), u.components.clone(), u.floor_tokens, u.total, u.ceiling, u.shortfall, u.trace.clone()))
}

/// Which class a file that cannot be read raises: one for a missing file, one otherwise.
pub enum FileKind {
    Tokenizer,
    Policy,
    Template,
}

/// A file that could not be read: `.filename` and `.errno` set as on an `OSError`.
#[cold]
pub fn file_error(path: &str, err: &std::io::Error, kind: FileKind) -> PyErr {
    let (what, missing) = match kind {
        FileKind::Tokenizer => ("tokenizer", err.kind() == std::io::ErrorKind::NotFound),
        FileKind::Policy => ("policy", err.kind() == std::io::ErrorKind::NotFound),
        FileKind::Template => ("chat template", err.kind() == std::io::ErrorKind::NotFound),
    };
    let message = format!("cannot read {what} file {path:?}: {err}");
    let args = (message, path.to_string(), err.raw_os_error());
    match (kind, missing) {
        (FileKind::Tokenizer, true) => TokenizerFileNotFoundError::new_err(args),
        (FileKind::Tokenizer, false) => TokenizerLoadError::new_err(args.0),
        (FileKind::Policy, true) => CtxfastFileNotFoundError::new_err(args),
        (FileKind::Policy | FileKind::Template, false) => InvalidArgumentError::new_err(args.0),
        (FileKind::Template, true) => CtxfastFileNotFoundError::new_err(args),
    }
}
