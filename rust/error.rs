//! The one error type of the core. `bindings::errors` maps each variant to a Python exception, in
//! one `From<CtxError> for PyErr`; nothing else in the bindings decides which class is raised for a
//! core failure.

use thiserror::Error;

use crate::fmt::thousands;

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
    /// A caller-supplied counter failed; the bindings keep the caller's own exception as its cause.
    #[error("{0}")]
    Counter(String),
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
    /// The caller interrupted a long call (Ctrl-C); the bindings re-raise the signal's own error.
    #[error("interrupted")]
    Interrupted,
    /// The protected set plus the floors do not fit under the ceiling.
    #[error("{}", .0.message())]
    Unfittable(Box<Unfittable>),
}

impl CtxError {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::InvalidArgument(msg.into())
    }
}

/// Why a request cannot fit: what the policy may not touch, and by how much it is over.
#[derive(Clone, Debug, PartialEq)]
pub struct Unfittable {
    /// Each protected component (label, tokens), then what the floors kept.
    pub components: Vec<(String, usize)>,
    pub floor_tokens: usize,
    pub ceiling: usize,
    pub total: usize,
    pub shortfall: usize,
}

impl Unfittable {
    pub fn message(&self) -> String {
        let parts: Vec<String> = self.components.iter().map(|(l, n)| format!("{l} {}", thousands(*n))).collect();
        let floors = if self.floor_tokens > 0 {
            format!(" + {} kept by floors", thousands(self.floor_tokens))
        } else {
            String::new()
        };
        format!(
            "cannot fit: the protected set ({}){floors} leaves {} tokens against a ceiling of {}; short by {}",
            if parts.is_empty() { "empty".to_string() } else { parts.join(", ") },
            thousands(self.total),
            thousands(self.ceiling),
            thousands(self.shortfall)
        )
    }
}

impl From<Unfittable> for CtxError {
    fn from(u: Unfittable) -> Self {
        CtxError::Unfittable(Box::new(u))
    }
}
