//! The pieces of a fit's result: what is kept (in input order), what left and how, what each
//! rung did, and where the removed tokens went. Indices refer to the segments handed to `fit`.

use std::sync::Arc;

use super::segment::Layer;

/// One item of the request as sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Kept {
    Original(usize),
    Truncated { index: usize, text: String, tokens: usize },
    /// A digest record, by its index in `FitOutcome::digests`.
    Digest { digest: usize },
}

/// What a removal took: an input segment, or a digest record the ladder made earlier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Segment(usize),
    Digest(usize),
}

/// How it left: dropped outright, or folded into a digest record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    Drop,
    Digest,
}

impl Taken {
    pub fn name(self) -> &'static str {
        match self {
            Taken::Drop => "drop",
            Taken::Digest => "digest",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Removal {
    pub target: Target,
    pub rung: usize,
    pub tokens: usize,
    pub action: Taken,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    pub index: usize,
    pub rung: usize,
    pub before: usize,
    pub after: usize,
}

/// The record that stands in for a tool exchange.
#[derive(Clone, Debug, PartialEq)]
pub struct DigestRecord {
    pub members: Vec<usize>,
    pub text: String,
    pub tokens: usize,
    pub layer: Layer,
    pub rung: usize,
}

/// Where the removed tokens went, for metrics.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct FitLedger {
    pub evicted_recoverable: usize,
    pub evicted_dispensable: usize,
    pub truncated: usize,
    pub digested: usize,
    /// Removals (rows) per rung, by rung index.
    pub rung_firings: Vec<usize>,
}

/// A trace row's unit label: kept inline up to 24 bytes, so rows with short labels (`ex12`,
/// `chunk4031`, `#17`) cost no allocation each.
pub type Label = compact_str::CompactString;

/// One row of the trace: a removal and the running totals after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What the unit is called; short ones are held inline (see `Label`).
    pub label: Label,
    /// How much the request total fell.
    pub delta: usize,
    pub action: &'static str,
    /// The labels of the layers the removal changed, in display order (`history`,
    /// `conversation+tool_result`): the column whose figure `layer_after` is. Shared by every row
    /// of the same column, so a fit that removes a million units does not write a million copies.
    pub layer: Arc<str>,
    /// What those labels hold after the removal: it fell by `delta`, joins aside.
    pub layer_after: usize,
    pub total_after: usize,
    /// total_after - ceiling: > 0 still over, <= 0 fits.
    pub over_after: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub rung: usize,
    pub name: String,
    pub floor: String,
    /// For an `until = "cap"` rung, the caps it enforced: "retrieved 14,000".
    pub caps: Vec<String>,
    pub rows: Vec<Row>,
    /// A floor stopped the rung while it still had work: it held back units it would have taken.
    pub floor_reached: bool,
    /// The rung took all it could and the request is still over: nothing was left to take.
    pub exhausted: bool,
}
