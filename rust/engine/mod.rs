//! The eviction engine: segments grouped into units, a policy's rungs run against projected
//! totals, one authoritative count, and a trace of every removal.
//!
//! Files by job: `budget` (the budget), `units` (grouping), `ladder` (the rungs and their actions),
//! `fit` (the driver and the authoritative count), `outcome` (what a fit returns), `trace`
//! (assembling and rendering it), `policy` / `policy_format` / `presets` (policies as data),
//! `rank` (the rank orders), `digest` (the record left for a tool exchange).

pub mod budget;
pub mod digest;
pub mod fit;
mod ladder;
pub mod outcome;
pub mod policy;
pub mod policy_format;
pub mod presets;
pub mod rank;
pub mod segment;
pub mod trace;
mod units;

pub use budget::Budget;
pub use fit::fit;
pub use outcome::{DigestRecord, FitLedger, FitOutcome, Kept, Removal, Taken, Target, Truncation};
pub use policy::{Action, Filter, Floor, Order, Policy, Rung};
pub use segment::{Layer, LayerSet, SegmentData, ToolCall};

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use crate::error::CtxResult;
use crate::tokenize::{join, Engine, TokenCounter};

/// What the ladder needs from a tokenizer: counts, a token-boundary cut, and the exact count of a
/// joined payload.
pub trait TokenSource {
    fn count(&self, text: &str) -> CtxResult<usize>;
    fn truncate(&self, text: &str, max_tokens: usize) -> CtxResult<String>;
    /// Exact count of `texts.join(sep)` given each text's exact count.
    fn count_joined(&self, texts: &[&str], counts: &[usize], sep: &str) -> CtxResult<usize>;
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
