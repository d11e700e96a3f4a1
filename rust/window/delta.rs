//! Deltas: what changed in a window since a revision, so a store appends a turn's changes
//! instead of rewriting the whole conversation, and restores it as snapshot + deltas.
//!
//! A delta carries the held entries' ids in order, the entries and `why` answers created or
//! changed after the mark (version 2: as packed records, see `record`), the keys whose answers
//! were forgotten, and the small scalar state (counters, totals, cycle...) whole. It names the
//! revision it follows and the one it leads to, so deltas cannot be applied out of order or
//! twice, and the digest of the whole state it leads to: applying it must reproduce that state
//! exactly, or it is refused and nothing changes. Version-1 deltas (full answers, the digest of
//! the whole version-1 form) are still read.

use serde::{Deserialize, Serialize};

use super::fields::Bytes;
use super::ledger::{Counters, Totals, Why};
use super::persist::{decode, open, refused, seal, state_digest, KIND_DELTA, VERSION_1, VERSION_2};
use super::record::{self, Reader, Rec};
use super::whys::cause_label;
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

/// A delta as written (borrowing from the window) and as read: the same fields in the same
/// order, so both have one postcard shape.
#[derive(Serialize)]
struct DeltaOut<'a> {
    base: u64,
    revision: u64,
    order: Vec<u64>,
    entries: Vec<&'a Entry>,
    whys: Bytes<'a>,
    forgotten: Vec<&'a str>,
    scalars: Scalars,
    metas: Option<&'a str>,
    state: u128,
}

#[derive(Deserialize)]
struct DeltaIn<'a> {
    base: u64,
    revision: u64,
    order: Vec<u64>,
    entries: Vec<Entry>,
    #[serde(borrow)]
    whys: Bytes<'a>,
    forgotten: Vec<String>,
    scalars: Scalars,
    metas: Option<String>,
    state: u128,
}

