//! What the window's operations hand back (admissions, rewrites, fits, the changes to mirror)
//! and the deferred rewrite it keeps until the next fit.

use serde::{Deserialize, Serialize};

use super::ledger::Cause;
use super::Entry;
use crate::engine::FitOutcome;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Pending {
    /// The entry the rewrite was asked for: a later segment under the same key is not it.
    pub(super) id: u64,
    pub(super) key: String,
    pub(super) text: String,
    pub(super) tokens: usize,
    pub(super) provenance: String,
}

/// An entry that left, and why: a typed cause, so no rung name can pass for a reason.
#[derive(Debug)]
pub struct Removed {
    pub entry: Entry,
    pub cause: Cause,
}

/// What a change did to the held entries, for the bindings to mirror on their Python objects.
#[derive(Debug, Default)]
pub struct Changes {
    /// Entries that left, in removal order.
    pub removed: Vec<Removed>,
    /// Entries created or changed in place.
    pub upserted: Vec<Entry>,
}

pub enum Admit {
    Admitted { id: u64, demoted: Option<Entry> },
    Duplicate,
}

pub enum Rewrite {
    Applied(Changes),
    Deferred,
}

pub struct WindowFit {
    pub outcome: FitOutcome,
    /// Entry ids in the order they were handed to the ladder (outcome indices refer to these).
    pub ids: Vec<u64>,
    pub changes: Changes,
    pub stable_prefix_tokens: usize,
    /// What the prompt cache will do, when the window has a cache profile.
    pub cache: Option<crate::engine::cache::Report>,
}

