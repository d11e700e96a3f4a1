//! The eviction engine: segments grouped into units, a policy's rungs run against projected
//! totals, one authoritative count, and a trace of every removal.
//!
//! Files by job: `budget` (the budget), `units` (grouping), `ladder` (the rungs and their actions),
//! `fit` (the driver and the authoritative count), `outcome` (what a fit returns), `trace`
//! (assembling and rendering it), `policy` / `policy_format` / `presets` (policies as data),
//! `rank` (the rank orders), `digest` (the record left for a tool exchange), `source` (what the
//! ladder needs from a tokenizer).

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
pub mod source;
pub mod trace;
mod units;

pub use budget::Budget;
pub use fit::{fit, FitOutcome};
pub use outcome::{DigestRecord, FitLedger, Kept, Removal, Row, Section, Taken, Target, Truncation};
pub use policy::{Action, Filter, Floor, Order, Policy, Rung};
pub use segment::{Layer, LayerSet, SegmentData, ToolCall};
pub use source::TokenSource;

/// A one-token-a-word source for the core's tests and the fuzz crate (`fuzz/`), which cannot see
/// `cfg(test)` code.
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;