/// A version-1 delta: the answers whole.
#[derive(Deserialize)]
struct DeltaInV1 {
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

/// A delta of either version, its answers as stored records.
struct Incoming {
    base: u64,
    revision: u64,
    order: Vec<u64>,
    entries: Vec<Entry>,
    whys: Vec<(String, Rec)>,
    forgotten: Vec<String>,
    scalars: Scalars,
    metas: Option<String>,
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
        let mut keys: Vec<&str> = self.journal.whys.iter().filter(|(_, &r)| r > mark).map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        let mut whys = Vec::with_capacity(keys.len() * 24);
        for k in keys {
            if let Some(r) = self.why.get(k) {
                record::encode(&mut whys, k, r);
            }
        }
        let forgotten: Vec<&str> = self
            .journal
            .forgotten
            .iter()
            .filter(|(k, &r)| r > mark && !self.why.contains(k.as_str()))
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
        let hint = entries.iter().map(|e| e.seg.text.len() + 64).sum::<usize>() + whys.len() + self.entries.len() * 4;
        let out = DeltaOut {
            base: mark,
            revision: self.revision,
            order: self.entries.iter().map(|e| e.id).collect(),
            entries,
            whys: Bytes(&whys),
            forgotten,
            scalars,
            metas,
            state: self.state_digest_v3()?,
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
    /// end, against the last delta's promise (in that delta's version): a delta misapplied on
    /// the way would leave a final state that does not hash as the writer's.
    pub fn with_deltas(mut self, deltas: &[&[u8]]) -> CtxResult<(Self, Vec<Applied>)> {
        let mut out = Vec::with_capacity(deltas.len());
        let mut promised = None;
        for bytes in deltas {
            let (version, body) = open(KIND_DELTA, bytes)?;
            let (d, state) = if version == VERSION_1 { self.read_v1(body)? } else { read_v2(body)? };
            promised = Some((version, state));
            out.push(self.apply_one(d)?);
        }
        if let Some((version, state)) = promised {
            self.validate()?;
            self.cache_digests();
            let now = match version {
                VERSION_1 => state_digest(&self)?,
                VERSION_2 => self.state_digest_v2()?,
                _ => self.state_digest_v3()?,
            };
            if now != state {
                return Err(refused("applying the deltas does not give the state they were written from"));
            }
        }
        let held: rustc_hash::FxHashSet<u64> = self.entries.iter().map(|e| e.id).collect();
        for a in &mut out {
            a.upserted.retain(|id| held.contains(id));
        }
        Ok((self, out))
    }

    /// A version-1 delta's answers as records (rung names this window's policy gives dropped).
    fn read_v1(&self, body: &[u8]) -> CtxResult<(Incoming, u128)> {
        let d: DeltaInV1 = decode(body)?;
        let names = self.why.names();
        let whys = d
            .whys
            .into_iter()
            .map(|mut w| {
                let derived = w.cause.map(|c| cause_label(names, c));
                let rung = if derived.is_some() && derived == w.rung.as_deref() { None } else { w.rung.take() };
                Rec::from_why(w, rung)
            })
            .collect();
        let inc = Incoming { base: d.base, revision: d.revision, order: d.order, entries: d.entries, whys, forgotten: d.forgotten, scalars: d.scalars, metas: d.metas };
        Ok((inc, d.state))
    }

    /// One delta's changes, unchecked (see `with_deltas`); never panics on any input.
    fn apply_one(&mut self, d: Incoming) -> CtxResult<Applied> {
        if d.base != self.revision {
            return Err(refused(format!(
                "this delta follows revision {}, and the window is at revision {} (deltas apply in order, once)",
                d.base, self.revision
            )));
        }
        if d.revision < d.base {
            return Err(refused("the delta leads to an earlier revision than it follows"));
        }
        let upserted: Vec<u64> = d.entries.iter().map(|e| e.id).collect();
        let (entries, gone, placed) = merge_entries(std::mem::take(&mut self.entries), d.entries, &d.order)?;
        self.entries = entries;
        // The key index follows what changed: the keys of entries that left (or were replaced)
        // go first, then the carried entries' keys come in. (Validation checks it whole.)
        for e in &gone {
            if let Some(k) = &e.seg.key {
                if self.held_keys.get(k.as_str()) == Some(&e.id) {
                    self.held_keys.remove(k.as_str());
                }
            }
        }
        for e in placed.iter().filter_map(|&p| self.entries.get(p)) {
            if let Some(k) = &e.seg.key {
                self.held_keys.insert(k.clone(), e.id);
            }
        }
        // What the delta brought counts as changed at its revision (the journal keeps its floor).
        for &id in &upserted {
            self.journal.entries.insert(id, d.revision);
        }
        for (k, w) in d.whys {
            self.journal.forgotten.remove(&k);
            self.journal.whys.insert(k.clone(), d.revision);
            self.why.put(&k, w);
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

/// How far past the cursor `merge_entries` looks for the next id among the old entries.
const AHEAD: usize = 8;

/// The held entries in `order`, each the delta's (`carried`: new or changed) or else the
/// window's before it (`old`); with the old entries no longer held (left or replaced) and the
/// positions in the result of the carried ones. Most ids come in the old order with the
/// evicted ones missing, so the old entries are walked with a cursor that looks a few places
/// ahead; an id not found there is looked up in an index of the old entries, built once, on
/// the first such id (a hash map of every entry was a tenth of a resume).
pub(super) fn merge_entries(old: Vec<Entry>, carried: Vec<Entry>, order: &[u64]) -> CtxResult<(Vec<Entry>, Vec<Entry>, Vec<usize>)> {
    let mut carried: rustc_hash::FxHashMap<u64, Entry> = carried.into_iter().map(|e| (e.id, e)).collect();
    let mut old: Vec<Option<Entry>> = old.into_iter().map(Some).collect();
    let mut index: Option<rustc_hash::FxHashMap<u64, usize>> = None;
    let mut cursor: usize = 0;
    let mut out = Vec::with_capacity(order.len());
    let mut placed = Vec::with_capacity(carried.len());
    for &id in order {
        if let Some(e) = carried.remove(&id) {
            placed.push(out.len());
            out.push(e);
            continue;
        }
        let is_id = |i: &usize| old.get(*i).and_then(Option::as_ref).is_some_and(|e| e.id == id);
        let at = match (cursor..old.len().min(cursor.saturating_add(AHEAD))).find(is_id) {
            Some(i) => Some(i),
            None => {
                let index = index.get_or_insert_with(|| old.iter().enumerate().filter_map(|(i, e)| e.as_ref().map(|e| (e.id, i))).collect());
                index.get(&id).copied()
            }
        };
        let taken = at.and_then(|i| old.get_mut(i)).and_then(Option::take);
        let e = taken.ok_or_else(|| refused(format!("the delta holds entry {id}, which it neither carries nor follows")))?;
        cursor = at.map_or(cursor, |i| i.saturating_add(1));
        out.push(e);
    }
    Ok((out, old.into_iter().flatten().collect(), placed))
}

/// A version-2 delta, its packed answers checked and read.
fn read_v2(body: &[u8]) -> CtxResult<(Incoming, u128)> {
    let d: DeltaIn<'_> = decode(body)?;
    record::scan(d.whys.0).ok_or_else(|| refused("the delta's why answers are not well formed"))?;
    let mut whys = Vec::new();
    let mut r = Reader { bytes: d.whys.0, at: 0 };
    while r.at < d.whys.0.len() {
        let (k, rec) = r.next_record().ok_or_else(|| refused("the delta's why answers are not well formed"))?;
        whys.push((k.to_string(), rec.to_rec()));
    }
    let inc = Incoming { base: d.base, revision: d.revision, order: d.order, entries: d.entries, whys, forgotten: d.forgotten, scalars: d.scalars, metas: d.metas };
    Ok((inc, d.state))
}
