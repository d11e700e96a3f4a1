//! Cache-aware cuts. A provider (or a CPU server) reuses the previous request's prefix: what a
//! turn pays for is its *uncached* tokens. So a fit given the previous request it sent repeats
//! that request's cut while the request still fits (what was sent stays the start of what is
//! sent), and when the cut must move, moves it far enough that the next turns append again
//! (hysteresis). The stateless adapters and `ContextWindow` share this mechanism.
//!
//! Files by job: `sent` (what a fit sent, as the next fit needs it: fingerprints in payload
//! order, and how each removed segment left), `pins` (repeating that cut on the ladder),
//! `plan` (choosing the cut), `profile` (what a provider's cache reads, writes and charges),
//! `report` (what the fit says about it).

mod pins;
pub mod plan;
pub mod profile;
pub mod report;
pub mod sent;

pub use plan::{fit_aiming, fit_planned, plan, Cut, Planned};
pub use report::{settle, Report};
pub use profile::{CacheProfile, CachePrediction, CacheStyle};
pub use sent::{fingerprint, fingerprint_keyed, Sent};

/// One removal the previous request made, to be made again: segment `segment` of this request
/// (matched by fingerprint) leaves the way it left then, attributed to the same rung.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pin {
    pub segment: usize,
    pub how: Pinned,
    pub rung: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pinned {
    Drop,
    Digest,
    /// Shortened to this many tokens (framing included).
    Truncate(usize),
}

#[cfg(test)]
mod tests;
