//! Deltas: what changed in a window since a revision, so a store appends a turn's changes
//! instead of rewriting the whole conversation, and restores it as snapshot + deltas.
//!
//! A delta carries the held entries' ids in order, the entries and `why` answers created or
//! changed after the mark, the keys whose answers were forgotten, and the small scalar state
//! (counters, totals, cycle...) whole. It names the revision it follows and the one it leads to,
//! so deltas cannot be applied out of order or twice, and the digest of the whole state it leads
//! to: applying it must reproduce that state exactly, or it is refused and nothing changes.

use serde::{Deserialize, Serialize};

use super::ledger::{Counters, Totals, Why};
use super::persist::{decode, open, refused, seal, state_digest, KIND_DELTA};
use super::{Entry, Pending, Window};
use crate::engine::cache::CacheProfile;
use crate::error::{CtxError, CtxResult};

/// The state outside the entries and the ledger's answers: small, written whole.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Scalars {
    next_id: u64,
    cycle: u64,
    fresh_unrecoverable: bool,
    pending: Vec<Pending>,
    counters: Counters,
    totals: Totals,
    /// None when it is the held entries' (id, version) list, as it is after every fit.
    last_kept: Option<Vec<(u64, u32)>>,
    stable_prefix_tokens: usize,
    why_horizon: Option<u64>,
    cache: Option<CacheProfile>,
}

/// A delta as written (borrowing from the window) and as read (owned): the same fields in the
/// same order, so both have one MessagePack shape.
#[derive(Serialize)]
struct DeltaOut<'a> {
    base: u64,
    revision: u64,
    order: Vec<u64>,
    entries: Vec<&'a Entry>,
    whys: Vec<&'a Why>,
    forgotten: Vec<&'a str>,
    scalars: Scalars,
    metas: Option<&'a str>,
    state: u128,
}

#[derive(Deserialize)]
struct DeltaIn {
    base: u64,
    revision: u64,
    order: Vec<u64>,
    entries: Vec<Entry>,
    whys: Vec<Why>,
    forgotten: Vec<String>,
    scalars: Scalars,
    metas: Option<String>,
    state: u128,
}

/// What applying a delta changed, for the bindings to mirror on their objects.
#[derive(Debug, Default)]
pub struct Applied {
    /// Held entries the delta created or changed.
    pub upserted: Vec<u64>,
    /// JSON text of `{entry id: meta}` for those entries, as the writer gave it.
    pub metas: Option<String>,
}

impl Window {
    fn check_mark(&self, mark: u64) -> CtxResult<()> {
        if mark > self.revision {
            return Err(CtxError::invalid(format!("revision {mark} is ahead of this window (it is at revision {})", self.revision)));
        }
        if mark < self.journal.floor {
            return Err(CtxError::invalid(format!(
                "this window was made or restored at revision {}: it can give deltas since then, not since {mark} \
                 (save a snapshot instead)",
                self.journal.floor
            )));
        }
        Ok(())
    }

    /// The held entries created or changed after `mark`, in entry order.
    pub fn entries_changed_since(&self, mark: u64) -> CtxResult<Vec<&Entry>> {
        self.check_mark(mark)?;
        Ok(self.entries.iter().filter(|e| self.entry_changed_since(e.id, mark)).collect())
    }

    /// The changes since `mark` (a `revision()` this window had since it was made or restored),
    /// with `metas` (JSON text of the changed entries' `meta` objects) carried along.
    pub fn delta_since(&self, mark: u64, metas: Option<&str>) -> CtxResult<Vec<u8>> {
        let entries = self.entries_changed_since(mark)?;
        let whys: Vec<&Why> =
            self.journal.whys.iter().filter(|(_, &r)| r > mark).filter_map(|(k, _)| self.why.get(k)).collect();
        let forgotten: Vec<&str> = self
            .journal
            .forgotten
            .iter()
            .filter(|(k, &r)| r > mark && !self.why.contains_key(k.as_str()))
            .map(|(k, _)| k.as_str())
            .collect();
        let kept_now = self.last_kept.len() == self.entries.len()
            && self.last_kept.iter().zip(&self.entries).all(|(&(id, v), e)| id == e.id && v == e.version);
        let scalars = Scalars {
            next_id: self.next_id,
            cycle: self.cycle,
            fresh_unrecoverable: self.fresh_unrecoverable,
            pending: self.pending.clone(),
            counters: self.counters.clone(),
            totals: self.totals.clone(),
            last_kept: (!kept_now).then(|| self.last_kept.clone()),
            stable_prefix_tokens: self.stable_prefix_tokens,
            why_horizon: self.why_horizon,
            cache: self.cache.clone(),
        };
        let hint = entries.iter().map(|e| e.seg.text.len() + 64).sum::<usize>() + whys.len() * 64 + self.entries.len() * 4;
        let out = DeltaOut {
            base: mark,
            revision: self.revision,
            order: self.entries.iter().map(|e| e.id).collect(),
            entries,
            whys,
            forgotten,
            scalars,
            metas,
            state: state_digest(self)?,
        };
        seal(KIND_DELTA, &out, hint)
    }

