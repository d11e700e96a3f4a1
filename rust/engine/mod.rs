//! The eviction engine: segments grouped into units, a policy's rungs run against projected
//! totals, one authoritative count, and a trace of every removal.
//!
//! Files by job: `budget` (the budget), `units` (grouping), `ladder` (the rungs), `actions`
//! (drop, truncate, digest), `select` (what a rung may take, in what order), `rows` (a
//! removal as a trace row), `fit` (the driver and the authoritative count), `outcome` (what a
//! fit returns), `refusal` (the `Unfittable` it raises instead), `trace` / `render` (assembling
//! and writing the trace), `naming` (how both name units), `policy` / `policy_format` /
//! `describe` / `presets` (policies as data), `rank` (the rank orders), `digest` (the record left
//! for a tool exchange), `source` (what the ladder needs from a tokenizer), `cache` (cuts that
//! keep the previous request's prefix for the provider's prompt cache).

mod actions;
pub mod budget;
pub mod cache;
mod describe;
pub mod digest;
pub mod fit;
mod ladder;
pub mod naming;
pub mod outcome;
pub mod policy;
pub mod policy_format;
pub mod presets;
pub mod rank;
mod refusal;
mod render;
mod rows;
mod select;
pub mod segment;
mod segment_data;
pub mod source;
pub mod trace;
mod units;

pub use budget::Budget;
pub use fit::{fit, fit_named, fit_with, FitOptions, FitOutcome};
pub use naming::InputNames;
pub use outcome::{DigestRecord, FitLedger, Kept, Removal, Row, Section, Taken, Target, Truncation};
pub use policy::{Action, Filter, Floor, Order, Policy, Rung, Until};
pub use segment::{Layer, LayerSet};
pub use segment_data::{DigestMemo, SegmentData, ToolCall};
pub use source::TokenSource;

/// A one-token-a-word source for the core's tests and the fuzz crate (`fuzz/`), which cannot see
/// `cfg(test)` code.
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ladder;
#[cfg(test)]
mod tests_scaling;
#[cfg(test)]
mod tests_trace;
