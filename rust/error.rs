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
    /// A chat template failed to compile or to render (its own `raise_exception` included).
    #[error("{0}")]
    Template(String),
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
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Unfittable {
    /// Each protected segment still held (label, tokens); or, when nothing is protected, the
    /// last unit, which a request always keeps.
    pub components: Vec<(String, usize)>,
    pub floor_tokens: usize,
    pub ceiling: usize,
    pub total: usize,
    pub shortfall: usize,
    /// The message's lines after the first: the protected parts grouped by layer with their
    /// positions, what the floors kept, and what would make it fit (see `engine::refusal`).
    pub detail: Vec<String>,
    /// The trace of the attempt, rendered: what every rung took before the ladder gave up.
    pub trace: String,
}

impl Unfittable {
    /// The shortfall once, then the detail:
    ///
    /// ```text
    /// short by 5,117 tokens: 20,117 after every rung, against a ceiling of 15,000
    /// protected, 18,420 tokens:
    ///   system: messages[0], 61 tokens
    ///   current_turn: messages[24..35], 18,356 tokens
    ///   <reply priming>: 3 tokens
    /// kept by floors, 1,697 tokens: messages[2..23]
    /// to fit: raise the window, lower the reserve, or use a policy with lower floors
    /// ```
    pub fn message(&self) -> String {
        let mut out = format!(
            "short by {}: {} after every rung, against a ceiling of {}",
            crate::fmt::tokens(self.shortfall),
            thousands(self.total),
            thousands(self.ceiling)
        );
        for line in &self.detail {
            out.push('\n');
            out.push_str(line);
        }
        out
    }
}

impl From<Unfittable> for CtxError {
    fn from(u: Unfittable) -> Self {
        CtxError::Unfittable(Box::new(u))
    }
}
