//! What the ladder needs from a tokenizer, and the native engines' answer to it.

use crate::error::CtxResult;
use crate::tokenize::{join, Engine, TokenCounter};

/// What the ladder needs from a tokenizer: counts, a token-boundary cut, and the exact count of a
/// joined payload.
pub trait TokenSource {
    fn count(&self, text: &str) -> CtxResult<usize>;
    fn truncate(&self, text: &str, max_tokens: usize) -> CtxResult<String>;
    /// Exact count of `texts.join(sep)` given each text's exact count.
    fn count_joined(&self, texts: &[&str], counts: &[usize], sep: &str) -> CtxResult<usize>;
    /// Called every few thousand units of ladder work: an error (Ctrl-C, say) stops the fit.
    fn interrupted(&self) -> CtxResult<()> {
        Ok(())
    }
}

/// The native tokenizers drive the ladder directly: no Python anywhere in the loop.
impl TokenSource for TokenCounter {
    fn count(&self, text: &str) -> CtxResult<usize> {
        TokenCounter::count(self, text)
    }

    fn truncate(&self, text: &str, max_tokens: usize) -> CtxResult<String> {
        TokenCounter::truncate(self, text, max_tokens).map(str::to_string)
    }

    fn count_joined(&self, texts: &[&str], counts: &[usize], sep: &str) -> CtxResult<usize> {
        match self.engine() {
            Engine::Tiktoken(_) => join::count_joined(texts, counts, sep, &|s| self.count_uncached(s)),
            // No boundary guarantees for arbitrary tokenizer.json files or the estimate:
            // count the payload itself.
            _ => self.count_uncached(&texts.join(sep)),
        }
    }
}
