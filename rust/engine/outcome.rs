//! What a fit returns: what is kept (in input order), what left and how, and where the removed
//! tokens went. Indices refer to the segments handed to `fit`.

use super::segment::Layer;
use super::trace::Trace;

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

#[derive(Clone, Debug, PartialEq)]
pub struct FitOutcome {
    pub kept: Vec<Kept>,
    pub removals: Vec<Removal>,
    pub truncations: Vec<Truncation>,
    pub digests: Vec<DigestRecord>,
    pub total: usize,
    pub ceiling: usize,
    pub over_by: usize,
    pub cap_overruns: Vec<(Layer, usize)>,
    pub rungs_fired: Vec<usize>,
    pub count_calls: usize,
    pub trace: Trace,
    pub ledger: FitLedger,
}
