//! The window's ledger: every removed token is attributable, and every key can say why it is
//! absent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::Layer;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    Held,
    /// Left the window; an authoritative copy exists outside it.
    EvictedRecoverable,
    /// Left the window; judged dispensable.
    EvictedDispensable,
    /// Replaced by a tagged lossy surrogate (a summary, a digest).
    Rewritten,
    /// Still held, shortened.
    Truncated,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Held => "held",
            Status::EvictedRecoverable => "evicted_recoverable",
            Status::EvictedDispensable => "evicted_dispensable",
            Status::Rewritten => "rewritten",
            Status::Truncated => "truncated",
        }
    }
}

/// Why an entry left or was replaced. Typed, so a rung a user names "rewrite" or "discard" is
/// still a rung: the bindings decide what `fit()` returns from this, never from a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cause {
    /// Dropped (or truncated) by the policy's rung with this index.
    Rung(usize),
    /// Folded into a digest record by the rung with this index.
    Digest(usize),
    /// The caller's `discard(key)`.
    Discard,
    /// The caller's `rewrite(key, ...)`, applied now or as a deferred rewrite lands.
    Rewrite,
    /// The caller's `digest(key)`.
    DigestCall,
}

impl Cause {
    /// The name Python sees in `Why.cause`.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Rung(_) => "rung",
            Cause::Digest(_) => "digest",
            Cause::Discard => "discard",
            Cause::Rewrite => "rewrite",
            Cause::DigestCall => "digest_call",
        }
    }

    /// Whether the policy's ladder took the entry (what `ContextWindow.fit()` returns).
    pub fn by_ladder(self) -> bool {
        matches!(self, Cause::Rung(_) | Cause::Digest(_))
    }
}

/// The answer to "why is this span absent (or present)?"
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Why {
    pub key: String,
    pub status: Status,
    /// The cycle (fits so far) in which this happened.
    pub cycle: u64,
    /// The rung's name, or "discard" / "rewrite" / "digest" for the caller's levers; None while
    /// simply held.
    pub rung: Option<String>,
    /// What `rung` stands for, typed; absent in states saved before it existed.
    #[serde(default)]
    pub cause: Option<Cause>,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub provenance: Option<String>,
    pub layer: Layer,
    /// How many times this key was admitted (it can come back after an eviction).
    pub admissions: u64,
}

/// Counters for metrics: which rung fires how often tells which slice is undersized.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub admitted: u64,
    pub refused_duplicates: u64,
    pub fits: u64,
    pub fits_that_evicted: u64,
    pub evictions: u64,
    pub rewrites: u64,
    pub deferred_rewrites: u64,
    pub digests: u64,
    pub truncations: u64,
    pub discards: u64,
    pub rung_firings: BTreeMap<String, u64>,
}

/// Token totals. They always balance:
/// admitted + surrogates_added == held + evicted_recoverable + evicted_dispensable
///                                + rewritten_away + truncated_away
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub admitted: u64,
    pub surrogates_added: u64,
    pub evicted_recoverable: u64,
    pub evicted_dispensable: u64,
    pub rewritten_away: u64,
    pub truncated_away: u64,
}

impl Totals {
    /// Every token taken out, whichever way. Wide, so a corrupt saved state cannot overflow it.
    pub fn removed(&self) -> u128 {
        [self.evicted_recoverable, self.evicted_dispensable, self.rewritten_away, self.truncated_away].iter().map(|&n| u128::from(n)).sum()
    }

    pub fn balances(&self, held: u64) -> bool {
        u128::from(self.admitted) + u128::from(self.surrogates_added) == u128::from(held) + self.removed()
    }
}
