//! The one error type of the core. `bindings::errors` maps each variant to a Python exception.

use thiserror::Error;

pub type CtxResult<T> = Result<T, CtxError>;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum CtxError {
    /// A value is out of its domain (negative budget, NaN score, unknown encoding ...).
    #[error("{0}")]
    InvalidArgument(String),
    /// A tokenizer definition could not be read or parsed.
    #[error("{0}")]
    TokenizerLoad(String),
    /// The tokenizer cannot do this (e.g. encode with the character estimate).
    #[error("{0}")]
    Unsupported(String),
    /// The underlying engine reported a failure while encoding.
    #[error("{0}")]
    Encoding(String),
    /// A key the window never admitted (or no longer holds, where holding is required).
    #[error("{0}")]
    UnknownKey(String),
    /// A rewrite without provenance: drop the span instead.
    #[error("{0}")]
    UntaggedRewrite(String),
    /// A "compression" that is not smaller and has no external copy.
    #[error("{0}")]
    LedgerInconsistency(String),
    /// Saved state that cannot be restored.
    #[error("{0}")]
    State(String),
}

impl CtxError {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::InvalidArgument(msg.into())
    }
}
