//! Test support shared by the engine's and the window's tests.

use super::source::TokenSource;
use crate::error::CtxResult;

/// One token per whitespace-separated word: easy to reason about in tests.
pub struct Words;

impl TokenSource for Words {
    fn count(&self, text: &str) -> CtxResult<usize> {
        Ok(text.split_whitespace().count())
    }
    fn truncate(&self, text: &str, max_tokens: usize) -> CtxResult<String> {
        Ok(text.split_whitespace().take(max_tokens).collect::<Vec<_>>().join(" "))
    }
    fn count_joined(&self, texts: &[&str], _: &[usize], sep: &str) -> CtxResult<usize> {
        self.count(&texts.join(sep))
    }
}
