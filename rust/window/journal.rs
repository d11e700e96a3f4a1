//! What changed, and when: the window's revision and the revision at which each held entry and
//! each `why` answer last changed, so `delta_since(mark)` writes only what a turn touched.
//!
//! Every public operation that can change the state bumps the revision first; the places that
//! change an entry or an answer stamp it with that revision. A stamp missed here would lose a
//! change, so a delta also carries the digest of the whole state it leads to, and applying it
//! refuses any result that does not hash the same (see `delta`).

use rustc_hash::FxHashMap;

use super::Window;
use crate::error::{CtxError, CtxResult};

/// The largest revision a saved state may have: 2⁶². A revision grows by one an operation from 0,
/// so no window reaches it; one far past it (u64::MAX, say, in a corrupted store) would stop
/// growing, each change would carry the revision it follows, and a delta would leave it out.
pub(super) const REVISION_LIMIT: u64 = 1 << 62;

/// Not saved: a restored window starts a fresh journal at the revision it was saved at.
#[derive(Clone, Debug, Default)]
pub(super) struct Journal {
    /// The revision this journal starts at: deltas can be given since it, not before.
    pub(super) floor: u64,
    /// Held entry id -> the revision it was created or last changed at.
    pub(super) entries: FxHashMap<u64, u64>,
    /// Key -> the revision its answer was created or last changed at.
    pub(super) whys: FxHashMap<String, u64>,
    /// Keys whose answers were forgotten (why_horizon), with the revision they went at.
    pub(super) forgotten: FxHashMap<String, u64>,
    /// The policy's digest (it never changes), for the state digest.
    pub(super) policy_digest: Option<u128>,
}

impl Journal {
    /// A journal that starts at `revision`: nothing before it is known.
    pub(super) fn starting_at(revision: u64, policy_digest: u128) -> Self {
        Self { floor: revision, policy_digest: Some(policy_digest), ..Self::default() }
    }
}

impl Window {
    /// A number that grows with every change: pass it back to `delta_since` later.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The oldest revision `delta_since` can start from (when the window was made or restored).
    pub fn journal_floor(&self) -> u64 {
        self.journal.floor
    }

    /// Starts an operation that may change the state, or refuses it (changing nothing) once the
    /// revision has reached `REVISION_LIMIT`: past it a change could go unrecorded in a delta.
    pub(super) fn touch(&mut self) -> CtxResult<()> {
        self.room_for_changes(1)?;
        self.revision = self.revision.saturating_add(1);
        Ok(())
    }

    /// Refuses `changes` more changes when they would move the revision past `REVISION_LIMIT`.
    pub(super) fn room_for_changes(&self, changes: u64) -> CtxResult<()> {
        if self.revision.checked_add(changes).is_none_or(|r| r > REVISION_LIMIT) {
            return Err(CtxError::invalid("this window has made 2^62 changes in its lifetime; start a new one"));
        }
        Ok(())
    }

    pub(super) fn stamp_entry(&mut self, id: u64) {
        self.journal.entries.insert(id, self.revision);
    }

    /// An entry left: its stamp is no longer needed (the delta's order list says it is gone).
    pub(super) fn unstamp_entry(&mut self, id: u64) {
        self.journal.entries.remove(&id);
    }

    pub(super) fn stamp_why(&mut self, key: &str) {
        self.journal.forgotten.remove(key);
        self.journal.whys.insert(key.to_string(), self.revision);
    }

    pub(super) fn stamp_forgotten(&mut self, key: String) {
        self.journal.whys.remove(&key);
        self.journal.forgotten.insert(key, self.revision);
    }

    /// Whether the entry changed after `mark` (an entry with no stamp has not changed since
    /// the journal began).
    pub(super) fn entry_changed_since(&self, id: u64, mark: u64) -> bool {
        self.journal.entries.get(&id).is_some_and(|&r| r > mark)
    }
}
