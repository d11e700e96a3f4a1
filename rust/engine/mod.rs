//! The eviction engine: segments grouped into units, a policy's rungs run against projected
//! totals, one authoritative count, and a trace of every removal.

pub mod digest;
pub mod ladder;
pub mod policy;
pub mod presets;
pub mod rank;
pub mod segment;
pub mod spec;
pub mod trace;

pub use ladder::{fit, Budget, Counter, FitError, FitOutcome, Kept, Target, Taken, Unfittable};
pub use policy::{Action, Filter, Floor, Order, Policy, Rung};
pub use segment::{Layer, LayerSet, SegmentData, ToolCall};

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use crate::error::CtxResult;
use crate::tokenize::{join, Engine, TokenCounter};

/// The native tokenizers drive the ladder directly: no Python anywhere in the loop.
impl Counter for TokenCounter {
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