    /// This window with a delta applied: the delta must follow this window's revision and lead
    /// to a valid state that hashes as the writer's did; otherwise it is refused.
    pub fn with_delta(self, bytes: &[u8]) -> CtxResult<(Self, Applied)> {
        let (w, mut applied) = self.with_deltas(&[bytes])?;
        Ok((w, applied.pop().unwrap_or_default()))
    }

    /// Deltas applied in order. The state is validated and its digest checked once, at the
    /// end: a delta misapplied on the way would leave a final state that does not hash as the
    /// writer's, so checking each step would cost a restore a full pass per delta for nothing.
    pub fn with_deltas(mut self, deltas: &[&[u8]]) -> CtxResult<(Self, Vec<Applied>)> {
        let mut out = Vec::with_capacity(deltas.len());
        let mut promised = None;
        for bytes in deltas {
            let d: DeltaIn = decode(open(KIND_DELTA, bytes)?)?;
            promised = Some(d.state);
            out.push(self.apply_one(d)?);
        }
        if let Some(state) = promised {
            self.validate()?;
            if state_digest(&self)? != state {
                return Err(refused("applying the deltas does not give the state they were written from"));
            }
        }
        let held: rustc_hash::FxHashSet<u64> = self.entries.iter().map(|e| e.id).collect();
        for a in &mut out {
            a.upserted.retain(|id| held.contains(id));
        }
        Ok((self, out))
    }

    /// One delta's changes, unchecked (see `with_deltas`); never panics on any input.
    fn apply_one(&mut self, d: DeltaIn) -> CtxResult<Applied> {
        if d.base != self.revision {
            return Err(refused(format!(
                "this delta follows revision {}, and the window is at revision {} (deltas apply in order, once)",
                d.base, self.revision
            )));
        }
        if d.revision < d.base {
            return Err(refused("the delta leads to an earlier revision than it follows"));
        }
        let mut by_id: rustc_hash::FxHashMap<u64, Entry> = std::mem::take(&mut self.entries).into_iter().map(|e| (e.id, e)).collect();
        let upserted: Vec<u64> = d.entries.iter().map(|e| e.id).collect();
        for e in d.entries {
            by_id.insert(e.id, e);
        }
        let mut entries = Vec::with_capacity(d.order.len());
        for id in &d.order {
            let e = by_id.remove(id).ok_or_else(|| refused(format!("the delta holds entry {id}, which it neither carries nor follows")))?;
            entries.push(e);
        }
        self.entries = entries;
        self.held_keys = self.entries.iter().filter_map(|e| e.seg.key.clone().map(|k| (k, e.id))).collect();
        // What the delta brought counts as changed at its revision (the journal keeps its floor).
        for &id in &upserted {
            self.journal.entries.insert(id, d.revision);
        }
        for w in d.whys {
            self.journal.forgotten.remove(&w.key);
            self.journal.whys.insert(w.key.clone(), d.revision);
            self.why.insert(w.key.clone(), w);
        }
        for k in d.forgotten {
            self.why.remove(&k);
            self.journal.whys.remove(&k);
            self.journal.forgotten.insert(k, d.revision);
        }
        let s = d.scalars;
        self.last_kept = s.last_kept.unwrap_or_else(|| self.entries.iter().map(|e| (e.id, e.version)).collect());
        self.next_id = s.next_id;
        self.cycle = s.cycle;
        self.fresh_unrecoverable = s.fresh_unrecoverable;
        self.pending = s.pending;
        self.counters = s.counters;
        self.totals = s.totals;
        self.stable_prefix_tokens = s.stable_prefix_tokens;
        self.why_horizon = s.why_horizon;
        self.cache = s.cache;
        self.revision = d.revision;
        Ok(Applied { upserted, metas: d.metas })
    }
}
